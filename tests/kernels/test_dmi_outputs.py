"""`adx` alone runs the DMI core with which=3: the same ADX bit for bit as the three-output
call, and the two directional outputs it drops are never written past their warm-up (so
their pages are never touched: at 10M float64 rows their first-touch faults cost more than
the core itself)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kernels.indicators import cores
from kernels import indicators as K
from tests.kernel_data import walk_ohlc


@pytest.mark.parametrize("n", [2, 14, 300])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_adx_alone_equals_the_three_output_adx_bit_for_bit(n, dtype):
    _, h, l, c = walk_ohlc(1500, seed=5)
    want = K.dmi(h, l, c, n, dtype=dtype)[2]
    np.testing.assert_array_equal(K.adx(h, l, c, n, dtype=dtype).view(np.uint8), want.view(np.uint8))


def test_adx_only_mode_leaves_the_directional_outputs_unwritten_after_their_warm_up():
    _, h, l, c = walk_ohlc(400, seed=6)
    core = njit(cache=True, nogil=True)(cores.dmi_core)
    outs = [np.full(400, 7.0) for _ in range(3)]
    core(h, l, c, 14, 3, *outs)
    plus, minus, adx = outs
    assert np.isnan(plus[:14]).all() and np.isnan(minus[:14]).all()
    assert (plus[14:] == 7.0).all() and (minus[14:] == 7.0).all()
    full = [np.empty(400) for _ in range(3)]
    core(h, l, c, 14, 0, *full)
    np.testing.assert_array_equal(adx, full[2])
