"""domain.backtest_sweep: the sweep report (sorted table, heatmap, PBO and deflated Sharpe over
the lanes, what every figure stands on) and the CLI's --sweep grammar."""

from __future__ import annotations

import json

import numpy as np
import pytest

from config.settings import BacktestSettings
from domain.backtest import portfolio_config
from domain.backtest_sweep import day_blocks, overfitting_guard, run_sweep_report, sort_rows, sweep_lines
from kernels.backtest.portfolio import run_portfolio
from kernels.backtest.stats import stats


def panel(T=300, N=12, seed=0):
    rng = np.random.default_rng(seed)
    prices = 50.0 * np.exp(np.cumsum(rng.normal(0.0, 0.02, (T, N)), axis=0))
    probs = rng.uniform(size=(T, N)).astype(np.float32)
    probs[:20] = np.nan  # no prediction yet: outside the span
    dates = np.arange("2010-01-01", T, dtype="datetime64[D]").astype("datetime64[us]")
    return dates, [f"S{i}" for i in range(N)], prices, probs


def test_the_report_sorts_every_lane_and_says_what_it_stands_on(tmp_path):
    dates, symbols, prices, probs = panel()
    bt = BacktestSettings(strategy="topk_dropout", max_weight=0.5,
                          sweep={"grid": {"topk": [2, 4, 6], "n_drop": [1, 2], "fee_bps": [0, 20]}, "sort_by": "cagr"})
    rep = run_sweep_report(dates, symbols, prices, probs, (20, 300), bt, tmp_path, portfolio_config)
    assert (rep["lanes"], rep["books"], rep["days"], rep["symbols"]) == (12, 6, 280, 12)
    assert rep["from"] == "2010-01-21" and rep["to"] == str(dates[299])[:10]
    cagrs = [r["cagr"] for r in rep["rows"]]
    assert cagrs == sorted(cagrs, reverse=True)
    on_disk = json.loads((tmp_path / "sweep.json").read_text())
    assert on_disk["rows"] == json.loads(json.dumps(rep["rows"]))
    assert (tmp_path / "sweep.png").read_bytes()[:4] == b"\x89PNG" and rep["heatmap"]["x"] == "topk"
    assert 0.0 <= rep["pbo"]["pbo"] <= 1.0 and rep["pbo"]["splits"] == 70  # C(8, 4)
    assert 0.0 <= rep["deflated_sharpe"]["dsr"] <= 1.0
    # a row is the one backtest of its point over the span
    row = next(r for r in rep["rows"] if (r["topk"], r["n_drop"], r["fee_bps"]) == (4, 2, 20.0))

    one = run_portfolio(prices, probs, portfolio_config(bt.model_copy(update={"topk": 4, "n_drop": 2, "fee_bps": 20.0})))
    assert row["sharpe"] == stats(one.net[20:])["sharpe"] and row["cagr"] == stats(one.net[20:])["cagr"]
    text = "\n".join(sweep_lines(rep, top=3))
    assert "12 backtests (6 books) over 280 days" in text and "12 symbols" in text and "9 more rows" in text
    assert "PBO" in text and "deflated Sharpe" in text


def test_without_a_grid_there_is_no_report(tmp_path):
    dates, symbols, prices, probs = panel(50, 3)
    assert run_sweep_report(dates, symbols, prices, probs, (0, 50), BacktestSettings(), tmp_path, portfolio_config) is None
    assert not (tmp_path / "sweep.json").exists()


def test_the_guard_counts_identical_lanes_once_and_blocks_are_contiguous_days():
    assert [b.tolist() for b in day_blocks(10, 4)] == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    assert day_blocks(1, 8) == [] and len(day_blocks(5, 8)) == 4
    rng = np.random.default_rng(1)
    net = rng.normal(0, 0.01, (5, 200))
    g = overfitting_guard(np.vstack([net, net[:2]]), best=0, blocks=6)
    assert g["lanes"] == 7 and g["distinct_lanes"] == 5 and g["pbo"]["candidates"] == 5 and g["pbo"]["splits"] == 20
    one = overfitting_guard(np.vstack([net[:1], net[:1]]), best=0, blocks=6)
    assert one["pbo"]["pbo"] is None and "fewer than 2 distinct lanes" in one["pbo"]["reason"]


def test_a_dominant_lane_has_a_low_pbo_and_noise_about_a_half():
    rng = np.random.default_rng(2)
    noise = rng.normal(0, 0.01, (40, 400))
    assert 0.2 < overfitting_guard(noise, 0, 8)["pbo"]["pbo"] < 0.8
    skilled = noise.copy()
    skilled[3] += 0.01
    assert overfitting_guard(skilled, 3, 8)["pbo"]["pbo"] < 0.05


def test_sort_rows_puts_missing_figures_last_and_smaller_first_where_less_is_better():
    rows = [{"sharpe": None, "annual_turnover": 3.0}, {"sharpe": 1.0, "annual_turnover": 9.0},
            {"sharpe": 2.0, "annual_turnover": 1.0}]
    assert [r["sharpe"] for r in sort_rows(rows, "sharpe")] == [2.0, 1.0, None]
    assert [r["annual_turnover"] for r in sort_rows(rows, "annual_turnover")] == [1.0, 3.0, 9.0]


def test_the_cli_sweep_grammar():
    from pipeline.cli.learning import parse_sweep

    assert parse_sweep("topk=10,20,50 n_drop=1,5;fee_bps=0") == {"topk": [10, 20, 50], "n_drop": [1, 5], "fee_bps": [0]}
    for bad in ("topk", "topk=a,b", "=1"):
        with pytest.raises(ValueError, match="expected e.g. topk=10,20,50"):
            parse_sweep(bad)
