"""The results block every build path ends with (pipeline.results), the progress lines inside
a run (pipeline.progress), and results_sensor for runs launched outside the CLI."""

from __future__ import annotations

import json
import re

import pytest

from config.settings import read_settings
from tests.conftest import LEARNED_SYMBOLS


def _write(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_results_lines_round_every_figure_and_a_one_class_horizon_reads_n_a(make_settings):
    from pipeline.results import results_block

    cfg = make_settings(universe={"source": "folder", "folder": {"path": "raw"}})
    settings = read_settings(cfg)
    reports = settings.reports_dir
    h = {"auc": 0.531234567, "pr_auc": 0.55219, "brier": 0.24871234, "ic": 0.0412, "rank_ic": 0.031234567,
         "icir": 0.23456789, "long_short_sharpe": 1.23456789}
    none = dict.fromkeys(h)
    _write(reports / "evaluation" / "overall.json", {"scope": "overall", "symbols": 23, "years": [2014, 2015, 2016, 2017, 2018],
                                               "h3": h, "h7": h, "h14": none})
    _write(reports / "backtest" / "overall.json", {"horizon": 7, "from": "2014-01-02", "to": "2018-12-31", "symbols": 23,
                                                   "sharpe": 0.8412345, "cagr": 0.0623456, "max_drawdown": -0.1234567,
                                                   "annual_turnover": 45.4321, "in_cash_days": 0, "in_cash_reason": None,
                                                   "n_days": 1258, "total_return": 0.3512, "ann_vol": 0.0741,
                                                   "sortino": 1.2067, "calmar": 0.5049, "max_drawdown_days": 212,
                                                   "drawdown_recovered": True, "exposure": 0.9312, "trades": 1840,
                                                   "win_rate": 0.52345, "total_costs": 0.04123, "cost_share": 0.18712,
                                                   "benchmark": {"name": "equal weight of 23 symbols, rebalanced daily",
                                                                 "sharpe": 0.7512345, "cagr": 0.1381234},
                                                   "excess_return": -0.0757778, "information_ratio": -0.6181234,
                                                   "tracking_error": 0.0981234, "beta": 0.6212345,
                                                   "verdict": "lost to the benchmark (equal weight of 23 symbols, "
                                                              "rebalanced daily) by 7.6%/yr"})
    (reports / "backtest" / "equity.png").write_bytes(b"\x89PNG")
    for y, auc in ((2017, 0.52), (2018, 0.54)):
        _write(reports / "meta_model" / f"h7_{y}.json", {"year": y, "horizon": 7, "auc": auc, "brier": 0.25, "symbols": 23})
    assert results_block(settings, [2017, 2018], symbols=23).splitlines() == [
        "results (23 symbols x 2 years, 2017-2018)",
        "  meta h3           n/a (no meta model report of 2017-2018)",
        "  meta h7           mean yearly AUC 0.530 (0.520..0.540 over 2 years), mean yearly Brier 0.250",
        "  meta h14          n/a (no meta model report of 2017-2018)",
        "  meta pooled AUC   out of sample 2014-2018, 23 symbols: h3 0.531  h7 0.531  h14 n/a",
        "  h3                pooled AUC 0.531, PR-AUC 0.552, Brier 0.249, rank IC 0.0312, ICIR 0.235, long-short Sharpe 1.23",
        "  h7                pooled AUC 0.531, PR-AUC 0.552, Brier 0.249, rank IC 0.0312, ICIR 0.235, long-short Sharpe 1.23",
        "  h14               pooled AUC n/a, PR-AUC n/a, Brier n/a, rank IC n/a, ICIR n/a, long-short Sharpe n/a",
        "  backtest          p_h7 2014-01-02..2018-12-31, 23 symbols: Sharpe 0.84, CAGR 6.2%, max drawdown -12.3%, "
        "turnover 45x/yr",
        "  backtest stats    1258 days, total return 35.1%, volatility 7.4%, Sortino 1.21, Calmar 0.50, drawdown 212 days "
        "(recovered), exposure 0.93, 1840 trades, win rate 52.3% (days), costs 4.1% (18.7% of gross profit)",
        "  benchmark         Sharpe 0.75, CAGR 13.8%; excess return -7.6%/yr, information ratio -0.62, tracking error 9.8%, "
        "beta 0.62: the strategy lost to the benchmark (equal weight of 23 symbols, rebalanced daily) by 7.6%/yr",
        f"  figures           {reports / 'backtest' / 'equity.png'}",
    ]


def test_backtest_lines_of_a_market_where_buy_and_hold_beat_the_book_say_it_lost_and_count_the_days_in_cash(
        make_settings, tmp_path):
    from datetime import datetime, timedelta

    import polars as pl

    from config.settings import BacktestSettings
    from domain.backtest import build_backtest
    from pipeline.results import results_lines

    settings = read_settings(make_settings())
    days = [datetime(2002, 12, 30) + timedelta(days=i) for i in range(8)]  # 2002-12-30 .. 2003-01-06
    bars = pl.DataFrame({"symbol": ["AAA"] * 8 + ["BBB"] * 8, "date": days * 2,
                         "close": [100.0 + i for i in range(8)] * 2}).lazy()  # both rise every day
    pred = pl.DataFrame({"symbol": ["AAA"] * 8 + ["BBB"] * 8, "date": days * 2,
                         "p_h7": [float("nan")] * 2 + [0.3] * 6 + [float("nan")] * 2 + [0.3] * 6},  # 2002: no model
                        schema_overrides={"p_h7": pl.Float32}).lazy()  # 0.3 < threshold: the book stays in cash
    build_backtest(pred, bars, [2003], BacktestSettings(), settings.stage_reports_dir("backtest"))
    lines = results_lines(settings, [2003], ("backtest",))
    assert lines[0] == ("backtest          p_h7 2003-01-01..2003-01-06 (2 days in cash left out: no prediction (no meta "
                        "model) before 2003-01-01), 2 symbols: Sharpe n/a, CAGR 0.0%, max drawdown 0.0%, turnover 0x/yr")
    # the stats table (kernels.backtest.stats): a book in cash has no ratio, no drawdown, no trade, no cost
    assert lines[1] == ("backtest stats    6 days, total return 0.0%, volatility 0.0%, Sortino n/a, Calmar n/a, "
                        "drawdown 0 days, exposure 0.00, 0 trades, win rate n/a (days), costs 0.0%")
    assert lines[2].startswith("benchmark         Sharpe ") and ", beta 0.00: the strategy lost to the benchmark " \
        "(equal weight of 2 symbols, rebalanced daily) by " in lines[2]


def test_a_backtest_report_without_a_benchmark_says_so_on_the_benchmark_line(make_settings):
    from pipeline.results import results_lines

    settings = read_settings(make_settings())
    _write(settings.stage_reports_dir("backtest") / "overall.json", {"horizon": 7, "from": "2003-01-02", "to": "2003-12-31",
                                                                     "symbols": 3, "sharpe": 0.5})
    assert results_lines(settings, [2003], ("backtest",))[1] == (
        "benchmark         n/a (a report without a benchmark: run backtest)")


def test_results_block_of_a_stage_without_reports_says_which_command_makes_them(make_settings):
    from pipeline.results import results_lines

    settings = read_settings(make_settings())
    assert results_lines(settings, [2003], ("evaluation", "backtest")) == [
        "evaluation        n/a (no report: run evaluate)", "backtest          n/a (no report: run backtest)"]


@pytest.fixture
def learned_cli(learned_copy, tmp_path, monkeypatch):
    """The CLI in process on a copy of the learned store, its symbols registered in a fresh
    DAGSTER_HOME, progress lines on (stderr is no terminal under pytest)."""
    from pipeline.instance import get_instance
    from pipeline.symbols import register_symbols

    monkeypatch.setenv("PIPELINE_CONFIG", str(learned_copy))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRADELAB_PROGRESS", "1")
    register_symbols(get_instance(), LEARNED_SYMBOLS)
    return learned_copy


def test_train_meta_shows_progress_per_year_and_step_then_ends_with_its_results(learned_cli, capsys):
    from pipeline.cli import main

    assert main(["train-meta", "--years", "2002-2003"]) == 0
    out, err = capsys.readouterr()
    progress = [line for line in err.splitlines() if line.startswith("progress: ") and "compiling kernels" not in line]
    shapes = [re.sub(r"\d+\.\d s\)", "S s)", re.sub(r"^progress: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", "", line))
              for line in progress]
    # stderr is no terminal: plain lines. regime, then meta_model year by year (inside its one
    # step), then predictions: in the order they ran, each step's start and finish
    assert shapes == ["train-meta: loading the pipeline (settings, symbols, the Dagster definitions)", "started",
                      "train_meta_job: regime started", "train_meta_job: regime done (step 1/3, S s)",
                      "train_meta_job: meta_model started",
                      "train_meta_job: meta_model 2002 done (1/2 years, S s)",
                      "train_meta_job: meta_model 2003 done (2/2 years, S s)",
                      "train_meta_job: meta_model done (step 2/3, S s)",
                      "train_meta_job: predictions started", "train_meta_job: predictions done (step 3/3, S s)"], err
    assert "\r" not in err
    block = out.split("results (2 years, 2002-2003)\n", 1)[1].splitlines()
    assert re.fullmatch(r"  meta h7           mean yearly AUC 0\.\d{3} \(0\.\d{3}\.\.0\.\d{3} over 2 years\), "
                        r"mean yearly Brier 0\.\d{3} \(3 of 3 symbols, [\d,]+ of [\d,]+ rows\); inputs "
                        r"specialists\+regime \(8 columns, missing fill\)", block[1]), block
    assert block[-2].startswith("  checks            ") and block[-1].startswith("models: ")


def test_evaluate_prints_rounded_rank_ic_icir_and_long_short_sharpe_and_the_sensor_logs_the_same_block(
        learned_cli, capsys):
    import yaml
    from dagster import build_run_status_sensor_context

    from pipeline.cli import main
    from pipeline.definitions import defs
    from pipeline.instance import get_instance
    from pipeline.results_sensor import results_sensor

    cfg = yaml.safe_load(learned_cli.read_text())
    cfg["evaluation"] = {"min_symbols_per_day": 3}
    learned_cli.write_text(yaml.safe_dump(cfg))
    # another days floor is another experiment (the settings hash): the copy's stored
    # predictions are evaluated under it, as a store built before the manifest would be
    from config.settings import read_settings

    (read_settings(learned_cli).reports_dir / "experiment.json").unlink(missing_ok=True)
    assert main(["evaluate", "--years", "2003"]) == 0
    out, err = capsys.readouterr()
    assert re.search(r"^progress: [\d :-]+ evaluate_job: evaluation done \(step 1/1, \d+\.\d s\)$", err, re.M), err
    lines = out.splitlines()
    assert lines[0] == "results (1 year, 2003)"
    assert lines[1].startswith("  planted signal strength 0: recovered pooled AUC 0.")  # the learned store is synthetic
    assert lines[2].startswith("  meta pooled AUC   out of sample 2003, 3 symbols: h3 0.")
    for h in (3, 7, 14):
        line = next(x for x in lines if x.startswith(f"  h{h} "))
        # 3 decimals for AUC, PR-AUC, Brier; 3 significant digits for rank IC, ICIR; 2 decimals for the Sharpe
        assert re.fullmatch(rf"  h{h}\s+pooled AUC 0\.\d{{3}}, PR-AUC 0\.\d{{3}}, Brier 0\.\d{{3}}, rank IC -?[\d.e-]+, "
                            rf"ICIR -?[\d.e-]+, long-short Sharpe -?\d+\.\d\d \(3 of 3 symbols, [\d,]+ of [\d,]+ rows\)", line), line
        rank_ic = line.split("rank IC ")[1].split(",")[0]
        assert len(rank_ic.lstrip("-0.")) <= 3, line  # not 16 digits
    assert lines[-1] == "  checks            every asset check passed"

    instance = get_instance()
    run = instance.get_runs(limit=1)[0]
    event = next(r.event_log_entry.dagster_event for r in instance.get_records_for_run(run.run_id).records
                 if r.event_log_entry.dagster_event is not None)
    ctx = build_run_status_sensor_context(sensor_name="results_sensor", dagster_event=event, dagster_instance=instance,
                                          dagster_run=run, repository_def=defs.get_repository_def())
    tick = results_sensor(ctx)
    assert tick.skip_message.splitlines()[1:] == [x for x in lines[:-1]]  # the CLI's block, without the CLI's tally


from tests.pipeline.test_run_check_warnings import split_folder  # noqa: E402,F401  (the fixture)


def test_build_all_ends_with_the_results_block_and_counts_its_failed_checks(split_folder, make_settings, monkeypatch,  # noqa: F811  (the imported fixture)
                                                                           tmp_path, capsys):
    """One symbol, 60 sessions of 2001 with an unadjusted split and a Sunday bar: the chain
    finishes, two raw_bars checks fail; the block ends the output and counts them."""
    from pipeline.cli import main

    # years from 2000, the partitions' first year whichever test imported the definitions first
    cfg = make_settings(universe={"source": "folder", "folder": {"path": str(split_folder)}}, years={"start": 2000, "end": 2001})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRADELAB_PROGRESS", "0")
    assert main(["build-all"]) == 0
    out, err = capsys.readouterr()
    assert "warning: check raw_bars/plausible_moves failed: jumps 1, max_move 1.5" in err
    assert not [line for line in err.splitlines() if line.startswith("progress: ")]  # TRADELAB_PROGRESS=0
    block = out.split("built 1 symbols x 2000..2001; reports: ", 1)[1].splitlines()[1:]
    assert block[0] == "results (1 symbols x 2 years, 2000-2001)"
    assert block[-1].startswith("  checks            ") and " failed (" in block[-1], block
    assert "raw_bars/exchange_sessions, raw_bars/plausible_moves" in block[-1]
    assert any(line.startswith("  backtest          ") for line in block), block
