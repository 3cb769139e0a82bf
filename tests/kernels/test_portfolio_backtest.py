"""Daily portfolio backtest kernel (kernels.backtest.portfolio) against hand-computed days and
the plain NumPy reference (kernels.backtest.reference)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernels.backtest.portfolio import PortfolioConfig, run_portfolio, stats
from kernels.backtest.reference import run_portfolio_reference

NAN = np.nan
SERIES = ("net", "gross", "turnover", "cost", "equity")


def random_panel(T: int, N: int, seed: int, missing: float = 0.05, no_pred: float = 0.1):
    """Log-normal closes with random missing bars (and symbols listed late / delisted early),
    uniform probabilities with random gaps."""
    rng = np.random.default_rng(seed)
    prices = (50.0 * np.exp(np.cumsum(rng.normal(0.0, 0.02, (T, N)), axis=0))).astype(np.float32)
    prices[rng.uniform(size=(T, N)) < missing] = np.nan
    prices[: T // 4, 0] = np.nan  # listed late
    prices[T // 2:, 1] = np.nan  # delisted
    probs = rng.uniform(size=(T, N)).astype(np.float32)
    probs[rng.uniform(size=(T, N)) < no_pred] = np.nan
    return prices, probs


def assert_same(a, b, atol=1e-12):
    for k in SERIES:
        np.testing.assert_allclose(getattr(a, k), getattr(b, k), rtol=0, atol=atol, err_msg=k)
    np.testing.assert_allclose(a.weights, b.weights, rtol=0, atol=1e-7)


# ---------------------------------------------------------------- the rules on hand-computed days


def test_three_days_by_hand():
    cfg = PortfolioConfig(threshold=0.5, max_gross=1.0, max_weight=1.0, fee_bps=7.0, slippage_bps=3.0)
    prices = np.array([[100, 50], [110, 50], [110, 40]], dtype=np.float32)
    probs = np.array([[0.8, 0.6], [NAN, 0.7], [0.4, 0.4]], dtype=np.float32)
    res = run_portfolio(prices, probs, cfg)
    c = 10 / 1e4
    # day 0: s = (0.3, 0.1) -> w = (0.75, 0.25); nothing held before, turnover = 1
    # day 1: r = (0.1, 0); drifted = (0.825, 0.25) / 1.075; NaN p -> sell symbol 0, all in symbol 1
    # day 2: r = (0, -0.2); drifted = (0, 1); p <= threshold everywhere -> flat
    d1 = np.array([0.825, 0.25]) / 1.075
    tv = [1.0, abs(0 - d1[0]) + abs(1 - d1[1]), 1.0]
    g = [0.0, 0.075, -0.2]
    net = [(1 + g[t]) * (1 - tv[t] * c) - 1 for t in range(3)]
    np.testing.assert_allclose(res.weights, [[0.75, 0.25], [0, 1], [0, 0]], atol=1e-7)
    np.testing.assert_allclose(res.gross, g, atol=1e-7)
    np.testing.assert_allclose(res.turnover, tv, atol=1e-7)
    np.testing.assert_allclose(res.cost, np.array(tv) * c, atol=1e-12)
    np.testing.assert_allclose(res.net, net, atol=1e-7)
    np.testing.assert_allclose(res.equity, np.cumprod(1 + np.array(net)), atol=1e-7)
    assert res.equity[0] == pytest.approx(1 - c)  # capital 1.0 before day 0, the first trade costs


def test_output_dtypes_and_shapes():
    prices, probs = random_panel(40, 6, seed=0)
    res = run_portfolio(prices, probs)
    assert res.weights.dtype == np.float32 and res.weights.shape == (40, 6)
    for k in SERIES:
        assert getattr(res, k).dtype == np.float64 and getattr(res, k).shape == (40,)


def test_long_only_weights_follow_p_above_threshold_and_respect_the_caps():
    prices, probs = random_panel(200, 30, seed=1)
    cfg = PortfolioConfig(threshold=0.55, max_gross=0.8, max_weight=0.06)
    w = run_portfolio(prices, probs, cfg).weights.astype(np.float64)
    has_bar = np.isfinite(prices)
    assert (w >= 0).all()
    assert (w[has_bar] <= 0.06 + 1e-7).all()  # without a bar a weight is frozen (and drifts)
    assert (np.abs(w).sum(axis=1) <= 0.8 + 1e-6).all()
    no_signal = has_bar & ~(probs > 0.55)  # p <= threshold or NaN, with a bar: no position
    assert (w[no_signal] == 0).all()
    assert (w[has_bar & (probs > 0.55)] > 0).all()


def test_weights_are_proportional_to_conviction_below_the_cap():
    prices = np.full((1, 3), 10.0, dtype=np.float32)
    probs = np.array([[0.9, 0.7, 0.6]], dtype=np.float32)  # s = 0.4, 0.2, 0.1
    w = run_portfolio(prices, probs, PortfolioConfig(max_weight=1.0)).weights[0]
    np.testing.assert_allclose(w, np.array([4, 2, 1]) / 7, atol=1e-7)
    capped = run_portfolio(prices, probs, PortfolioConfig(max_weight=0.3)).weights[0]
    np.testing.assert_allclose(capped, [0.3, 2 / 7, 1 / 7], atol=1e-7)  # the excess stays in cash


def test_long_short_maps_p_to_2p_minus_1_and_normalises_gross():
    prices = np.full((1, 3), 10.0, dtype=np.float32)
    probs = np.array([[0.9, 0.2, 0.5]], dtype=np.float32)  # s = 0.8, -0.6, 0
    w = run_portfolio(prices, probs, PortfolioConfig(long_short=True, max_gross=2.0, max_weight=2.0)).weights[0]
    np.testing.assert_allclose(w, [0.8 / 1.4 * 2, -0.6 / 1.4 * 2, 0.0], atol=1e-6)


def test_costs_are_turnover_times_fee_plus_slippage_bps():
    prices, probs = random_panel(120, 10, seed=2)
    res = run_portfolio(prices, probs, PortfolioConfig(fee_bps=2.5, slippage_bps=4.0))
    np.testing.assert_allclose(res.cost, res.turnover * 6.5e-4, rtol=1e-15)
    np.testing.assert_allclose(res.net, (1 + res.gross) * (1 - res.cost) - 1, rtol=0, atol=1e-15)
    free = run_portfolio(prices, probs, PortfolioConfig(fee_bps=0.0, slippage_bps=0.0))
    np.testing.assert_array_equal(free.net, free.gross)
    assert (free.equity > res.equity)[-1]


def test_turnover_is_measured_against_the_drifted_weights():
    # constant targets (0.5, 0.5); symbol 0 gains 10%: the book drifts to (0.55, 0.5) / 1.05
    prices = np.array([[10, 10], [11, 10]], dtype=np.float32)
    probs = np.full((2, 2), 0.9, dtype=np.float32)
    res = run_portfolio(prices, probs, PortfolioConfig(max_weight=1.0))
    drifted = np.array([0.55, 0.5]) / 1.05
    assert res.turnover[1] == pytest.approx(np.abs(0.5 - drifted).sum(), abs=1e-7)
    assert res.gross[1] == pytest.approx(0.05, abs=1e-7)


def test_missing_bar_earns_zero_keeps_its_weight_and_the_gap_move_is_realised_later():
    cfg = PortfolioConfig(max_weight=1.0, fee_bps=0.0, slippage_bps=0.0)
    prices = np.array([[10, 50], [11, NAN], [11, 60]], dtype=np.float32)
    probs = np.array([[0.7, 0.7], [0.7, 0.9], [0.7, 0.7]], dtype=np.float32)
    res = run_portfolio(prices, probs, cfg)
    # day 1: symbol 1 has no bar: earns 0, cannot trade, keeps its drifted weight 0.5 / 1.05
    frozen = 0.5 / 1.05
    assert res.gross[1] == pytest.approx(0.05, abs=1e-7)
    assert res.weights[1, 1] == pytest.approx(frozen, abs=1e-7)
    assert res.weights[1, 0] == pytest.approx(1.0 - frozen, abs=1e-6)  # the rest of the budget
    # day 2: back at 60 against its last close 50: +20% on the frozen weight
    assert res.gross[2] == pytest.approx(frozen * 0.2, abs=1e-7)


def test_a_symbol_gets_no_weight_on_a_day_without_a_price():
    prices, probs = random_panel(150, 12, seed=3, missing=0.2)
    res = run_portfolio(prices, probs)
    held_before = np.vstack([np.zeros((1, 12), np.float32), res.weights[:-1]])
    opened = ~np.isfinite(prices) & (held_before == 0)
    assert (res.weights[opened] == 0).all()
    assert (res.weights[:37, 0] == 0).all()  # symbol 0 is listed on day 37


def test_no_look_ahead_prefix_runs_agree_with_the_full_run():
    prices, probs = random_panel(100, 8, seed=4)
    full = run_portfolio(prices, probs)
    for k in (1, 13, 64):
        part = run_portfolio(prices[:k], probs[:k])
        for name in SERIES:
            np.testing.assert_array_equal(getattr(part, name), getattr(full, name)[:k])
        np.testing.assert_array_equal(part.weights, full.weights[:k])


def test_no_look_ahead_a_signal_of_day_t_earns_day_t_plus_1_not_day_t():
    rng = np.random.default_rng(5)
    T, N = 500, 20
    r = rng.normal(0, 0.01, (T, N))
    prices = (100 * np.exp(np.cumsum(r, axis=0))).astype(np.float64)
    rets = np.vstack([np.full((1, N), np.nan), prices[1:] / prices[:-1] - 1])
    cfg = PortfolioConfig(max_weight=1.0, fee_bps=0.0, slippage_bps=0.0)
    tomorrow = np.vstack([(rets[1:] > 0).astype(float) * 0.5 + 0.25, np.full((1, N), 0.5)])
    today = np.nan_to_num((rets > 0).astype(float) * 0.5 + 0.25, nan=0.5)
    assert run_portfolio(prices, tomorrow, cfg).gross[1:].min() > 0  # knowing t+1 always wins
    same_day = run_portfolio(prices, today, cfg).gross
    assert abs(same_day.mean()) < 3 * same_day.std() / np.sqrt(T)  # knowing t wins nothing


def test_a_leveraged_book_can_be_wiped_out_and_stays_at_zero():
    cfg = PortfolioConfig(max_gross=2.0, max_weight=2.0, fee_bps=0.0, slippage_bps=0.0)
    prices = np.array([[100], [1], [2]], dtype=np.float32)  # -99% on a 2x book
    res = run_portfolio(prices, np.full((3, 1), 0.9, np.float32), cfg)
    assert res.net[1] == -1.0 and res.equity[1] == 0.0 and res.equity[2] == 0.0


# ---------------------------------------------------------------- chunks and parity


@pytest.mark.parametrize("chunk_days", [1, 7, 64, 1000])
def test_results_do_not_depend_on_chunk_days(chunk_days):
    prices, probs = random_panel(300, 25, seed=6)
    base = run_portfolio(prices, probs, chunk_days=300)
    res = run_portfolio(prices, probs, chunk_days=chunk_days)
    for k in SERIES:
        np.testing.assert_array_equal(getattr(res, k), getattr(base, k))
    np.testing.assert_array_equal(res.weights, base.weights)


def test_on_chunk_sees_each_chunk_once_in_order_with_its_rows():
    prices, probs = random_panel(100, 5, seed=7)
    seen = []

    def log(a, b, arrays):
        seen.append((a, b, {k: v.copy() for k, v in arrays.items()}))

    res = run_portfolio(prices, probs, chunk_days=30, on_chunk=log)
    assert [(a, b) for a, b, _ in seen] == [(0, 30), (30, 60), (60, 90), (90, 100)]
    for a, b, arrays in seen:
        for k in SERIES:
            np.testing.assert_array_equal(arrays[k], getattr(res, k)[a:b])
        np.testing.assert_array_equal(arrays["weights"], res.weights[a:b])


@pytest.mark.parametrize("cfg", [
    PortfolioConfig(),
    PortfolioConfig(threshold=0.6, max_weight=0.03, fee_bps=5.0, slippage_bps=10.0),
    PortfolioConfig(long_short=True, max_gross=1.5, max_weight=0.2),
    PortfolioConfig(max_gross=3.0, max_weight=1.0),
], ids=["default", "tight", "long_short", "leveraged"])
def test_parity_with_the_numpy_reference(cfg):
    prices, probs = random_panel(400, 40, seed=8)
    assert_same(run_portfolio(prices, probs, cfg, chunk_days=37), run_portfolio_reference(prices, probs, cfg))


def test_parity_with_float64_inputs():
    prices, probs = random_panel(200, 15, seed=9)
    prices, probs = prices.astype(np.float64), probs.astype(np.float64)
    assert_same(run_portfolio(prices, probs), run_portfolio_reference(prices, probs))


def test_empty_panels():
    res = run_portfolio(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    assert res.net.shape == (0,) and res.weights.shape == (0, 3)


def test_bad_inputs_are_clear_errors():
    good = np.ones((3, 2), np.float32)
    with pytest.raises(ValueError, match="same shape"):
        run_portfolio(good, np.ones((3, 3), np.float32))
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        run_portfolio(good, good * 1.5)
    with pytest.raises(ValueError, match=r"must be \[T, N\]"):
        run_portfolio(good[0], good[0])
    with pytest.raises(ValueError, match="chunk_days"):
        run_portfolio(good, good * 0.5, chunk_days=0)
    with pytest.raises(ValueError, match="threshold"):
        PortfolioConfig(threshold=1.0)
    with pytest.raises(ValueError, match="max_weight"):
        PortfolioConfig(max_weight=0.0)
    with pytest.raises(ValueError, match="fee_bps"):
        PortfolioConfig(fee_bps=-1.0)


# ---------------------------------------------------------------- stats


def test_stats_by_hand():
    r = np.array([0.01, -0.02, 0.0, 0.03])
    s = stats(r, turnover=np.array([1.0, 0.5, 0.0, 0.5]), periods_per_year=252)
    eq = np.cumprod(1 + r)
    assert s["n_days"] == 4
    assert s["total_return"] == pytest.approx(eq[-1] - 1)
    assert s["cagr"] == pytest.approx(eq[-1] ** (252 / 4) - 1)
    assert s["sharpe"] == pytest.approx(r.mean() / r.std(ddof=1) * math.sqrt(252))
    assert s["ann_vol"] == pytest.approx(r.std(ddof=1) * math.sqrt(252))
    assert s["max_drawdown"] == pytest.approx(eq[1] / eq[0] - 1)  # the peak after day 0
    assert s["win_rate"] == pytest.approx(2 / 3)  # the flat day is not counted
    assert s["avg_daily_turnover"] == pytest.approx(0.5)
    assert s["annual_turnover"] == pytest.approx(126.0)


def test_stats_drawdown_counts_from_the_starting_capital():
    s = stats(np.array([-0.1, 0.05]))
    assert s["max_drawdown"] == pytest.approx(-0.1)


def test_stats_sharpe_is_none_for_constant_returns_or_fewer_than_two_days():
    assert stats(np.full(10, 0.001))["sharpe"] is None
    assert stats(np.array([0.01]))["sharpe"] is None
    assert stats(np.array([]))["cagr"] is None
    assert stats(np.zeros(5))["win_rate"] is None
    assert stats(np.zeros(5))["max_drawdown"] == 0.0


def test_stats_of_a_result_and_wiped_out_equity():
    prices, probs = random_panel(250, 10, seed=10)
    res = run_portfolio(prices, probs)
    s = res.stats()
    assert s["total_return"] == pytest.approx(res.equity[-1] - 1, rel=1e-12)
    assert s["avg_daily_turnover"] == pytest.approx(res.turnover.mean())
    assert stats(np.array([0.1, -1.0, 0.0]))["cagr"] == -1.0
    with pytest.raises(ValueError, match="non-finite"):
        stats(np.array([0.1, np.nan]))


def test_the_loop_logging_to_a_blocked_sink_is_not_held_up_and_close_loses_nothing():
    """The day log goes through the asynchronous writer between numba chunks: a sink that
    blocks on its first batch until the loop has ended (in the writer's thread) does not hold
    the loop up, and close() then hands it every day in order."""
    import threading

    from domain.async_writer import AsyncWriter

    prices, probs = random_panel(2000, 20, seed=5)
    batches: list[list] = []
    gate = threading.Event()

    def blocked_sink(batch):
        assert gate.wait(30.0), "the loop never finished"
        batches.append(list(batch))

    writer = AsyncWriter(sink=blocked_sink, batch_size=64)

    def log(a, b, arrays):
        writer.write_many({"t": a + i, "net": float(arrays["net"][i])} for i in range(b - a))

    res = run_portfolio(prices, probs, chunk_days=50, on_chunk=log)
    assert writer.records_written == 0  # the loop ended with the sink still holding its first batch
    gate.set()
    writer.close()
    logged = [r for batch in batches for r in batch]
    assert [r["t"] for r in logged] == list(range(2000))  # nothing lost, in order
    assert [r["net"] for r in logged] == res.net.tolist()
