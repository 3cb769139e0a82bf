"""Seller exhaustion (the seller-exhaustion strategy's signal bars): arrays in, arrays out.

    ema_f, ema_s  EMAs as pandas `ewm(span, adjust=False)`: e[0] = x[0], e = a*x + (1-a)*e[-1],
                  a = 2/(span+1) (seeded with the first value, not TA-Lib's SMA seed)
    downtrend     ema_f < ema_s
    atr           simple mean of the true range over atr_window (TR[0] = high - low), NaN
                  until the window is full (pandas rolling(window).mean())
    vol_z         rolling z-score of volume over z_window, population std
    tr_z          rolling z-score of atr * atr_window over z_window (NaN until both windows fill)
    cloc          (close - low) / (high - low), NaN when high == low
    signal        downtrend and vol_z > vol_z_min and tr_z > tr_z_min and cloc > cloc_min

Where a rolling standard deviation is 0 the z-score is 0 (pandas would give inf or NaN;
either way no signal, since the thresholds are positive). Defaults 96/672/672/96 are the
seed's (15-minute bars); `PRESETS["daily"]` is the same shape for daily bars.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from kernels import indicators as K


@dataclass(frozen=True)
class SellerParams:
    ema_fast: int = 96
    ema_slow: int = 672
    z_window: int = 672
    atr_window: int = 96
    vol_z_min: float = 2.0
    tr_z_min: float = 1.2
    cloc_min: float = 0.6


PRESETS = {
    "15m": SellerParams(),
    "daily": SellerParams(ema_fast=10, ema_slow=50, z_window=50, atr_window=14),
}


@njit(cache=True)
def ewm_adjust_false(x: np.ndarray, span: int) -> np.ndarray:
    """pandas ewm(span=span, adjust=False).mean() for a series without NaN."""
    out = np.empty(x.shape[0], dtype=np.float64)
    if x.shape[0] == 0:
        return out
    a = 2.0 / (span + 1.0)
    e = np.float64(x[0])
    out[0] = e
    for i in range(1, x.shape[0]):
        e = a * np.float64(x[i]) + (1.0 - a) * e
        out[i] = e
    return out


def true_range(high, low, close) -> np.ndarray:
    high, low, close = (np.asarray(a, dtype=np.float64) for a in (high, low, close))
    prev = np.concatenate([[np.nan], close[:-1]])
    tr = np.fmax(high - low, np.fmax(np.abs(high - prev), np.abs(low - prev)))
    tr[0] = high[0] - low[0]
    return tr


def zscore_after_nan(x: np.ndarray, window: int) -> np.ndarray:
    """Rolling z-score of a series that starts with NaN warm-up: NaN until `window` valid values."""
    out = np.full(x.shape[0], np.nan)
    valid = np.flatnonzero(~np.isnan(x))
    if valid.size:
        first = valid[0]
        out[first:] = K.zscore(x[first:], window, dtype=np.float64)
    return out


def seller_exhaustion(high, low, close, volume, params: SellerParams = SellerParams()) -> dict[str, np.ndarray]:
    """Every intermediate column and the boolean `signal` (see the module docstring)."""
    close64 = np.asarray(close, dtype=np.float64)
    ema_f = ewm_adjust_false(close64, params.ema_fast)
    ema_s = ewm_adjust_false(close64, params.ema_slow)
    tr = true_range(high, low, close)
    atr = K.sma(tr, params.atr_window, dtype=np.float64)
    vol_z = K.zscore(np.asarray(volume, dtype=np.float64), params.z_window, dtype=np.float64)
    tr_z = zscore_after_nan(atr * params.atr_window, params.z_window)
    rng = np.asarray(high, dtype=np.float64) - np.asarray(low, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        cloc = np.where(rng > 0, (close64 - np.asarray(low, dtype=np.float64)) / rng, np.nan)
        signal = (ema_f < ema_s) & (vol_z > params.vol_z_min) & (tr_z > params.tr_z_min) & (cloc > params.cloc_min)
    return {"ema_f": ema_f, "ema_s": ema_s, "atr": atr, "vol_z": vol_z, "tr_z": tr_z, "cloc": cloc, "signal": signal}
