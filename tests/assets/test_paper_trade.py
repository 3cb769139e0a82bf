"""live_paper_trade: inference -> the backtest's weight rule -> orders against the paper book."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest

from domain.live.paper_trade import drifted_book, paper_orders
from pipeline.definitions import defs
from config.settings import read_settings
from resources.delta_store import DeltaStore
from tests.conftest import LEARNED_SYMBOLS


def _run(cfg, instance, monkeypatch, now="2003-12-31"):
    from dagster import materialize

    from pipeline.definitions import ALL_ASSETS, build_resources
    from pipeline.symbols import register_symbols

    register_symbols(instance, LEARNED_SYMBOLS)
    return materialize(ALL_ASSETS, selection=["paper_trades"], instance=instance, resources=build_resources(str(cfg)),
                       run_config={"ops": {"paper_trades": {"config": {"now": now}}}})


def _a_day_with_a_signal(cfg) -> str:
    """The last day of the stored predictions on which some symbol's p_h7 clears the threshold."""
    s = read_settings(cfg)
    pred = DeltaStore(s.experiment_data_dir).read("predictions", [2003])
    days = pred.filter(pl.col("p_h7") > s.backtest.threshold + 0.01)["date"]
    return f"{days.max():%Y-%m-%d}"


def test_live_paper_trade_orders_the_backtest_targets_and_a_second_run_of_the_day_is_refused(learned_copy, instance, monkeypatch):
    day = _a_day_with_a_signal(learned_copy)
    first = _run(learned_copy, instance, monkeypatch, now=day)
    assert first.success
    assert {e.check_name: e.passed for e in first.get_asset_check_evaluations()} == {
        "gross_within_cap": True, "orders_for_known_symbols": True}
    orders = first.output_for_node("paper_trades")
    s = read_settings(learned_copy)
    book = DeltaStore(s.data_dir).read("paper_positions")
    assert orders.height == book.height >= 1  # from an empty book every target is an order
    assert (orders["side"] == "buy").all() and orders["target_weight"].max() <= s.backtest.max_weight + 1e-12
    assert float(book["weight"].abs().sum()) <= s.backtest.max_gross + 1e-12
    second = _run(learned_copy, instance, monkeypatch, now=day)
    assert second.output_for_node("paper_trades").height == 0
    log_path = s.stage_reports_dir("paper_trades") / "orders.jsonl"
    assert second.asset_materializations_for_node("paper_trades")[0].metadata["refused"].value == (
        f"paper_trades: the session of {day} is already traded (run {first.run_id}, {log_path}); nothing ordered, "
        "the paper book is unchanged")
    log = [json.loads(x) for x in log_path.read_text().splitlines()]
    runs = [r for r in log if "orders" in r]
    assert [(r["orders"], r["session"], r["run"]) for r in runs] == [(orders.height, day, first.run_id)]
    assert sum("side" in r for r in log) == orders.height
    assert DeltaStore(s.data_dir).read("paper_positions").equals(book)


def test_paper_targets_equal_the_backtest_weights_for_the_same_day_probabilities(learned_copy):
    from domain.backtest import portfolio_config
    from kernels.backtest.portfolio import run_portfolio

    s = read_settings(learned_copy)
    closes = pl.DataFrame({"symbol": ["AAA", "BBB", "CCC"], "close": [10.0, 20.0, 30.0]}).with_columns(
        pl.lit(np.datetime64("2003-12-31", "us")).alias("date"))
    probs = {"AAA": 0.9, "BBB": 0.55, "CCC": 0.3}
    orders, book = paper_orders(probs, closes, pl.DataFrame(schema={"symbol": pl.String, "weight": pl.Float64,
                                                                  "price": pl.Float64, "date": pl.Datetime("us")}), s)
    expected = run_portfolio(np.array([[10.0, 20.0, 30.0]]), np.array([[0.9, 0.55, 0.3]], dtype=np.float32),
                             portfolio_config(s.backtest)).weights[0]
    np.testing.assert_allclose(orders["target_weight"].to_numpy(), expected[expected != 0])
    assert "CCC" not in orders["symbol"].to_list()  # p below the threshold: no position


def test_the_held_book_drifts_with_prices_before_the_orders_are_computed():
    book = pl.DataFrame({"symbol": ["AAA", "BBB"], "weight": [0.5, 0.5], "price": [10.0, 10.0]})
    closes = pl.DataFrame({"symbol": ["AAA", "BBB"], "close": [12.0, 8.0]})
    held = drifted_book(book, closes)
    # growth = 1 + 0.5*0.2 + 0.5*(-0.2) = 1: weights become 0.6 and 0.4
    assert held == pytest.approx({"AAA": 0.6, "BBB": 0.4})


def test_the_live_job_holds_only_the_paper_stage():
    job = defs.resolve_job_def("live_paper_trade")
    assert {k.to_user_string() for k in job.asset_layer.executable_asset_keys} == {"paper_trades"}


def _book(rows):
    return pl.DataFrame(rows, schema={"symbol": pl.String, "weight": pl.Float64, "price": pl.Float64,
                                      "date": pl.Datetime("us")})


def test_a_held_symbol_without_a_bar_today_stays_frozen_and_shrinks_the_budget(learned_copy):
    s = read_settings(learned_copy).model_copy(deep=True)
    day, stale = dt.datetime(2003, 12, 31), dt.datetime(2003, 12, 30)
    closes = pl.DataFrame({"symbol": ["AAA", "ZZZ"], "close": [10.0, 5.0], "date": [day, stale]})
    book = _book([{"symbol": "ZZZ", "weight": 0.9, "price": 5.0, "date": stale}])
    orders, new_book = paper_orders({"AAA": 0.99, "ZZZ": 0.99}, closes, book, s)
    assert orders["symbol"].to_list() == ["AAA"]  # ZZZ has no bar today: no order
    kept = dict(zip(new_book["symbol"].to_list(), new_book["weight"].to_list()))
    assert kept["ZZZ"] == pytest.approx(0.9)  # still held, not dropped
    assert abs(kept["AAA"]) == pytest.approx(s.backtest.max_gross - 0.9, abs=1e-6)  # only the rest of the budget (float32 weights)


def test_a_held_symbol_missing_from_the_closes_is_kept_not_lost(learned_copy):
    s = read_settings(learned_copy)
    day = dt.datetime(2003, 12, 31)
    closes = pl.DataFrame({"symbol": ["AAA"], "close": [10.0], "date": [day]})
    book = _book([{"symbol": "AAA", "weight": 0.1, "price": 10.0, "date": day},
                  {"symbol": "ZZZ", "weight": 0.2, "price": 5.0, "date": day}])
    _, new_book = paper_orders({"AAA": 0.2}, closes, book, s)
    assert dict(zip(new_book["symbol"].to_list(), new_book["weight"].to_list())).get("ZZZ") == pytest.approx(0.2 / 1.0)
