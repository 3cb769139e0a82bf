"""The integer variants of SMA, WMA and KAMA (kernels.indicators.exact) equal their portable cores bit for
bit, and run only where the cores' float64 sums are exact: the bound itself, block edges, long
windows, zeros, subnormals, levels that move by many binades (units that change from block to
block, both ways), inputs whose sums could round (which run the core), random series at the
bound, and the public functions that run them."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kernels.indicators import cores, exact as exact_cores
from kernels import indicators as K
from tests.kernel_data import assert_variant_bits, walk_ohlc

ROWS = exact_cores.BLOCK
# name: (core, weight of its sums for period n, periods, public function)
CASES = {"sma": ("sma_core", lambda n: n, (1, 2, 3, 20, 400), K.sma),
         "wma": ("wma_core", lambda n: n * (n + 2), (2, 3, 20, 400), K.wma)}


def _compiled(module, name):
    return njit(cache=True, nogil=True)(getattr(module, name))


def _assert_variant_equals_core(name, x, n, out_dtype=np.float32) -> bool:
    """The core and its integer variant on x, bit for bit; whether the integer path ran."""
    core = CASES[name][0]
    portable, variant = _compiled(cores, core), _compiled(exact_cores, cores.CPU_VARIANTS[core])
    return assert_variant_bits(portable, variant, x, (n,), out_dtype)


@njit(cache=True)
def _unit_exponent(x, weight):
    return exact_cores._unit_exponent(x.view(np.uint32), weight)


# inputs the variants refuse (float64, strided or int32: not float32 bits to scan; a NaN, an inf,
# or a value 2^37 below its neighbours: sums that could round); the portable core runs instead
COULD_ROUND = [
    ("float64", lambda x: x.astype(np.float64)),
    ("strided", lambda x: np.repeat(x, 2)[::2]),
    ("nan", lambda x: np.where(np.arange(x.size) == x.size // 2, np.float32(np.nan), x)),
    ("inf", lambda x: np.where(np.arange(x.size) == x.size - 1, np.float32(np.inf), x)),
    ("wide_window", lambda x: np.where(np.arange(x.size) == x.size // 3, np.float32(1e-9), x)),
    ("int32", lambda x: (x * 1000).astype(np.int32)),  # four bytes a value, but not float32 bits
]


def _walk32(t_len: int, seed: int = 5) -> np.ndarray:
    return walk_ohlc(t_len, seed=seed)[3].astype(np.float32)


@pytest.mark.parametrize("extra", [-1, 0, 1, 7, 2 * ROWS + 5])
@pytest.mark.parametrize("name,n", [(name, n) for name, case in sorted(CASES.items()) for n in case[2]])
def test_the_integer_variant_equals_its_core_around_block_edges(name, n, extra):
    x = _walk32(n + ROWS + extra)
    for out_dtype in (np.float32, np.float64):
        assert _assert_variant_equals_core(name, x, n, out_dtype)


@pytest.mark.parametrize("name", sorted(CASES))
def test_series_no_longer_than_the_window_and_a_window_longer_than_a_block(name):
    n = ROWS + 3  # blocks of 4n rows, each reading the n rows before it
    x = _walk32(3 * exact_cores.block_rows(n) + 2 * n + 11)
    assert exact_cores.block_rows(n) == 4 * n and _assert_variant_equals_core(name, x, n)
    for t_len in (1, 19, 20, 21):  # the core's own warm-up handling; a window that just fits
        ran = _assert_variant_equals_core(name, x[:t_len], 20)
        assert ran == (t_len >= 20 if name == "sma" else t_len > 20)


def test_float32_sums_are_exact_up_to_2_to_the_29_plus_lo_minus_hi():
    """The bound itself: values from 2^-10 to 2^10 - 1 in steps of 2^-10 span exponent fields
    117..136, so a weight of 2^(29 + 117 - 136) = 2^10 is exact and 2^10 + 1 is not claimed;
    and the claim holds: every window sum of 2^10 values, added in float64 in any order, is the
    exact integer sum."""
    rng = np.random.default_rng(0)
    steps = rng.integers(1, 2**20, size=4 * ROWS)
    steps[::97] = 1  # the smallest value, 2^-10, in every block
    x = (steps * 2.0**-10).astype(np.float32)
    assert np.array_equal(x.astype(np.float64) * 2**10, steps)  # each value exact in float32
    n = 2**10
    assert _unit_exponent(x, n) == 117 and _unit_exponent(x, n + 1) == exact_cores.NOT_EXACT
    cum = np.concatenate([[0], np.cumsum(steps)])  # int64: exact
    exact = (cum[n:] - cum[:-n]) * 2.0**-10
    x64 = x.astype(np.float64)
    running = np.convolve(x64, np.ones(n))[n - 1 : len(x64)]  # another order of the same sums
    np.testing.assert_array_equal(running, exact)
    assert _assert_variant_equals_core("sma", x, n, np.float64)
    assert not _assert_variant_equals_core("sma", x, n + 1, np.float64)  # weight 2^10 + 1: the core


@pytest.mark.parametrize("case,data", COULD_ROUND)
@pytest.mark.parametrize("name", sorted(CASES))
def test_inputs_whose_sums_could_round_run_the_portable_core(name, case, data):
    x = data(_walk32(20 + 3 * ROWS + 999))
    assert not _assert_variant_equals_core(name, x, 20)


@pytest.mark.parametrize("name", sorted(CASES))
def test_zeros_and_subnormals_are_exact(name):
    x = _walk32(20 + 3 * ROWS + 999)
    x[:500] = 0.0  # leading zeros
    x[ROWS + 100 : 2 * ROWS + 300] = 0.0  # a whole block of zeros: it keeps the unit before it
    assert _assert_variant_equals_core(name, x, 20)
    assert _assert_variant_equals_core(name, np.zeros(3 * ROWS, np.float32), 20)
    tiny = (np.arange(1, x.size + 1) % 7 + 1).astype(np.float32) * np.float32(1e-44)  # subnormal float32
    assert tiny[0] != 0 and _unit_exponent(tiny, 440) == 1
    assert _assert_variant_equals_core(name, tiny, 20)


@pytest.mark.parametrize("direction", [1, -1])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_level_that_moves_by_many_binades_changes_the_unit_from_block_to_block(name, direction):
    """A level that grows (or falls) by 2^40 over the series, more than one unit could hold
    for a window of weight 440, but by about 2^3 a block: each block has its own unit, and the
    states move between them by shifts both ways."""
    far = np.exp(direction * np.linspace(0.0, 40 * np.log(2), 12 * ROWS)).astype(np.float32)
    assert _unit_exponent(far, 440) == exact_cores.NOT_EXACT  # too far apart for one unit
    for out_dtype in (np.float32, np.float64):
        assert _assert_variant_equals_core(name, far, 20, out_dtype)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_public_function_runs_the_integer_variant(name):
    from kernels.indicators import cpu as cpu_backend

    core, _, _, public = CASES[name]
    assert cpu_backend.compiled(core).py_func is getattr(exact_cores, cores.CPU_VARIANTS[core])
    x = _walk32(20 + 2 * ROWS + 321, seed=9)
    want = np.empty_like(x)
    _compiled(cores, core)(x, 20, want)
    np.testing.assert_array_equal(public(x, 20).view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("seed", range(12))
def test_random_float32_series_at_the_exactness_bound_give_the_cores_bits(seed):
    """Values with random signs and mantissas spread over as many binades as the bound allows
    for the period (the largest sums come within a factor of the period of 2^53 ulps): where the
    variant claims exactness, its integers give the core's bits; one binade more and it runs
    the core."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([2, 3, 5, 20, 64]))
    name = "sma" if seed % 2 == 0 else "wma"
    weight = CASES[name][1](n)
    spread = 29 - int(np.ceil(np.log2(weight)))  # exponent fields hi - lo allowed for this weight
    t_len = n + 2 * ROWS + int(rng.integers(0, 500))
    lo_exp = int(rng.integers(-40, 40))
    exps = rng.integers(lo_exp, lo_exp + spread + 1, t_len)
    exps[::50] = lo_exp
    exps[25::50] = lo_exp + spread  # both ends of the spread in every block
    mant = rng.integers(2**23, 2**24, t_len)  # full 24-bit mantissas
    x = (rng.choice([-1.0, 1.0], t_len) * mant * 2.0 ** (exps - 23)).astype(np.float32)
    for out_dtype in (np.float32, np.float64):
        assert _assert_variant_equals_core(name, x, n, out_dtype)
    wider = x.copy()
    wider[10] = np.float32(2.0 ** (lo_exp - 1))  # one binade below the smallest
    assert not _assert_variant_equals_core(name, wider, n)


# KAMA: the efficiency ratio's sums in integers, the recursion in chunks side by side.

KAMA_ROWS = exact_cores.KAMA_LANES * exact_cores.KAMA_MIN_CHUNK  # steady rows below which the core runs
FIRST_MARKS = (exact_cores.KAMA_LANES - 1) * exact_cores.KAMA_FIRST  # rows walked again where every chunk meets its lane at the first mark


@njit(cache=True)
def _kama_lanes(x, n, out, min_chunk):
    return exact_cores.kama_lanes(x, n, out, min_chunk)


def _assert_kama_equals_core(x, n, out_dtype=np.float32, min_chunk=exact_cores.KAMA_MIN_CHUNK) -> int:
    """The core and kama_lanes on x, bit for bit; the rows walked again (-1: the integer lanes did not run)."""
    return assert_variant_bits(_compiled(cores, "kama_core"), lambda x, n, out: _kama_lanes(x, n, out, min_chunk), x,
                               (n,), out_dtype)


@pytest.mark.parametrize("extra", [-1, 0, 5, 2 * exact_cores.KAMA_ROWS + 3])  # -1: one row short, the core
@pytest.mark.parametrize("n", [2, 3, 10, 30])
def test_kama_in_chunks_equals_its_core_around_the_chunking_length(n, extra):
    """On a walk each chunk meets its lane at the first mark (KAMA_FIRST rows walked again), or
    at the second for n = 30, whose efficiency ratio over 30 rows is smaller (a smaller sc)."""
    x = _walk32(n + 1 + KAMA_ROWS + extra)
    marks = FIRST_MARKS if n <= 10 else FIRST_MARKS + (exact_cores.KAMA_LANES - 1) * exact_cores.KAMA_ROWS
    for out_dtype in (np.float32, np.float64):
        assert _assert_kama_equals_core(x, n, out_dtype) == (marks if extra >= 0 else -1)


def _choppy32(t_len, seed=3):
    """Up, down, up, down around 1000: the efficiency ratio near 0, so KAMA contracts by about
    1 - (2/31)^2 a row, the least it can (thousands of rows to meet from a chunk's start)."""
    rng = np.random.default_rng(seed)
    sign = np.where(np.arange(t_len) % 2 == 0, 1.0, -1.0)
    return (1000.0 + sign * (1.0 + rng.uniform(0.0, 0.01, t_len))).astype(np.float32)


def test_kama_chunks_that_meet_their_lane_only_at_a_later_mark_are_walked_to_it():
    x = _choppy32(11 + KAMA_ROWS + 999)
    walked = _assert_kama_equals_core(x, 10, np.float64)
    assert FIRST_MARKS < walked < (exact_cores.KAMA_LANES - 1) * exact_cores.KAMA_MIN_CHUNK


@pytest.mark.parametrize("min_chunk", [300, 1000, 3000])
def test_kama_chunks_that_never_meet_their_lane_are_walked_to_their_end(min_chunk):
    """Chunks too short to meet: each is walked again whole, from the true end of the one before."""
    size = min_chunk + 17
    x = _choppy32(11 + exact_cores.KAMA_LANES * size + 5)
    for out_dtype in (np.float32, np.float64):
        assert _assert_kama_equals_core(x, 10, out_dtype, min_chunk=min_chunk) == (exact_cores.KAMA_LANES - 1) * size


@pytest.mark.parametrize("case,data", COULD_ROUND)
def test_kama_inputs_whose_sums_could_round_run_the_portable_core(case, data):
    x = data(_walk32(11 + KAMA_ROWS + 999))
    assert _assert_kama_equals_core(x, 10) == -1
    assert not _compiled(exact_cores, "kama_exact_core")(x, 10, np.empty(x.shape[0]))


@pytest.mark.parametrize("direction", [1, -1])
def test_kama_units_change_from_block_to_block_on_a_level_that_moves_by_many_binades(direction):
    """2^40 over the series: no one unit holds it (weight 22 allows 24 binades), each lane's
    blocks do, with the sums moved between units by shifts both ways."""
    far = np.exp(direction * np.linspace(0.0, 40 * np.log(2), 11 + KAMA_ROWS + 777)).astype(np.float32)
    assert _unit_exponent(far, 22) == exact_cores.NOT_EXACT
    assert _assert_kama_equals_core(far, 10, np.float64) >= 0


def test_kama_over_zeros_is_exact_in_any_unit():
    x = _walk32(11 + KAMA_ROWS + 999)
    x[: 3 * exact_cores.KAMA_ROWS] = 0.0  # the first lane's first blocks, and the seed
    x[KAMA_ROWS // 2 : KAMA_ROWS // 2 + 5 * exact_cores.KAMA_ROWS] = 0.0  # blocks of zeros inside a lane
    assert _assert_kama_equals_core(x, 10, np.float64) >= 0
    assert _assert_kama_equals_core(np.zeros(11 + KAMA_ROWS, np.float32), 10) == FIRST_MARKS


def test_kama_in_chunks_is_talibs_kama_bit_for_bit_and_the_public_function_runs_it():
    import talib
    from kernels.indicators import cpu as cpu_backend

    assert cpu_backend.compiled("kama_core").py_func is exact_cores.kama_exact_core
    x = _walk32(11 + KAMA_ROWS + 4321, seed=9)
    assert _assert_kama_equals_core(x, 10, np.float64) == FIRST_MARKS
    assert _compiled(exact_cores, "kama_exact_core")(x, 10, np.empty(x.shape[0]))
    got = K.kama(x, 10, dtype=np.float64)
    np.testing.assert_array_equal(got.view(np.uint64), talib.KAMA(x.astype(np.float64), 10).view(np.uint64))
