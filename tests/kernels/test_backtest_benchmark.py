"""kernels.backtest.benchmark: the equal-weight book (rebalanced daily)'s daily returns and the
figures of a strategy against it, on cases small enough to compute by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernels.backtest.benchmark import benchmark_returns, relative_stats

NAN = np.nan


def test_equal_weight_returns_average_the_symbols_with_a_close_today_and_before_a_gap_lands_when_the_bar_returns():
    prices = np.array([[10.0, 20.0, 40.0],
                       [11.0, 20.0, NAN],  # CCC has no bar: mean of AAA +10% and BBB 0%
                       [12.1, 22.0, 44.0],  # CCC's move over the gap (40 -> 44) lands today
                       [11.0, NAN, 44.0],
                       [11.0, 22.0, 48.4],
                       [NAN, 24.2, 48.4]])
    np.testing.assert_allclose(benchmark_returns(prices),
                               [0.0, 0.05, 0.1, (-1 / 11 + 0.0) / 2, (0.0 + 0.0 + 0.1) / 3, (0.1 + 0.0) / 2], rtol=1e-12)


def test_one_symbol_is_its_buy_and_hold_compounding_to_last_over_first_close_across_gaps_and_bad_prices():
    prices = np.array([[50.0], [NAN], [55.0], [0.0], [-1.0], [60.0]])  # 0 and negative closes are no bar
    r = benchmark_returns(prices)
    np.testing.assert_allclose(r, [0.0, 0.0, 0.1, 0.0, 0.0, 60 / 55 - 1], rtol=1e-12)
    assert np.prod(1 + r) == pytest.approx(60 / 50)


def test_day_zero_is_zero_and_a_day_without_any_valid_close_is_zero_and_empty_panels_are_empty():
    prices = np.array([[NAN, NAN], [1.0, NAN], [NAN, NAN], [1.5, 2.0]])  # BBB's first close: not yet held
    np.testing.assert_allclose(benchmark_returns(prices), [0.0, 0.0, 0.0, 0.5])
    assert benchmark_returns(np.empty((0, 3))).shape == (0,)
    np.testing.assert_array_equal(benchmark_returns(np.empty((4, 0))), np.zeros(4))
    with pytest.raises(ValueError, match=r"prices must be \[T, K\]"):
        benchmark_returns(np.ones(3))


def test_relative_stats_of_a_strategy_that_beat_its_benchmark_by_hand():
    s = np.array([0.0, 0.01, 0.0, 0.01])
    b = np.array([0.0, 1 / 300, 1 / 300, 2 / 300])
    rel = relative_stats(s, b)
    # CAGR over 4 days: growth ** (252 / 4) - 1
    assert rel["excess_return"] == pytest.approx((1.0201 ** 63 - 1) - (((301 / 300) ** 2 * (302 / 300)) ** 63 - 1))
    # d = s - b = [0, 2, -1, 1] / 300: mean 1/600, deviations [-1, 3, -3, 1] / 600, var (20/360000) / 3 = 1/54000
    assert rel["tracking_error"] == pytest.approx(math.sqrt(252 / 54000))
    assert rel["information_ratio"] == pytest.approx((252 / 600) / math.sqrt(252 / 54000))  # = sqrt(37.8)
    # cov(s, b) = (0.005/300 + 0.005/300) / 3 = 1/90000; var(b) = (2/90000) / 3 = 1/135000
    assert rel["beta"] == pytest.approx(1.5)


def test_a_flat_strategy_against_a_rising_benchmark_lost_with_beta_zero_and_information_ratio_minus_its_sharpe():
    b = np.array([0.0, 1 / 300, 1 / 300, 2 / 300])
    rel = relative_stats(np.zeros(4), b)
    assert rel["excess_return"] == pytest.approx(-(((301 / 300) ** 2 * (302 / 300)) ** 63 - 1))
    assert rel["beta"] == 0.0 and rel["information_ratio"] == pytest.approx(-math.sqrt(378))  # b's Sharpe, negated
    assert rel["tracking_error"] == pytest.approx(math.sqrt(2 / 3) / 300 * math.sqrt(252))


def test_relative_stats_without_variation_or_days_are_none_never_nan():
    assert relative_stats([], []) == {"excess_return": None, "information_ratio": None, "tracking_error": None,
                                      "beta": None}
    one = relative_stats([0.01], [0.02])  # one day: a CAGR each, no dispersion
    assert one["excess_return"] == pytest.approx(1.01 ** 252 - 1.02 ** 252)
    assert (one["tracking_error"], one["information_ratio"], one["beta"]) == (None, None, None)
    same = relative_stats([0.01, 0.02, 0.0], [0.01, 0.02, 0.0])  # the benchmark itself: d == 0
    assert same == {"excess_return": 0.0, "information_ratio": None, "tracking_error": 0.0, "beta": pytest.approx(1.0)}
    flat_benchmark = relative_stats([0.01, -0.01], [0.0, 0.0])
    assert flat_benchmark["beta"] is None and flat_benchmark["information_ratio"] is not None
    with pytest.raises(ValueError, match="same length"):
        relative_stats([0.0, 0.1], [0.0])
