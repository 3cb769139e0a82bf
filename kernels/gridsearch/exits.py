"""Exit resolution: each trade's result for every (target, stop_loss) pair, done once.

Walking a trade's path from MarketDataStartIndex to MarketDataEndIndex inclusive with
r = (price / entry_price - 1) * 100, the first row with r <= stop_loss gives stop_loss,
the first row with r >= target gives target, whichever comes first; if neither, the
trade's own Trade Percent Change.

One pass per trade records the first row at which each level is crossed (targets sorted
ascending, stops descending: each crossing comes no earlier than the previous level's), in
`cores.crossings_core`, compiled here for the CPU (numba, parallel over trades) and in
`kernels.gridsearch.cuda` as a CUDA device function (one thread per trade), which
`resolve_exits(backend="cuda")` imports on demand. Pairs are then resolved with array code
(NumPy, CuPy or torch). A torch version of the crossings (`crossings_torch`) serves ROCm.

`resolve_exits` is the entry point: (results int32 [pairs, trades], exit rows int64
[pairs, trades]) on NumPy arrays, equal bit for bit on every backend.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from kernels.gridsearch import NO_CROSS, RESULT_SCALE
from kernels.gridsearch.cores import crossings_core

_crossings_cpu_core = njit(cache=True, nogil=True)(crossings_core)


@njit(cache=True, parallel=True)
def crossings_cpu(start, end, entry, prices, targets, stops, first_t, first_s):
    """`cores.crossings_core` for every trade, parallel over trades (outputs preallocated)."""
    for j in prange(start.shape[0]):
        _crossings_cpu_core(j, start, end, entry, prices, targets, stops, first_t, first_s)


def crossings_cuda(start, end, entry, prices, targets, stops):
    """Device arrays in (CuPy or numba), device arrays (CuPy) out: `kernels.gridsearch.cuda.crossings`."""
    from kernels.gridsearch.cuda import crossings

    return crossings(start, end, entry, prices, targets, stops)


def crossings_torch(start, end, entry, prices, targets, stops, chunk_rows: int = 1 << 24):
    """torch: paths padded per chunk of trades, running max/min, first index past each level."""
    import torch

    n = start.shape[0]
    first_t = torch.full((targets.shape[0], n), NO_CROSS, dtype=torch.int64, device=prices.device)
    first_s = torch.full((stops.shape[0], n), NO_CROSS, dtype=torch.int64, device=prices.device)
    lengths = end - start + 1
    lo = 0
    while lo < n:
        hi = lo + 1
        longest = int(lengths[lo])
        while hi < n and max(longest, int(lengths[hi])) * (hi + 1 - lo) <= chunk_rows:
            longest = max(longest, int(lengths[hi]))
            hi += 1
        steps = torch.arange(longest, device=prices.device)
        rows = start[lo:hi, None] + steps[None, :]
        valid = steps[None, :] < lengths[lo:hi, None]
        px = prices[rows.clamp(max=prices.shape[0] - 1)].to(torch.float64)
        r = (px / entry[lo:hi, None].to(torch.float64) - 1.0) * 100.0
        hi_run = torch.where(valid, r, -torch.inf).cummax(dim=1).values
        lo_run = torch.where(valid, r, torch.inf).cummin(dim=1).values
        for k in range(targets.shape[0]):
            hit = hi_run >= targets[k]
            first_t[k, lo:hi] = torch.where(hit.any(dim=1), start[lo:hi] + hit.int().argmax(dim=1), NO_CROSS)
        for k in range(stops.shape[0]):
            hit = lo_run <= stops[k]
            first_s[k, lo:hi] = torch.where(hit.any(dim=1), start[lo:hi] + hit.int().argmax(dim=1), NO_CROSS)
        lo = hi
    return first_t, first_s


def resolve_pairs(first_t, first_s, order_t, order_s, targets, stops, pct_units, xp=np):
    """results[p, j] in units of 1e-6 percent for pair p = target_i * n_stops + stop_i.

    `order_t[i]` is the row of grid target i in `first_t` (which is sorted), likewise for
    stops; `pct_units` the trades' own results. Also returns the exit rows (NO_CROSS where
    the trade ran to its end).
    """
    t_units = [int(round(t * RESULT_SCALE)) for t in targets]
    s_units = [int(round(s * RESULT_SCALE)) for s in stops]
    n_pairs, n = len(targets) * len(stops), pct_units.shape[0]
    results = xp.empty((n_pairs, n), dtype=xp.int32)
    exit_rows = xp.empty((n_pairs, n), dtype=xp.int64)
    for ti in range(len(targets)):
        ft = first_t[order_t[ti]]
        for si in range(len(stops)):
            fs = first_s[order_s[si]]
            p = ti * len(stops) + si
            stop_first = fs < ft
            results[p] = xp.where(stop_first, s_units[si], xp.where(ft < NO_CROSS, t_units[ti], pct_units))
            exit_rows[p] = xp.minimum(ft, fs)
    return results, exit_rows


def level_orders(targets, stops) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sorted levels (targets ascending, stops descending) and each grid value's row."""
    t_sorted = np.sort(np.unique(np.asarray(targets, dtype=np.float64)))
    s_sorted = np.sort(np.unique(np.asarray(stops, dtype=np.float64)))[::-1].copy()
    order_t = np.searchsorted(t_sorted, targets)
    order_s = np.array([int(np.flatnonzero(s_sorted == s)[0]) for s in stops])
    return t_sorted, s_sorted, order_t, order_s


def to_units(percent) -> np.ndarray:
    """Percent values as int32 units of 1e-6 percent (the exact currency of the engines)."""
    return np.rint(np.asarray(percent, dtype=np.float64) * RESULT_SCALE).astype(np.int32)


def resolve_exits(start, end, entry, prices, pct_change, targets, stops, backend: str = "cpu"):
    """(results int32 [pairs, trades], exit_rows int64 [pairs, trades]) on NumPy arrays."""
    t_sorted, s_sorted, order_t, order_s = level_orders(targets, stops)
    pct_units = to_units(pct_change)
    start = np.ascontiguousarray(start, dtype=np.int64)
    end = np.ascontiguousarray(end, dtype=np.int64)
    bad = np.flatnonzero((start < 0) | (end < start) | (end >= len(prices)))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"trade {j}: path rows {start[j]}..{end[j]} outside the {len(prices)} market rows "
                         f"({bad.size} such trades)")
    entry = np.ascontiguousarray(entry, dtype=np.float64)
    if backend == "cpu":
        first_t = np.empty((len(t_sorted), len(start)), dtype=np.int64)
        first_s = np.empty((len(s_sorted), len(start)), dtype=np.int64)
        crossings_cpu(start, end, entry, prices, t_sorted, s_sorted, first_t, first_s)
        return resolve_pairs(first_t, first_s, order_t, order_s, targets, stops, pct_units)
    if backend == "cuda":
        from kernels.gridsearch.cuda import array_module, crossings

        xp, dev = array_module()  # CuPy on a GPU, NumPy under numba's CUDA simulator (CI)
        ft, fs = crossings(start, end, entry, prices, t_sorted, s_sorted)
        res, rows = resolve_pairs(ft, fs, order_t, order_s, targets, stops, dev(pct_units), xp=xp)
        return (res, rows) if xp is np else (xp.asnumpy(res), xp.asnumpy(rows))
    if backend == "torch":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        tt = lambda a: torch.as_tensor(np.ascontiguousarray(a), device=device)  # noqa: E731
        ft, fs = crossings_torch(tt(start), tt(end), tt(entry), tt(prices), tt(t_sorted), tt(s_sorted))
        res, rows = resolve_pairs(ft, fs, order_t, order_s, targets, stops, tt(pct_units), xp=_TorchXP(device))
        return res.cpu().numpy(), rows.cpu().numpy()
    raise ValueError(f"backend must be cpu, cuda or torch, got {backend!r}")


class _TorchXP:
    """The three array calls resolve_pairs needs, on torch."""

    int32, int64 = "int32", "int64"

    def __init__(self, device):
        import torch

        self.torch, self.device = torch, device

    def empty(self, shape, dtype):
        return self.torch.empty(shape, dtype=getattr(self.torch, dtype), device=self.device)

    def where(self, cond, a, b):
        t = self.torch
        a = a if isinstance(a, t.Tensor) else t.tensor(a, device=self.device)
        b = b if isinstance(b, t.Tensor) else t.tensor(b, device=self.device)
        return t.where(cond, a, b)

    def minimum(self, a, b):
        return self.torch.minimum(a, b)
