"""Multi-lane cores (kernels.indicators.multilane) through `kernels.indicators.sweep`: every lane is
bit for bit its single-lane core (the same bytes, warm-up NaN included), float32 and
float64, periods from the minimum (1 or 2) to longer than the series, in any order.

Single-lane cores stay the TA-Lib oracle's subject (test_kernels_talib.py); parity with
them is what carries TA-Lib parity and streaming exactness over to the sweeps.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels import indicators as K
from tests.kernel_data import goog_ohlc

LANE_NAMES = sorted(K.LANE_CORES)
HLC = {"atr", "adx", "plus_di", "minus_di"}


def min_period(name: str) -> int:
    return K.SPECS[K.ALIASES.get(name, name)].min_n


def inputs_for(name, h, l, c):
    return (h, l, c) if name in HLC else (c,)


def assert_bitwise_equal(swept, single, label):
    swept = np.ascontiguousarray(swept)
    assert swept.dtype == single.dtype, label
    assert swept.shape == single.shape, label
    uint = np.uint64 if single.dtype == np.float64 else np.uint32
    diff = np.flatnonzero(swept.view(uint) != single.view(uint))
    assert diff.size == 0, f"{label}: first differing row {diff[:1]} ({swept[diff[:1]]} vs {single[diff[:1]]})"


# Prices with plateaus (equal consecutive values: the EMA's tie, a zero change, a zero
# true range), zero ranges (high == low == close) and missing bars (NaN).
prices = st.lists(st.one_of(st.floats(1.0, 1000.0, allow_nan=False, allow_infinity=False), st.just(100.0),
                            st.just(float("nan"))), min_size=0, max_size=60)
spreads = st.lists(st.one_of(st.just(0.0), st.floats(0.0, 5.0, allow_nan=False)), min_size=60, max_size=60)


@settings(max_examples=150, deadline=None)
@given(close=prices, up=spreads, down=spreads, extra=st.lists(st.integers(1, 80), max_size=6),
       name=st.sampled_from(LANE_NAMES), dtype=st.sampled_from([np.float32, np.float64]))
def test_every_lane_equals_its_single_lane_core_bit_for_bit_on_random_series(close, up, down, extra, name, dtype):
    c = np.asarray(close, dtype=np.float64)
    h = c + np.asarray(up[: c.size])
    l = c - np.asarray(down[: c.size])
    lo = min_period(name)
    # the minimum, 2, and periods around and past the series' length, unsorted, repeated
    periods = [lo, 2, *[max(lo, p) for p in extra], max(lo, c.size + 1), max(lo, c.size), lo]
    swept = K.sweep(name, inputs_for(name, h, l, c), periods, dtype=dtype)
    assert len(swept) == len(periods)
    for n, got in zip(periods, swept):
        assert_bitwise_equal(got, getattr(K, name)(*inputs_for(name, h, l, c), n, dtype=dtype), f"{name}({n})")


@pytest.mark.parametrize("in_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", LANE_NAMES)
def test_sweep_of_periods_1_to_100_on_goog_equals_99_single_calls_bit_for_bit(name, dtype, in_dtype):
    """float32 bars (the store's) and float64 bars in, float32 and float64 out."""
    _, h, l, c = (a.astype(in_dtype) for a in goog_ohlc())
    periods = list(range(min_period(name), 101))
    swept = K.sweep(name, inputs_for(name, h, l, c), periods, dtype=dtype)
    for n, got in zip(periods, swept):
        assert_bitwise_equal(got, getattr(K, name)(*inputs_for(name, h, l, c), n, dtype=dtype), f"{name}({n})")


@pytest.mark.parametrize("name", ["hma", "returns"])
def test_sweep_of_a_name_without_lane_core_returns_the_single_calls(name):
    c = goog_ohlc()[3][:200]
    for n, got in zip([2, 7, 30], K.sweep(name, c, [2, 7, 30], dtype=np.float64)):
        assert_bitwise_equal(got, getattr(K, name)(c, n, dtype=np.float64), f"{name}({n})")


def test_sweep_of_an_empty_series_returns_empty_arrays_per_period():
    outs = K.sweep("ema", np.array([], dtype=np.float64), [1, 5], dtype=np.float32)
    assert [o.shape for o in outs] == [(0,), (0,)]
    assert all(o.dtype == np.float32 for o in outs)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_series=st.sampled_from([1, 2, 3, 9]), t_len=st.integers(0, 40),
       n=st.integers(1, 45), name=st.sampled_from(LANE_NAMES), dtype=st.sampled_from([np.float32, np.float64]))
def test_panel_columns_as_lanes_equal_one_single_lane_call_per_column_bit_for_bit(seed, n_series, t_len, n, name,
                                                                                 dtype):
    """Lanes = series: a time-major [T, S] panel through `lanes`; each column is the 1-D
    call's bytes, periods past the series and flat runs (rounded prices) included."""
    rng = np.random.default_rng(seed)
    c = np.round(100 + np.cumsum(rng.normal(size=(t_len, n_series)), axis=0), 1)
    h = c + np.round(rng.random((t_len, n_series)), 1)
    l = c - np.round(rng.random((t_len, n_series)), 1)
    n = max(n, min_period(name))
    panel = K.lanes(name, inputs_for(name, h, l, c), n, dtype=dtype)
    assert panel.shape == (t_len, n_series)
    for s in range(n_series):
        single = getattr(K, name)(*inputs_for(name, h[:, s], l[:, s], c[:, s]), n, dtype=dtype)
        assert_bitwise_equal(panel[:, s], single, f"{name}({n}) column {s}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", LANE_NAMES)
def test_goog_panel_of_three_series_as_lanes_equals_single_calls_bit_for_bit(name, dtype):
    """Columns: GOOG, GOOG reversed, GOOG with a flat stretch (equal OHLC for 40 rows);
    periods from the minimum to longer than the 300 rows."""
    _, h, l, c = (a[:300] for a in goog_ohlc())
    flat = [a.copy() for a in (h, l, c)]
    for a in flat:
        a[100:140] = c[100]
    panels = [np.stack([a, a[::-1], f], axis=1) for a, f in zip((h, l, c), flat)]
    for n in (min_period(name), 2, 14, 299, 300, 301):
        got = K.lanes(name, inputs_for(name, *panels), n, dtype=dtype)
        for s in range(3):
            single = getattr(K, name)(*inputs_for(name, *[p[:, s] for p in panels]), n, dtype=dtype)
            assert_bitwise_equal(got[:, s], single, f"{name}({n}) column {s}")


@pytest.mark.parametrize("name", LANE_NAMES)
def test_flat_series_whose_true_range_stays_zero_sweeps_like_single_calls(name):
    """A constant series (every change, true range and directional move 0 from the first
    bar): the lane cores' quotients by a zero sum are selected away, as in the single core,
    instead of raising ZeroDivisionError."""
    c = np.full(30, 100.0)
    periods = [min_period(name), 2, 3, 7]
    for n, got in zip(periods, K.sweep(name, inputs_for(name, c, c, c), periods, dtype=np.float64)):
        assert_bitwise_equal(got, getattr(K, name)(*inputs_for(name, c, c, c), n, dtype=np.float64), f"{name}({n})")
    panel = np.full((30, 3), 100.0)
    got = K.lanes(name, inputs_for(name, panel, panel, panel), 3, dtype=np.float64)
    assert_bitwise_equal(got[:, 1], getattr(K, name)(*inputs_for(name, c, c, c), 3, dtype=np.float64), f"{name} panel")


def test_sweep_into_a_reused_block_overwrites_it_with_the_same_bytes():
    """`out=`: the second sweep writes into the first one's block (no new allocation) and
    every period's column is again the single call's bytes."""
    c = goog_ohlc()[3][:500]
    block = np.full((500, 3), 7.0, dtype=np.float32)
    first = K.sweep("rsi", c, [2, 14, 600], dtype=np.float32, out=block)
    assert all(np.shares_memory(col, block) for col in first)
    again = K.sweep("rsi", c[::-1].copy(), [2, 14, 600], dtype=np.float32, out=block)
    for n, got in zip([2, 14, 600], again):
        assert_bitwise_equal(got, K.rsi(c[::-1].copy(), n, dtype=np.float32), f"rsi({n})")


def _ema_family_series():
    c = goog_ohlc()[3][:400].astype(np.float64)
    flat = c.copy()
    flat[100:160] = flat[100]  # ties: the EMA kept exactly where it is
    nan_start = flat.copy()
    nan_start[:2] = np.nan
    nan_middle = flat.copy()
    nan_middle[250] = np.nan
    return {"flat": flat, "nan_start": nan_start, "nan_middle": nan_middle}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["ema", "dema", "tema"])
def test_ema_family_steady_phase_equals_single_calls_bit_for_bit(name, dtype):
    """The EMA family's lane cores run a branch-free loop from the row past the longest
    warm-up (a float64 EMA block reads each lane's state from the row above): periods 1 and
    2 alone, as long as the series and longer, one lane or many, in any order; series with
    a flat stretch (ties), NaN in the first rows, NaN in the middle."""
    period_sets = [[1], [2], [1, 2], [2, 1, 3, 7], [5, 30, 399, 400, 401, 1000], [100, 2, 50], [500]]
    for label, c in _ema_family_series().items():
        for periods in period_sets:
            for n, got in zip(periods, K.sweep(name, c, periods, dtype=dtype)):
                assert_bitwise_equal(got, getattr(K, name)(c, n, dtype=dtype), f"{name}({n}) of {periods} on {label}")
        panel = np.stack(list(_ema_family_series().values()), axis=1)
        for n in (1, 2, 5, 133, 401):
            got = K.lanes(name, panel, n, dtype=dtype)
            for s in range(panel.shape[1]):
                single = getattr(K, name)(np.ascontiguousarray(panel[:, s]), n, dtype=dtype)
                assert_bitwise_equal(got[:, s], single, f"{name}({n}) panel column {s}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["ema", "dema", "tema"])
def test_ema_family_sweep_into_a_block_holding_other_values_writes_the_single_calls_bytes(name, dtype):
    """`out=` prefilled with NaN and with numbers: every row is rewritten before any row
    above is read back as a lane's state."""
    c = _ema_family_series()["flat"]
    periods = [3, 1, 60, 2, 399]
    for fill in (np.nan, 7.0):
        block = np.full((c.size, len(periods)), fill, dtype=dtype)
        for n, got in zip(periods, K.sweep(name, c, periods, dtype=dtype, out=block)):
            assert_bitwise_equal(got, getattr(K, name)(c, n, dtype=dtype), f"{name}({n}) over {fill}")
