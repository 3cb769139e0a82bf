"""SMA, WMA and KAMA over float32 inputs in integer arithmetic, where the cores' float64 sums are exact.

A running sum is a loop-carried chain of float64 adds (SMA: add+sub a row, 0.96 ns on the EPYC
of benchmarks/RESULTS.md), and it does not contract, so it cannot be chunked like the recursions
of `kernels.indicators.chunks`. But a float32 value is an integer times its ulp, so where every sum
the core forms stays below 2^53 times the smallest ulp among its terms, the core's float64
arithmetic is exact: each state is the exact window sum, however it is computed. Integers then
compute it faster (an int64 add is one cycle, associative, and never rounds), and each output,
the exact sum divided as the core divides, has the core's bits.

The series is taken in blocks of `block_rows(n)` output rows. For each block, with the rows
before it that its windows reach, one integer pass over the exponent fields (`_unit_exponent`)
gives lo, the smallest exponent field of a nonzero value (a subnormal counts as 1), and hi, the
largest. Every value there is a multiple of u = 2^(lo-150) and below 2^(hi-126) in size, and
`weight` bounds the sum of the weights of any sum the core forms (n for SMA; n(n+2) for WMA,
whose running sums are sum_k k*x), so where weight <= 2^(29 + lo - hi) every such sum is an
integer multiple of u below 2^53 u: exact in float64. Then:
- the block's rows are converted to int64 multiples of u (exact: x * 2^(150-lo));
- the core's recurrence runs on them (SMA: S += x[i] - x[i-n+1]; WMA: W += n*x[i] - S);
- each output is float64(sum) * u (both exact: the sum has at most 53 significant bits) divided
  by the core's divisor: the division the core does on the same value.
The states cross into the next block by a shift: their terms lie in that block's reach too, so
its u divides them. A block whose sums could round (or holding a NaN or an infinity) hands the
whole series to the float64 path, which rewrites every output; so does a float64 or strided
input: for SMA and KAMA the lanes of `kernels.indicators.shifted` (float64 running sums a constant
apart), for WMA the portable core. Each variant returns True when the integer path ran
(tests/kernels/test_exact_cores.py).

KAMA's efficiency ratio is such a running sum, beside a recursion that contracts:
`kama_exact_core` computes the sums in integers (each lane block in its own unit) and runs the
recursion in time chunks side by side; each chunk is then walked again from the true state
until it meets its lane (`kama_lanes`).
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from kernels.indicators import cores, shifted
from kernels.indicators.shifted import (  # noqa: F401 (KAMA_FIRST: read here by tests)
    KAMA_FIRST,
    KAMA_LANES,
    KAMA_ROWS,
    block_ends,
    kama_walk,
    walk_chunks_again,
)
from kernels.indicators.steps import kama_change_sum, kama_sc, kama_step
from kernels.indicators._intrinsics import prefetch

NAN = float("nan")
BLOCK = 2048  # output rows per block: the int64 scratch stays in L1/L2
ALL_ZERO = 0  # _unit_exponent of a block of zeros: any unit divides it
NOT_EXACT = -1

_sma_shifted_core = register_jitable(shifted.sma_shifted_core)
_wma_core = register_jitable(cores.wma_core)


def _float32_bits(x):
    """Whether x is a C-contiguous float32 array: bits the exponent scan can read."""
    return x.dtype == np.float32 and x.flags.c_contiguous


@overload(_float32_bits)
def _float32_bits_compiled(x):
    is_float32 = isinstance(x, types.Array) and x.dtype == types.float32  # decided when compiled
    return lambda x: is_float32 and x.flags.c_contiguous


@register_jitable
def block_rows(n):
    """Output rows per block: BLOCK, or 4n for long windows (each block re-reads the n rows before it)."""
    return max(BLOCK, 4 * n)


@register_jitable
def _unit_exponent(bits, weight):
    """lo for float32 values given as their bits: the smallest exponent field of a nonzero value
    (a subnormal counts as 1), when every sum of at most `weight` of them is exact in float64
    (weight <= 2^(29 + lo - hi), hi the largest exponent field); ALL_ZERO when every value is
    zero; NOT_EXACT when a sum could round or a value is NaN or infinite. One integer pass that
    vectorises."""
    lo = 255
    hi = 0
    for i in range(bits.shape[0]):
        b = bits[i]
        e = (b >> 23) & 255
        hi = max(hi, e)
        lo = min(lo, max(e, 1) if (b & 0x7FFFFFFF) != 0 else 255)
    if hi == 255:
        return NOT_EXACT
    if lo == 255:
        return ALL_ZERO
    if weight > 2.0 ** (29 + int(lo) - int(hi)):
        return NOT_EXACT
    return int(lo)


@register_jitable
def _rescaled(v, lo_from, lo_to):
    """An exact integer multiple of 2^(lo_from-150), as a multiple of 2^(lo_to-150) (which
    divides it). A nonzero v moves by fewer than 63 bits, so the clamp only meets v == 0."""
    if lo_to < lo_from:
        return v << min(lo_from - lo_to, 62)
    return v >> min(lo_to - lo_from, 63)


@register_jitable
def _to_units(src, lo, dst):
    """dst[:len(src)] = src as int64 multiples of 2^(lo-150) (exact; a loop that vectorises)."""
    scale = 2.0 ** (150 - lo)
    for r in range(src.shape[0]):
        dst[r] = np.int64(np.float64(src[r]) * scale)


@register_jitable
def _block_lo(bits, weight, lo_prev):
    """The unit exponent of a block (its rows and those its windows reach, as bits): NOT_EXACT
    where its sums could round; a block of zeros keeps the previous block's (127 for a first
    block: any unit would do). Scanned just before the block is converted: its rows are then in
    cache for the passes after."""
    lo = _unit_exponent(bits, weight)
    if lo == ALL_ZERO:
        return lo_prev if lo_prev > 0 else 127
    return lo


@register_jitable
def _block_ints(x, bits, first, stop, weight, lo_prev, ints):
    """Rows first..stop-1 (a block and the rows its windows reach) as int64 multiples of the
    block's unit, into ints; the unit's exponent (`_block_lo`), or NOT_EXACT (ints untouched)."""
    lo = _block_lo(bits[first:stop], weight, lo_prev)
    if lo != NOT_EXACT:
        _to_units(x[first:stop], lo, ints)
    return lo


@register_jitable
def _steps_apart(ints, back, m, steps):
    """steps[r] = ints[back + r] - ints[r], r < m: a running sum's steps, in a loop that
    vectorises, so that its chain is one add a row (LLVM turns S + (x[i] - x[i-n]) into
    (S + x[i]) - x[i-n], two)."""
    cur = ints[back : back + m]
    old = ints[:m]
    for r in range(m):
        steps[r] = cur[r] - old[r]


@register_jitable
def _emit(sums, lo, divisor, dst):
    """dst[r] = sums[r] * 2^(lo-150) / divisor: each exact sum (int64 -> float64 and the power of
    two are exact) divided as the core divides the same value; a loop that vectorises."""
    unit = 2.0 ** (lo - 150)
    for r in range(dst.shape[0]):
        dst[r] = (sums[r] * unit) / divisor


@register_jitable
def _fetch_next(x, first, r, t_len):
    """Step r of a block's serial loop prefetches x[first + r] where r is a multiple of 16: one
    hint per 64-byte line of the next block's float32 rows, which the exponent scan that starts
    that block would otherwise wait on (1M rows out of the caches: SMA 1.04-1.19 -> 0.87-0.90 ms;
    in cache 0.66-0.74 -> 0.74-0.76; EPYC, thread CPU time)."""
    if (r & 15) == 0:
        prefetch(x, min(first + r, t_len - 1))


@register_jitable
def _scratch(x, n, rows):
    """x's bits, and the int64 scratch of a block: its reach (rows + n), its sums, its steps."""
    bits = np.ascontiguousarray(x).view(np.uint32)
    return bits, np.empty(rows + n, np.int64), np.empty(rows, np.int64), np.empty(rows, np.int64)


def sma_exact_core(x, n, out):
    """sma_core bit for bit; in int64 where every window sum is exact (module docstring).
    The core's order, S + x[i] emitted then S - x[i-n+1], is the same exact integers.
    Elsewhere (float64, strided, sums that could round) `shifted.sma_shifted_core`."""
    t_len = x.shape[0]
    if t_len < n or not _float32_bits(x):
        _sma_shifted_core(x, n, out)
        return False
    rows = block_rows(n)
    bits, ints, sums, steps = _scratch(x, n, rows)  # ints: rows b-n+1 .. b+m-1 of block b
    for i in range(n - 1):
        out[i] = NAN
    s = 0
    lo_prev = 0
    for b in range(n - 1, t_len, rows):
        m = min(rows, t_len - b)
        lo = _block_ints(x, bits, b - n + 1, b + m, n, lo_prev, ints)
        if lo == NOT_EXACT:  # the float64 lanes rewrite every output
            _sma_shifted_core(x, n, out)
            return False
        if lo_prev == 0:  # the first block: the sum of the n-1 rows before its first output
            for r in range(n - 1):
                s += ints[r]
        else:
            s = _rescaled(s, lo_prev, lo)
        _steps_apart(ints, n - 1, m, steps)
        cur = ints[n - 1 : n - 1 + m]
        for r in range(m):
            _fetch_next(x, b + m, r, t_len)
            sums[r] = s + cur[r]
            s = s + steps[r]
        _emit(sums, lo, n, out[b : b + m])
        lo_prev = lo
    return True


def wma_exact_core(x, n, out):
    """wma_core bit for bit; in int64 where every sum it forms is exact (module docstring).
    With S = sum x[i-n+1..i] and W = sum_k k*x[i-n+k] (weights 1..n, newest n), the core's
    steps are W += n*x[i] - S (S of the row before) and S += x[i] - x[i-n]; output W / (n(n+1)/2)."""
    t_len = x.shape[0]
    if n < 2 or t_len <= n or not _float32_bits(x):
        _wma_core(x, n, out)
        return False
    rows = block_rows(n)
    bits, ints, sums, steps = _scratch(x, n, rows)  # ints: rows b-n .. b+m-1 of block b
    weight = n * (n + 2)
    divider = (n * (n + 1)) // 2
    for i in range(n - 1):
        out[i] = NAN
    s = 0
    w = 0
    lo_prev = 0
    for b in range(n, t_len, rows):
        m = min(rows, t_len - b)
        lo = _block_ints(x, bits, b - n, b + m, weight, lo_prev, ints)
        if lo == NOT_EXACT:  # the core rewrites every output
            _wma_core(x, n, out)
            return False
        if lo_prev == 0:  # the seed: row n-1's sums, from rows 0..n-1
            for r in range(n):
                s += ints[r]
                w += (r + 1) * ints[r]
            out[n - 1] = (w * 2.0 ** (lo - 150)) / divider
        else:
            s = _rescaled(s, lo_prev, lo)
            w = _rescaled(w, lo_prev, lo)
        _steps_apart(ints, n, m, steps)
        cur = ints[n : n + m]
        for r in range(m):
            _fetch_next(x, b + m, r, t_len)
            w = w + (cur[r] * n - s)
            sums[r] = w
            s = s + steps[r]
        _emit(sums, lo, divider, out[b : b + m])
        lo_prev = lo
    return True


_kama_core = register_jitable(cores.kama_core)
_kama_shifted_core = register_jitable(shifted.kama_shifted_core)
# KAMA_LANES chunks (`_kama_chains`), KAMA_ROWS rows per lane between the vectorised passes and
# between two marks of the lanes' states, the first block of KAMA_FIRST: as kernels.indicators.shifted
KAMA_PITCH = KAMA_ROWS + 8  # a lane's smoothing constants apart: 64 bytes off a multiple of 4 KiB, else the lanes share L1 sets
# Steady rows per chunk below which the core runs: a chunk that meets the true state only late
# (KAMA contracts by 1 - sc, as little as 1 - (2/31)^2 a row) is walked again serially.
KAMA_MIN_CHUNK = 8 * KAMA_ROWS


@register_jitable
def _kama_step(work, q, k, dst, r):
    """KAMA's step (`steps.kama_step`) on entry q of the lanes' scratch (work[0]: sc, work[1]: x):
    fma(x - k, sc, k), the chain sub+fma; stored at dst[r]."""
    k = kama_step(work[1, q], k, work[0, q])
    dst[r] = k
    return k


@register_jitable
def _lane(a, first, stride, j, m):
    """Lane j's m rows of `a`: a[first + j*stride :][:m]."""
    return a[first + j * stride : first + j * stride + m]


@register_jitable
def _fetch_lanes(x, ahead, stride, r):
    """Every other step r of the chains' loop prefetches one 64-byte line of float32 rows of the
    lanes' next block: lane (r/2) % 8, line (r/2) // 8 past `ahead` (2,048 steps cover a block
    of 2,048 rows in each lane)."""
    if (r & 1) == 0:
        k = r >> 1
        prefetch(x, min(ahead + (k & 7) * stride + (k >> 3) * 16, x.shape[0] - 1))


@register_jitable
def _kama_chains(work, m, prevs, out, first, stride, x, ahead):
    """Rows r < m of the KAMA_LANES lanes (scratch at j*KAMA_PITCH, outputs `_lane(out, first,
    stride, j, m)`), their chains side by side from `prevs`, which is left at each lane's last
    state. The states stay in eight registers and the outputs go straight to `out`: with the
    states in an array, every step waits on a store and a load (1M float32 rows: the call 1.40
    -> 1.06 ms, and 0.98 without the copy from scratch; EPYC, thread CPU time)."""
    p = KAMA_PITCH
    o0, o1, o2, o3 = (_lane(out, first, stride, 0, m), _lane(out, first, stride, 1, m),
                      _lane(out, first, stride, 2, m), _lane(out, first, stride, 3, m))
    o4, o5, o6, o7 = (_lane(out, first, stride, 4, m), _lane(out, first, stride, 5, m),
                      _lane(out, first, stride, 6, m), _lane(out, first, stride, 7, m))
    k0, k1, k2, k3, k4, k5, k6, k7 = prevs[0], prevs[1], prevs[2], prevs[3], prevs[4], prevs[5], prevs[6], prevs[7]
    for r in range(m):
        _fetch_lanes(x, ahead, stride, r)
        k0 = _kama_step(work, r, k0, o0, r)
        k1 = _kama_step(work, p + r, k1, o1, r)
        k2 = _kama_step(work, 2 * p + r, k2, o2, r)
        k3 = _kama_step(work, 3 * p + r, k3, o3, r)
        k4 = _kama_step(work, 4 * p + r, k4, o4, r)
        k5 = _kama_step(work, 5 * p + r, k5, o5, r)
        k6 = _kama_step(work, 6 * p + r, k6, o6, r)
        k7 = _kama_step(work, 7 * p + r, k7, o7, r)
    prevs[0], prevs[1], prevs[2], prevs[3], prevs[4], prevs[5], prevs[6], prevs[7] = k0, k1, k2, k3, k4, k5, k6, k7


@register_jitable
def _kama_block(x, bits, n, first, stride, r0, m, los, sums, prevs, out, ints, steps, work):
    """Rows first + j*stride + r0 + r (r < m) of the lanes j < KAMA_LANES, written to `out`;
    False where a lane's block could round (the float64 lanes then run).

    Lane by lane: the block's unit (`_block_lo` over its rows and the n+1 before them; `los`:
    each lane's unit, to which its sum is rescaled), its rows as integer multiples of it, the
    efficiency ratio's sums as a chain of int64 adds (`sums`: each lane's sum at the row
    before), and the smoothing constants in a loop that vectorises (np.true_divide: no
    zero-division branch; the integers' quotient is the quotient of the exact float64 values,
    both scaled by the unit). Then KAMA's own chains, the lanes side by side (`_kama_chains`)."""
    for j in range(KAMA_LANES):
        b = first + j * stride + r0
        lo = _block_ints(x, bits, b - n - 1, b + m, 2 * n + 2, los[j], ints)
        if lo == NOT_EXACT:
            return False
        sums[j] = _rescaled(sums[j], los[j], lo)
        los[j] = lo
        unit = 2.0 ** (lo - 150)
        new_hi = ints[n + 1 : n + 1 + m]  # x[i]
        new_lo = ints[n : n + m]  # x[i-1]
        old_hi = ints[1 : 1 + m]  # x[i-n]
        old_lo = ints[:m]  # x[i-n-1]
        for r in range(m):
            steps[r] = abs(new_hi[r] - new_lo[r]) - abs(old_hi[r] - old_lo[r])
        s = sums[j]
        for r in range(m):
            s += steps[r]
            steps[r] = s
        sums[j] = s
        lane = j * KAMA_PITCH
        cur = x[b : b + m]
        for r in range(m):
            total = np.float64(steps[r])
            roc = np.float64(new_hi[r] - old_hi[r])
            ratio = abs(np.true_divide(roc, total))
            scaled = total * unit
            # steps.kama_flat's test on the integers (the ratio's, scale-free) and on the scaled sum
            # (|sum| < EPS); the division taken for every row (as shifted.kama_smoothing)
            er = 1.0 if (total <= roc or (-cores.EPS < scaled < cores.EPS)) else ratio
            work[0, lane + r] = kama_sc(er)
            work[1, lane + r] = np.float64(cur[r])
    _kama_chains(work, m, prevs, out, first + r0, stride, x, first + r0 + m)
    return True


@register_jitable
def _kama_sum(x, n, i, lo):
    """The efficiency ratio's sum of |x[k] - x[k-1]| over k = i-n+1..i, in multiples of
    2^(lo-150) (exact where that unit divides rows i-n..i)."""
    scale = 2.0 ** (150 - lo)
    s = 0
    for k in range(i - n + 1, i + 1):
        s += abs(np.int64(np.float64(x[k]) * scale) - np.int64(np.float64(x[k - 1]) * scale))
    return s


def kama_exact_core(x, n, out):
    """kama_core bit for bit, `kama_lanes(x, n, out, KAMA_MIN_CHUNK)`; True when the integer lanes ran."""
    return kama_lanes(x, n, out, KAMA_MIN_CHUNK) >= 0


@register_jitable
def kama_lanes(x, n, out, min_chunk):
    """kama_core bit for bit; where the efficiency ratio's float32 sums are exact, the steady
    rows in KAMA_LANES chunks side by side (chains that overlap, where kama_core's one chain is
    bound by its latency).

    The ratio's running sum does not contract, but where `_unit_exponent(..., 2n + 2)` shows its
    sums exact (n differences of two values, and the row's own change), block by block as for
    SMA, they are int64 multiples of the block's unit, and each chunk starts from the exact sum.
    KAMA itself, kama = fma(x - kama, sc, kama), contracts by 1 - sc a row: chunk j >= 1 starts
    from its row's own value and draws together with the true state until both are the same
    float64, and from then on they are the same bits (the same operations on the same inputs).
    After the pass, chunk j is walked again serially (kama_core's loop) from the true end of
    chunk j-1, rewriting its outputs, until its state equals the lane's state at one of the
    marks kept after every block (the first after KAMA_FIRST rows): the rest of the lane is
    then the true values. A chunk that never meets is walked to its end. Other inputs (float64,
    strided, sums that could round) run `kernels.indicators.shifted.kama_shifted_core` (which runs
    the core on series with fewer than its own minimum rows a chunk), as does a series with
    fewer than `min_chunk` steady rows a chunk.
    Returns the rows walked again, or -1 where the integer lanes did not run."""
    t_len = x.shape[0]
    start = n + 1  # rows 0..n: the core's warm-up and seed
    size = (t_len - start) // KAMA_LANES
    if n < 2 or size < max(min_chunk, 1) or not _float32_bits(x):
        _kama_shifted_core(x, n, out)
        return -1
    bits = np.ascontiguousarray(x).view(np.uint32)
    stop = start + KAMA_LANES * size
    # the rows after the last chunk run kama_core's own loop from a fresh sum: exact only where checked
    if _unit_exponent(bits[stop - n - 1 :], 2 * n + 2) == NOT_EXACT:
        _kama_shifted_core(x, n, out)
        return -1
    seed = np.empty(start)
    _kama_core(x[:start], n, seed)
    out[:start] = seed
    sums = np.empty(KAMA_LANES, np.int64)
    los = np.empty(KAMA_LANES, np.int64)
    prevs = np.empty(KAMA_LANES)
    ints = np.empty(KAMA_ROWS + n + 1, np.int64)
    steps = np.empty(KAMA_ROWS, np.int64)
    work = np.empty((2, KAMA_LANES * KAMA_PITCH))  # per lane: smoothing constants, inputs
    for j in range(KAMA_LANES):  # the sum and a start at the row before each chunk's first row
        b = start + j * size
        los[j] = _block_lo(bits[b - n - 1 : b], 2 * n + 2, 0)
        if los[j] == NOT_EXACT:
            _kama_shifted_core(x, n, out)
            return -1
        sums[j] = _kama_sum(x, n, b - 1, los[j])
        prevs[j] = np.float64(x[b - 1])
    prevs[0] = seed[n]  # the first chunk starts true
    ends = block_ends(size)
    marks = np.empty((ends.shape[0], KAMA_LANES))  # each lane's state at the end of each block
    r0 = 0
    for blk in range(ends.shape[0]):
        if not _kama_block(x, bits, n, start, size, r0, ends[blk] - r0, los, sums, prevs, out, ints, steps, work):
            _kama_shifted_core(x, n, out)  # rewrites every output
            return -1
        marks[blk] = prevs
        r0 = ends[blk]
    firsts = np.empty(KAMA_LANES, np.int64)
    chunk_sums = np.empty(KAMA_LANES)
    for j in range(KAMA_LANES):  # each chunk's ratio sum formed afresh: exact here
        firsts[j] = start + j * size
        chunk_sums[j] = kama_change_sum(x, n, firsts[j])
    true_end, walked = walk_chunks_again(x, n, firsts, ends, marks, prevs, chunk_sums, out)
    kama_walk(x, n, stop, t_len, true_end, kama_change_sum(x, n, stop), out)  # the rows after the last chunk
    return walked
