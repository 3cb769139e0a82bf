"""Float64 running sums in lanes that run beside the true one a constant apart: SMA and KAMA, bit for bit.

sma_core's loop-carried chain is two dependent roundings a row (t = s + x[i], output t/n,
s = t - x[i-n+1]: 0.96 ns a row on the EPYC of benchmarks/RESULTS.md, TA-Lib's own loop), and
KAMA's efficiency ratio is such a sum too. A running sum does not contract, so a chunk started
from another state never meets the true one (`kernels.indicators.chunks`), and float64 inputs are
not integers of one unit (`kernels.indicators.exact`). But inside one binade the rounding does not
depend on where the sum is:

    if z and z + d both lie in [2^e, 2^(e+1)), u = 2^(e-52), and d is a multiple of 2u, then
    fl(z + d) = fl(z) + d,

since both round to the grid of multiples of u, and a tie goes to the even multiple in both
(d/u even keeps the parity). So two runs of the same operations over the same rows, from states
an even number of ulps apart, stay exactly that far apart for as long as every value of both
stays in its binade (the sums in one, the states after the subtraction in one); and a tie (z
halfway between two multiples of u, frequent where x has a few bits below u) makes both even,
so an odd distance turns even at the first one.

`shifted_sums` takes a block of SHIFT_LANES lanes of `lane_rows(n)` rows, advanced side by side
(`_sum_lanes`: one add and one sub a row for all eight lanes, where one chain waits on both):
lane 0 from the true state, lane j >= 1 from a state near it (the caller's: SMA its own window's
sum). Then lane by lane, each is walked serially from the true end of the lane before until its
sum t is the lane's own to the bit (met: the rest is true) or an even number of ulps from it
(`_even_apart`). From that row the check (`_shift_end`: every sum and state of the lane, and each
plus the distance, within [2^e + u, 2^(e+1) - u] of its binade, which puts the exact sums inside
the binade too) gives the rows whose true sums are the lane's plus the distance; at the first
row where it fails (a sum crossing a power of two, a NaN, an infinity, a sign change) the walk
goes on, at most SHIFT_CHECKS checks a lane. The result never depends on a check passing, only
the time does (tests/kernels/test_shifted_cores.py). Bit for bit means every value that is not
a NaN; a NaN is a NaN in the same rows, its sign and payload not promised: where two NaNs meet
(x86's default NaN from inf - inf has its sign set, a NaN read from the input has not), the CPU
keeps the one in the operand the compiler put first, which differs between two loops. SMA divides the true sums as its core does;
KAMA computes its smoothing constants from them and runs its own recursion, which contracts, in
time chunks walked again until they meet (as `kernels.indicators.exact.kama_lanes`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from kernels.indicators import chunks, cores
from kernels.indicators._intrinsics import bits_float, float_bits
from kernels.indicators._intrinsics import prefetch
from kernels.indicators.steps import KAMA_SLOW, KAMA_SPAN  # noqa: F401 (shifted.KAMA_*: read by exact and tests)
from kernels.indicators.steps import (kama_change_sum, kama_flat, kama_roll, kama_sc, kama_step, sma_step, sma_value, sum_step,
                                      window_sum)

NAN = float("nan")
SHIFT_LANES = 8  # `_sum_lanes` advances exactly this many
SHIFT_CHECKS = 4  # shifts tried a lane: one whose sums keep crossing a power of two is then walked to its end
SHIFT_ROWS = 2048  # rows a lane at least (8n for long windows: their own window sums stay a small part); 1M rows
# of SMA: 512 0.88 ms, 1,024 0.79, 2,048 0.75, 4,096 0.73; 10M into a reused output 2,048 7.9-8.1, 4,096 8.1-8.6

_sma_core = register_jitable(cores.sma_core)


@register_jitable
def lane_rows(n):
    """Rows a lane for a window of n: SHIFT_ROWS, or 8n for long windows, plus 8: lanes 64 bytes
    off a multiple of 4 KiB apart, else their loads and the sums' stores share L1 sets and
    alias (1M rows of SMA with lanes of 1,024 rows: 0.79 or 1.24 ms by the array's address)."""
    return max(SHIFT_ROWS, 8 * n) + 8


@register_jitable
def _sum_step(ps, qs, r, s, sums, k):
    """The running sum's step (`steps.sum_step`) on a lane's row r from state s: sums[k] = s + ps[r];
    returns that - qs[r]. SMA's own step (`steps.sma_step`) divides each sum as it goes: here the
    sums are kept, checked and shifted first (`shifted_sums`), and divided after in a loop that
    vectorises (`_divided`)."""
    t, s = sum_step(s, ps[r], qs[r])
    sums[k] = t
    return s


@register_jitable
def _sum_lanes(ps, qs, rows, starts, sums, src, src_next, dst, dst_first):
    """Rows j*rows + r (r < rows) of the block's streams ps and qs in SHIFT_LANES lanes j, each
    from starts[j] (left at its end state), their chains side by side; sums at j*rows + r.

    The states stay in registers and each lane reads its rows through views indexed by the
    loop's counter (1M rows: 0.79 -> 0.36 ms against indices computed from a row offset). Each
    step prefetches one 64-byte line of `src` from src_next on (the next block's input: `rows`
    steps cover its 8*rows float64 rows) and one of `dst` from dst_first on (this block's outputs,
    so that their stores find the lines in cache: 10M rows into a reused output, 12.9 -> 9.8 ms)."""
    p0, q0 = ps[:rows], qs[:rows]
    p1, q1 = ps[rows:], qs[rows:]
    p2, q2 = ps[2 * rows :], qs[2 * rows :]
    p3, q3 = ps[3 * rows :], qs[3 * rows :]
    p4, q4 = ps[4 * rows :], qs[4 * rows :]
    p5, q5 = ps[5 * rows :], qs[5 * rows :]
    p6, q6 = ps[6 * rows :], qs[6 * rows :]
    p7, q7 = ps[7 * rows :], qs[7 * rows :]
    s0, s1, s2, s3 = starts[0], starts[1], starts[2], starts[3]
    s4, s5, s6, s7 = starts[4], starts[5], starts[6], starts[7]
    src_last = src.shape[0] - 1
    dst_last = dst.shape[0] - 1
    for r in range(rows):
        prefetch(src, min(src_next + 8 * r, src_last))
        prefetch(dst, min(dst_first + 8 * r, dst_last))
        s0 = _sum_step(p0, q0, r, s0, sums, r)
        s1 = _sum_step(p1, q1, r, s1, sums, rows + r)
        s2 = _sum_step(p2, q2, r, s2, sums, 2 * rows + r)
        s3 = _sum_step(p3, q3, r, s3, sums, 3 * rows + r)
        s4 = _sum_step(p4, q4, r, s4, sums, 4 * rows + r)
        s5 = _sum_step(p5, q5, r, s5, sums, 5 * rows + r)
        s6 = _sum_step(p6, q6, r, s6, sums, 6 * rows + r)
        s7 = _sum_step(p7, q7, r, s7, sums, 7 * rows + r)
    starts[0], starts[1], starts[2], starts[3] = s0, s1, s2, s3
    starts[4], starts[5], starts[6], starts[7] = s4, s5, s6, s7


@register_jitable
def _binade(v):
    """(lo, hi, u): lo = 2^e + u, hi = 2^(e+1) - u for v > 0 in [2^e, 2^(e+1)) (u = 2^(e-52), its
    ulp), mirrored for v < 0; an empty range (lo > hi) for zero, NaN, infinity, subnormals and
    the lowest normal binades (exponent fields 1..53: excluded, which only walks them). From the
    bits: a few integer operations. hi is formed as 2^e + (2^e - u), exact in every binade: as
    2*2^e - u it overflows to inf in the top one and the range would take infinities."""
    field = (float_bits(v) >> 52) & 0x7FF  # the biased exponent, e + 1023
    if field <= 53 or field == 0x7FF:
        return 1.0, 0.0, 1.0
    two_e = bits_float(field << 52)
    u = bits_float((field - 52) << 52)
    lo = two_e + u
    hi = two_e + (two_e - u)
    return (lo, hi, u) if v > 0 else (-hi, -lo, u)


@register_jitable
def _even_apart(t, g, lo, hi, u, s, h, lo2, hi2, u2):
    """The sums t and g in [lo, hi] (one binade, `_binade`, of ulp u), the states after them, s
    and h, in [lo2, hi2] (of ulp u2), and t - g an even number of the larger ulp."""
    if not (lo <= g <= hi and lo <= t <= hi and lo2 <= s <= hi2 and lo2 <= h <= hi2):
        return False
    # t - g is exact (Sterbenz) and finite, so k is exact unless it underflows where u2 >> u; a
    # shift of one row is exact whatever k (g + (t - g) = t), and a longer one keeps the sums in
    # their binade and the states in theirs, which bounds u2 < 2^54 u, so k >= 2^-55 there.
    k = (t - g) / (2.0 * max(u, u2))
    return k == math.floor(k)


@register_jitable
def _shift_end(sums, qs, d, lo, hi, lo2, hi2):
    """The first row r where the sum sums[r] or itself plus d lies outside [lo, hi], or the state
    after it (sums[r] - qs[r], the step's subtraction again) or itself plus d outside [lo2, hi2]
    (NaN always does); len(sums) if none. One pass that vectorises (a minimum, no early exit)."""
    rows = sums.shape[0]
    lo_d = lo - min(d, 0.0)
    hi_d = hi - max(d, 0.0)
    lo2_d = lo2 - min(d, 0.0)
    hi2_d = hi2 - max(d, 0.0)
    end = rows
    for r in range(rows):
        t = sums[r]
        s = t - qs[r]
        good = (t >= lo_d) & (t <= hi_d) & (s >= lo2_d) & (s <= hi2_d)
        end = min(end, rows if good else r)
    return end


@register_jitable
def _shift(sums, d):
    """sums[r] += d: exact, where `_shift_end` held; a loop that vectorises."""
    for r in range(sums.shape[0]):
        sums[r] += d


@register_jitable
def _settle_lane(ps, qs, s, g_end, sums):
    """A lane (rows r < len(sums) of the streams ps, qs) run from another state: its sums, and
    g_end, its state after the last row. Given s, the true state before its first row, sums
    becomes the true sums; returns the true state after the last row and the rows walked.

    Walked serially from s (the true sums into `sums`) until it meets the lane (the rest is the
    lane's) or stands an even number d of ulps from it, the sums in one binade and the states
    in one (each its own: the same, or for SMA over two or three rows the one below, for KAMA's
    ratio the one above, of either sign), d even in the larger ulp: the rows from there on
    where the shift holds (`_shift_end`) are the lane's sums plus d, and the walk goes on from
    the first row where it fails (the sums crossing a power of two, a NaN), from the true state
    before it."""
    rows = sums.shape[0]
    lo, hi, u = _binade(sums[0])
    lo2, hi2, u2 = _binade(sums[0] - qs[0])
    checks = SHIFT_CHECKS
    walked = 0
    r = 0
    while r < rows:
        t, s_next = sum_step(s, ps[r], qs[r])
        g = sums[r]
        if t == g and math.copysign(1.0, t) == math.copysign(1.0, g):
            return g_end, walked
        s = s_next
        if not (lo <= t <= hi):
            lo, hi, u = _binade(t)
        if not (lo2 <= s <= hi2):
            lo2, hi2, u2 = _binade(s)
        if checks > 0 and _even_apart(t, g, lo, hi, u, s, g - qs[r], lo2, hi2, u2):
            checks -= 1
            d = t - g
            q = r + _shift_end(sums[r:], qs[r:rows], d, lo, hi, lo2, hi2)
            if q > r:
                _shift(sums[r:q], d)
                if q == rows:
                    return g_end + d, walked
                s = sums[q - 1] - qs[q - 1]  # the true state after row q-1
                r = q
                continue
        sums[r] = t
        r += 1
        walked += 1
    return s, walked


@register_jitable
def shifted_sums(ps, qs, rows, starts, sums, src, src_next, dst, dst_first):
    """One block of a running sum, t[r] = s + ps[r] then s = t[r] - qs[r] for r < SHIFT_LANES*rows
    (float64, in that order, as the cores round): sums[r] = t[r], bit for bit. starts[0] is the
    true state before the block; starts[j] a state near the true one before lane j's first row
    (row j*rows). Returns the true state after the block and the rows walked again serially.
    src/src_next and dst/dst_first: lines the lanes' loop prefetches (`_sum_lanes`)."""
    _sum_lanes(ps, qs, rows, starts, sums, src, src_next, dst, dst_first)
    s = starts[0]  # lane 0 started true
    walked = 0
    for j in range(1, SHIFT_LANES):
        k = j * rows
        s, w = _settle_lane(ps[k : k + rows], qs[k : k + rows], s, starts[j], sums[k : k + rows])
        walked += w
    return s, walked


@register_jitable
def _divided(sums, n, dst):
    """dst[r] = sums[r] / n, sma_core's division (`steps.sma_value`); a loop that vectorises."""
    for r in range(dst.shape[0]):
        dst[r] = sma_value(sums[r], n)


def sma_shifted_core(x, n, out):
    """sma_core bit for bit (any float dtype or stride): blocks of SHIFT_LANES lanes of
    lane_rows(n) rows through `shifted_sums` (ps = x[i], qs = x[i-n+1]; each lane starts from
    its own window's sum), the rows after them serially; a series shorter than one block runs
    sma_core. Returns the rows walked again serially, or -1 where sma_core ran."""
    t_len = x.shape[0]
    rows = lane_rows(n)
    block = SHIFT_LANES * rows
    if n < 2 or t_len - (n - 1) < block:
        _sma_core(x, n, out)
        return -1
    for i in range(n - 1):
        out[i] = NAN
    walked = 0
    starts = np.empty(SHIFT_LANES)
    sums = np.empty(block)
    s = window_sum(x, 0, n - 1)
    first = n - 1
    while first + block <= t_len:
        starts[0] = s
        for j in range(1, SHIFT_LANES):
            a = first + j * rows
            starts[j] = window_sum(x, a - n + 1, a)
        s, w = shifted_sums(x[first : first + block], x[first - n + 1 : first - n + 1 + block], rows, starts, sums,
                            x, first + block, out, first)
        walked += w
        _divided(sums, n, out[first : first + block])
        first += block
    for i in range(first, t_len):  # sma_core's loop
        out[i], s = sma_step(s, np.float64(x[i]), np.float64(x[i - n + 1]), n)
    return walked


# KAMA over float64 (kama_core bit for bit). Its efficiency ratio's running sum is a chain like
# SMA's; kama = fma(x - kama, sc, kama) contracts, so its chunks meet (kernels.indicators.exact.kama_lanes).
KAMA_LANES = 8  # chunks side by side: `_kama_chains` advances exactly this many
KAMA_ROWS = 2048  # rows per lane between two marks of the lanes' states
KAMA_FIRST = 512  # the first mark: a chunk whose start meets the true state early is found early

_kama_core = register_jitable(cores.kama_core)


def _float64_work(out):
    """An array for the smoothing constants and the lanes' outputs: out itself where it is float64."""
    return out if out.dtype == np.float64 else np.empty(out.shape[0])


@overload(_float64_work)
def _float64_work_compiled(out):
    if out.dtype == types.float64:  # decided when compiled
        return lambda out: out
    return lambda out: np.empty(out.shape[0])


def _copy_back(work, out, first):
    """out[first:] = work[first:] where work is not out."""
    if work is not out:
        out[first:] = work[first:]


@overload(_copy_back)
def _copy_back_compiled(work, out, first):
    if out.dtype == types.float64:
        return lambda work, out, first: None

    def copy(work, out, first):
        for i in range(first, out.shape[0]):
            out[i] = work[i]

    return copy


@register_jitable
def block_ends(size):
    """The row (within a chunk) after each block of the lanes' pass: KAMA_FIRST, then every KAMA_ROWS, then size."""
    count = 1 + (max(size - KAMA_FIRST, 0) + KAMA_ROWS - 1) // KAMA_ROWS
    ends = np.empty(count, np.int64)
    for i in range(count):
        ends[i] = min(KAMA_FIRST + i * KAMA_ROWS, size) if i else min(KAMA_FIRST, size)
    return ends


@register_jitable
def kama_smoothing(sum_roc, roc):
    """kama_core's smoothing constant from the ratio's sum and the row's change: `steps.kama_constant`
    with its division taken for every row, as np.true_divide, and selected after. The step divides
    only where the ratio is not flat (no division by a zero sum, in Python or compiled with numba's
    Python error model, whose `/` carries a zero-division branch); here the loops vectorise."""
    ratio = math.fabs(np.true_divide(roc, sum_roc))
    return kama_sc(1.0 if kama_flat(sum_roc, roc) else ratio)


@register_jitable
def _negated_changes(x, first, dst):
    """dst[k] = -|x[first+k] - x[first+k-1]|: the terms kama_core adds to and subtracts from its
    sum (fabs(a - b) is fabs(b - a) to the bit), negated so that its step s - a + b is the
    running sum's s + p - q; a loop that vectorises."""
    m = dst.shape[0]
    cur = x[first : first + m]
    prev = x[first - 1 : first - 1 + m]
    for k in range(m):
        dst[k] = -math.fabs(np.float64(cur[k]) - np.float64(prev[k]))


@register_jitable
def _kama_constants(x, n, first, sums, qs, sc):
    """sc[r] = the smoothing constant of row first + r, the ratio's sum after it being
    sums[r] - qs[r] (the step's subtraction again)."""
    m = sc.shape[0]
    cur = x[first : first + m]
    old = x[first - n : first - n + m]
    for r in range(m):
        sc[r] = kama_smoothing(sums[r] - qs[r], np.float64(cur[r]) - np.float64(old[r]))


@register_jitable
def _kama_step64(xs, scs, r, k):
    """KAMA's step on a lane's row r: fma(x - k, sc, k) over the constant stored where its output goes."""
    k = kama_step(np.float64(xs[r]), k, scs[r])
    scs[r] = k
    return k


@register_jitable
def _kama_chains64(x, work, first, stride, r0, m, prevs):
    """Rows first + j*stride + r0 + r (r < m) of the KAMA_LANES chunks j, their chains side by side
    from `prevs` (left at each lane's last state): each row's smoothing constant in `work` is
    replaced by its output."""
    b = first + r0
    x0, w0 = x[b:], work[b:]
    x1, w1 = x[b + stride :], work[b + stride :]
    x2, w2 = x[b + 2 * stride :], work[b + 2 * stride :]
    x3, w3 = x[b + 3 * stride :], work[b + 3 * stride :]
    x4, w4 = x[b + 4 * stride :], work[b + 4 * stride :]
    x5, w5 = x[b + 5 * stride :], work[b + 5 * stride :]
    x6, w6 = x[b + 6 * stride :], work[b + 6 * stride :]
    x7, w7 = x[b + 7 * stride :], work[b + 7 * stride :]
    k0, k1, k2, k3, k4, k5, k6, k7 = prevs[0], prevs[1], prevs[2], prevs[3], prevs[4], prevs[5], prevs[6], prevs[7]
    for r in range(m):
        k0 = _kama_step64(x0, w0, r, k0)
        k1 = _kama_step64(x1, w1, r, k1)
        k2 = _kama_step64(x2, w2, r, k2)
        k3 = _kama_step64(x3, w3, r, k3)
        k4 = _kama_step64(x4, w4, r, k4)
        k5 = _kama_step64(x5, w5, r, k5)
        k6 = _kama_step64(x6, w6, r, k6)
        k7 = _kama_step64(x7, w7, r, k7)
    prevs[0], prevs[1], prevs[2], prevs[3], prevs[4], prevs[5], prevs[6], prevs[7] = k0, k1, k2, k3, k4, k5, k6, k7


@register_jitable
def kama_ratio_step(x, n, i, sum_roc):
    """kama_core's ratio at row i from its sum before it: (the sum after it, the row's smoothing
    constant, x[i] as float64)."""
    v = np.float64(x[i])
    tr = np.float64(x[i - n])
    sum_roc = kama_roll(sum_roc, np.float64(x[i - n - 1]), tr, v, np.float64(x[i - 1]))
    return sum_roc, kama_smoothing(sum_roc, v - tr), v


@register_jitable
def kama_walk(x, n, first, stop, prev, sum_roc, out):
    """Rows first..stop-1 of kama_core's loop from its states before them (prev, sum_roc);
    returns both after row stop-1."""
    for i in range(first, stop):
        sum_roc, sc, v = kama_ratio_step(x, n, i, sum_roc)
        prev = kama_step(v, prev, sc)
        out[i] = prev
    return prev, sum_roc


@register_jitable
def walk_chunks_again(x, n, firsts, ends, marks, prevs, chunk_sums, out):
    """KAMA's chunks j >= 1 (rows firsts[j] on), each run from a cold start, walked again with
    kama_core's loop from the true end of chunk j-1 (and its ratio's true sum before the chunk,
    chunk_sums[j]), rewriting their outputs, until the state equals the lane's at a mark
    (marks[blk, j]: its state after `ends[blk]` rows): from there the lane is the truth. A chunk
    that never meets is walked to its end. prevs: each lane's end state (prevs[0] true).
    Returns the true end state of the last chunk and the rows walked."""
    walked = 0
    true_end = prevs[0]
    for j in range(1, firsts.shape[0]):
        first = firsts[j]
        state = true_end
        sum_roc = chunk_sums[j]
        true_end = prevs[j]  # the lane's end, true once it has met
        r0 = 0
        met = False
        for blk in range(ends.shape[0]):
            state, sum_roc = kama_walk(x, n, first + r0, first + ends[blk], state, sum_roc, out)
            walked += ends[blk] - r0
            r0 = ends[blk]
            met = chunks._same_bits(state, marks[blk, j])
            if met:
                break
        if not met:
            true_end = state  # never met: walked to its end
    return true_end, walked


@register_jitable
def _kama_sums(x, n, start, t_len, sc, chunk_firsts, chunk_sums):
    """The smoothing constants of rows start..t_len-1 into sc[start:], the ratio's true sums
    through `shifted_sums` in blocks and serially after them; chunk_sums[j], the sum before
    row chunk_firsts[j]."""
    rows = lane_rows(n)
    block = SHIFT_LANES * rows
    starts = np.empty(SHIFT_LANES)
    sums = np.empty(block)
    neg = np.empty(block + n)
    s = kama_change_sum(x, n, start)  # kama_core's seed: the sum over rows 1..n, in its order
    first = start
    j = 0
    while first + block <= t_len:
        _negated_changes(x, first - n, neg)  # row i subtracts neg[i - first], adds neg[i - first + n]
        starts[0] = s
        for lane in range(1, SHIFT_LANES):
            a = lane * rows
            g = 0.0
            for k in range(a, a + n):
                g -= neg[k]
            starts[lane] = g
        ps, qs = neg[:block], neg[n:]
        s_before = s
        s, _ = shifted_sums(ps, qs, rows, starts, sums, x, first + block, sc, first)
        while j < chunk_firsts.shape[0] and chunk_firsts[j] < first + block:
            r = chunk_firsts[j] - first
            chunk_sums[j] = s_before if r == 0 else sums[r - 1] - qs[r - 1]
            j += 1
        _kama_constants(x, n, first, sums, qs, sc[first : first + block])
        first += block
    for i in range(first, t_len):
        while j < chunk_firsts.shape[0] and chunk_firsts[j] == i:
            chunk_sums[j] = s
            j += 1
        s, sc[i], _ = kama_ratio_step(x, n, i, s)


def kama_shifted_core(x, n, out):
    """kama_core bit for bit (any float dtype or stride): three passes. The smoothing constants
    of the steady rows from the ratio's true sums (`_kama_sums`); KAMA itself in KAMA_LANES
    chunks side by side, chunk j >= 1 starting cold from its row's value; then chunk j walked
    again with kama_core's loop from the true end of chunk j-1 until its state equals the
    lane's at a mark (`kernels.indicators.exact.kama_lanes`). The constants go in `out` where it is
    float64, else in a scratch array. A series with fewer than 8 * KAMA_ROWS rows a chunk runs
    the core (`kama_shifted_lanes` takes that minimum as a parameter). Returns the rows walked
    again, or -1 where the core ran."""
    return kama_shifted_lanes(x, n, out, 8 * KAMA_ROWS)


@register_jitable
def kama_shifted_lanes(x, n, out, min_chunk):
    """`kama_shifted_core` with the shortest chunk a parameter (tests)."""
    t_len = x.shape[0]
    start = n + 1  # rows 0..n: the core's warm-up and seed
    size = (t_len - start) // KAMA_LANES
    if n < 2 or size < max(min_chunk, 1):
        _kama_core(x, n, out)
        return -1
    seed = np.empty(start)
    _kama_core(x[:start], n, seed)
    for i in range(start):
        out[i] = seed[i]
    work = _float64_work(out)
    firsts = np.empty(KAMA_LANES, np.int64)
    for j in range(KAMA_LANES):
        firsts[j] = start + j * size
    chunk_sums = np.empty(KAMA_LANES)
    _kama_sums(x, n, start, t_len, work, firsts, chunk_sums)
    prevs = np.empty(KAMA_LANES)
    for j in range(KAMA_LANES):
        prevs[j] = np.float64(x[firsts[j] - 1])
    prevs[0] = seed[n]  # the first chunk starts true
    ends = block_ends(size)
    marks = np.empty((ends.shape[0], KAMA_LANES))
    r0 = 0
    for blk in range(ends.shape[0]):
        _kama_chains64(x, work, start, size, r0, ends[blk] - r0, prevs)
        marks[blk] = prevs
        r0 = ends[blk]
    stop = start + KAMA_LANES * size
    true_end, walked = walk_chunks_again(x, n, firsts, ends, marks, prevs, chunk_sums, work)
    # the rows after the last chunk: their constants are in work; KAMA from the true end
    k = true_end
    for i in range(stop, t_len):
        k = kama_step(np.float64(x[i]), k, work[i])
        work[i] = k
    _copy_back(work, out, start)
    return walked
