"""The time-chunked variants (kernels.chunked_cores) equal their portable cores bit for bit:
series long enough to be chunked and one row short of it, warm-ups that meet the true state
and ones that cannot (a huge true range or a NaN just before a chunk's warm-up, which the
chunk never sees), ties (TEMA keeps an EMA whose input equals it), float32 and float64 inputs
and outputs, strided inputs, and the public functions that run them."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kernels import chunked_cores, cores
from kernels import indicators as K
from tests.kernel_data import walk_ohlc

LANES = chunked_cores.LANES


def _compiled(module, name):
    return njit(cache=True, nogil=True)(getattr(module, name))


def _assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    bits = np.uint64 if want.dtype == np.float64 else np.uint32
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


def _run_both(core: str, inputs: tuple, n: int, out_dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    portable = _compiled(cores, core)
    variant = _compiled(chunked_cores, cores.CPU_VARIANTS[core])
    t_len = inputs[0].shape[0]
    want = np.full(t_len, -1.0, dtype=out_dtype)
    got = np.full(t_len, -1.0, dtype=out_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        portable(*inputs, n, want)
        variant(*inputs, n, got)
    return got, want


def _chunked_rows(start: int, warm: int) -> int:
    """The shortest series whose steady phase (from row `start`) is cut into LANES chunks."""
    return start + LANES * 4 * warm


def _ohlc(t_len: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    _, h, l, c = walk_ohlc(t_len, seed=seed)
    return h.astype(np.float64), l.astype(np.float64), c.astype(np.float64)


# --- ATR -------------------------------------------------------------------------------------

ATR_PERIODS = [1, 2, 14, 30]


@pytest.mark.parametrize("n", ATR_PERIODS)
@pytest.mark.parametrize("extra", [-1, 0, 5, LANES - 1])
def test_atr_chunked_equals_atr_core_around_the_chunking_length(n, extra):
    t_len = _chunked_rows(n + 1, chunked_cores.atr_warm(n)) + extra  # -1: the serial loop
    got, want = _run_both("atr_core", _ohlc(t_len), n)
    _assert_same_bits(got, want)


@pytest.mark.parametrize("in_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
def test_atr_chunked_equals_atr_core_in_both_precisions(in_dtype, out_dtype):
    t_len = _chunked_rows(15, chunked_cores.atr_warm(14)) + 1234
    got, want = _run_both("atr_core", tuple(a.astype(in_dtype) for a in _ohlc(t_len)), 14, out_dtype)
    _assert_same_bits(got, want)


@pytest.mark.parametrize("poison", [1e200, np.nan, np.inf])
def test_atr_chunk_whose_warm_up_cannot_meet_the_true_state_is_recomputed(poison):
    n = 14
    warm = chunked_cores.atr_warm(n)
    t_len = _chunked_rows(n + 1, warm) + 300
    h, l, c = _ohlc(t_len)
    size = (t_len - (n + 1)) // LANES
    # the row just before chunk 3's warm-up: the true state carries it, the warm-up never sees it
    row = n + 1 + 3 * size - warm - 1
    h[row] = poison
    got, want = _run_both("atr_core", (h, l, c), n)
    _assert_same_bits(got, want)
    if np.isfinite(poison):
        assert np.isfinite(want[-1]) and want[row + warm + 1] > 1e150  # the chunk does start far off


def test_atr_chunked_reads_strided_inputs():
    t_len = 2 * (_chunked_rows(15, chunked_cores.atr_warm(14)) + 17)
    h, l, c = _ohlc(t_len)
    got, want = _run_both("atr_core", (h[::2], l[::2], c[::2]), 14)
    _assert_same_bits(got, want)


# --- TEMA ------------------------------------------------------------------------------------

TEMA_PERIODS = [2, 3, 20]


def _close(t_len: int, seed: int = 5) -> np.ndarray:
    return walk_ohlc(t_len, seed=seed)[3].astype(np.float64)


@pytest.mark.parametrize("n", TEMA_PERIODS)
@pytest.mark.parametrize("extra", [-1, 0, 3, LANES - 1])
def test_tema_chunked_equals_tema_core_around_the_chunking_length(n, extra):
    t_len = _chunked_rows(3 * (n - 1) + 1, chunked_cores.tema_warm(n)) + extra
    got, want = _run_both("tema_core", (_close(t_len),), n)
    _assert_same_bits(got, want)


@pytest.mark.parametrize("in_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
def test_tema_chunked_equals_tema_core_with_ties_in_both_precisions(in_dtype, out_dtype):
    t_len = _chunked_rows(58, chunked_cores.tema_warm(20)) + 999
    x = np.round(_close(t_len), 0)  # whole prices: an EMA often meets its input exactly
    got, want = _run_both("tema_core", (x.astype(in_dtype),), 20, out_dtype)
    _assert_same_bits(got, want)


@pytest.mark.parametrize("poison", [1e250, np.nan])
def test_tema_chunk_whose_warm_up_cannot_meet_the_true_state_is_recomputed(poison):
    n = 20
    warm = chunked_cores.tema_warm(n)
    start = 3 * (n - 1) + 1
    t_len = _chunked_rows(start, warm) + 50
    x = _close(t_len)
    size = (t_len - start) // LANES
    x[start + 5 * size - warm - 1] = poison
    got, want = _run_both("tema_core", (x,), n)
    _assert_same_bits(got, want)


# --- through the public functions ------------------------------------------------------------


def test_the_public_atr_and_tema_run_the_chunked_variants_and_equal_the_portable_cores():
    t_len = _chunked_rows(58, chunked_cores.tema_warm(20)) + 321
    h, l, c = _ohlc(t_len, seed=9)
    _, want_atr = _run_both("atr_core", (h, l, c), 14)
    _, want_tema = _run_both("tema_core", (c,), 20)
    _assert_same_bits(K.atr(h, l, c, 14, dtype=np.float64), want_atr)
    _assert_same_bits(K.tema(c, 20, dtype=np.float64), want_tema)
