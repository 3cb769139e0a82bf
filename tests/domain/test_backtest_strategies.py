"""The `backtest` stage with `backtest.strategy` (domain.backtest): the settings reach the
kernel, the stored rows and reports of a topk_dropout book, and the weight-cap check's reading
of a book whose held symbols drift."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl

from config.settings import Settings, parse_settings
from domain import checks
from domain.backtest import build_backtest, exposure_columns, portfolio_config


def test_the_strategy_settings_reach_the_kernels_config():
    bt = parse_settings({"backtest": {"strategy": "topk_dropout", "topk": 2, "n_drop": 1, "open_cost": 0.0005,
                                      "close_cost": 0.0015, "min_cost": 5, "max_turnover": 0.5}}).backtest
    cfg = portfolio_config(bt)
    assert (cfg.strategy, cfg.topk, cfg.n_drop, cfg.hold_thresh, cfg.open_cost, cfg.close_cost, cfg.min_cost,
            cfg.max_turnover, cfg.account) == ("topk_dropout", 2, 1, 1, 0.0005, 0.0015, 5.0, 0.5, 1e6)
    assert portfolio_config(Settings().backtest).threshold_only  # the defaults: the threshold loop of before


def _frames(probs: np.ndarray, prices: np.ndarray):
    T, N = probs.shape
    dates = [dt.datetime(2020, 1, 1) + dt.timedelta(days=t) for t in range(T)]
    rows = [(f"S{i}", dates[t], float(prices[t, i]), float(probs[t, i])) for t in range(T) for i in range(N)]
    bars = pl.DataFrame({"symbol": [r[0] for r in rows], "date": [r[1] for r in rows], "close": [r[2] for r in rows]})
    pred = pl.DataFrame({"symbol": [r[0] for r in rows], "date": [r[1] for r in rows], "p_h7": [r[3] for r in rows]})
    return pred.lazy(), bars.lazy()


def test_a_topk_dropout_backtest_stores_its_book_and_reports_the_strategy(tmp_path):
    probs = np.array([[0.9, 0.8, 0.7, 0.6, 0.5],
                      [0.1, 0.8, 0.9, 0.7, 0.6],
                      [0.2, 0.3, 0.9, 0.8, 0.7],
                      [0.9, 0.95, 0.1, 0.2, 0.3]], dtype=np.float32)
    prices = np.array([[10, 10, 10, 10, 10], [12, 10, 10, 10, 10], [12, 15, 10, 10, 10], [12, 15, 10, 10, 10]],
                      dtype=np.float64)
    pred, bars = _frames(probs, prices)
    bt = parse_settings({"backtest": {"strategy": "topk_dropout", "topk": 2, "n_drop": 1, "max_weight": 0.5,
                                      "fee_bps": 0, "slippage_bps": 0, "close_cost": 0.001}}).backtest
    report = build_backtest(pred, bars, [2020], bt, tmp_path)
    t = report.table
    assert t["positions"].to_list() == [2, 2, 2, 2] and t["trades"].to_list() == [2, 1, 1, 1]
    # day 1: A (+20%, held at 0.5) is sold: 0.6 / 1.1 of the book, at 0.1% -> the day's cost
    assert t["cost"][1] == np.float32(0.001 * 0.6 / 1.1)
    overall = json.loads((tmp_path / "overall.json").read_text())
    assert overall["settings"]["strategy"] == "topk_dropout" and overall["settings"]["n_drop"] == 1
    assert checks.weights_within_caps(t, bt.max_weight, bt.max_gross)[0]


def test_the_cap_check_reads_the_symbols_bought_that_day_for_a_book_that_drifts():
    prices = np.full((3, 2), 10.0)
    weights = np.array([[0.5, 0.5], [0.6, 0.4], [0.6, 0.4]], dtype=np.float32)  # S0 drifted above a 0.5 cap
    assert exposure_columns(prices, weights)["max_abs_weight"].tolist() == [0.5, np.float32(0.6), np.float32(0.6)]
    assert exposure_columns(prices, weights, bought_only=True)["max_abs_weight"].tolist() == [0.5, 0.0, 0.0]


def test_the_paper_book_of_topk_dropout_replaces_from_the_book_it_holds():
    from domain.live.paper_trade import paper_orders

    day = dt.datetime(2020, 1, 2)
    closes = pl.DataFrame({"symbol": ["A", "B", "C"], "date": [day] * 3, "close": [10.0, 10.0, 10.0]})
    book = pl.DataFrame({"symbol": ["A", "B"], "weight": [0.5, 0.5], "price": [10.0, 10.0],
                         "date": [dt.datetime(2020, 1, 1)] * 2})
    settings = parse_settings({"backtest": {"strategy": "topk_dropout", "topk": 2, "n_drop": 1, "max_weight": 0.5}})
    orders, new_book = paper_orders({"A": 0.1, "B": 0.8, "C": 0.9}, closes, book, settings)
    assert sorted(zip(orders["symbol"], orders["side"])) == [("A", "sell"), ("C", "buy")]
    assert dict(zip(new_book["symbol"], new_book["weight"])) == {"B": 0.5, "C": 0.5}
