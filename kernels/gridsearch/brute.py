"""Brute force as the seed designs it: one thread per combination over all trades.

`combo_core` evaluates combination c (grid order, int64 index arithmetic): it decodes the
seven parameter indices, then sums the results of the trades that pass the five
thresholds, branch-free so the CPU loop vectorises. It is compiled for the CPU (numba,
parallel over combinations) and as a CUDA device function (one thread per combination).
Launches cover at most `MAX_LAUNCH` (50M) combinations, consecutive in grid order (so the
combinations of one launch share most filter values); each launch keeps its top-k
(exact, see ranking) and the launches are merged.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from kernels.gridsearch.grid import Grid
from kernels.gridsearch.ranking import TopK, merge_top, top_k

MAX_LAUNCH = 50_000_000


def combo_core(c, lo, sizes, table, f0, f1, f2, f3, f4, results, out_sum, out_n):
    """ROI units (sum of kept trades' results) and kept-trade count of combination c."""
    rest = c
    i6 = rest % sizes[6]
    rest //= sizes[6]
    i5 = rest % sizes[5]
    rest //= sizes[5]
    i4 = rest % sizes[4]
    rest //= sizes[4]
    i3 = rest % sizes[3]
    rest //= sizes[3]
    i2 = rest % sizes[2]
    rest //= sizes[2]
    i1 = rest % sizes[1]
    i0 = rest // sizes[1]
    t0 = table[0, i0]
    t1 = table[1, i1]
    t2 = table[2, i2]
    t3 = table[3, i3]
    t4 = table[4, i4]
    pair = i5 * sizes[6] + i6
    total = 0
    kept = 0
    for j in range(f0.shape[0]):
        keep = (f0[j] >= t0) & (f1[j] >= t1) & (f2[j] >= t2) & (f3[j] >= t3) & (f4[j] >= t4)
        k = np.int64(keep)
        total += k * np.int64(results[pair, j])
        kept += k
    out_sum[c - lo] = total
    out_n[c - lo] = kept


_combo_cpu = njit(cache=True, nogil=True)(combo_core)


@njit(cache=True, parallel=True)
def _launch_cpu(lo, hi, sizes, table, f0, f1, f2, f3, f4, results, out_sum, out_n):
    for c in prange(lo, hi):
        _combo_cpu(c, lo, sizes, table, f0, f1, f2, f3, f4, results, out_sum, out_n)


def _cuda_kernel():
    from kernels.gridsearch.cuda_kernels import combos_kernel

    return combos_kernel


def filter_table(grid: Grid, dtype=np.float32) -> np.ndarray:
    """Thresholds as the features' dtype: `feature >= threshold` compares like for like."""
    return grid.table().astype(dtype)


def brute_force(features: np.ndarray, results: np.ndarray, grid: Grid, *, k: int = 10, min_trades: int = 1,
                backend: str = "cpu", launch: int = MAX_LAUNCH, progress=None) -> TopK:
    """Exact top-k over every combination. features: [5, trades]; results: [pairs, trades]."""
    features = np.ascontiguousarray(features)
    sizes = np.asarray(grid.sizes, dtype=np.int64)
    table = filter_table(grid, features.dtype)
    total = grid.n_combinations
    best = TopK.empty()
    if backend == "cuda":
        return _brute_force_cuda(features, results, grid, sizes, table, k, min_trades, launch, progress)
    if backend != "cpu":
        raise ValueError(f"brute force runs on cpu or cuda, got {backend!r}")
    f = [np.ascontiguousarray(features[i]) for i in range(5)]
    for lo in range(0, total, launch):
        hi = min(total, lo + launch)
        out_sum = np.empty(hi - lo, dtype=np.int64)
        out_n = np.empty(hi - lo, dtype=np.int64)
        _launch_cpu(lo, hi, sizes, table, *f, results, out_sum, out_n)
        best = merge_top(best, top_k(out_sum, out_n, lo, k, min_trades), k)
        if progress:
            progress(hi - lo)
    return best


def _brute_force_cuda(features, results, grid, sizes, table, k, min_trades, launch, progress) -> TopK:
    from numba import config

    total = grid.n_combinations
    threads = 256
    best = TopK.empty()
    if config.ENABLE_CUDASIM:  # CI: the simulator runs on NumPy arrays
        xp, dev = np, (lambda a: a)
    else:
        import cupy as cp

        xp, dev = cp, cp.asarray
    f = [dev(np.ascontiguousarray(features[i])) for i in range(5)]
    d_sizes, d_table, d_results = dev(sizes), dev(table), dev(results)
    for lo in range(0, total, launch):
        hi = min(total, lo + launch)
        out_sum = xp.empty(hi - lo, dtype=xp.int64)
        out_n = xp.empty(hi - lo, dtype=xp.int64)
        _cuda_kernel()[max(1, math.ceil((hi - lo) / threads)), threads](lo, hi, d_sizes, d_table, *f, d_results, out_sum, out_n)
        best = merge_top(best, top_k(out_sum, out_n, lo, k, min_trades, xp=xp), k)
        if progress:
            progress(hi - lo)
    return best
