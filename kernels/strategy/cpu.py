"""CPU engines: the walk compiled with numba.njit.

- `backtest_one` is the reference: one individual, its indicators from
  `kernels.seller_exhaustion.seller_exhaustion` (the signal's own definition), its stop and
  target lines from `trade_walk`, then the compiled walk. A plain readable path.
- `walk_population` is the batched CPU engine: the shared indicator bank of
  `population.build_walk_inputs`, one walk per individual, parallel over individuals
  (prange) when individuals x bars is large enough to pay for the threads; trades are
  counted first, then written straight into the ragged arrays.

The rules (`trade_walk`'s docstring) include the original engine's: the position is freed on
its exit bar and that bar's signal may open the next trade at the next open.

Cache note: numba keys the on-disk cache of `_walk_i` / `_walk_serial` / `_walk_parallel` on
this file alone, yet they hold a compiled copy of `walk_core`; a change to `trade_walk.py`
is therefore paired with a change to this file (or a cleared cache), or a stale walk runs.
(Last paired change: `walk_core` calls `signal_core` / `position_core`, the predicate and
the trade written once for it and the cuda engine's bitmask walk.)

The CPU keeps the per-bar walk (`walk_core`) rather than the cuda engine's bitmask driver
(`walk_bits_core`): measured 2026-11-27 on 512 individuals x 21,480 bars (GOOG tiled 10
times), one thread, counting pass: per-bar walk 15-36 ms, bitmask words then
`walk_bits_core` 68-75 ms (a 2-core machine under other load: ranges, not a benchmark).
The per-bar walk tests the predicate only on flat bars and stops at its first false
compare; the bitmask pass evaluates it on every bar first.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from kernels.seller_exhaustion import seller_exhaustion
from kernels.strategy.params import Individual
from kernels.strategy.results import TRADE_DTYPES, TRADE_FIELDS, PopulationResult
from kernels.strategy.trade_walk import capacity, stop_line, target_line, walk_core

walk_cpu = njit(cache=True, nogil=True)(walk_core)


def empty_buffers(n_individuals: int, n_bars: int) -> dict[str, np.ndarray]:
    cap = capacity(n_bars)
    return {f: np.empty((n_individuals, cap), dtype=TRADE_DTYPES[f]) for f in TRADE_FIELDS}


def as_float64(*arrays) -> list[np.ndarray]:
    return [np.ascontiguousarray(a, dtype=np.float64) for a in arrays]


def backtest_one(open_, high, low, close, volume, individual: Individual) -> PopulationResult:
    """The reference backtest of one individual (a PopulationResult of length 1)."""
    open_, high, low, close, volume = as_float64(open_, high, low, close, volume)
    sp, bp = individual.seller, individual.backtest
    f = seller_exhaustion(high, low, close, volume, sp)
    stop = stop_line(low, f["atr"], bp.atr_stop_mult)
    target = target_line(open_, stop, bp.reward_r)
    buf = empty_buffers(1, open_.shape[0])
    count = walk_cpu(open_, high, low, close, f["ema_f"], f["ema_s"], f["vol_z"], f["tr_z"], f["cloc"], stop, target,
                     float(sp.vol_z_min), float(sp.tr_z_min), float(sp.cloc_min), int(bp.max_hold), bp.cost_bps,
                     *(buf[name][0] for name in TRADE_FIELDS))
    return PopulationResult.from_buffers(np.array([count]), buf, backend="cpu-reference")


@njit(cache=True, nogil=True)
def _walk_i(i, o, h, l, c, ema, vol_z, tr_z, cloc, stop, target, k_fast, k_slow, k_vz, k_trz, k_stop, k_tgt,
            vz_min, trz_min, cloc_min, max_hold, cost_bps, offsets, e_idx, x_idx, reason, e_px, x_px, pnl, r_mult):
    """Individual i's walk into rows offsets[i]:offsets[i+1] of the flat outputs (with all
    offsets 0 it only counts: the walk writes nothing past capacity 0)."""
    a = offsets[i]
    b = offsets[i + 1]
    return walk_cpu(o, h, l, c, ema[k_fast[i]], ema[k_slow[i]], vol_z[k_vz[i]], tr_z[k_trz[i]], cloc,
                    stop[k_stop[i]], target[k_tgt[i]], vz_min[i], trz_min[i], cloc_min[i], max_hold[i], cost_bps[i],
                    e_idx[a:b], x_idx[a:b], reason[a:b], e_px[a:b], x_px[a:b], pnl[a:b], r_mult[a:b])


@njit(cache=True, nogil=True)
def _walk_serial(counts, *args):
    for i in range(counts.shape[0]):
        counts[i] = _walk_i(i, *args)


@njit(cache=True, parallel=True)
def _walk_parallel(counts, *args):
    for i in prange(counts.shape[0]):
        counts[i] = _walk_i(i, *args)


PARALLEL_MIN_STEPS = 5_000_000  # individuals x bars below which threads cost more than they save


def walk_population(inp) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(counts [N], flat trade arrays) of every individual of `inp` (a population.WalkInputs).

    Two passes: the first counts each individual's trades (no buffers), the second writes
    them at their offsets, so memory is the trades themselves rather than N fixed-capacity
    buffers (the walk is cheap next to the memory on the CPU)."""
    n = inp.k_fast.shape[0]
    args = (inp.open, inp.high, inp.low, inp.close, inp.ema, inp.vol_z, inp.tr_z, inp.cloc, inp.stop, inp.target,
            inp.k_fast, inp.k_slow, inp.k_vz, inp.k_trz, inp.k_stop, inp.k_tgt, inp.vol_z_min, inp.tr_z_min,
            inp.cloc_min, inp.max_hold, inp.cost_bps)
    run = _walk_parallel if n * inp.open.shape[0] >= PARALLEL_MIN_STEPS else _walk_serial
    none = {f: np.empty(0, dtype=TRADE_DTYPES[f]) for f in TRADE_FIELDS}
    counts = np.empty(n, dtype=np.int64)
    run(counts, *args, np.zeros(n + 1, dtype=np.int64), *(none[f] for f in TRADE_FIELDS))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    flat = {f: np.empty(int(offsets[-1]), dtype=TRADE_DTYPES[f]) for f in TRADE_FIELDS}
    again = np.empty(n, dtype=np.int64)
    run(again, *args, offsets, *(flat[f] for f in TRADE_FIELDS))
    if not np.array_equal(again, counts):
        raise RuntimeError("the writing pass found other trade counts than the counting pass")
    return counts, flat


def walk_result(inp) -> PopulationResult:
    """The `strategy` family's cpu entry: every individual of `inp` walked, as a PopulationResult."""
    counts, flat = walk_population(inp)
    return PopulationResult.from_flat(counts, flat, backend="cpu", n_series=dict(inp.n_series))
