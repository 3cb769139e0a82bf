"""cuda backend equals the cpu backend bit for bit (CUDA simulator in CI: tiny inputs; on a
real GPU within FMA rounding, tests/gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

from kernels import indicators as K
from tests.gpu import assert_engine_equal, gpu
from tests.kernel_data import walk_ohlc

pytestmark = gpu

BATCH = np.stack([walk_ohlc(70, seed=s)[1:] for s in range(3)], axis=1)  # [3 fields, 3 series, T]
HIGH, LOW, CLOSE = BATCH
UNARY = ["sma", "ema", "wma", "dema", "tema", "hma", "lsma", "kama", "rsi", "rolling_std", "zscore", "returns"]
HLC = ["atr", "plus_di", "minus_di", "adx"]


@pytest.mark.parametrize("n", (2, 7))
@pytest.mark.parametrize("name", UNARY)
def test_unary_cuda_equals_cpu(name, n):
    cpu = getattr(K, name)(CLOSE, n, dtype=np.float64)
    gpu = getattr(K, name)(CLOSE, n, backend="cuda", dtype=np.float64)
    assert_engine_equal(gpu, cpu)  # rolling_std / zscore too: their E[x^2] - E[x]^2 cancels, -fma=0 keeps it exact


@pytest.mark.parametrize("name", HLC)
def test_hlc_cuda_equals_cpu(name):
    cpu = getattr(K, name)(HIGH, LOW, CLOSE, 5)
    gpu = getattr(K, name)(HIGH, LOW, CLOSE, 5, backend="cuda")
    assert gpu.dtype == np.float32
    assert_engine_equal(gpu, cpu)


def test_one_series_in_and_out_keeps_its_shape():
    out = K.ema(CLOSE[0], 5, backend="cuda")
    assert out.shape == CLOSE[0].shape
    assert_engine_equal(out, K.ema(CLOSE[0], 5))
