"""The exact top-k of combinations.

Rank by ROI descending (ROIs are exact integers of 1e-6 percent, so "rounded to 9
decimals" changes nothing), ties to the combination that comes first in grid order; only
combinations keeping at least `min_trades` trades are ranked. Per launch, the k-th best ROI
is found with a partition (not a full sort; on a device, of the values above a bound from
block maxima: `kth_largest`); every candidate at least that good is kept and ordered by
(ROI desc, index asc), so ties at the boundary resolve exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TopK:
    index: np.ndarray  # combination indices, grid order
    roi_units: np.ndarray
    trades: np.ndarray

    @classmethod
    def empty(cls) -> "TopK":
        z = np.empty(0, dtype=np.int64)
        return cls(z, z.copy(), z.copy())


def _order(roi_units: np.ndarray, index: np.ndarray) -> np.ndarray:
    return np.lexsort((index, -roi_units))


def top_k(roi_units, trades, base: int, k: int, min_trades: int, xp=np) -> TopK:
    """Best k of one launch (arrays of the launch's combinations, starting at index `base`)."""
    ok = trades >= min_trades
    n_ok = int(ok.sum())
    if n_ok == 0:
        return TopK.empty()
    lowest = np.iinfo(np.int64).min
    key = xp.where(ok, roi_units, lowest)
    if n_ok > k:
        kth = kth_largest(key, k, xp, min_size=0 if xp is np else 1 << 16)
        candidates = xp.flatnonzero((key >= kth) & ok)
    else:
        candidates = xp.flatnonzero(ok)
    to_np = (lambda a: a) if xp is np else xp.asnumpy
    cand = to_np(candidates).astype(np.int64)
    roi = to_np(roi_units[candidates]).astype(np.int64)
    n = to_np(trades[candidates]).astype(np.int64)
    order = _order(roi, cand)[:k]
    return TopK(cand[order] + base, roi[order], n[order])


def kth_largest(key, k: int, xp=np, min_size: int = 1 << 16, block: int = 1024, most: int = 1 << 20):
    """The k-th largest value of the 1-D `key` (1 <= k <= key.size), exactly as a partition
    gives it. For a key of at least `min_size` values (not 0), first a lower bound: the k-th
    largest of the maxima of blocks of `block` values (k blocks hold a value at least that
    large, so the k-th largest value is no smaller); then the partition runs on the values
    at least that bound only (at most `most` of them; else on the whole key). On a device
    this spares the partition of the whole key (CuPy sorts it), one pass over it instead."""
    n = key.shape[0]
    if min_size and n >= min_size and n // block >= k:
        m = n // block * block
        maxima = xp.concatenate([key[:m].reshape(-1, block).max(axis=1), key[m:]])
        lower = xp.partition(maxima, maxima.shape[0] - k)[maxima.shape[0] - k]
        sub = key[key >= lower]
        if sub.shape[0] <= most:
            return xp.partition(sub, sub.shape[0] - k)[sub.shape[0] - k]
    return xp.partition(key, n - k)[n - k]


def merge_top(a: TopK, b: TopK, k: int) -> TopK:
    index = np.concatenate([a.index, b.index])
    roi = np.concatenate([a.roi_units, b.roi_units])
    trades = np.concatenate([a.trades, b.trades])
    order = _order(roi, index)[:k]
    return TopK(index[order], roi[order], trades[order])


def top_k_full(roi_units: np.ndarray, trades: np.ndarray, k: int, min_trades: int, xp=np) -> TopK:
    """Top-k over a whole grid of ROIs in grid order (the cube engine's output)."""
    return top_k(roi_units.ravel(), trades.ravel(), 0, k, min_trades, xp=xp)
