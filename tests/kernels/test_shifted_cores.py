"""The float64 lanes of kernels.indicators.shifted equal sma_core and kama_core bit for bit (a NaN as a
NaN, `tests.kernel_data.assert_variant_bits`): lanes that meet, lanes a constant number of ulps
off (the shift), sums that cross a power of two, change sign, reach the top binade and overflow,
hold a NaN or an infinity, inputs of other dtypes and strides, block edges and long windows; and
the shift itself, fl(z + d) = fl(z) + d inside one binade for an even d, holds and fails where
the module docstring says."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kernels.indicators import cores, shifted as shifted_cores
from kernels import indicators as K
from tests.kernel_data import assert_variant_bits, walk_ohlc

LANES = shifted_cores.SHIFT_LANES


def _block(n: int) -> int:
    return LANES * shifted_cores.lane_rows(n)


def _compiled(module, name):
    return njit(cache=True, nogil=True)(getattr(module, name))


@njit(cache=True)
def _kama_lanes(x, n, out, min_chunk):
    return shifted_cores.kama_shifted_lanes(x, n, out, min_chunk)


def _assert_sma_equals_core(x, n, out_dtype=np.float64) -> int:
    """sma_core and sma_shifted_core on x, bit for bit; the rows walked again (-1: the core ran)."""
    return assert_variant_bits(_compiled(cores, "sma_core"), _compiled(shifted_cores, "sma_shifted_core"), x, (n,),
                               out_dtype)


def _assert_kama_equals_core(x, n, out_dtype=np.float64, min_chunk=1) -> int:
    """kama_core and kama_shifted_lanes on x, bit for bit; the rows walked again (-1: the core ran)."""
    return assert_variant_bits(_compiled(cores, "kama_core"), lambda x, n, out: _kama_lanes(x, n, out, min_chunk), x,
                               (n,), out_dtype)


def _prices(t_len: int, seed: int = 4) -> np.ndarray:
    """benchmarks/bench_indicators.py's walk, 1000 + cumsum(N(0, 1)) * 0.05: full 52-bit fractions
    (the window sums' roundings tie often), a level that stays within a few binades of sums."""
    return 1000.0 + np.cumsum(np.random.default_rng(seed).normal(0.0, 1.0, t_len)) * 0.05


def test_the_shift_keeps_a_rounding_inside_a_binade_and_ties_follow_an_even_distance():
    rng = np.random.default_rng(0)
    z = 1024.0 + rng.uniform(0, 900, 10_000)  # z, z + x and z + x + d in [1024, 2048): u = 2^-42
    x = rng.uniform(0, 60, 10_000)  # full fractions: bits below u, and exact ties
    u = 2.0**-42
    for d in (2 * u, -6 * u, 2.0**-20):
        np.testing.assert_array_equal((z + d) + x, (z + x) + d)
    ties = x.copy()
    ties[:] = np.floor(x / u) * u + u / 2  # every sum exactly halfway between two multiples of u
    assert not np.array_equal((z + u) + ties, (z + ties) + u)  # an odd distance: some ties round apart
    np.testing.assert_array_equal((z + 2 * u) + ties, (z + ties) + 2 * u)


@pytest.mark.parametrize("extra", [-1, 0, 1, 3 * 4096 + 77])
@pytest.mark.parametrize("n", [2, 3, 20, 400])
def test_sma_lanes_equal_the_core_around_block_edges(n, extra):
    x = _prices(n - 1 + _block(n) + extra)
    walked = _assert_sma_equals_core(x, n)
    assert walked == -1 if extra < 0 else 0 <= walked < x.shape[0] // 4


def test_sma_lanes_are_mostly_shifted_not_walked_on_prices():
    """Each lane is walked only until its distance to the truth is an even number of ulps."""
    x = _prices(200_000)
    walked = _assert_sma_equals_core(x, 20)
    assert 0 < walked < 0.02 * x.shape[0]


def test_sma_lanes_that_meet_the_true_sum_need_no_shift():
    """Integers: every window sum is exact, so a lane's own window sum is the true state."""
    x = np.random.default_rng(1).integers(0, 1000, 50_000).astype(np.float64)
    assert _assert_sma_equals_core(x, 20) == 0


@pytest.mark.parametrize("case", ["normal", "crossing", "rounded", "gaps", "tiny", "huge"])
def test_sma_lanes_where_sums_change_sign_cross_powers_of_two_or_lie_at_the_ends_of_the_range(case):
    rng = np.random.default_rng(2)
    t = 60_000
    x = {"normal": rng.normal(0, 1, t),  # sums around zero: sign changes, many binades
         "crossing": 1000.0 * 2.0 ** np.linspace(-3, 3, t) + rng.normal(0, 1, t),  # six powers of two
         "rounded": np.round(_prices(t), 2),  # two decimals: fewer ties
         "gaps": walk_ohlc(t, seed=4)[3],  # a walk with a flat stretch and gaps, over 100 binades of sums
         "tiny": rng.normal(0, 1, t) * 1e-310,  # subnormal sums: walked
         "huge": rng.uniform(1, 2, t) * 2.0**1019}[case]  # sums in the top binade, some over max: inf, then NaN
    walked = _assert_sma_equals_core(x, 20)
    assert walked >= 0
    if case == "crossing":
        assert walked < 0.2 * t


def test_sma_lane_a_shift_from_the_top_binade_does_not_overflow():
    """The true sum reaches exactly the largest double where the lane, 2 ulps above, overflows:
    the top binade's range must end at the largest double, not at infinity."""
    n = 4
    rows = shifted_cores.lane_rows(n)
    a = n - 1 + rows  # lane 1's first row
    ulp = 2.0**971  # of [2^1023, 2^1024)
    c = 2.0**1021 * 1.375  # window sums of c: 1.375 * 2^1023, states 3c: all exact in the top binade
    rng = np.random.default_rng(1)
    for _ in range(200):  # a few rows before lane 1 leave the true state 2 ulps below its fresh window sum
        x = np.full(n - 1 + _block(n), c)
        x[a - 12 : a - 4] = c + rng.integers(-8, 9, 8) * ulp / 4
        state = 0.0
        for i in range(n - 1):
            state += x[i]
        for i in range(n - 1, a):
            state = (state + x[i]) - x[i - n + 1]
        fresh = 0.0
        for k in range(a - n + 1, a):
            fresh += x[k]
        if fresh - state == 2 * ulp:
            break
    assert fresh - state == 2 * ulp
    x[a + 100] = np.finfo(np.float64).max - state  # the true sum there: the largest double
    assert _assert_sma_equals_core(x, n) >= 0


@pytest.mark.parametrize("where", ["nan", "inf"])
def test_sma_lanes_after_a_nan_or_an_infinity_walk_every_row_and_keep_the_cores_nan(where):
    x = _prices(40_000)
    x[10_000] = np.nan if where == "nan" else np.inf
    assert _assert_sma_equals_core(x, 20) > 20_000
    x = _prices(40_000)
    x[-5] = np.nan  # in the serial tail only
    assert _assert_sma_equals_core(x, 20) < 2_000


@pytest.mark.parametrize("form", ["float32", "strided", "float32 out"])
def test_sma_lanes_take_any_float_dtype_and_stride(form):
    x = _prices(3 * _block(20) + 11)
    if form == "float32":
        x = x.astype(np.float32)
    elif form == "strided":
        x = np.repeat(x, 2)[::2]
    _assert_sma_equals_core(x, 20, np.float32 if form == "float32 out" else np.float64)


@pytest.mark.parametrize("n", [2, 10, 30])
def test_kama_lanes_equal_the_core(n):
    x = _prices(60_000)
    walked = _assert_kama_equals_core(x, n, min_chunk=2048)
    assert 0 <= walked < x.shape[0]


@pytest.mark.parametrize("case", ["float32 out", "float32 in", "strided", "nan", "inf", "top", "normal", "short"])
def test_kama_lanes_on_other_outputs_inputs_gaps_and_short_series(case):
    x = _prices(70_000)
    out_dtype = np.float64
    if case == "float32 out":  # the smoothing constants go to a float64 scratch
        out_dtype = np.float32
    elif case == "float32 in":
        x = x.astype(np.float32)
    elif case == "strided":
        x = np.repeat(x, 2)[::2]
    elif case == "nan":
        x[30_000] = np.nan
    elif case == "inf":  # inf - inf: the sums' NaN from there on
        x[30_000] = np.inf
    elif case == "top":  # changes of up to 2^1021: the ratio's sums in the top binade, some over the largest double
        rng = np.random.default_rng(5)
        x = rng.choice([-1.0, 1.0], 70_000) * rng.uniform(0.4, 1.0, 70_000) * 2.0**1020
    elif case == "normal":
        x = np.random.default_rng(3).normal(0, 1, 70_000)
    walked = _assert_kama_equals_core(x[:3000] if case == "short" else x, 10, out_dtype, min_chunk=2048)
    assert (walked == -1) == (case == "short")


def test_float64_sma_and_kama_are_talibs_bit_for_bit_through_the_public_functions():
    import talib

    x = _prices(300_000, seed=8)
    np.testing.assert_array_equal(K.sma(x, 20, dtype=np.float64).view(np.uint64), talib.SMA(x, 20).view(np.uint64))
    np.testing.assert_array_equal(K.kama(x, 10, dtype=np.float64).view(np.uint64), talib.KAMA(x, 10).view(np.uint64))
