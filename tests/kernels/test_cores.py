"""Contracts of the portable cores (kernels.indicators.cores) beyond their TA-Lib parity
(tests/kernels/test_kernels_talib.py): what a core computes in terms of another, and what it
does with its scratch."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kernels.indicators import cores
from kernels import indicators as K
from tests.kernel_data import goog_ohlc, walk_ohlc

CLOSES = {"goog": goog_ohlc()[3], "walk": walk_ohlc(3000, seed=4)[3]}


@pytest.mark.parametrize("series", sorted(CLOSES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("n", [2, 3, 4, 9, 20, 50, 101])
def test_hma_is_its_three_wma_calls_bit_for_bit(n, dtype, series):
    """HMA = WMA(2*WMA(x, n//2) - WMA(x, n), int(sqrt n)): the inner WMAs in float64, their
    difference rounded to the output's dtype, the outer WMA over it from row n-1."""
    x = CLOSES[series].astype(dtype)
    inner = (2.0 * K.wma(x, n // 2, dtype=np.float64) - K.wma(x, n, dtype=np.float64)).astype(dtype)
    want = np.full(x.shape[0], np.nan, dtype)
    want[n - 1 :] = K.wma(inner[n - 1 :], int(np.sqrt(n)), dtype=dtype)
    assert K.hma(x, n, dtype=dtype).tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("n", [2, 20, 101])
def test_hma_uses_only_the_first_sqrt_n_entries_of_its_scratch_as_a_ring(n, dtype):
    x = CLOSES["walk"]
    m = int(np.sqrt(n))
    out = np.empty(x.shape[0], dtype)
    diff = np.full(x.shape[0], 7.0, dtype)
    njit(cores.hma_core)(x, n, out, diff)
    assert (diff[m:] == 7.0).all()  # never touched: a T-long scratch costs no memory traffic
    assert out.tobytes() == K.hma(x, n, dtype=dtype).tobytes()
