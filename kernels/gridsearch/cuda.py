"""The grid search's CUDA engine: the shared cores compiled as device functions, their
kernels and launches.

- `crossings_kernel` / `crossings`: one thread per trade, the first crossing row of every
  exit level (`cores.crossings_core`); `exits.resolve_exits(backend="cuda")` calls it.
- `pairs_kernel` / `resolve_pairs_device`: one thread per (pair, trade), the exit that
  comes first (`cores.pair_core`): int32 results and, only when asked, int64 exit rows,
  left on the device.
- `hist_kernel` / `pair_histograms`: the dominance sums' histogram of every pair at once,
  one thread per (pair, trade), int64 atomic adds into [pairs, cells] (integer sums: exact
  in any order); `cube.cube_top(backend="cuda")` and `cube.grid_top` call it.
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

from kernels import gpu_phases
from kernels.cuda_build import no_fma
from kernels.gpu_phases import phase
from kernels.gridsearch.cores import combo_core, crossings_core, pair_core
from kernels.gridsearch.ranking import TopK, merge_top, top_k

no_fma(__name__)  # -fma=0: bit for bit with the CPU (kernels.cuda_build)

crossings_dev = cuda.jit(device=True)(crossings_core)
combo_dev = cuda.jit(device=True)(combo_core)
pair_dev = cuda.jit(device=True)(pair_core)


@cuda.jit
def crossings_kernel(order, start, end, entry, prices, targets, stops, first_t, first_s):
    """One thread per trade, thread i taking trade order[i] (trades in order of their first
    row: a warp's threads walk neighbouring rows): first crossing row of every level."""
    i = cuda.grid(1)
    if i < order.shape[0]:
        crossings_dev(order[i], start, end, entry, prices, targets, stops, first_t, first_s)


@cuda.jit
def pairs_kernel(first_t, first_s, order_t, order_s, t_units, s_units, pct_units, results, exit_rows, rows):
    """One thread per (trade x, pair y): `cores.pair_core` on one trade."""
    j, p = cuda.grid(2)
    if j < results.shape[1] and p < results.shape[0]:
        pair_dev(p, j, j + 1, first_t, first_s, order_t, order_s, t_units, s_units, pct_units, results, exit_rows,
                 rows)


@cuda.jit
def hist_kernel(flat, results, hist):
    """One thread per (trade x, pair y): hist[p, flat[j]] += results[p, j] (int64 atomics)."""
    j, p = cuda.grid(2)
    if j < results.shape[1] and p < results.shape[0]:
        cuda.atomic.add(hist, (p, flat[j]), np.int64(results[p, j]))


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
    """(xp, to_device): CuPy on a GPU, NumPy under the simulator. to_device copies a NumPy
    array of a chunk or more through threaded pinned staging (`device_io.upload`: the
    pageable copy moved ~8 GB/s on the first H100 run) and leaves device arrays where they are."""
    if simulated():
        return np, (lambda a: a)
    import cupy as cp

    from kernels.backends.device_io import upload

    return cp, upload


def crossings(start, end, entry, prices, targets, stops, threads: int = 128):
    """(first_t int64 [targets, trades], first_s int64 [stops, trades]) as device arrays
    (CuPy; NumPy under the simulator). Inputs: device arrays, or host arrays (copied)."""
    xp, dev = array_module()
    with phase("h2d", "crossings inputs", bytes=sum(np.asarray(a).nbytes if isinstance(a, np.ndarray) else 0
                                                    for a in (start, end, entry, prices, targets, stops))):
        start, end, entry, prices, targets, stops = (dev(a) for a in (start, end, entry, prices, targets, stops))
    n = start.shape[0]
    with phase("alloc", "crossings outputs"):
        first_t = xp.empty((targets.shape[0], n), dtype=xp.int64)
        first_s = xp.empty((stops.shape[0], n), dtype=xp.int64)
    with phase("kernel", "argsort trades by first row", bytes=n * 16):
        order = xp.argsort(start, kind="stable") if xp is np else xp.argsort(start)
    if simulated():
        threads = 32
    blocks = max(1, math.ceil(n / threads))
    levels = targets.shape[0] + stops.shape[0]
    # the fewest bytes: each trade's path read once (prices' dtype) plus its fields and levels written
    path_rows = int((end - start + 1).sum()) if n and gpu_phases._active is not None else 0  # only when recording
    with phase("kernel", "crossings_kernel", bytes=path_rows * prices.itemsize + n * (32 + 8 * levels),
               ops=path_rows * (3 + levels), blocks=blocks, threads=threads):
        crossings_kernel[blocks, threads](order, start, end, entry, prices, targets, stops, first_t, first_s)
    return first_t, first_s


def resolve_pairs_device(first_t, first_s, order_t, order_s, t_units, s_units, pct_units, rows: bool = True,
                         threads: int = 256):
    """(results int32 [pairs, trades], exit rows int64 [pairs, trades] or None unless `rows`)
    as device arrays, by `pairs_kernel` (one launch). first_t / first_s: device arrays of the
    sorted levels' crossings; the rest host or device arrays (order_t[i]: grid target i's row
    in first_t; t_units / s_units: the grid levels' int32 units; pct_units: int32 per trade)."""
    xp, dev = array_module()
    with phase("h2d", "pairs inputs", bytes=np.asarray(pct_units).nbytes if isinstance(pct_units, np.ndarray) else 0):
        order_t, order_s = dev(np.asarray(order_t, dtype=np.int64)), dev(np.asarray(order_s, dtype=np.int64))
        t_units, s_units = dev(np.asarray(t_units, dtype=np.int32)), dev(np.asarray(s_units, dtype=np.int32))
        pct_units = dev(pct_units)
    n_pairs, n = t_units.shape[0] * s_units.shape[0], first_t.shape[1]
    with phase("alloc", "pairs outputs"):
        results = xp.empty((n_pairs, n), dtype=xp.int32)
        exit_rows = xp.empty((n_pairs, n) if rows else (1, 1), dtype=xp.int64)
    if simulated():
        threads = 32
    grid = (max(1, math.ceil(n / threads)), max(1, n_pairs))
    levels = first_t.shape[0] + first_s.shape[0]
    with phase("kernel", "pairs_kernel", bytes=n * (8 * levels + 4) + n_pairs * n * (4 + (8 if rows else 0)),
               ops=n_pairs * n * 4, blocks=grid[0] * grid[1], threads=threads):
        pairs_kernel[grid, threads](first_t, first_s, order_t, order_s, t_units, s_units, pct_units, results,
                                    exit_rows, bool(rows))
    return results, (exit_rows if rows else None)


def pair_histograms(flat, results, cells: int, threads: int = 256):
    """hist int64 [pairs, cells]: hist[p, c] = the sum of results[p, j] over the trades j with
    flat[j] == c (device arrays in and out; one launch of `hist_kernel`)."""
    xp, _ = array_module()
    n_pairs, n = results.shape
    with phase("alloc", "pair histograms"):
        hist = xp.zeros((n_pairs, cells), dtype=xp.int64)
    if simulated():
        threads = 32
    grid = (max(1, math.ceil(n / threads)), max(1, n_pairs))
    with phase("kernel", "hist_kernel", bytes=n * 8 + n_pairs * n * 4 + n_pairs * cells * 8, ops=n_pairs * n,
               blocks=grid[0] * grid[1], threads=threads):
        if n:
            hist_kernel[grid, threads](flat, results, hist)
    return hist


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
