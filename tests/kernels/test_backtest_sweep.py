"""Sweeps (kernels.backtest.portfolio.run_sweep): many backtests in one pass over the days,
each lane's daily series and stats equal BIT FOR BIT to run_portfolio with that lane's config."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kernels.backtest.portfolio import PortfolioConfig, run_portfolio, run_sweep
from kernels.backtest.stats import backtest_stats, trades_opened

SERIES = ("net", "gross", "turnover", "cost", "equity")


def random_panel(T: int, N: int, seed: int):
    rng = np.random.default_rng(seed)
    prices = (50.0 * np.exp(np.cumsum(rng.normal(0.0, 0.02, (T, N)), axis=0))).astype(np.float32)
    prices[rng.uniform(size=(T, N)) < 0.05] = np.nan
    prices[: T // 4, 0] = np.nan  # listed late
    prices[T // 2:, 1] = np.nan  # delisted
    prices[T // 3] = np.nan  # a row without any bar: no session
    probs = rng.uniform(size=(T, N)).astype(np.float32)
    probs[rng.uniform(size=(T, N)) < 0.1] = np.nan
    return prices, probs


def grid() -> list[PortfolioConfig]:
    """Every strategy, books shared by cost lanes (bps and trade costs), turnover limits, caps."""
    out = [PortfolioConfig(threshold=th, fee_bps=f, open_cost=oc, max_weight=mw)
           for th, f, oc, mw in itertools.product((0.5, 0.6), (0.0, 5.0), (0.0, 0.001), (0.1, 0.3))]
    out += [PortfolioConfig(long_short=True, max_gross=g, max_turnover=mt) for g in (1.0, 1.5) for mt in (None, 0.2)]
    out += [PortfolioConfig(strategy="topk_dropout", topk=k, n_drop=d, hold_thresh=h, max_weight=0.3, min_cost=mc,
                            account=1e4, close_cost=0.002)
            for k, d, h, mc in itertools.product((3, 8), (1, 3), (1, 2), (0.0, 5.0))]
    out += [PortfolioConfig(strategy="long_short", quantile=q, max_turnover=mt, slippage_bps=s)
            for q, mt, s in itertools.product((0.1, 0.3), (None, 0.3), (0.0, 10.0))]
    return out


@pytest.mark.parametrize("T, N, seed, chunk", [(260, 9, 1, 64), (150, 41, 2, 150), (90, 130, 3, 7)])
def test_every_lane_is_the_one_backtest_of_its_config_bit_for_bit(T, N, seed, chunk):
    prices, probs = random_panel(T, N, seed)
    configs = grid()
    sw = run_sweep(prices, probs, configs, chunk_days=chunk)
    assert sw.books < len(configs)  # cost lanes shared their book
    for j, cfg in enumerate(configs):
        one = run_portfolio(prices, probs, cfg, chunk_days=97)
        for k in SERIES:
            assert getattr(sw, k)[j].tobytes() == getattr(one, k).tobytes(), (j, cfg, k)
        np.testing.assert_array_equal(sw.trades[j], trades_opened(one.weights))
        exposure = np.abs(one.weights.astype(np.float64)).sum(axis=1)
        np.testing.assert_allclose(sw.exposure[j], exposure, rtol=1e-12, atol=1e-15)
        mine = sw.stats(j)
        theirs = backtest_stats(one.net, one.gross, one.cost, one.turnover, sw.exposure[j], trades_opened(one.weights))
        assert mine == theirs  # every figure: the same floats


def test_results_do_not_depend_on_threads_chunks_or_the_other_lanes():
    prices, probs = random_panel(200, 23, 4)
    configs = grid()
    base = run_sweep(prices, probs, configs, threads=1)
    for kw in ({"threads": 3}, {"chunk_days": 1}, {"chunk_days": 1000, "threads": 2}):
        other = run_sweep(prices, probs, configs, **kw)
        for k in SERIES + ("exposure", "trades"):
            assert getattr(other, k).tobytes() == getattr(base, k).tobytes(), (kw, k)
    alone = run_sweep(prices, probs, configs[5:6])
    for k in SERIES:
        assert getattr(alone, k)[0].tobytes() == getattr(base, k)[5].tobytes()


def test_lanes_that_differ_only_in_costs_share_one_book():
    prices, probs = random_panel(50, 6, 5)
    configs = [PortfolioConfig(fee_bps=f) for f in (0.0, 1.0, 10.0)] + [PortfolioConfig(threshold=0.7)]
    sw = run_sweep(prices, probs, configs)
    assert sw.books == 2
    assert np.array_equal(sw.turnover[0], sw.turnover[2]) and not np.array_equal(sw.net[0], sw.net[2])


def test_an_empty_sweep_is_a_clear_error():
    prices, probs = random_panel(10, 3, 6)
    with pytest.raises(ValueError, match="at least one config"):
        run_sweep(prices, probs, [])
