"""Market regime tagger, causal: the tag of day t uses days <= t only.

    ma_s, ma_l   trailing SMAs of the index close over `short` and `long` days
    spread       ma_s / ma_l - 1
    vol          trailing standard deviation of daily log returns over `volw` days
    vol_ref      trailing median of vol over `vol_lookback` days
    band         `band_vol` * vol * sqrt(long)   (how far the trend must lead, in vol units)
    tag          1 bull if spread > band; -1 bear if spread < -band; otherwise 2 oscillate
                 if vol > vol_ref (high vol, low trend), else 0 consolidate
    warm-up      -128 (no tag) until every window is full

The seed's version centred its windows with np.convolve(..., mode="same"), which reads
future prices. Every window here is trailing, and the windows are finite (the longest is
vol_lookback + volw days), so a tag never changes when later days are appended.
"""

from __future__ import annotations

import numpy as np

from kernels import indicators as K

BULL, BEAR, CONSOLIDATE, OSCILLATE, NO_TAG = 1, -1, 0, 2, -128


def trailing_median(x: np.ndarray, window: int) -> np.ndarray:
    """Median of x[t-window+1..t] (NaN until the window is full of values)."""
    out = np.full(x.shape[0], np.nan)
    if x.shape[0] >= window:
        out[window - 1 :] = np.median(np.lib.stride_tricks.sliding_window_view(x, window), axis=1)
    return out


def tag_regime(close, *, short: int = 20, long: int = 50, volw: int = 20, vol_lookback: int = 252,
               band_vol: float = 0.25) -> np.ndarray:
    """int8 regime per day (see the module docstring)."""
    close = np.asarray(close, dtype=np.float64)
    ma_s = K.sma(close, short, dtype=np.float64)
    ma_l = K.sma(close, long, dtype=np.float64)
    spread = ma_s / ma_l - 1.0
    logret = np.concatenate([[np.nan], np.diff(np.log(close))])
    vol = np.full(close.shape[0], np.nan)
    if close.shape[0] > 1:
        vol[1:] = K.rolling_std(logret[1:], volw, dtype=np.float64)
    vol_ref = trailing_median(vol[1:], vol_lookback) if close.shape[0] > 1 else vol
    vol_ref = np.concatenate([[np.nan], vol_ref]) if close.shape[0] > 1 else vol_ref
    band = band_vol * vol * np.sqrt(long)
    tag = np.where(spread > band, BULL, np.where(spread < -band, BEAR, np.where(vol > vol_ref, OSCILLATE, CONSOLIDATE)))
    ready = ~(np.isnan(spread) | np.isnan(vol) | np.isnan(vol_ref))
    return np.where(ready, tag, NO_TAG).astype(np.int8)
