"""Brute force as the seed designs it: one thread per combination over all trades.

`cores.combo_core` evaluates combination c (grid order, int64 index arithmetic): it
decodes the seven parameter indices, then sums the results of the trades that pass the
five thresholds (`cores.passes`), branch-free so the CPU loop vectorises. It is compiled
here for the CPU (numba, parallel over combinations) and in `kernels.gridsearch.cuda` as a
CUDA device function (one thread per combination). `brute_force(backend="cuda")` runs
`kernels.gridsearch.brute_cuda` (imported on demand): features pre-binned to bytes, trade
tiles in shared memory, int32 partial sums, falling back to that kernel for grids with
more than 127 thresholds in a dimension. Launches cover at most `MAX_LAUNCH` (50M) combinations, consecutive
in grid order (so the combinations of one launch share most filter values); each launch
keeps its top-k (exact, see ranking) and the launches are merged.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from kernels import backends
from kernels.gridsearch import BRUTE
from kernels.gridsearch.cores import combo_core
from kernels.gridsearch.grid import Grid
from kernels.gridsearch.ranking import TopK, merge_top, top_k

MAX_LAUNCH = 50_000_000

_combo_cpu = njit(cache=True, nogil=True)(combo_core)


@njit(cache=True, parallel=True)
def _launch_cpu(lo, hi, sizes, table, f0, f1, f2, f3, f4, results, out_sum, out_n):
    """Combinations lo..hi-1 into out_sum/out_n[0..hi-lo), parallel over combinations."""
    for c in prange(lo, hi):
        _combo_cpu(c, lo, sizes, table, f0, f1, f2, f3, f4, results, out_sum, out_n)


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
    run = backends.load(BRUTE, backends.check(BRUTE, backend, "brute force runs on"))
    return run(features, results, sizes, table, total, k, min_trades, launch, progress)


def brute_cpu(features, results, sizes, table, total: int, k: int, min_trades: int, launch: int, progress) -> TopK:
    """The `gridsearch.brute` family's cpu entry: numba, parallel over combinations, `launch` at a time."""
    best = TopK.empty()
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
