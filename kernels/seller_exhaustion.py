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

Streaming (the live path's `seller_exhaustion` specialist): `SellerExhaustionUpdater`, one
bar in, the signal out, O(1) per bar and equal to `seller_exhaustion` bar for bar:
`EwmUpdater` is ewm(span, adjust=False); ATR = SMAUpdater over the true range
(TR[0] = high - low); vol_z = ZScoreUpdater(volume); tr_z = ZScoreUpdater over
atr * atr_window, fed from the first valid ATR on (the batch `zscore_after_nan`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from kernels import indicators as K
from kernels.indicators.updaters import SMAUpdater, Updater, ZScoreUpdater

NAN = math.nan


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


class EwmUpdater(Updater):
    """pandas ewm(span, adjust=False).mean() (kernels.seller_exhaustion.ewm_adjust_false):
    e[0] = x[0]; e[t] = a*x[t] + (1 - a)*e[t-1], a = 2/(span + 1). Valid from the first bar."""

    def __init__(self, span: int) -> None:
        super().__init__()
        if isinstance(span, bool) or not isinstance(span, (int, np.integer)) or span < 1:
            raise ValueError(f"span must be an integer >= 1, got {span!r}")
        self.span = int(span)
        self._a = 2.0 / (self.span + 1.0)
        self._b = 1.0 - self._a

    def update(self, x) -> float:
        x = float(x)
        self._count += 1
        out = x if self._count == 1 else self._a * x + self._b * self.value
        self.value = out
        return out


class SellerExhaustionUpdater(Updater):
    """kernels.seller_exhaustion.seller_exhaustion, one bar at a time (see the module
    docstring there): update(high, low, close, volume) returns 1.0 on a signal bar, else 0.0;
    the intermediates of the last bar are attributes (ema_f, ema_s, atr, vol_z, tr_z, cloc)."""

    n_inputs = 4

    def __init__(self, params: SellerParams = PRESETS["daily"]) -> None:
        super().__init__()
        self.params = params
        self.lookback = params.atr_window - 1 + params.z_window - 1
        self._ema_f = EwmUpdater(params.ema_fast)
        self._ema_s = EwmUpdater(params.ema_slow)
        self._atr = SMAUpdater(params.atr_window)
        self._vol_z = ZScoreUpdater(params.z_window)
        self._tr_z = ZScoreUpdater(params.z_window)
        self._prev_close = NAN
        self.ema_f = self.ema_s = self.atr = self.vol_z = self.tr_z = self.cloc = NAN

    def update(self, high, low, close, volume) -> float:
        h, l, c, v = float(high), float(low), float(close), float(volume)
        p = self.params
        self._count += 1
        self.ema_f = self._ema_f.update(c)
        self.ema_s = self._ema_s.update(c)
        rng = h - l
        if self._count == 1:
            tr = rng
        else:
            pc = self._prev_close
            tr = max(rng, max(math.fabs(h - pc), math.fabs(l - pc)))
        self._prev_close = c
        self.atr = self._atr.update(tr)
        self.vol_z = self._vol_z.update(v)
        # tr_z: the z-score series starts at the first valid ATR (NaN warm-up skipped)
        self.tr_z = self._tr_z.update(self.atr * p.atr_window) if self._atr.ready else NAN
        self.cloc = (c - l) / rng if rng > 0 else NAN
        signal = (self.ema_f < self.ema_s and self.vol_z > p.vol_z_min and self.tr_z > p.tr_z_min
                  and self.cloc > p.cloc_min)
        self.value = 1.0 if signal else 0.0
        return self.value
