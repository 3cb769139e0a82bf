"""Every asset check can fail: each computation of domain.checks passes on good output and
fails on deliberately bad output; every asset carries checks with descriptions; the
`strategy_search` asset end to end on a tiny universe."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest

from domain import checks

D = [dt.datetime(2020, 1, d) for d in (2, 3, 6)]


def bars(**replace) -> pl.DataFrame:
    df = pl.DataFrame({"date": D, "symbol": ["AAA"] * 3, "open": [10.0, 11.0, 12.0], "high": [11.0, 12.0, 13.0],
                       "low": [9.0, 10.0, 11.0], "close": [10.5, 11.5, 12.5], "volume": [100.0, 200.0, 300.0]})
    return df.with_columns(**{k: pl.Series(v) for k, v in replace.items()})


def test_raw_bars_checks_pass_on_good_bars():
    for fn in (checks.ohlc_consistent, checks.unique_dates, checks.finite_positive_prices):
        assert fn(bars())[0], fn.__name__


@pytest.mark.parametrize("replace", [{"high": [11.0, 11.2, 13.0]},   # close 11.5 above high
                                     {"low": [9.0, 11.2, 11.0]},     # open 11 below low
                                     {"open": [12.0, 11.0, 12.0]}])  # open above high
def test_ohlc_consistent_fails_when_a_price_lies_outside_low_high(replace):
    passed, meta = checks.ohlc_consistent(bars(**replace))
    assert not passed and meta["inconsistent"] == 1


def test_unique_dates_fails_on_a_repeated_date():
    passed, meta = checks.unique_dates(bars(date=[D[0], D[0], D[2]]))
    assert not passed and meta["duplicated_rows"] == 2
    assert checks.unique_dates(bars(date=[D[0], D[0], D[2]], symbol=["AAA", "BBB", "AAA"]))[0]  # per symbol


@pytest.mark.parametrize("replace", [{"close": [10.5, float("nan"), 12.5]}, {"low": [9.0, -1.0, 11.0]},
                                     {"high": [11.0, float("inf"), 13.0]}, {"volume": [100.0, -5.0, 300.0]},
                                     {"open": [0.0, 11.0, 12.0]}])
def test_finite_positive_prices_fails_on_nan_negative_zero_or_infinite(replace):
    assert not checks.finite_positive_prices(bars(**replace))[0]


def test_finite_positive_prices_passes_close_only_bars_whose_volume_is_nan():
    close_only = bars(volume=[float("nan")] * 3)
    assert checks.finite_positive_prices(close_only) == (True, {"bad_rows": 0, "first": []})
    assert not checks.finite_positive_prices(bars(volume=[100.0, float("inf"), 300.0]))[0]  # infinite: still bad


def test_exchange_sessions_names_a_sunday_and_a_holiday():
    days = [dt.datetime(2016, 1, 1), dt.datetime(2016, 1, 3), dt.datetime(2016, 1, 4)]
    assert checks.exchange_sessions(bars(date=[dt.datetime(2016, 1, d) for d in (4, 5, 6)]), "XNYS")[0]
    assert checks.exchange_sessions(bars(date=days), "XNYS") == (False, {
        "calendar": "XNYS", "non_sessions": 2, "first": ["AAA 2016-01-01 (Friday)", "AAA 2016-01-03 (Sunday)"]})


def test_plausible_moves_names_an_unadjusted_split_and_a_ten_times_spike_per_symbol():
    d = [dt.datetime(2020, 1, day) for day in (2, 3, 6, 7, 8)]
    close = [100.0, 50.0, 51.0, 510.0, 52.0]  # a 2:1 split, then a one-day 10x print
    df = pl.DataFrame({"date": d * 2, "symbol": ["AAA"] * 5 + ["BBB"] * 5, "close": close + [10.0, 11.0, 12.0, 13.0, 14.0]})
    assert checks.plausible_moves(df, 1.5) == (False, {"max_move": 1.5, "jumps": 3, "first": [
        "AAA 2020-01-03 close 100 -> 50", "AAA 2020-01-07 close 51 -> 510", "AAA 2020-01-08 close 510 -> 52"]})
    assert checks.plausible_moves(df.filter(pl.col("symbol") == "BBB"), 1.5)[0]
    assert checks.plausible_moves(df, 11.0)[0]  # the threshold is the setting's


def test_inside_configured_years_names_a_row_dated_2099():
    outside = pl.DataFrame({"symbol": ["AAA"], "date": [dt.datetime(2099, 1, 5)]})
    assert checks.inside_configured_years(outside, 2014, 2020) == (False, {
        "years": "2014..2020", "rows_outside": 1, "first": ["AAA 2099-01-05"]})
    assert checks.inside_configured_years(outside.clear(), 2014, 2020)[0]


def scan(**replace) -> pl.DataFrame:
    df = pl.DataFrame({"symbol": ["AAA", "BBB"], "date": D[:2], "atc": [0.5, -0.2], "state": [1, -1],
                       "atc_ema": [0.4, -0.1]}).with_columns(pl.col("state").cast(pl.Int8), pl.col("atc").cast(pl.Float32))
    return df.with_columns(**{k: pl.Series(v) for k, v in replace.items()})


def test_atc_scan_checks():
    assert checks.every_symbol_scanned(scan(), {"AAA", "BBB"})[0]
    passed, meta = checks.every_symbol_scanned(scan(), {"AAA", "BBB", "CCC"})
    assert not passed and meta["missing"] == ["CCC"]
    assert not checks.every_symbol_scanned(scan(symbol=["AAA", "AAA"]), {"AAA"})[0]  # one row per symbol
    assert checks.states_and_values_in_range(scan())[0]
    assert checks.states_and_values_in_range(scan(atc=[float("nan"), -0.2], state=[0, -1]))[0]  # NaN as neutral
    assert not checks.states_and_values_in_range(scan(state=[2, -1]))[0]
    assert not checks.states_and_values_in_range(scan(atc=[1.5, -0.2]))[0]
    assert not checks.states_and_values_in_range(scan(atc_ema=[0.4, float("-inf")]))[0]
    assert not checks.states_and_values_in_range(scan(atc=[float("nan"), -0.2], state=[1, -1]))[0]


def folds(n_splits=2, **replace) -> pl.DataFrame:
    rows = [{"year": 2003, "horizon": 3, "specialist": "spec_rsi", "method": m, "fold": f, "auc": 0.55, "brier": 0.24,
             "log_loss": 0.69} for m in ("sigmoid", "isotonic") for f in range(n_splits)]
    df = pl.DataFrame(rows)
    return df.with_columns(**{k: pl.Series(v) for k, v in replace.items()})


def test_cv_report_fold_metrics():
    assert checks.fold_metrics_valid(folds(), 2)[0]
    passed, meta = checks.fold_metrics_valid(folds(auc=[None, 0.5, 0.6, 0.4]), 2)
    assert passed and meta["auc_missing"] == 1  # a one-class fold: counted, not failed
    assert checks.fold_metrics_valid(pl.DataFrame(schema={"year": pl.Int32}), 5) == (True, {"folds": 0, "note": "no fold: too few labelled rows"})
    assert not checks.fold_metrics_valid(folds(auc=[1.2, 0.5, 0.6, 0.4]), 2)[0]
    assert not checks.fold_metrics_valid(folds(auc=[float("nan"), 0.5, 0.6, 0.4]), 2)[0]
    assert not checks.fold_metrics_valid(folds(brier=[0.2, -0.1, 0.2, 0.2]), 2)[0]
    assert not checks.fold_metrics_valid(folds(log_loss=[0.7, float("inf"), 0.7, 0.7]), 2)[0]
    passed, meta = checks.fold_metrics_valid(folds(), 5)  # 2 folds where cv.n_splits is 5
    assert not passed and meta["groups_without_n_splits_folds"] == 2


def lstm(scores, symbols=("AAA",) * 3) -> pl.DataFrame:
    return pl.DataFrame({"date": D[: len(scores)], "symbol": list(symbols)[: len(scores)],
                         "spec_lstm_score": pl.Series(scores, dtype=pl.Float32)})


def test_lstm_scores_in_unit_interval():
    nan = float("nan")
    assert checks.scores_in_unit_interval(lstm([nan, 0.3, 0.9]))[0]  # no sequence yet on the first row
    assert checks.scores_in_unit_interval(lstm([0.2, nan, 0.9], ["AAA", "BBB", "AAA"]))[0]  # BBB's first row
    assert not checks.scores_in_unit_interval(lstm([0.2, 1.3, 0.9]))[0]
    assert not checks.scores_in_unit_interval(lstm([0.2, -0.1, 0.9]))[0]
    passed, meta = checks.scores_in_unit_interval(lstm([0.2, nan, 0.9]))
    assert not passed and meta["nan_after_a_score"] == 1


def daily(**replace) -> pl.DataFrame:
    df = pl.DataFrame({"date": D, "net_return": [0.01, -0.02, 0.0], "equity": [1.01, 0.99, 0.99],
                       "gross_exposure": [0.5, 1.0, 0.8], "max_abs_weight": [0.25, 0.25, 0.2]}).cast(
        {c: pl.Float32 for c in ("net_return", "equity", "gross_exposure", "max_abs_weight")})
    return df.with_columns(**{k: pl.Series(v, dtype=pl.Float32) for k, v in replace.items()})


def test_backtest_checks():
    assert checks.equity_finite_positive(daily())[0]
    assert not checks.equity_finite_positive(daily(equity=[1.0, 0.0, 0.0], net_return=[0.0, -1.0, 0.0]))[0]  # wiped
    assert not checks.equity_finite_positive(daily(equity=[1.0, float("nan"), 1.0]))[0]
    assert checks.weights_within_caps(daily(), 0.25, 1.0)[0]
    passed, meta = checks.weights_within_caps(daily(max_abs_weight=[0.25, 0.4, 0.2]), 0.25, 1.0)
    assert not passed and meta["days_over_weight_cap"] == 1
    assert not checks.weights_within_caps(daily(gross_exposure=[0.5, 1.2, 0.8]), 0.25, 1.0)[0]


def test_backtest_exposure_columns_follow_the_weights_of_the_traded_symbols():
    from domain.backtest import exposure_columns

    prices = np.array([[1.0, 2.0], [1.0, np.nan]])
    weights = np.array([[0.2, -0.3], [0.1, 0.4]], dtype=np.float32)  # the 0.4 is frozen (no bar)
    cols = exposure_columns(prices, weights)
    np.testing.assert_allclose(cols["gross_exposure"], [0.5, 0.5], rtol=1e-6)
    np.testing.assert_allclose(cols["max_abs_weight"], [0.3, 0.1], rtol=1e-6)


def test_paper_trade_checks():
    book = pl.DataFrame({"symbol": ["AAA", "BBB"], "weight": [0.25, -0.25]})
    assert checks.gross_within_cap(book, 1.0)[0]
    assert checks.gross_within_cap(book.clear(), 1.0)[0]
    assert not checks.gross_within_cap(book.with_columns(pl.Series("weight", [0.8, -0.4])), 1.0)[0]
    assert not checks.gross_within_cap(book.with_columns(pl.Series("weight", [0.1, float("nan")])), 1.0)[0]
    orders = pl.DataFrame({"symbol": ["AAA", "ZZZ"]})
    assert checks.orders_for_known_symbols(orders, ["AAA", "ZZZ"])[0]
    passed, meta = checks.orders_for_known_symbols(orders, ["AAA"])
    assert not passed and meta["unknown_symbols"] == ["ZZZ"]


def market(codes, secs) -> pl.DataFrame:
    return pl.DataFrame({"ticker_code": pl.Series(codes, dtype=pl.Int8),
                         "datetime": [dt.datetime(2024, 1, 2, 9, 30, s) for s in secs]})


def test_market_data_sorted_by_ticker_then_time():
    assert checks.sorted_by_ticker_time(market([0, 0, 1, 1], [1, 2, 0, 5]))[0]
    assert not checks.sorted_by_ticker_time(market([0, 1, 0], [1, 2, 3]))[0]  # a ticker comes back
    assert not checks.sorted_by_ticker_time(market([0, 0, 1], [2, 1, 0]))[0]  # time goes back
    assert not checks.sorted_by_ticker_time(market([0, 0], [1, 1]))[0]  # the same second twice


def test_trade_log_indices_inside_market_data():
    trades = pl.DataFrame({"trade_id": [1, 2], "MarketDataStartIndex": [0, 5], "MarketDataEndIndex": [3, 9]})
    assert checks.indices_inside_market_data(trades, 10)[0]
    assert not checks.indices_inside_market_data(trades, 9)[0]  # end index 9 outside 9 rows
    assert not checks.indices_inside_market_data(trades.with_columns(pl.Series("MarketDataStartIndex", [-1, 5])), 10)[0]
    passed, meta = checks.indices_inside_market_data(trades.with_columns(pl.Series("MarketDataEndIndex", [3, 4])), 10)
    assert not passed and meta["first_ids"] == [2]  # end before start


def top(rois, stops=(-0.3, -0.4, -0.5)) -> pl.DataFrame:
    params = {"volatility": [0.0] * 3, "ratio": [0.0] * 3, "adx28": [0.0] * 3, "adx14": [0.0] * 3, "adx7": [0.0] * 3,
              "target": [0.2] * 3, "stop_loss": list(stops)}
    return pl.DataFrame({"rank": [1, 2, 3], **params, "roi": rois, "trades": [5, 5, 5]})


def test_grid_search_top_sorted_and_unique():
    assert checks.top_sorted_unique(top([3.0, 2.0, 2.0]))[0]
    assert not checks.top_sorted_unique(top([3.0, 4.0, 2.0]))[0]
    passed, meta = checks.top_sorted_unique(top([3.0, 2.0, 1.0], stops=(-0.3, -0.3, -0.5)))
    assert not passed and meta["duplicated_combinations"] == 1
    assert not checks.top_sorted_unique(top([3.0, 2.0, 1.0]).with_columns(pl.Series("rank", [1, 3, 2])))[0]


def trials(tr, sh, n) -> pl.DataFrame:
    return pl.DataFrame({"trial": list(range(len(tr))), "total_return": tr, "sharpe": sh, "n_trades": n})


def test_strategy_search_front_is_pareto():
    t = trials([0.5, 0.2, 0.1, 0.9], [0.1, 0.3, 0.05, 2.0], [10, 10, 10, 1])  # trial 3 infeasible (1 trade)
    good = t.filter(pl.col("trial").is_in([0, 1]))
    assert checks.front_is_pareto(good, t, ("total_return", "sharpe"), 5)[0]
    passed, meta = checks.front_is_pareto(t.filter(pl.col("trial").is_in([0, 1, 2])), t, ("total_return", "sharpe"), 5)
    assert not passed and meta["dominated_on_front"] == 1  # trial 2 is dominated by 0 and 1
    passed, meta = checks.front_is_pareto(t.filter(pl.col("trial").is_in([0, 1, 3])), t, ("total_return", "sharpe"), 5)
    assert not passed and meta["infeasible_on_front"] == 1
    assert not checks.front_is_pareto(t.clear(), t, ("total_return", "sharpe"), 5)[0]  # empty though feasible exist
    assert checks.front_is_pareto(t.clear(), t.filter(pl.col("trial") == 3), ("total_return", "sharpe"), 5)[0]


def test_every_asset_has_a_check_with_a_description():
    from pipeline.definitions import ALL_ASSETS

    others = {"meta_model", "evaluation", "predictions"}  # owned elsewhere: checks proposed in the report
    without = {a.key.to_user_string() for a in ALL_ASSETS if not a.check_specs}
    assert without <= others, without
    for a in ALL_ASSETS:
        for spec in a.check_specs:
            assert spec.description, f"{a.key.to_user_string()}.{spec.name} has no description"


def test_strategy_search_asset_writes_its_report_front_and_check(make_settings, instance):
    from dagster import materialize

    from assets.raw_bars import raw_bars
    from assets.strategy_search import strategy_search
    from config.settings import read_settings
    from pipeline.definitions import build_resources, defs
    from tests.conftest import run_assets

    cfg = make_settings(universe={"synthetic": {"symbols": ["AAA"], "end_date": "2003-12-31"}},
                        strategy_search={"population": 6, "generations": 2, "min_trades": 1, "backend": "cpu"})
    res = run_assets([raw_bars], cfg, instance, ["AAA"], [2000, 2001, 2002, 2003])
    assert res.success
    assert {e.check_name: e.passed for e in res.get_asset_check_evaluations()} == {
        "ohlc_consistent": True, "unique_dates": True, "finite_positive_prices": True, "exchange_sessions": True,
        "plausible_moves": True, "inside_configured_years": True}
    out = materialize([raw_bars, strategy_search], selection=[strategy_search], partition_key="AAA", instance=instance,
                      resources=build_resources(str(cfg)))
    assert out.success
    meta = out.asset_materializations_for_node("strategy_search")[0].metadata
    assert meta["front"].value.startswith("| trial | generation | total_return | sharpe |")
    assert meta["trials"].value == 12
    evals = out.get_asset_check_evaluations()
    assert [(e.check_name, e.passed) for e in evals] == [("front_is_pareto", True)]
    report = json.loads((read_settings(cfg).stage_reports_dir("strategy_search") / "front_AAA.json").read_text())
    assert report["symbol"] == "AAA" and report["from"].startswith("2000") and report["to"].startswith("2003")
    assert report["trials"] == 12 and len(report["front"]) == meta["front_size"].value
    job = defs.resolve_job_def("strategy_search_job")
    assert job.partitions_def.name == "symbols"


def test_strategy_search_cli_materializes_the_asset_with_its_flags(make_settings, tmp_path, monkeypatch, capsys):
    from assets.raw_bars import raw_bars
    from pipeline.cli import main
    from pipeline.instance import get_instance
    from tests.conftest import run_assets

    cfg = make_settings(universe={"synthetic": {"symbols": ["AAA"], "end_date": "2002-12-31"}})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert run_assets([raw_bars], cfg, get_instance(), ["AAA"], [2000, 2001, 2002]).success
    out = tmp_path / "copy" / "front.json"
    assert main(["strategy-search", "--symbol", "AAA", "--population", "4", "--generations", "1", "--min-trades", "1",
                 "--backend", "cpu", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["settings"]["population"] == 4 and report["trials"] == 4 and report["to"].startswith("2002")
    assert "Pareto front:" in capsys.readouterr().out
    assert main(["strategy-search", "--symbol", "ZZZ"]) == 2  # no stored bars: one line, exit 2
    assert "no raw_bars of ZZZ" in capsys.readouterr().err


def test_meta_predictions_and_evaluation_checks_fail_on_bad_output_and_pass_on_good():
    good_meta = pl.DataFrame({"year": [2003], "horizon": [7], "auc": [0.55], "brier": [0.24], "log_loss": [0.68],
                              "ic": [0.05], "n": [700]})
    assert checks.out_of_sample_metrics_valid(good_meta)[0]
    assert not checks.out_of_sample_metrics_valid(good_meta.with_columns(pl.lit(1.2).alias("auc")))[0]
    assert not checks.out_of_sample_metrics_valid(good_meta.with_columns(pl.lit(0).alias("n")))[0]
    assert checks.out_of_sample_metrics_valid(good_meta.with_columns(pl.lit(None, pl.Float64).alias("auc")))[0]
    day = dt.datetime(2003, 1, 2)
    preds = pl.DataFrame({"symbol": ["AAA", "BBB"], "date": [day, day], "p_h7": [0.4, float("nan")]})
    ok, meta = checks.probabilities_in_unit_interval(preds)
    assert ok and meta["nan_share"] == {"p_h7": 0.5}
    assert not checks.probabilities_in_unit_interval(preds.with_columns(pl.Series("p_h7", [1.5, 0.2])))[0]
    assert not checks.probabilities_in_unit_interval(pl.concat([preds, preds.head(1)]))[0]
    ev = pl.DataFrame({"year": [2003], "horizon": [7], "auc": [0.5], "pr_auc": [0.5], "brier": [0.25],
                       "log_loss": [0.69], "ic": [0.01], "rank_ic": [None]}, schema_overrides={"rank_ic": pl.Float64})
    assert checks.metrics_in_range(ev)[0]
    assert not checks.metrics_in_range(ev.with_columns(pl.lit(-1.5).alias("ic")))[0]


def test_no_nan_after_warmup_fails_on_any_column_and_lists_the_columns_most_first():
    assert checks.no_nan_after_warmup({"f_rsi": 0, "a158_VMA5": 0}) == (True, {"nan_rows_by_column": "none"})
    assert checks.no_nan_after_warmup({"f_rsi": 0, "a158_VSTD5": 12, "a158_CORR5": 119, "a158_VMA5": 12}) == (
        False, {"nan_rows_by_column": {"a158_CORR5": 119, "a158_VMA5": 12, "a158_VSTD5": 12}})  # ties by name
