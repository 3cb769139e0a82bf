"""The grid search's CUDA engine: the shared cores compiled as device functions, their
kernels and launches.

- `crossings_kernel` / `crossings`: one thread per trade, the first crossing row of every
  exit level (`cores.crossings_core`); `exits.resolve_exits(backend="cuda")` calls it.
- `combos_kernel` / `brute_force_cuda`: one thread per combination (`cores.combo_core`),
  launches of at most `launch` combinations each keeping its exact top-k (`ranking`);
  `brute.brute_force(backend="cuda")` calls it.

Imports only `cores`, `ranking` and the package constants, never an engine module;
the engines import this module lazily, inside their cuda dispatch, so importing an engine
never imports CUDA. On a GPU the arrays are CuPy arrays; under numba's CUDA simulator (CI,
NUMBA_ENABLE_CUDASIM=1) NumPy arrays stand in for them. `cuda` is imported at module level:
the simulator swaps it through the kernels' globals.
"""

from __future__ import annotations

import math

import numpy as np
from numba import config, cuda

from kernels.gridsearch.cores import combo_core, crossings_core
from kernels.gridsearch.ranking import TopK, merge_top, top_k

crossings_dev = cuda.jit(device=True)(crossings_core)
combo_dev = cuda.jit(device=True)(combo_core)


@cuda.jit
def crossings_kernel(start, end, entry, prices, targets, stops, first_t, first_s):
    """One thread per trade: first crossing row of every level."""
    j = cuda.grid(1)
    if j < start.shape[0]:
        crossings_dev(j, start, end, entry, prices, targets, stops, first_t, first_s)


@cuda.jit
def combos_kernel(lo, hi, sizes, table, f0, f1, f2, f3, f4, results, out_sum, out_n):
    """One thread per combination lo..hi-1 (int64 index arithmetic in combo_core)."""
    c = lo + cuda.grid(1)
    if c < hi:
        combo_dev(c, lo, sizes, table, f0, f1, f2, f3, f4, results, out_sum, out_n)


def simulated() -> bool:
    """True under numba's CUDA simulator (NumPy arrays stand in for device arrays)."""
    return bool(config.ENABLE_CUDASIM)


def array_module():
    """(xp, to_device): CuPy on a GPU, NumPy under the simulator."""
    if simulated():
        return np, (lambda a: a)
    import cupy as cp

    return cp, cp.asarray


def crossings(start, end, entry, prices, targets, stops, threads: int = 128):
    """(first_t int64 [targets, trades], first_s int64 [stops, trades]) as device arrays
    (CuPy; NumPy under the simulator). Inputs: device arrays, or host arrays (copied)."""
    xp, dev = array_module()
    start, end, entry, prices, targets, stops = (dev(a) for a in (start, end, entry, prices, targets, stops))
    n = start.shape[0]
    first_t = xp.empty((targets.shape[0], n), dtype=xp.int64)
    first_s = xp.empty((stops.shape[0], n), dtype=xp.int64)
    if simulated():
        threads = 32
    crossings_kernel[max(1, math.ceil(n / threads)), threads](start, end, entry, prices, targets, stops, first_t, first_s)
    return first_t, first_s


def brute_force_cuda(features, results, sizes, table, total: int, k: int, min_trades: int, launch: int,
                     progress=None, threads: int = 256) -> TopK:
    """Exact top-k over combinations 0..total-1 (see `brute.brute_force`), on the GPU."""
    xp, dev = array_module()
    best = TopK.empty()
    f = [dev(np.ascontiguousarray(features[i])) for i in range(5)]
    d_sizes, d_table, d_results = dev(sizes), dev(table), dev(results)
    for lo in range(0, total, launch):
        hi = min(total, lo + launch)
        out_sum = xp.empty(hi - lo, dtype=xp.int64)
        out_n = xp.empty(hi - lo, dtype=xp.int64)
        combos_kernel[max(1, math.ceil((hi - lo) / threads)), threads](lo, hi, d_sizes, d_table, *f, d_results, out_sum, out_n)
        best = merge_top(best, top_k(out_sum, out_n, lo, k, min_trades, xp=xp), k)
        if progress:
            progress(hi - lo)
    return best
