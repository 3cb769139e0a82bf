"""Exit resolution: each trade's result for every (target, stop_loss) pair, done once.

Walking a trade's path from MarketDataStartIndex to MarketDataEndIndex inclusive with
r = (price / entry_price - 1) * 100, the first row with r <= stop_loss gives stop_loss,
the first row with r >= target gives target, whichever comes first; if neither, the
trade's own Trade Percent Change.

One pass per trade records the first row at which each level is crossed (targets sorted
ascending, stops descending: each crossing comes no earlier than the previous level's), in
`cores.crossings_core`, compiled here for the CPU (numba, parallel over trades) and in
`kernels.gridsearch.cuda` as a CUDA device function (one thread per trade), which
`resolve_exits(backend="cuda")` imports on demand. Pairs are then resolved by
`cores.pair_core`, compiled here (`_resolve_pairs_kernel`, parallel over pairs) and in
`kernels.gridsearch.cuda` (`pairs_kernel`, one thread per (pair, trade)); torch runs the
array version (`resolve_pairs`, the reference). A torch version of the crossings
(`crossings_torch`) serves ROCm.

`resolve_exits` is the entry point: (results int32 [pairs, trades], exit rows int64
[pairs, trades]) on NumPy arrays, equal bit for bit on every backend. `exit_rows=False`
skips the exit rows (None in their place; the callers that only rank ask for none);
`on_device=True` leaves the arrays on the backend's device (CuPy, torch) for the dominance
sums to follow without a host round trip (`cube.grid_top`).

CPU specialization (`crossings_cpu`, `resolve_pairs_cpu`; tests/test_grid_engines.py
checks them against `cores.crossings_core` and `resolve_pairs`). r(p) = (p / entry - 1) * 100
is a non-decreasing function of the price p for an entry > 0 (IEEE division, subtraction
and multiplication are monotone), so "r(p) >= target" is exactly "p >= P_t" where P_t is
the smallest value of the prices' dtype with r(P_t) >= target, and "r(p) <= stop" is
exactly "p <= P_s" (P_s the largest with r(P_s) <= stop). `_level_price` finds P_t / P_s
per trade and level: a first guess entry * (1 + level/100) in the prices' dtype, then
`nextafter` steps (r evaluated exactly as the core does) until the boundary is pinned.
The walk along the path then compares raw prices with the next target's and the next stop's
price, with no division per row; only the rows where a level is crossed do more work, and
aligned blocks of BLOCK rows are first tested through their max and min (`block_extrema`,
computed once per price array): a block whose max is below the next target's price and whose
min is above the next stop's holds no crossing and is skipped whole.
Trades are walked in order of their first row, so that overlapping paths find the prices
in cache. Same first rows as `crossings_core`, bit for bit (trades with a non-positive or non-finite
entry take `crossings_core` itself). The pairs are then resolved in one compiled pass
(`resolve_pairs_cpu`) instead of NumPy's temporaries.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from kernels import backends
from kernels.gpu_phases import phase
from kernels.gridsearch import EXITS, NO_CROSS, RESULT_SCALE
from kernels.gridsearch.cores import crossings_core, pair_core

_crossings_cpu_core = njit(cache=True, nogil=True)(crossings_core)


@njit(cache=True, parallel=True)
def crossings_cpu_reference(start, end, entry, prices, targets, stops, first_t, first_s):
    """`cores.crossings_core` for every trade, parallel over trades (outputs preallocated):
    the shared core as the CUDA backend runs it; `crossings_cpu` is the fast CPU path."""
    for j in prange(start.shape[0]):
        _crossings_cpu_core(j, start, end, entry, prices, targets, stops, first_t, first_s)


@njit(cache=True, nogil=True)
def _r(p, e):
    """The exit walk's return, exactly as `cores.crossings_core` computes it."""
    return (np.float64(p) / e - 1.0) * 100.0


@njit(cache=True, nogil=True)
def _on_level_side(p, e, level, is_target):
    """Does price p cross the level: r(p) >= level (target) or r(p) <= level (stop)."""
    return _r(p, e) >= level if is_target else _r(p, e) <= level


@njit(cache=True, nogil=True)
def _level_price(e, level, is_target, buf, lim):
    """Target (is_target): the smallest price value (buf's dtype) p with r(p) >= level;
    stop: the largest p with r(p) <= level. buf: 1-element scratch of the prices' dtype
    (casts), lim: [-inf, +inf] in that dtype. A first guess, up to 8 `nextafter` steps,
    and a bisection over the dtype's finite range if those do not pin the boundary (a
    level far from any price, e.g. a -100 % stop, whose boundary lies near 0)."""
    buf[0] = e * (1.0 + level / 100.0)
    p = buf[0]
    away = lim[0] if is_target else lim[1]  # toward prices that do not cross
    back = lim[1] if is_target else lim[0]
    for _ in range(8):
        if _on_level_side(p, e, level, is_target):
            q = np.nextafter(p, away)
            if q == p or not _on_level_side(q, e, level, is_target):
                return p
            p = q
        else:
            q = np.nextafter(p, back)
            if q == p:
                return p
            p = q
    # bisection between lo < hi on either side of the boundary (crossing side: hi for a
    # target, lo for a stop); the dtype's largest finite values bound it
    lo = np.nextafter(lim[0], lim[1])
    hi = np.nextafter(lim[1], lim[0])
    if _on_level_side(p, e, level, is_target) == is_target:
        hi = p
    else:
        lo = p
    if _on_level_side(lo, e, level, is_target) == _on_level_side(hi, e, level, is_target):
        return hi if is_target else lo  # no boundary inside the finite range
    lo_side = _on_level_side(lo, e, level, is_target)
    while True:
        buf[0] = lo * 0.5 + hi * 0.5
        m = buf[0]
        if m <= lo:
            m = np.nextafter(lo, lim[1])
        if m >= hi:
            break
        if _on_level_side(m, e, level, is_target) == lo_side:
            lo = m
        else:
            hi = m
    return hi if is_target else lo


BLOCK = 32  # rows per block of the block extrema (`block_extrema`)


@njit(cache=True, parallel=True)
def block_extrema(prices, block):
    """(max, min) of every `block` rows of prices (the last block may be short); NaN rows are
    left out (a NaN price crosses no level), a block of NaN only is (-inf, +inf)."""
    n_blocks = (prices.shape[0] + block - 1) // block
    hi = np.empty(n_blocks, dtype=prices.dtype)
    lo = np.empty(n_blocks, dtype=prices.dtype)
    for b in prange(n_blocks):
        top = -np.inf
        bottom = np.inf
        for i in range(b * block, min((b + 1) * block, prices.shape[0])):
            p = prices[i]
            if p > top:
                top = p
            if p < bottom:
                bottom = p
        hi[b] = top
        lo[b] = bottom
    return hi, lo


@njit(cache=True, nogil=True)
def _crossings_by_price(j, start, end, entry, prices, targets, stops, first_t, first_s, buf, lim, bhi, blo, block):
    e = np.float64(entry[j])  # > 0 and finite: the others go to `_crossings_some`
    n_t = targets.shape[0]
    n_s = stops.shape[0]
    buf[0] = np.nan
    never = buf[0]  # compares false with every price: "no level left"
    kt = 0
    ks = 0
    pt = _level_price(e, targets[0], True, buf, lim) if n_t > 0 else never
    ps = _level_price(e, stops[0], False, buf, lim) if n_s > 0 else never
    i = start[j]
    last = end[j]
    done = kt == n_t and ks == n_s
    while i <= last and not done:
        stop_at = min(last + 1, (i // block + 1) * block)  # the end of i's block, or of the path
        if i % block == 0 and stop_at - i == block:
            b = i // block  # a whole block on the path: skipped when no price in it crosses
            if not ((bhi[b] >= pt) | (blo[b] <= ps)):
                i = stop_at
                continue
        for r in range(i, stop_at):
            p = prices[r]
            if (p >= pt) | (p <= ps):
                while kt < n_t and p >= pt:
                    first_t[kt, j] = r
                    kt += 1
                    pt = _level_price(e, targets[kt], True, buf, lim) if kt < n_t else never
                while ks < n_s and p <= ps:
                    first_s[ks, j] = r
                    ks += 1
                    ps = _level_price(e, stops[ks], False, buf, lim) if ks < n_s else never
                if kt == n_t and ks == n_s:
                    done = True
                    break
        i = stop_at
    for k in range(kt, n_t):
        first_t[k, j] = NO_CROSS
    for k in range(ks, n_s):
        first_s[k, j] = NO_CROSS


@njit(cache=True, nogil=True)
def _crossings_some(idx, start, end, entry, prices, targets, stops, first_t, first_s):
    for j in idx:
        _crossings_cpu_core(j, start, end, entry, prices, targets, stops, first_t, first_s)


@njit(cache=True, parallel=True)
def _crossings_cpu_chunks(order, start, end, entry, prices, targets, stops, first_t, first_s, scratch, lim, bhi, blo,
                          block):
    n = order.shape[0]
    n_chunks = scratch.shape[0]
    for c in prange(n_chunks):
        buf = scratch[c]
        for idx in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            _crossings_by_price(order[idx], start, end, entry, prices, targets, stops, first_t, first_s, buf, lim,
                                bhi, blo, block)


def crossings_cpu(start, end, entry, prices, targets, stops, first_t, first_s, block: int = BLOCK):
    """First crossing rows of every level for every trade (outputs preallocated), equal to
    `cores.crossings_core` bit for bit: prices compared with per-trade level prices (module
    docstring), parallel over chunks of trades taken in order of their first row. Whole
    blocks of `block` rows on a path whose max is below the next target's price and whose
    min is above the next stop's are skipped (a row crosses only if its block does)."""
    prices = np.ascontiguousarray(prices)
    if prices.dtype not in (np.float32, np.float64):
        prices = prices.astype(np.float64)
    lim = np.array([-np.inf, np.inf], dtype=prices.dtype)
    # Trades walked in order of their first row: overlapping paths then read prices that the
    # previous trades left in cache (each market row lies on many paths); outputs by trade.
    good = (entry > 0.0) & (entry < np.inf)
    order = np.argsort(start, kind="stable")
    if not good.all():  # a non-positive or non-finite entry: r is not monotone, take the core
        _crossings_some(np.flatnonzero(~good), start, end, entry, prices, targets, stops, first_t, first_s)
        order = order[good[order]]
    n_chunks = max(1, min(order.shape[0], 256))
    scratch = np.zeros((n_chunks, 1), dtype=prices.dtype)
    bhi, blo = block_extrema(prices, block)
    _crossings_cpu_chunks(order, start, end, entry, prices, targets, stops, first_t, first_s, scratch, lim, bhi, blo,
                          block)


_pair_cpu_core = njit(cache=True, nogil=True)(pair_core)


@njit(cache=True, parallel=True)
def _resolve_pairs_kernel(first_t, first_s, order_t, order_s, t_units, s_units, pct_units, results, exit_rows, rows):
    """`cores.pair_core` over every trade of each pair, parallel over pairs."""
    n = pct_units.shape[0]
    for p in prange(results.shape[0]):
        _pair_cpu_core(p, 0, n, first_t, first_s, order_t, order_s, t_units, s_units, pct_units, results, exit_rows,
                       rows)


def level_units(levels) -> np.ndarray:
    """Exit levels (percent) as int32 units of 1e-6 percent, as `resolve_pairs` rounds them."""
    return np.array([int(round(v * RESULT_SCALE)) for v in levels], dtype=np.int32)


def resolve_pairs_cpu(first_t, first_s, order_t, order_s, targets, stops, pct_units, rows: bool = True):
    """`resolve_pairs` on NumPy arrays in one compiled pass (parallel over pairs); exit rows
    None unless `rows`."""
    t_units, s_units = level_units(targets), level_units(stops)
    n_pairs, n = len(targets) * len(stops), pct_units.shape[0]
    results = np.empty((n_pairs, n), dtype=np.int32)
    exit_rows = np.empty((n_pairs, n) if rows else (1, 1), dtype=np.int64)
    _resolve_pairs_kernel(first_t, first_s, np.asarray(order_t, dtype=np.int64), np.asarray(order_s, dtype=np.int64),
                          t_units, s_units, np.ascontiguousarray(pct_units, dtype=np.int32), results, exit_rows,
                          bool(rows))
    return results, (exit_rows if rows else None)


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


def resolve_pairs(first_t, first_s, order_t, order_s, targets, stops, pct_units, xp=np, rows: bool = True):
    """results[p, j] in units of 1e-6 percent for pair p = target_i * n_stops + stop_i.

    `order_t[i]` is the row of grid target i in `first_t` (which is sorted), likewise for
    stops; `pct_units` the trades' own results. Also returns the exit rows (NO_CROSS where
    the trade ran to its end), None unless `rows`. Array code (NumPy, torch): the
    reference that `cores.pair_core` equals.
    """
    t_units = [int(round(t * RESULT_SCALE)) for t in targets]
    s_units = [int(round(s * RESULT_SCALE)) for s in stops]
    n_pairs, n = len(targets) * len(stops), pct_units.shape[0]
    results = xp.empty((n_pairs, n), dtype=xp.int32)
    exit_rows = xp.empty((n_pairs, n), dtype=xp.int64) if rows else None
    for ti in range(len(targets)):
        ft = first_t[order_t[ti]]
        for si in range(len(stops)):
            fs = first_s[order_s[si]]
            p = ti * len(stops) + si
            stop_first = fs < ft
            results[p] = xp.where(stop_first, s_units[si], xp.where(ft < NO_CROSS, t_units[ti], pct_units))
            if rows:
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


def resolve_exits(start, end, entry, prices, pct_change, targets, stops, backend: str = "cpu", *,
                  exit_rows: bool = True, on_device: bool = False):
    """(results int32 [pairs, trades], exit_rows int64 [pairs, trades]) on NumPy arrays.

    `exit_rows=False`: the exit rows are neither computed nor returned (None in their
    place), for the callers that only rank (the results are the same). `on_device=True`:
    the arrays stay where the backend computed them (CuPy for cuda, NumPy under the
    simulator and on the cpu, torch tensors for torch), so the dominance sums can follow
    without a host round trip (`cube.grid_top`)."""
    with phase("host_prep", "exits inputs"):
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
    run = backends.load(EXITS, backends.check(EXITS, backend, "backend must be"))
    # the backends take `rows` and `on_device` keywords; passed only when not their defaults
    # (True, False), so that a backend entry of the plain 11-argument form still serves
    extra = {**({} if exit_rows else {"rows": False}), **({"on_device": True} if on_device else {})}
    return run(start, end, entry, prices, t_sorted, s_sorted, order_t, order_s, targets, stops, pct_units, **extra)


# The `gridsearch.exits` backends (registered in `kernels.gridsearch`): the crossings and the
# pair resolution from the sorted levels, as (results int32, exit_rows int64 or None) arrays:
# NumPy, or the backend's own arrays with on_device=True.
def exits_cpu(start, end, entry, prices, t_sorted, s_sorted, order_t, order_s, targets, stops, pct_units, *,
              rows: bool = True, on_device: bool = False):
    first_t = np.empty((len(t_sorted), len(start)), dtype=np.int64)
    first_s = np.empty((len(s_sorted), len(start)), dtype=np.int64)
    crossings_cpu(start, end, entry, prices, t_sorted, s_sorted, first_t, first_s)
    return resolve_pairs_cpu(first_t, first_s, order_t, order_s, targets, stops, pct_units, rows=rows)


def exits_cuda(start, end, entry, prices, t_sorted, s_sorted, order_t, order_s, targets, stops, pct_units, *,
               rows: bool = True, on_device: bool = False):
    from kernels.gridsearch.cuda import array_module, crossings, resolve_pairs_device

    xp, _ = array_module()  # CuPy on a GPU, NumPy under numba's CUDA simulator (CI)
    ft, fs = crossings(start, end, entry, prices, t_sorted, s_sorted)
    res, ex = resolve_pairs_device(ft, fs, order_t, order_s, level_units(targets), level_units(stops), pct_units,
                                   rows=rows)
    if on_device or xp is np:
        return res, ex
    with phase("d2h", "exits results", bytes=res.nbytes + (ex.nbytes if rows else 0)):
        return xp.asnumpy(res), (xp.asnumpy(ex) if rows else None)


def exits_torch(start, end, entry, prices, t_sorted, s_sorted, order_t, order_s, targets, stops, pct_units, *,
                rows: bool = True, on_device: bool = False):
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tt = lambda a: torch.as_tensor(np.ascontiguousarray(a), device=device)  # noqa: E731
    ft, fs = crossings_torch(tt(start), tt(end), tt(entry), tt(prices), tt(t_sorted), tt(s_sorted))
    res, ex = resolve_pairs(ft, fs, order_t, order_s, targets, stops, tt(pct_units), xp=_TorchXP(device), rows=rows)
    if on_device:
        return res, ex
    return res.cpu().numpy(), (ex.cpu().numpy() if rows else None)


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
