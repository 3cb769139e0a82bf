"""Brute force shaped for the device: pre-binned features, trade tiles in shared memory,
int32 partial sums (issue 46 item 3). `brute.brute_force(backend="cuda")` runs it.

The keep predicate stays `cores.passes` (v >= t in the features' dtype), stated as the
dominance-sums engine states it (`cube.trade_bins`, reused here, not rewritten): along filter
dimension d a trade's bin is the number of sorted thresholds <= its feature, and it passes
threshold j iff bin_d > rank_d(j) (j's position among the sorted thresholds). A NaN feature
passes no threshold (NaN >= t is False): its bin is set to 0 (searchsorted would put NaN
last). The five bins (each <= 127) are packed one byte each into a uint64 per trade, and
combination (j0..j4) packs R = sum((rank_d(j_d) + 1) << 8d); with H = 0x80 in each of the
five bytes, ((w | H) - R) & H == H iff every byte of w >= its byte of R (no byte borrows:
(128 + b) - r >= 1 for b, r <= 128), i.e. iff the trade passes all five thresholds. A grid
with a dimension of more than 127 thresholds runs the old kernel (`cuda.brute_force_cuda`).

`tile_kernel` (built per (S, C) by `_kernel`): the block covers `threads * C` consecutive
filter combinations (thread i: C of them, consecutive, so mostly differing in the last
filter only) for one target (blockIdx.y) and S of its stop losses (blockIdx.z: a chunk of
the target's stops; pairs p = target * n_stops + stop, so the chunk's result rows are
consecutive). The block loops over trade tiles of TILE trades, loaded cooperatively into
shared memory (packed bins and the S result rows). Per trade each thread reads the S results
once, tests each of its C combinations once and adds the S results of the passing ones to
int32 partial sums, which are flushed into int64 totals every `flush` trades, where
flush * max|result| < 2^31 (the host computes it), so every partial sum is exact and the
totals are the int64 sums of the CPU engine, whatever the order. A check = one
(combination, trade) evaluation: one predicate serves S checks, one shared read of a
result serves C.

Outputs per launch (a run of whole filter combinations, `launch` combinations at most and
at least one filter combination): out_sum/out_n int64 [combinations of the launch], grid
order (c = f * n_pairs + p); each launch keeps its exact top-k (ranking) and the launches
merge. Works with CuPy on a GPU and NumPy under numba's CUDA simulator (`cuda.array_module`).
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np
from numba import cuda

from kernels.cuda_build import no_fma
from kernels.gpu_phases import phase
from kernels.gridsearch.cube import trade_bins
from kernels.gridsearch.grid import FILTERS
from kernels.gridsearch.ranking import TopK, merge_top, top_k

no_fma(__name__)  # -fma=0: bit for bit with the CPU (kernels.cuda_build)

TILE = 256  # trades per shared-memory tile
MAX_BIN = 127  # bins and ranks + 1 must stay <= 127 / 128 for the byte-wise compare
MAX_STOPS = 5  # stop losses per block (a target's stops split into equal chunks of at most this)
ACCUMULATORS = 30  # C * S per thread (int32 partials + int64 totals live in registers)
MAX_COMBOS = 8  # C at most: NVVM unrolls the per-thread loops fully (no local memory) up to here
HIGH = np.uint64(sum(0x80 << (8 * d) for d in range(5)))
INT32_MAX = 2**31 - 1


@functools.lru_cache(maxsize=None)
def _kernel(S: int, C: int):
    """The tile kernel for S stops and C combinations per thread (compile-time constants)."""
    SC = S * C
    H = HIGH
    NEVER = np.uint64(0x80)  # a rank word no trade passes (byte 0 would need a bin >= 128)

    @cuda.jit
    def tile_kernel(f_lo, f_hi, sizes, rank, packed, results, n_stops, flush, out_sum, out_n):
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        target = cuda.blockIdx.y
        s0 = cuda.blockIdx.z * S
        n_pairs = sizes[5] * n_stops
        n_trades = packed.shape[0]
        sw = cuda.shared.array(TILE, np.uint64)
        sr = cuda.shared.array((S, TILE), np.int32)
        words = cuda.local.array(C, np.uint64)
        cnt = cuda.local.array(C, np.int32)  # kept trades (< 2^31: the host checks)
        part = cuda.local.array(SC, np.int32)
        tot = cuda.local.array(SC, np.int64)
        r = cuda.local.array(S, np.int32)
        f_first = f_lo + (cuda.blockIdx.x * nt + tid) * C
        for k in range(C):
            f = f_first + k
            cnt[k] = 0
            if f < f_hi:
                rest = f
                w = np.uint64(0)
                for dd in range(5):
                    d = 4 - dd
                    i = rest % sizes[d]
                    rest //= sizes[d]
                    w |= np.uint64(rank[d, i] + 1) << np.uint64(8 * d)
                words[k] = w
            else:
                words[k] = NEVER
        for q in range(SC):
            part[q] = 0
            tot[q] = 0
        for base in range(0, n_trades, TILE):
            cuda.syncthreads()
            for i in range(tid, TILE, nt):
                j = base + i
                if j < n_trades:
                    sw[i] = packed[j]
                else:
                    sw[i] = np.uint64(0)
                for s in range(S):
                    if j < n_trades and s0 + s < n_stops:
                        sr[s, i] = results[target * n_stops + s0 + s, j]
                    else:
                        sr[s, i] = 0
            cuda.syncthreads()
            m = min(TILE, n_trades - base)
            for i0 in range(0, m, flush):
                for i in range(i0, min(i0 + flush, m)):
                    w = sw[i] | H
                    for s in range(S):
                        r[s] = sr[s, i]
                    for k in range(C):
                        if ((w - words[k]) & H) == H:
                            cnt[k] += 1
                            for s in range(S):
                                part[k * S + s] += r[s]
                for q in range(SC):
                    tot[q] += part[q]
                    part[q] = 0
        for k in range(C):
            f = f_first + k
            if f < f_hi:
                row = (f - f_lo) * n_pairs + target * n_stops + s0
                for s in range(S):
                    if s0 + s < n_stops:
                        out_sum[row + s] = tot[k * S + s]
                        out_n[row + s] = cnt[k]

    return tile_kernel


def shape_for(n_stops: int) -> tuple[int, int, int]:
    """(S stops per block, stop chunks per target, C combinations per thread)."""
    chunks = math.ceil(n_stops / MAX_STOPS)
    S = math.ceil(n_stops / chunks)
    return S, chunks, max(1, min(MAX_COMBOS, ACCUMULATORS // S))


def flush_every(lo: int, hi: int) -> int:
    """Trades per int32 partial sum: flush * max|result| <= 2^31 - 1 (at least 1, at most TILE)."""
    biggest = max(abs(int(lo)), abs(int(hi)), 1)
    return max(1, min(TILE, INT32_MAX // biggest))


def pack_bins(features, sizes, table, xp):
    """(packed uint64 [trades], rank int64 [5, max_len]): each trade's five bins (`cube.trade_bins`
    on the grid's thresholds as the features' dtype; NaN -> bin 0) one byte each, and each
    threshold's position among its dimension's sorted thresholds."""
    thresholds = SimpleNamespace(**{name: table[d, : int(sizes[d])] for d, name in enumerate(FILTERS)})
    bins, orders, _ = trade_bins(features, thresholds, xp)
    packed = xp.zeros(features.shape[1], dtype=xp.uint64)
    for d in range(5):
        packed |= bins[d].astype(xp.uint64) << xp.uint64(8 * d)
    rank = np.zeros((5, max(int(s) for s in sizes[:5])), dtype=np.int64)
    for d, order in enumerate(orders):
        rank[d, order] = np.arange(order.shape[0])
    return packed, rank


def brute_force_cuda(features, results, sizes, table, total: int, k: int, min_trades: int, launch: int,
                     progress=None, threads: int = TILE) -> TopK:
    """The `gridsearch.brute` family's cuda entry: exact top-k over combinations 0..total-1."""
    from kernels.gridsearch import cuda as grid_cuda

    sizes = np.asarray(sizes, dtype=np.int64)
    if int(sizes[:5].max()) > MAX_BIN:  # bins would not fit the byte-wise compare
        return grid_cuda.brute_force_cuda(features, results, sizes, table, total, k, min_trades, launch, progress)
    xp, dev = grid_cuda.array_module()
    if grid_cuda.simulated():
        threads = 32
    threads = min(threads, TILE)
    n_targets, n_stops = int(sizes[5]), int(sizes[6])
    n_pairs = n_targets * n_stops
    n_filters = total // n_pairs
    with phase("h2d", "brute features, results"):
        d_features = xp.ascontiguousarray(dev(features))  # host or device arrays in
        d_results = xp.ascontiguousarray(dev(results), dtype=xp.int32)
    n_trades = d_features.shape[1]
    if n_trades > INT32_MAX:  # the kernel counts kept trades in int32
        return grid_cuda.brute_force_cuda(features, results, sizes, table, total, k, min_trades, launch, progress)
    with phase("host_prep", "brute pre-binning"):
        packed, rank = pack_bins(d_features, sizes, np.asarray(table), xp)
        flush = flush_every(d_results.min(), d_results.max()) if n_trades else 1
        d_sizes, d_rank = dev(sizes), dev(rank)
    S, chunks, C = shape_for(n_stops)
    kernel = _kernel(S, C)
    per_launch = max(1, launch // n_pairs)
    best = TopK.empty()
    for f_lo in range(0, n_filters, per_launch):
        f_hi = min(n_filters, f_lo + per_launch)
        n = (f_hi - f_lo) * n_pairs
        with phase("alloc", "brute outputs"):
            out_sum = xp.empty(n, dtype=xp.int64)
            out_n = xp.empty(n, dtype=xp.int64)
        blocks = (max(1, math.ceil((f_hi - f_lo) / (threads * C))), n_targets, chunks)
        n_blocks = blocks[0] * blocks[1] * blocks[2]
        with phase("kernel", "brute tile_kernel", bytes=n_blocks * n_trades * (8 + 4 * S) + 16 * n,
                   ops=n * n_trades, blocks=n_blocks, threads=threads):
            kernel[blocks, threads](f_lo, f_hi, d_sizes, d_rank, packed, d_results, n_stops, flush, out_sum, out_n)
        with phase("host_post", "brute top-k"):
            best = merge_top(best, top_k(out_sum, out_n, f_lo * n_pairs, k, min_trades, xp=xp), k)
        if progress:
            progress(n)
    return best
