"""Dominance sums: every combination's ROI at once, in O(trades + grid cells) per pair.

Every filter is a threshold (keep when feature >= threshold: the predicate `cores.passes`
of the other engines), so with each filter's thresholds sorted (in the features' dtype), a
trade passes thresholds 0..b-1 of a dimension where b = the number of thresholds <= its
feature (`searchsorted(..., side="right")`): the same test, stated as a binning. Binning each trade on the five dimensions and adding its
result into a 5-D histogram (one per (target, stop_loss) pair), the suffix cumulative sums
along each axis give, at cell (j0..j4), the sum over every trade with bin > j on every
axis: the ROI of that combination. Counts work the same way. Axes are then put back in
the grid's order. Sums are of integers (1e-6 percent units) held in float64 below 2^53, so
they are exact and equal the brute force's.

One implementation for NumPy and CuPy (`xp`), and one for torch; `cube_top` runs the
`gridsearch.cube` backend asked for and ranks the result.
"""

from __future__ import annotations

import numpy as np

from kernels import backends
from kernels.gridsearch import CUBE
from kernels.gridsearch.grid import FILTERS, Grid
from kernels.gridsearch.ranking import top_k_full


def _bins(features, grid: Grid, xp):
    """Per dimension: the sorted thresholds' order and each trade's bin (0..len)."""
    bins, orders, shape = [], [], []
    for d, name in enumerate(FILTERS):
        values = np.asarray(getattr(grid, name), dtype=features.dtype)
        order = np.argsort(values, kind="stable")
        sorted_vals = xp.asarray(values[order])
        bins.append(xp.searchsorted(sorted_vals, features[d], side="right"))
        orders.append(order)
        shape.append(len(values) + 1)
    return bins, orders, tuple(shape)


def _suffix_sums(cube, xp):
    for axis in range(cube.ndim):
        cube = xp.flip(xp.cumsum(xp.flip(cube, axis=axis), axis=axis), axis=axis)
    return cube


def _to_grid_order(cube, orders, xp):
    """Cell (b0..b4) with b = sorted index + 1 -> grid order of each dimension."""
    cube = cube[(slice(1, None),) * 5]
    for axis, order in enumerate(orders):
        cube = xp.take(cube, xp.asarray(order), axis=axis)
    return cube


def cube_roi(features, results, grid: Grid, xp=np) -> tuple:
    """(roi_units int64, trades int64), each shaped grid.sizes (grid order)."""
    features = xp.asarray(features)
    bins, orders, shape = _bins(features, grid, xp)
    flat = xp.ravel_multi_index(tuple(bins), shape)
    cells = int(np.prod(shape))
    counts = _to_grid_order(_suffix_sums(xp.bincount(flat, minlength=cells).reshape(shape), xp), orders, xp)
    n_t, n_s = len(grid.target), len(grid.stop_loss)
    roi = xp.empty(tuple(grid.sizes[:5]) + (n_t * n_s,), dtype=xp.int64)
    for p in range(n_t * n_s):
        hist = xp.bincount(flat, weights=xp.asarray(results[p], dtype=xp.float64), minlength=cells).reshape(shape)
        roi[..., p] = xp.rint(_to_grid_order(_suffix_sums(hist, xp), orders, xp)).astype(xp.int64)
    roi = roi.reshape(tuple(grid.sizes))
    trades = xp.broadcast_to(counts.astype(xp.int64)[..., None, None], tuple(grid.sizes))
    return roi, trades


def cube_roi_torch(features, results, grid: Grid, device: str = "cpu") -> tuple:
    """The same dominance sums with torch (ROCm / CUDA / CPU); NumPy arrays out."""
    import torch

    feats = torch.as_tensor(np.ascontiguousarray(features), device=device)
    bins, orders, shape = [], [], []
    for d, name in enumerate(FILTERS):
        values = np.asarray(getattr(grid, name), dtype=np.asarray(features).dtype)
        order = np.argsort(values, kind="stable")
        bins.append(torch.searchsorted(torch.as_tensor(values[order], device=device), feats[d].contiguous(), right=True))
        orders.append(order)
        shape.append(len(values) + 1)
    flat = torch.zeros_like(bins[0])
    for b, size in zip(bins, shape):
        flat = flat * size + b
    cells = int(np.prod(shape))

    def finish(hist):
        cube = hist.reshape(shape)
        for axis in range(5):
            cube = cube.flip(axis).cumsum(axis).flip(axis)
        cube = cube[(slice(1, None),) * 5]
        for axis, order in enumerate(orders):
            cube = cube.index_select(axis, torch.as_tensor(order, device=device))
        return cube

    counts = finish(torch.bincount(flat, minlength=cells).to(torch.float64)).to(torch.int64)
    n_pairs = len(grid.target) * len(grid.stop_loss)
    roi = torch.empty(tuple(grid.sizes[:5]) + (n_pairs,), dtype=torch.int64, device=device)
    res = torch.as_tensor(np.ascontiguousarray(results), device=device)
    for p in range(n_pairs):
        hist = torch.bincount(flat, weights=res[p].to(torch.float64), minlength=cells)
        roi[..., p] = finish(hist).round().to(torch.int64)
    roi = roi.reshape(tuple(grid.sizes)).cpu().numpy()
    trades = np.broadcast_to(counts.cpu().numpy()[..., None, None], tuple(grid.sizes))
    return roi, trades


def cube_top(features, results, grid: Grid, *, k: int, min_trades: int, backend: str = "cpu"):
    """The exact top-k (ranking.TopK) of `grid` by dominance sums on `backend` (the
    `gridsearch.cube` family, registered in `kernels.gridsearch`: cpu NumPy, cuda CuPy, torch)."""
    return backends.load(CUBE, backends.check(CUBE, backend, "dominance sums run on"))(features, results, grid, k, min_trades)


# The `gridsearch.cube` backends: (features, results, grid, k, min_trades) -> TopK.
def cube_top_cpu(features, results, grid: Grid, k: int, min_trades: int):
    roi, counts = cube_roi(features, results, grid)
    return top_k_full(roi, counts, k, min_trades)


def cube_top_cuda(features, results, grid: Grid, k: int, min_trades: int):
    import cupy as cp

    roi, counts = cube_roi(cp.asarray(features), cp.asarray(results), grid, xp=cp)
    return top_k_full(roi, counts, k, min_trades, xp=cp)


def cube_top_torch(features, results, grid: Grid, k: int, min_trades: int):
    roi, counts = cube_roi_torch(features, results, grid)
    return top_k_full(roi, counts, k, min_trades)
