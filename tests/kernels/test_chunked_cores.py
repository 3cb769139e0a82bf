"""The time-chunked variants (kernels.chunked_cores) equal their portable cores bit for bit:
series long enough to be chunked and one row short of it, warm-ups that meet the true state
and ones that cannot (a huge value, a NaN or an inf just before a chunk's warm-up, which the
chunk never sees), ties (an EMA kept where its input equals it), float32 and float64 inputs
and outputs, strided inputs, and the public functions that run them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from numba import njit

from kernels import chunked_cores, cores
from kernels import indicators as K
from tests.kernel_data import walk_ohlc


@dataclass(frozen=True)
class Case:
    core: str
    ohlc: bool  # inputs (high, low, close), else (close,)
    first_steady: Callable[[int], int]  # the first row of the steady phase for period n
    warm: Callable[[int], int]
    periods: tuple[int, ...]
    public: Callable
    lanes: int
    level: bool = True  # the output is a price-like level (RSI's is a 0..100 ratio)


CASES = {
    "atr": Case("atr_core", True, lambda n: n + 1, chunked_cores.atr_warm, (1, 2, 14, 30), K.atr,
                chunked_cores.ATR_LANES),
    "ema": Case("ema_core", False, lambda n: n, chunked_cores.ema_warm, (1, 2, 20, 60), K.ema, chunked_cores.LANES),
    "rsi": Case("rsi_core", False, lambda n: n + 1, chunked_cores.rsi_warm, (1, 2, 14, 30), K.rsi, chunked_cores.LANES,
                level=False),
    "tema": Case("tema_core", False, lambda n: 3 * (n - 1) + 1, chunked_cores.tema_warm, (2, 3, 20), K.tema,
                 chunked_cores.LANES),
}


def _compiled(module, name):
    return njit(cache=True, nogil=True)(getattr(module, name))


def _inputs(case: Case, t_len: int, seed: int = 3) -> list[np.ndarray]:
    _, h, l, c = (a.astype(np.float64) for a in walk_ohlc(t_len, seed=seed))
    return [h, l, c] if case.ohlc else [c]


def _chunked_rows(case: Case, n: int) -> int:
    """The shortest series whose steady phase is cut into chunks."""
    return case.first_steady(n) + case.lanes * 4 * case.warm(n)


def _assert_variant_equals_core(case: Case, inputs, n: int, out_dtype=np.float64) -> np.ndarray:
    portable = _compiled(cores, case.core)
    variant = _compiled(chunked_cores, cores.CPU_VARIANTS[case.core])
    t_len = inputs[0].shape[0]
    want = np.full(t_len, -1.0, dtype=out_dtype)
    got = np.full(t_len, -1.0, dtype=out_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        portable(*inputs, n, want)
        variant(*inputs, n, got)
    bits = np.uint64 if out_dtype == np.float64 else np.uint32
    np.testing.assert_array_equal(got.view(bits), want.view(bits))
    return want


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_chunked_variant_is_the_cpu_backends_core(name):
    from kernels.backends import cpu_backend

    case = CASES[name]
    assert cpu_backend.compiled(case.core).py_func is getattr(chunked_cores, cores.CPU_VARIANTS[case.core])


@pytest.mark.parametrize("extra", [-1, 0, 5, 7])  # -1: one row short, the serial loop
@pytest.mark.parametrize("name,n", [(name, n) for name, case in sorted(CASES.items()) for n in case.periods])
def test_the_variant_equals_its_core_around_the_chunking_length(name, n, extra):
    case = CASES[name]
    _assert_variant_equals_core(case, _inputs(case, _chunked_rows(case, n) + extra), n)


@pytest.mark.parametrize("in_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_variant_equals_its_core_with_ties_in_both_precisions(name, in_dtype, out_dtype):
    case = CASES[name]
    inputs = [np.round(a, 0).astype(in_dtype) for a in _inputs(case, _chunked_rows(case, 20) + 999)]
    _assert_variant_equals_core(case, inputs, 20, out_dtype)


@pytest.mark.parametrize("poison", [1e200, np.nan, np.inf])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_chunk_whose_warm_up_cannot_meet_the_true_state_is_recomputed(name, poison):
    case = CASES[name]
    n = 14
    t_len = _chunked_rows(case, n) + 300
    inputs = _inputs(case, t_len)
    start, warm = case.first_steady(n), case.warm(n)
    size = (t_len - start) // case.lanes
    # the row just before chunk 3's warm-up: the true state carries it, the warm-up never sees it
    row = start + 3 * size - warm - 1
    inputs[0][row] = poison
    want = _assert_variant_equals_core(case, inputs, n)
    if np.isfinite(poison) and case.level:
        assert np.isfinite(want[-1]) and abs(want[row + warm + 1]) > 1e100  # chunk 3 does start far off


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_variant_reads_strided_inputs(name):
    case = CASES[name]
    inputs = _inputs(case, 2 * (_chunked_rows(case, 14) + 17))
    _assert_variant_equals_core(case, [a[::2] for a in inputs], 14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_public_function_runs_the_variant_and_equals_the_portable_core(name):
    case = CASES[name]
    inputs = _inputs(case, _chunked_rows(case, 14) + 321, seed=9)
    want = _assert_variant_equals_core(case, inputs, 14)
    got = case.public(*inputs, 14, dtype=np.float64)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


# The exact-sum variants (SMA, WMA): chunked where `_sums_exact` shows every window sum exact.

EXACT = {"sma": ("sma_core", 1, (1, 2, 3, 20, 400), K.sma), "wma": ("wma_core", 2, (2, 3, 20, 400), K.wma)}
EXACT_ROWS = chunked_cores.LANES * 4 * chunked_cores.SUM_ROWS  # steady rows below which the core runs


def _exact_pair(name):
    core = EXACT[name][0]
    return _compiled(cores, core), _compiled(chunked_cores, cores.CPU_VARIANTS[core])


def _assert_exact_variant_equals_core(name, x, n, out_dtype=np.float32):
    portable, variant = _exact_pair(name)
    want = np.full(x.shape[0], -1.0, dtype=out_dtype)
    got = np.full(x.shape[0], -1.0, dtype=out_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        portable(x, n, want)
        variant(x, n, got)
    bits = np.uint64 if out_dtype == np.float64 else np.uint32
    np.testing.assert_array_equal(got.view(bits), want.view(bits))
    return want


@njit(cache=True)
def _sums_exact(x, span, weight):
    return chunked_cores._sums_exact(x, span, weight)


def _walk32(t_len: int, seed: int = 5) -> np.ndarray:
    return walk_ohlc(t_len, seed=seed)[3].astype(np.float32)


@pytest.mark.parametrize("extra", [-1, 0, 7, 3 * chunked_cores.SUM_ROWS + 5])  # -1: one row short, the serial loop
@pytest.mark.parametrize("name,n", [(name, n) for name, spec in sorted(EXACT.items()) for n in spec[2]])
def test_the_exact_sum_variant_equals_its_core_around_the_chunking_length(name, n, extra):
    x = _walk32(n + EXACT_ROWS + extra)
    assert _sums_exact(x, n + 1, n * (n + 2))
    for out_dtype in (np.float32, np.float64):
        _assert_exact_variant_equals_core(name, x, n, out_dtype)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_a_window_longer_than_the_scans_block_is_covered(name):
    n = chunked_cores.EXACT_BLOCK + 3
    _assert_exact_variant_equals_core(name, _walk32(n + 2 * EXACT_ROWS), n)


def test_float32_windows_are_exact_up_to_2_to_the_29_plus_lo_minus_hi():
    """The bound itself: values from 2^-10 to 2^10 - 1 in steps of 2^-10 span exponent fields
    117..136, so a weight of 2^(29 + 117 - 136) = 2^10 windows is exact and 2^10 + 1 is not
    claimed; and the claim holds: every window sum of 2^10 values, added in float64 in any
    order, is the exact integer sum."""
    rng = np.random.default_rng(0)
    steps = rng.integers(1, 2**20, size=EXACT_ROWS)
    steps[::97] = 1  # the smallest value, 2^-10, in every block
    x = (steps * 2.0**-10).astype(np.float32)
    assert np.array_equal(x.astype(np.float64) * 2**10, steps)  # each value exact in float32
    n = 2**10
    assert _sums_exact(x, n, n) and not _sums_exact(x, n, n + 1)
    cum = np.concatenate([[0], np.cumsum(steps)])  # int64: exact
    exact = (cum[n:] - cum[:-n]) * 2.0**-10
    x64 = x.astype(np.float64)
    running = np.convolve(x64, np.ones(n))[n - 1 : len(x64)]  # another order of the same sums
    np.testing.assert_array_equal(running, exact)
    _assert_exact_variant_equals_core("sma", x, n, np.float64)


@pytest.mark.parametrize("case,data", [
    ("float64", lambda x: x.astype(np.float64)),
    ("strided", lambda x: np.repeat(x, 2)[::2]),
    ("nan", lambda x: np.where(np.arange(x.size) == x.size // 2, np.float32(np.nan), x)),
    ("inf", lambda x: np.where(np.arange(x.size) == x.size - 1, np.float32(np.inf), x)),
    ("wide_window", lambda x: np.where(np.arange(x.size) == x.size // 3, np.float32(1e-9), x)),
])
@pytest.mark.parametrize("name", sorted(EXACT))
def test_inputs_whose_sums_could_round_run_the_portable_core(name, case, data):
    x = data(_walk32(20 + EXACT_ROWS + 999))
    assert not _sums_exact(x, 21, 20 * 22)
    _assert_exact_variant_equals_core(name, x, 20)


def test_zeros_subnormals_and_far_apart_levels_are_exact():
    x = _walk32(20 + EXACT_ROWS + 999)
    x[:500] = 0.0
    assert _sums_exact(x, 21, 440)
    tiny = (np.arange(1, x.size + 1) % 7 + 1).astype(np.float32) * np.float32(1e-44)  # subnormal float32
    assert tiny[0] != 0 and _sums_exact(tiny, 21, 440)
    _assert_exact_variant_equals_core("sma", tiny, 20)
    # a level that grows by 2^29 over the series (too far for one window check of weight 440)
    # but by 2^11.5 over two blocks: the check is per pair of blocks
    far = np.exp(np.linspace(0.0, 20.0, 5 * chunked_cores.EXACT_BLOCK)).astype(np.float32)
    assert np.log2(far[-1] / far[0]) > 28 and _sums_exact(far, 21, 440)
    for name in EXACT:
        _assert_exact_variant_equals_core(name, far, 20)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_the_public_function_runs_the_exact_sum_variant(name):
    from kernels.backends import cpu_backend

    core, _, _, public = EXACT[name]
    assert cpu_backend.compiled(core).py_func is getattr(chunked_cores, cores.CPU_VARIANTS[core])
    x = _walk32(20 + EXACT_ROWS + 321, seed=9)
    want = _assert_exact_variant_equals_core(name, x, 20)
    np.testing.assert_array_equal(public(x, 20).view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("seed", range(12))
def test_random_float32_series_at_the_exactness_bound_chunk_to_the_cores_bits(seed):
    """Values with random signs and mantissas spread over as many binades as the bound allows
    for the period (the largest sums come within a factor of the period of 2^53 ulps): where
    `_sums_exact` claims exactness, the chunks started from sums formed in another order give
    the core's bits; one binade more and the claim is not made."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([2, 3, 5, 20, 64]))
    name = "sma" if seed % 2 == 0 else "wma"
    weight = n if name == "sma" else n * (n + 2)
    spread = 29 - int(np.ceil(np.log2(weight)))  # exponent fields hi - lo allowed for this weight
    t_len = n + EXACT_ROWS + int(rng.integers(0, 500))
    lo_exp = int(rng.integers(-40, 40))
    exps = rng.integers(lo_exp, lo_exp + spread + 1, t_len)
    exps[::50] = lo_exp
    exps[25::50] = lo_exp + spread  # both ends of the spread in every block
    mant = rng.integers(2**23, 2**24, t_len)  # full 24-bit mantissas
    x = (rng.choice([-1.0, 1.0], t_len) * mant * 2.0 ** (exps - 23)).astype(np.float32)
    assert _sums_exact(x, n + 1, weight)
    for out_dtype in (np.float32, np.float64):
        _assert_exact_variant_equals_core(name, x, n, out_dtype)
    wider = x.copy()
    wider[10] = np.float32(2.0 ** (lo_exp - 1))  # one binade below the smallest
    assert not _sums_exact(wider, n + 1, weight)
