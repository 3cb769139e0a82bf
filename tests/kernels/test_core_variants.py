"""The cpu backend's core variants (kernels.indicators.cores.CPU_VARIANTS) equal the portable cores
bit for bit: same values, same NaN positions, float32 and float64 inputs and outputs, every
mode, periods from 1 (LSMA: 2) to past the series' length, and blocks of SCRATCH_BLOCK
outputs cut anywhere (a re-anchoring inside a block, a block ending on the last row)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kernels.indicators import cores
from kernels import indicators as K
from tests.kernel_data import walk_ohlc


def _series(t_len: int) -> np.ndarray:
    """A random walk with a flat stretch (zero variance), a NaN and an inf."""
    c = walk_ohlc(t_len, seed=11)[3].astype(np.float64)
    c[100:160] = c[100]
    c[400] = np.nan
    c[700] = np.inf
    return c


SERIES = _series(3 * cores.SCRATCH_BLOCK + 17)
PERIODS = [1, 2, 3, 20, cores.SCRATCH_BLOCK, cores.SCRATCH_BLOCK + 1, 400, len(SERIES) - 1, len(SERIES), len(SERIES) + 1]


def _assert_variant_equals_core(core: str, x: np.ndarray, params: tuple, out_dtype) -> None:
    """The portable core and its cpu variant (CPU_VARIANTS[core]) on x, bit for bit."""
    portable = njit(cache=True, nogil=True)(getattr(cores, core))
    variant = njit(cache=True, nogil=True)(getattr(cores, cores.CPU_VARIANTS[core]))
    want = np.full(x.shape[0], -1.0, dtype=out_dtype)
    got = np.full(x.shape[0], -1.0, dtype=out_dtype)
    with np.errstate(invalid="ignore"):
        portable(x, *params, want)
        variant(x, *params, got)
    bits = np.uint64 if out_dtype == np.float64 else np.uint32
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


def test_every_variant_runs_its_cores_spec_on_the_cpu():
    assert cores.CPU_VARIANTS == {"moments_core": "moments_blocked_core", "lsma_core": "lsma_blocked_core",
                                  "atr_core": "atr_chunked_core", "ema_core": "ema_chunked_core",
                                  "rsi_core": "rsi_chunked_core", "tema_core": "tema_chunked_core",
                                  "sma_core": "sma_exact_core", "wma_core": "wma_exact_core",
                                  "kama_core": "kama_exact_core", "dmi_core": "dmi_chunked_core"}
    from kernels.indicators import chunks as chunked_cores
    from kernels.indicators import cpu as cpu_backend

    assert cpu_backend.compiled("moments_core").py_func is cores.moments_blocked_core
    assert cpu_backend.compiled("lsma_core").py_func is cores.lsma_blocked_core
    assert cpu_backend.compiled("atr_core").py_func is chunked_cores.atr_chunked_core
    assert cpu_backend.compiled("ema_core").py_func is chunked_cores.ema_chunked_core
    assert cpu_backend.compiled("dmi_core").py_func is chunked_cores.dmi_chunked_core
    assert cpu_backend.compiled("rsi_core").py_func is chunked_cores.rsi_chunked_core
    assert cpu_backend.compiled("tema_core").py_func is chunked_cores.tema_chunked_core


@pytest.mark.parametrize("in_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("zscore", [0, 1])
@pytest.mark.parametrize("n", PERIODS)
def test_moments_blocked_core_equals_moments_core_bit_for_bit(n, zscore, in_dtype, out_dtype):
    _assert_variant_equals_core("moments_core", SERIES.astype(in_dtype), (n, zscore), out_dtype)


def test_the_public_functions_run_the_variant():
    x = SERIES[:300]
    want = np.empty(300)
    njit(cache=True, nogil=True)(cores.moments_core)(x, 20, 0, want)
    np.testing.assert_array_equal(K.rolling_std(x, 20, dtype=np.float64), want)


@pytest.mark.parametrize("in_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [p for p in PERIODS if p >= 2])
def test_lsma_blocked_core_equals_lsma_core_bit_for_bit(n, in_dtype, out_dtype):
    _assert_variant_equals_core("lsma_core", SERIES.astype(in_dtype), (n,), out_dtype)
