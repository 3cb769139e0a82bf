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
BY_CANCELLATION = {"rolling_std", "zscore"}  # variance as E[x^2] - E[x]^2 (TA-Lib's STDDEV)


@pytest.mark.parametrize("n", (2, 7))
@pytest.mark.parametrize("name", UNARY)
def test_unary_cuda_equals_cpu(name, n):
    cpu = getattr(K, name)(CLOSE, n, dtype=np.float64)
    gpu = getattr(K, name)(CLOSE, n, backend="cuda", dtype=np.float64)
    assert_engine_equal(gpu, cpu, condition=variance_condition(CLOSE, n) if name in BY_CANCELLATION else None)


def variance_condition(x: np.ndarray, n: int) -> np.ndarray:
    """E[x^2] / Var(x) over each window of n rows (1 before the first full window, inf where
    the window is flat): how much the variance E[x^2] - E[x]^2 magnifies a rounding."""
    w = np.lib.stride_tricks.sliding_window_view(x, n, axis=-1)
    var = w.var(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cond = np.where(var > 0, (w**2).mean(axis=-1) / var, np.inf)
    return np.concatenate([np.ones(x.shape[:-1] + (n - 1,)), cond], axis=-1)


def test_variance_condition_of_a_window_two_walk_is_its_mean_square_over_its_variance():
    x = np.array([100.0, 101.0, 101.0])  # windows (100, 101): E[x^2] 10100.5, Var 0.25; (101, 101): flat
    np.testing.assert_array_equal(variance_condition(x, 2), [1.0, 10100.5 / 0.25, np.inf])


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
