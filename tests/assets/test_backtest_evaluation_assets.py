"""backtest and evaluation assets over the stored out-of-sample predictions."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from dagster import materialize

from assets.backtest import backtest
from domain.backtest import backtest_panel
from assets.evaluation import evaluation
from kernels.backtest.portfolio import run_portfolio
from pipeline.definitions import ALL_ASSETS, build_resources
from config.settings import read_settings
from resources.delta_store import DeltaStore
from tests.conftest import LEARNED_SYMBOLS, LEARNED_YEAR


def _materialize(cfg, instance, selection):
    from pipeline.symbols import register_symbols

    register_symbols(instance, LEARNED_SYMBOLS)
    return materialize(ALL_ASSETS, selection=selection, partition_key=str(LEARNED_YEAR), instance=instance,
                       resources=build_resources(str(cfg)))


def _scan(cfg, asset):
    return DeltaStore(read_settings(cfg).table_root(asset)).scan(asset)


def test_backtest_stores_the_daily_book_of_the_year_with_statistics_log_and_equity_png(learned_copy, instance):
    res = _materialize(learned_copy, instance, [backtest])
    assert res.success
    assert {e.check_name: e.passed for e in res.get_asset_check_evaluations()} == {
        "equity_finite_positive": True, "weights_within_caps": True}
    curve = res.asset_materializations_for_node("backtest")[0].metadata["equity_curve"].value
    assert curve.startswith("![equity curve](data:image/png;base64,iVBOR")  # the PNG inline in the UI
    s = read_settings(learned_copy)
    daily = _scan(learned_copy, "backtest").collect()
    bars_days = _scan(learned_copy, "raw_bars").filter(pl.col("date").dt.year() == LEARNED_YEAR).select("date").unique().collect()
    assert daily.height == bars_days.height
    assert (daily["turnover"] >= 0).all() and (daily["cost"] >= 0).all() and daily["positions"].max() >= 1
    report = json.loads((s.stage_reports_dir("backtest") / f"year_{LEARNED_YEAR}.json").read_text())
    assert report["n_days"] == daily.height and {"cagr", "sharpe", "max_drawdown", "annual_turnover"} <= set(report)
    assert report["max_drawdown"] <= 0
    log = [json.loads(x) for x in (s.stage_reports_dir("backtest") / "daily.jsonl").read_text().splitlines()]
    assert len(log) == daily.height and abs(log[-1]["equity"] - float(daily["equity"][-1])) < 1e-6  # stored as float32
    assert (s.stage_reports_dir("backtest") / "equity.png").read_bytes()[:4] == b"\x89PNG"
    meta = res.asset_materializations_for_node("backtest")[0].metadata
    assert "sharpe" in meta and "per_year" in meta
    overall = json.loads((s.stage_reports_dir("backtest") / "overall.json").read_text())
    bench = overall["benchmark"]
    assert bench["name"] == "equal weight of 3 symbols, rebalanced daily" and bench["n_days"] == overall["n_days"]
    assert overall["verdict"].split(" the benchmark (")[0] in ("beat", "lost to", "matched")
    assert meta["verdict"].value == overall["verdict"] and meta["in_cash_days"].value == overall["in_cash_days"]
    for name in ("benchmark_sharpe", "benchmark_cagr", "excess_return", "tracking_error", "beta"):
        assert type(meta[name].value) is float, name
    assert meta["benchmark_cagr"].value == pytest.approx(bench["cagr"], rel=1e-3)
    assert set(meta["per_year"].value[str(LEARNED_YEAR)]) >= {"sharpe", "benchmark_sharpe", "excess_return", "beta",
                                                              "sortino", "exposure", "trades", "cost_share"}
    # the stats table (kernels.backtest.stats) in the report JSON and as numeric metadata
    table = {"from", "to", "n_days", "total_return", "cagr", "ann_vol", "sharpe", "sortino", "calmar", "max_drawdown",
             "max_drawdown_days", "exposure", "annual_turnover", "trades", "win_rate", "total_costs", "cost_share",
             "excess_return", "information_ratio"}
    assert table <= set(overall) and table <= set(report)
    for name in ("exposure", "total_costs", "ann_vol", "win_rate"):
        assert type(meta[name].value) is float, name
    assert meta["trades"].value == overall["trades"] == int(daily["trades"].sum()) >= 1  # one year: the span's trades
    assert type(meta["max_drawdown_days"].value) is int
    assert meta["exposure"].value == pytest.approx(overall["exposure"], rel=1e-3)


def test_backtest_equals_the_kernel_on_the_pivoted_panel(learned_copy, instance):
    assert _materialize(learned_copy, instance, [backtest]).success
    s = read_settings(learned_copy)
    dates, symbols, prices, probs = backtest_panel(_scan(learned_copy, "predictions"), _scan(learned_copy, "raw_bars"), 7)
    assert symbols == LEARNED_SYMBOLS and prices.shape == probs.shape == (len(dates), 3)
    from domain.backtest import portfolio_config

    res = run_portfolio(prices, probs, portfolio_config(s.backtest), chunk_days=10_000)
    daily = _scan(learned_copy, "backtest").sort("date").collect()
    np.testing.assert_allclose(daily["equity"].to_numpy(), res.equity.astype(np.float32))


def test_evaluation_reports_metrics_deciles_by_regime_and_reliability_per_horizon_overall_figures_only_by_default(learned_copy, instance):
    res = _materialize(learned_copy, instance, [evaluation])
    assert res.success
    s = read_settings(learned_copy)
    table = _scan(learned_copy, "evaluation").collect()
    assert sorted(table["horizon"].to_list()) == [3, 7, 14]
    report = json.loads((s.stage_reports_dir("evaluation") / f"{LEARNED_YEAR}.json").read_text())
    for h in (3, 7, 14):
        r = report[f"h{h}"]
        assert 0 <= r["auc"] <= 1 and 0 <= r["pr_auc"] <= 1 and 0 <= r["brier"] <= 1 and r["log_loss"] > 0
        assert sum(d["count"] for d in r["deciles"]) == r["n"]
        assert r["deciles_by_regime"] and set(r["deciles_by_regime"]) <= {"bear", "consolidate", "bull", "oscillate"}
        assert (s.stage_reports_dir("evaluation") / f"reliability_h{h}_overall.png").read_bytes()[:4] == b"\x89PNG"
        # evaluation.year_figures is off by default: a year's figures are not drawn (its JSON has their data)
        assert not list(s.stage_reports_dir("evaluation").glob(f"*_h{h}_{LEARNED_YEAR}.png"))
    assert json.loads((s.stage_reports_dir("evaluation") / "overall.json").read_text())["h7"]["n"] == report["h7"]["n"]


def test_evaluation_counts_only_predictions_whose_label_is_realised(learned_copy):
    from domain.evaluation import outcomes

    joined = outcomes(_scan(learned_copy, "predictions"), _scan(learned_copy, "labels"), [14])
    last = joined.filter(pl.col("date") == joined["date"].max())
    assert last["label_bin_h14"].null_count() == last.height  # t + 14 is past the stored data


def test_backtest_of_an_empty_panel_writes_an_empty_log_and_no_statistics(tmp_path):
    from domain.backtest import period_stats, run_backtest
    from config.settings import BacktestSettings

    log = tmp_path / "reports" / "daily.jsonl"
    daily = run_backtest(np.empty(0, "datetime64[us]"), [], np.empty((0, 0)), np.empty((0, 0), np.float32),
                         BacktestSettings(), log_path=log)
    assert daily.height == 0 and log.read_text() == ""
    assert period_stats(daily)["n_days"] == 0
    assert [p.name for p in log.parent.iterdir()] == ["daily.jsonl"]  # no temp file left


def test_evaluation_with_fewer_symbols_than_the_minimum_says_so_and_shows_the_plots_it_has(learned_copy, instance):
    res = _materialize(learned_copy, instance, [evaluation])  # 3 symbols < evaluation.min_symbols_per_day 5
    assert res.success
    s = read_settings(learned_copy)
    report = json.loads((s.stage_reports_dir("evaluation") / f"{LEARNED_YEAR}.json").read_text())
    for h in (3, 7, 14):
        cs = report[f"h{h}"]["cross_section"]
        assert cs["days_used"] == 0 and cs["days_excluded"] == cs["days"] > 200 and cs["min_symbols_per_day"] == 5
        assert cs["note"].startswith(f"all {cs['days']} days have fewer than 5 symbols")
        assert cs["rank_ic"] is None and cs["icir"] is None and cs["long_short_sharpe"] is None and cs["daily"] == []
        assert report[f"h{h}"]["rank_ic"] is None
    meta = res.asset_materializations_for_node("evaluation")[0].metadata
    md = meta["plots_h7"].value
    assert "fewer than 5 symbols" in md and "![reliability_h7](data:image/png;base64," in md
    assert "![deciles_h7](data:image/png;base64," in md and "![ic_h7]" not in md
    table = _scan(learned_copy, "evaluation").collect()
    assert table["days_used"].to_list() == [0, 0, 0] and table["rank_ic"].null_count() == 3


def test_evaluation_signal_analysis_rank_ic_icir_long_short_turnover_and_year_figures_when_asked(learned_copy, instance):
    import base64

    import yaml

    cfg = yaml.safe_load(learned_copy.read_text())
    cfg["evaluation"] = {"min_symbols_per_day": 3, "year_figures": True}  # each year's PNGs too
    learned_copy.write_text(yaml.safe_dump(cfg))
    # another days floor is another experiment (the settings hash): this copy's stored
    # predictions are evaluated under it, as a store built before the manifest would be
    (read_settings(learned_copy).reports_dir / "experiment.json").unlink()
    res = _materialize(learned_copy, instance, [evaluation])
    assert res.success
    s = read_settings(learned_copy)
    for scope in (str(LEARNED_YEAR), "overall"):
        report = json.loads((s.stage_reports_dir("evaluation") / f"{scope}.json").read_text())
        for h in (3, 7, 14):
            r = report[f"h{h}"]
            cs = r["cross_section"]
            assert cs["days_used"] > 200 and cs["days_excluded"] == 0 and "note" not in cs
            assert -1 <= cs["rank_ic"] <= 1 and cs["rank_ic_std"] > 0 and r["rank_ic"] == cs["rank_ic"]
            assert cs["icir"] == pytest.approx(cs["rank_ic"] / cs["rank_ic_std"])
            daily = cs["daily"]
            assert len(daily) == cs["days_used"] and all(d["n"] == 3 for d in daily)
            ics = [d["ic"] for d in daily if d["ic"] is not None]
            assert daily[-1]["cum_ic"] == pytest.approx(sum(ics)) and cs["ic_days"] == len(ics)
            ls = np.array([d["long_short"] for d in daily])
            assert cs["long_short_mean"] == pytest.approx(ls.mean())
            assert cs["long_short_sharpe"] == pytest.approx(ls.mean() / ls.std(ddof=1) * np.sqrt(252 / h))
            assert 0 <= cs["top_turnover"] <= 1 and 0 <= cs["bottom_turnover"] <= 1
            for plot in ("reliability", "ic", "long_short", "deciles"):
                assert (s.stage_reports_dir("evaluation") / f"{plot}_h{h}_{scope}.png").read_bytes()[:4] == b"\x89PNG"
    meta = res.asset_materializations_for_node("evaluation")[0].metadata
    for h in (3, 7, 14):
        md = meta[f"plots_h{h}"].value
        for plot in ("ic", "long_short", "deciles", "reliability"):
            head = f"![{plot}_h{h}](data:image/png;base64,"
            assert head in md
            encoded = md.split(head, 1)[1].split(")", 1)[0]
            assert base64.b64decode(encoded)[:4] == b"\x89PNG"
    assert meta["metrics"].value["overall"]["h7"]["cross_section"]["days_used"] > 200
    table = _scan(learned_copy, "evaluation").collect()
    assert table["rank_ic"].null_count() == 0 and (table["days_used"] > 200).all()
