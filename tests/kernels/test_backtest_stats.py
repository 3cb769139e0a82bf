"""The stats table of a backtest (kernels.backtest.stats) against figures worked out by hand:
every expected value is a number written here, not the module's formula run again."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.backtest.stats import backtest_stats, sharpe, stats, trades_opened

APPROX = {"rel": 1e-6, "abs": 1e-12}


def test_four_days_by_hand():
    # r = 0.10, -0.20, 0.25, -0.10 -> equity 1.10, 0.88, 1.10, 0.99
    s = stats(np.array([0.10, -0.20, 0.25, -0.10]), turnover=np.array([1.0, 0.5, 0.0, 0.5]))
    assert s["n_days"] == 4
    assert s["total_return"] == pytest.approx(-0.01, **APPROX)
    assert s["cagr"] == pytest.approx(-0.4690944570, **APPROX)  # 0.99 ** (252 / 4) - 1
    # mean 0.0125; squared deviations sum 0.121875, var 0.040625 (ddof 1), std 0.2015564437
    assert s["ann_vol"] == pytest.approx(3.1996093512, **APPROX)  # 0.2015564437 * sqrt(252)
    assert s["sharpe"] == pytest.approx(0.9844951850, **APPROX)  # 0.0125 / 0.2015564437 * 15.874507866
    # downside: (0 + 0.04 + 0 + 0.01) / 4 = 0.0125 over all four days, DD = 0.1118033989
    assert s["sortino"] == pytest.approx(1.7748239349, **APPROX)  # 0.0125 / 0.1118033989 * 15.874507866
    assert s["max_drawdown"] == pytest.approx(-0.20, **APPROX)  # 0.88 / 1.10 - 1
    assert s["calmar"] == pytest.approx(-2.3454722852, **APPROX)  # -0.4690944570 / 0.20
    assert s["max_drawdown_days"] == 2  # peak day 1 (1.10), back at 1.10 on day 3
    assert s["longest_drawdown_days"] == 2  # the other one: day 3 to the end (day 4), 1 day
    assert s["drawdown_recovered"] is True
    assert s["win_rate"] == 0.5  # 2 of 4 days up
    assert s["avg_daily_turnover"] == pytest.approx(0.5, **APPROX)
    assert s["annual_turnover"] == pytest.approx(126.0, **APPROX)


def test_book_figures_by_hand_exposure_trades_costs_and_their_share_of_gross_profit():
    gross = np.array([0.10, -0.20, 0.25, -0.10])
    cost = np.array([0.01, 0.005, 0.0, 0.005])
    net = np.array([0.089, -0.204, 0.25, -0.1045])  # gross - cost * (1 + gross), as the book's loop
    s = backtest_stats(net, gross, cost, turnover=np.array([1.0, 0.5, 0.0, 0.5]),
                       gross_exposure=np.array([1.0, 0.5, 0.5, 0.0]), trades=np.array([2, 0, 1, 0]))
    assert s["exposure"] == pytest.approx(0.5, **APPROX)  # (1 + 0.5 + 0.5 + 0) / 4
    assert s["trades"] == 3
    assert s["total_costs"] == pytest.approx(0.0195, **APPROX)  # 0.01 * 1.1 + 0.005 * 0.8 + 0 + 0.005 * 0.9
    assert s["gross_profit"] == pytest.approx(0.05, **APPROX)  # 0.1 - 0.2 + 0.25 - 0.1
    assert s["cost_share"] == pytest.approx(0.39, **APPROX)  # 0.0195 / 0.05
    # equity 1.089, 0.866844, 1.083555, 0.970324...: the deepest drawdown never recovers
    assert s["total_return"] == pytest.approx(-0.0296764975, **APPROX)
    assert s["max_drawdown"] == pytest.approx(-0.204, **APPROX)
    assert s["max_drawdown_days"] == 3 and s["drawdown_recovered"] is False  # peak day 1, to the end (day 4)
    assert s["win_rate"] == 0.5


def test_drawdown_duration_of_the_deepest_and_of_the_longest():
    # equity 0.5, 1.0, 0.9, 0.9, 0.9: the deepest (-50%) runs day 0 -> day 2; the longest day 2 -> the end
    s = stats(np.array([-0.5, 1.0, -0.1, 0.0, 0.0]))
    assert s["max_drawdown"] == pytest.approx(-0.5, **APPROX)
    assert s["max_drawdown_days"] == 2 and s["drawdown_recovered"] is True
    assert s["longest_drawdown_days"] == 3


def test_a_drawdown_never_recovered_lasts_to_the_end():
    s = stats(np.array([0.10, -0.50, 0.20]))  # equity 1.1, 0.55, 0.66
    assert s["max_drawdown"] == pytest.approx(-0.5, **APPROX)
    assert s["max_drawdown_days"] == 2 and s["longest_drawdown_days"] == 2  # peak day 1 -> day 3
    assert s["drawdown_recovered"] is False
    assert s["win_rate"] == pytest.approx(2 / 3, **APPROX)


def test_no_trades_flat_book():
    z = np.zeros(5)
    s = backtest_stats(z, z, z, turnover=z, gross_exposure=z, trades=np.zeros(5, np.int64))
    assert s["trades"] == 0 and s["exposure"] == 0.0 and s["total_costs"] == 0.0
    assert s["cost_share"] is None  # no gross profit to take a share of
    assert s["win_rate"] is None  # every day flat
    assert s["sharpe"] is None and s["sortino"] is None and s["calmar"] is None


def test_flat_equity_has_no_drawdown_and_no_ratio():
    s = stats(np.zeros(3))
    assert s["total_return"] == 0.0 and s["cagr"] == 0.0 and s["ann_vol"] == 0.0
    assert s["max_drawdown"] == 0.0 and s["max_drawdown_days"] == 0 and s["longest_drawdown_days"] == 0
    assert s["drawdown_recovered"] is None
    assert s["sharpe"] is None and s["sortino"] is None and s["calmar"] is None


def test_one_day():
    up = stats(np.array([0.01]))
    assert up["n_days"] == 1 and up["cagr"] == pytest.approx(11.2740020992, **APPROX)  # 1.01 ** 252 - 1
    assert up["ann_vol"] is None and up["sharpe"] is None and up["sortino"] is None
    assert up["max_drawdown"] == 0.0 and up["calmar"] is None and up["win_rate"] == 1.0
    down = stats(np.array([-0.05]))
    assert down["max_drawdown"] == pytest.approx(-0.05, **APPROX)
    assert down["max_drawdown_days"] == 1 and down["drawdown_recovered"] is False
    assert down["calmar"] == pytest.approx(-19.9999513169, **APPROX)  # (0.95 ** 252 - 1) / 0.05


def test_no_day():
    s = backtest_stats(np.array([]), np.array([]), np.array([]), turnover=np.array([]),
                       gross_exposure=np.array([]), trades=np.array([]))
    assert s["n_days"] == 0 and s["cagr"] is None and s["exposure"] is None and s["trades"] == 0
    assert s["max_drawdown"] == 0.0 and s["max_drawdown_days"] == 0


def test_a_wiped_out_book_has_calmar_minus_one():
    s = stats(np.array([0.1, -1.0, 0.0]))
    assert s["cagr"] == -1.0 and s["max_drawdown"] == -1.0 and s["calmar"] == -1.0
    assert s["max_drawdown_days"] == 2 and s["drawdown_recovered"] is False


def test_trades_opened_counts_entries_and_sign_flips():
    w = np.array([[0.0, 0.1, -0.1],
                  [0.1, 0.1, 0.1],  # symbol 0 opened, symbol 2 flipped
                  [0.1, 0.0, 0.1],  # symbol 1 closed: no trade opened
                  [0.0, 0.2, -0.1]], np.float32)  # symbol 1 re-opened, symbol 2 flipped
    assert trades_opened(w).tolist() == [2, 2, 0, 2]
    assert trades_opened(np.zeros((0, 3))).tolist() == []


def test_sharpe_is_the_one_sharpe_of_the_evaluation_too():
    from domain.learning.metrics import sharpe_ratio

    r = np.array([0.10, -0.20, 0.25, -0.10])
    assert sharpe(r, 252) == pytest.approx(0.9844951850, **APPROX)
    assert sharpe_ratio(np.array([0.10, np.nan, -0.20, 0.25, -0.10]), 252) == sharpe(r, 252)  # the finite ones
    assert sharpe_ratio(np.full(10, 0.001)) is None  # constant: no Sharpe, not a float's noise


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="non-finite"):
        stats(np.array([0.1, np.nan]))
    with pytest.raises(ValueError, match="gross must have shape"):
        backtest_stats(np.zeros(3), np.zeros(2), np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3))


def test_the_old_report_field_hit_rate_is_still_written_with_the_win_rate():
    s = stats(np.array([0.01, -0.02, 0.0, 0.03]))
    assert s["hit_rate"] == s["win_rate"] == pytest.approx(2 / 3)
