"""Dominance sums: every combination's ROI at once, in O(trades + grid cells) per pair.

Every filter is a threshold (keep when feature >= threshold: the predicate `cores.passes`
of the other engines), so with each filter's thresholds sorted (in the features' dtype), a
trade passes thresholds 0..b-1 of a dimension where b = the number of thresholds <= its
feature (`searchsorted(..., side="right")`): the same test, stated as a binning. Binning each trade on the five dimensions and adding its
result into a 5-D histogram (one per (target, stop_loss) pair), the suffix cumulative sums
along each axis give, at cell (j0..j4), the sum over every trade with bin > j on every
axis: the ROI of that combination. Counts work the same way. Axes are then put back in
the grid's order. Sums are of integers (1e-6 percent units) in int64, so they are exact,
equal the brute force's and do not depend on the order of the additions.

Every pair at once, in one pass each: the histograms of all pairs as one int64 array
[pairs, cells] (cpu: a numba loop parallel over pairs; cuda: `cuda.pair_histograms`, one
kernel of int64 atomics; torch: `scatter_add_`), the suffix sums over the five filter axes
of [pairs, *shape] (cpu: in place, parallel over pairs; CuPy / torch: a batched cumsum per
axis), the reorder to grid order as one gather (`_grid_order`), and the top-k
(`ranking.top_k`: one partition on the device, the candidates ranked on the host).

`cube_top` runs the `gridsearch.cube` backend asked for and ranks the result; `grid_top`
runs the exits and the dominance sums on one backend, the results left on the device.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from kernels import backends
from kernels.gpu_phases import phase
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


@njit(cache=True, parallel=True)
def _pair_histograms_cpu(flat, results, hist):
    """hist[p, flat[j]] += results[p, j] (int64), parallel over pairs."""
    for p in prange(results.shape[0]):
        row = results[p]
        h = hist[p]
        for j in range(flat.shape[0]):
            h[flat[j]] += row[j]


@njit(cache=True, parallel=True)
def _suffix_sums_cpu(hist, shape):
    """In place: each row of hist [pairs, cells] (cells = prod(shape), C order) becomes its
    suffix cumulative sums along every axis of `shape` (int64, exact)."""
    for p in prange(hist.shape[0]):
        h = hist[p]
        post = 1
        for ax in range(shape.shape[0] - 1, -1, -1):
            n = shape[ax]
            pre = h.shape[0] // (n * post)
            for a in range(pre):
                base = a * n * post
                for i in range(n - 2, -1, -1):
                    lo = base + i * post
                    for b in range(post):
                        h[lo + b] += h[lo + post + b]
            post *= n


def _suffix_sums(cube, xp, first: int = 0):
    """Suffix cumulative sums along axes first..ndim-1 (NumPy / CuPy)."""
    for axis in range(first, cube.ndim):
        cube = xp.flip(xp.cumsum(xp.flip(cube, axis=axis), axis=axis), axis=axis)
    return cube


def _grid_order(sums, orders, xp):
    """sums [pairs, *shape] (cell b = sorted index + 1 per dimension) -> the grid's order,
    shaped (five filter sizes..., pairs): one gather."""
    n_pairs = sums.shape[0]
    idx = xp.ix_(*[xp.asarray(np.asarray(o, dtype=np.int64) + 1) for o in orders], xp.arange(n_pairs))
    return xp.moveaxis(sums, 0, -1)[idx]


def cube_roi(features, results, grid: Grid, xp=np, kernel: bool | None = None) -> tuple:
    """(roi_units int64, trades int64), each shaped grid.sizes (grid order).

    xp: NumPy, or CuPy with device arrays. `kernel`: the histograms by the CUDA kernel
    (`cuda.pair_histograms`), default when xp is not NumPy; else the numba CPU loop."""
    kernel = (xp is not np) if kernel is None else kernel
    with phase("host_prep", "cube bins"):
        features = xp.asarray(features)
        bins, orders, shape = _bins(features, grid, xp)
        flat = xp.ravel_multi_index(tuple(bins), shape).astype(xp.int64)
    cells = int(np.prod(shape))
    n_t, n_s = len(grid.target), len(grid.stop_loss)
    n_pairs = n_t * n_s
    if results.shape[0] != n_pairs:
        raise ValueError(f"results has {results.shape[0]} rows, the grid {n_pairs} (target, stop_loss) pairs")
    with phase("kernel", "cube counts", bytes=flat.nbytes + cells * 8):
        counts = _grid_order(_suffix_sums(xp.bincount(flat, minlength=cells).astype(xp.int64).reshape((1,) + shape), xp,
                                          first=1), orders, xp)[..., 0]
    if kernel:
        from kernels.gridsearch.cuda import pair_histograms

        hist = pair_histograms(flat, results, cells)
    else:
        with phase("kernel", "pair histograms (cpu)"):
            hist = np.zeros((n_pairs, cells), dtype=np.int64)
            _pair_histograms_cpu(np.asarray(flat), np.ascontiguousarray(results), hist)
    with phase("kernel", "suffix sums", bytes=2 * hist.nbytes * 5, ops=hist.size * 5):
        if xp is np:
            _suffix_sums_cpu(hist, np.asarray(shape, dtype=np.int64))
            sums = hist.reshape((n_pairs,) + shape)
        else:
            sums = _suffix_sums(hist.reshape((n_pairs,) + shape), xp, first=1)
    with phase("kernel", "grid order", bytes=2 * n_pairs * int(np.prod(grid.sizes[:5])) * 8):
        roi = _grid_order(sums, orders, xp).reshape(tuple(grid.sizes))
    trades = xp.broadcast_to(counts[..., None, None], tuple(grid.sizes))
    return roi, trades


def cube_roi_torch(features, results, grid: Grid, device: str = "cpu", chunk: int = 1 << 24) -> tuple:
    """The same dominance sums with torch (ROCm / CUDA / CPU); NumPy arrays out. results:
    NumPy or a torch tensor (left where it is)."""
    import torch

    feats = torch.as_tensor(np.ascontiguousarray(features), device=device)
    bins, orders, shape = [], [], []
    for d, name in enumerate(FILTERS):
        values = np.asarray(getattr(grid, name), dtype=np.asarray(features).dtype)
        order = np.argsort(values, kind="stable")
        bins.append(torch.searchsorted(torch.as_tensor(values[order], device=device), feats[d].contiguous(), right=True))
        orders.append(order)
        shape.append(len(values) + 1)
    shape = tuple(shape)
    flat = torch.zeros_like(bins[0])
    for b, size in zip(bins, shape):
        flat = flat * size + b
    cells = int(np.prod(shape))
    res = results if isinstance(results, torch.Tensor) else torch.as_tensor(np.ascontiguousarray(results), device=device)
    res = res.to(flat.device)
    n_pairs, n = res.shape

    def finish(hist):  # [pairs, cells] -> (five filter sizes..., pairs), grid order
        cube = hist.reshape((hist.shape[0],) + shape)
        for axis in range(1, 6):
            cube = cube.flip(axis).cumsum(axis).flip(axis)
        idx = [torch.as_tensor(o + 1, device=flat.device) for o in orders] + [torch.arange(hist.shape[0], device=flat.device)]
        grids = torch.meshgrid(*idx, indexing="ij")
        return cube.movedim(0, -1)[grids]

    counts = finish(torch.bincount(flat, minlength=cells).to(torch.int64)[None])[..., 0]
    hist = torch.zeros((n_pairs, cells), dtype=torch.int64, device=flat.device)
    step = max(1, chunk // max(1, n))
    for lo in range(0, n_pairs, step):
        hi = min(n_pairs, lo + step)
        hist[lo:hi].scatter_add_(1, flat[None].expand(hi - lo, n), res[lo:hi].to(torch.int64))
    roi = finish(hist).reshape(tuple(grid.sizes)).cpu().numpy()
    trades = np.broadcast_to(counts.cpu().numpy()[..., None, None], tuple(grid.sizes))
    return roi, trades


def cube_top(features, results, grid: Grid, *, k: int, min_trades: int, backend: str = "cpu"):
    """The exact top-k (ranking.TopK) of `grid` by dominance sums on `backend` (the
    `gridsearch.cube` family, registered in `kernels.gridsearch`: cpu NumPy, cuda CuPy, torch).
    results: NumPy, or the backend's device arrays (`resolve_exits(..., on_device=True)`)."""
    return backends.load(CUBE, backends.check(CUBE, backend, "dominance sums run on"))(features, results, grid, k, min_trades)


def grid_top(start, end, entry, prices, pct_change, features, grid: Grid, *, k: int, min_trades: int,
             backend: str = "cpu"):
    """Exits and dominance sums on one backend, NumPy in, the exact top-k out: the results
    stay on the device between the two (no exit rows, no host round trip)."""
    from kernels.gridsearch.exits import resolve_exits  # an engine: loaded with the call

    results, _ = resolve_exits(start, end, entry, prices, pct_change, grid.target, grid.stop_loss, backend=backend,
                               exit_rows=False, on_device=True)
    return cube_top(features, results, grid, k=k, min_trades=min_trades, backend=backend)


# The `gridsearch.cube` backends: (features, results, grid, k, min_trades) -> TopK.
def cube_top_cpu(features, results, grid: Grid, k: int, min_trades: int):
    roi, counts = cube_roi(features, results, grid)
    return top_k_full(roi, counts, k, min_trades)


def cube_top_cuda(features, results, grid: Grid, k: int, min_trades: int):
    from kernels.gridsearch.cuda import array_module

    xp, dev = array_module()  # CuPy on a GPU, NumPy under numba's CUDA simulator
    with phase("h2d", "cube inputs", bytes=sum(a.nbytes for a in (features, results) if isinstance(a, np.ndarray))):
        features, results = dev(features), dev(results)
    roi, counts = cube_roi(features, results, grid, xp=xp, kernel=True)
    with phase("kernel", "top-k", bytes=roi.nbytes + counts[..., 0, 0].nbytes):
        return top_k_full(roi, counts, k, min_trades, xp=xp)


def cube_top_torch(features, results, grid: Grid, k: int, min_trades: int):
    import torch

    device = str(results.device) if isinstance(results, torch.Tensor) else "cpu"
    roi, counts = cube_roi_torch(features, results, grid, device=device)
    return top_k_full(roi, counts, k, min_trades)
