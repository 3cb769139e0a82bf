"""Test series for the kernels: real prices and random walks with flat stretches and gaps."""

from __future__ import annotations

import numpy as np


def goog_ohlc() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """GOOG daily 2004-2013 (2148 rows) from backtesting.test, float64."""
    from backtesting.test import GOOG

    return tuple(GOOG[c].to_numpy(dtype=np.float64) for c in ("Open", "High", "Low", "Close"))


def walk_ohlc(n: int = 1500, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A positive random walk with a flat stretch (no movement at all: equal OHLC) and gaps."""
    rng = np.random.default_rng(seed)
    steps = rng.normal(0, 1.0, n)
    flat = slice(int(0.13 * n), int(0.17 * n))
    steps[flat] = 0.0
    steps[int(0.47 * n)] = 25.0  # gap up
    steps[int(0.73 * n)] = -30.0  # gap down
    close = 200.0 + np.cumsum(steps)
    up, down = np.abs(rng.normal(0, 0.8, (2, n)))
    up[flat] = 0.0
    down[flat] = 0.0
    high, low = close + up, close - down
    open_ = np.clip(close - steps * 0.5, low, high)
    return open_, high, low, close


def assert_variant_bits(core, variant, x, params: tuple, out_dtype=np.float64):
    """core(x, *params, want) and variant(x, *params, got) write the same bits in every row that
    is not NaN, and NaN in the same rows (outputs start at -1.0, so a row neither writes also
    shows); returns what the variant returned. A NaN's sign and payload are not compared: where
    two NaNs meet (x86's default NaN from inf - inf has its sign set, a NaN read from the input
    has not), the CPU keeps the one in the operand the compiler put first."""
    want = np.full(x.shape[0], -1.0, dtype=out_dtype)
    got = np.full(x.shape[0], -1.0, dtype=out_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        core(x, *params, want)
        ran = variant(x, *params, got)
    bits = np.uint64 if np.dtype(out_dtype) == np.float64 else np.uint32
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(bits), want[~nan].view(bits))
    return ran
