"""The exact top-k of combinations.

Rank by ROI descending (ROIs are exact integers of 1e-6 percent, so "rounded to 9
decimals" changes nothing), ties to the combination that comes first in grid order; only
combinations keeping at least `min_trades` trades are ranked. Per launch, the k-th best ROI
is found with a partition (not a full sort); every candidate at least that good is kept
and ordered by (ROI desc, index asc), so ties at the boundary resolve exactly.
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
        kth = xp.partition(key, key.shape[0] - k)[key.shape[0] - k]  # k-th largest
        candidates = xp.flatnonzero((key >= kth) & ok)
    else:
        candidates = xp.flatnonzero(ok)
    to_np = (lambda a: a) if xp is np else xp.asnumpy
    cand = to_np(candidates).astype(np.int64)
    roi = to_np(roi_units[candidates]).astype(np.int64)
    n = to_np(trades[candidates]).astype(np.int64)
    order = _order(roi, cand)[:k]
    return TopK(cand[order] + base, roi[order], n[order])


def merge_top(a: TopK, b: TopK, k: int) -> TopK:
    index = np.concatenate([a.index, b.index])
    roi = np.concatenate([a.roi_units, b.roi_units])
    trades = np.concatenate([a.trades, b.trades])
    order = _order(roi, index)[:k]
    return TopK(index[order], roi[order], trades[order])


def top_k_full(roi_units: np.ndarray, trades: np.ndarray, k: int, min_trades: int, xp=np) -> TopK:
    """Top-k over a whole grid of ROIs in grid order (the cube engine's output)."""
    return top_k(roi_units.ravel(), trades.ravel(), 0, k, min_trades, xp=xp)
