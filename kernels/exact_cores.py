"""SMA, WMA and KAMA over float32 inputs in integer arithmetic, where the cores' float64 sums are exact.

A running sum is a loop-carried chain of float64 adds (SMA: add+sub a row, 0.96 ns on the EPYC
of benchmarks/RESULTS.md), and it does not contract, so it cannot be chunked like the recursions
of `kernels.chunked_cores`. But a float32 value is an integer times its ulp, so where every sum
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
whole series to the portable core, which rewrites every output; so does a float64 or strided
input. Each variant returns True when the integer path ran (tests/kernels/test_exact_cores.py).

KAMA's efficiency ratio is such a running sum, beside a recursion that contracts:
`kama_exact_core` computes the sums in integers (each lane block in its own unit) and runs the
recursion in time chunks side by side, as `kernels.chunked_cores` does for the others.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from kernels import chunked_cores, cores
from kernels.fused_numba import fma

NAN = float("nan")
BLOCK = 2048  # output rows per block: the int64 scratch stays in L1/L2
ALL_ZERO = 0  # _unit_exponent of a block of zeros: any unit divides it
NOT_EXACT = -1

_sma_core = register_jitable(cores.sma_core)
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
def _scratch(x, n, rows):
    """x's bits, and the int64 scratch of a block: its reach (rows + n), its sums, its steps."""
    bits = np.ascontiguousarray(x).view(np.uint32)
    return bits, np.empty(rows + n, np.int64), np.empty(rows, np.int64), np.empty(rows, np.int64)


def sma_exact_core(x, n, out):
    """sma_core bit for bit; in int64 where every window sum is exact (module docstring).
    The core's order, S + x[i] emitted then S - x[i-n+1], is the same exact integers."""
    t_len = x.shape[0]
    if t_len < n or not _float32_bits(x):
        _sma_core(x, n, out)
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
        if lo == NOT_EXACT:  # the core rewrites every output
            _sma_core(x, n, out)
            return False
        if lo_prev == 0:  # the first block: the sum of the n-1 rows before its first output
            for r in range(n - 1):
                s += ints[r]
        else:
            s = _rescaled(s, lo_prev, lo)
        _steps_apart(ints, n - 1, m, steps)
        cur = ints[n - 1 : n - 1 + m]
        for r in range(m):
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
            w = w + (cur[r] * n - s)
            sums[r] = w
            s = s + steps[r]
        _emit(sums, lo, divider, out[b : b + m])
        lo_prev = lo
    return True


_kama_core = register_jitable(cores.kama_core)
KAMA_LANES = 8
KAMA_ROWS = 2048  # rows per lane between the vectorised passes
KAMA_PITCH = KAMA_ROWS + 8  # a lane's smoothing constants apart: 64 bytes off a multiple of 4 KiB, else the lanes share L1 sets
# Rows a chunk of kama_exact_core warms up on. KAMA contracts by 1 - sc >= 1 - (2/31)^2 a row,
# and 9,000 such rows shrink the start's distance to the true state by (1 - (2/31)^2)^9000 <
# 2^-54: a start at the row's own value ends within a fraction of an ulp of the true state,
# and from there the two round alike within a few rows (checked; redone serially where not).
KAMA_WARM = 9000
KAMA_SLOW = 2.0 / (30.0 + 1.0)  # kama_core's smoothing constants, the same float64 values
KAMA_SPAN = 2.0 / (2.0 + 1.0) - KAMA_SLOW


@register_jitable
def _kama_block(x, bits, n, first, lanes, stride, r0, m, los, sums, prevs, out, write, ints, steps, work):
    """Rows first + j*stride + r0 + r (r < m) of lanes j < `lanes`; False where a lane's block
    could round (nothing is then kept: the portable core runs).

    Lane by lane: the block's unit (`_block_lo` over its rows and the n+1 before them; `los`:
    each lane's unit, to which its sum is rescaled), its rows as integer multiples of it, the
    efficiency ratio's sums as a chain of int64 adds (`sums`: each lane's sum at the row
    before), and the smoothing constants in a loop that vectorises (np.true_divide: no
    zero-division branch; the integers' quotient is the quotient of the exact float64 values,
    both scaled by the unit). Then KAMA's own chain, sub+fma, the lanes side by side (`prevs`);
    `write`: store the outputs."""
    for j in range(lanes):
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
            er = 1.0 if (total <= roc or (-cores.EPS < scaled < cores.EPS)) else ratio
            sc = fma(er, KAMA_SPAN, KAMA_SLOW)
            work[0, lane + r] = sc * sc
            work[1, lane + r] = np.float64(cur[r])
    scs = work[0]
    xs = work[1]
    kamas = work[2]
    for r in range(m):
        for j in range(lanes):
            q = j * KAMA_PITCH + r
            p = fma(xs[q] - prevs[j], scs[q], prevs[j])
            prevs[j] = p
            kamas[q] = p
    if write:
        for j in range(lanes):
            dst = out[first + j * stride + r0 : first + j * stride + r0 + m]
            src = kamas[j * KAMA_PITCH : j * KAMA_PITCH + m]
            for r in range(m):
                dst[r] = src[r]
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


@register_jitable
def _kama_rows(x, n, first, stop, prev, out):
    """Rows first..stop-1 from `prev`, the state at row first-1: kama_core's loop (its sum
    formed afresh: exact here)."""
    sum_roc = 0.0
    for k in range(first - n, first):
        sum_roc += abs(np.float64(x[k]) - np.float64(x[k - 1]))
    for i in range(first, stop):
        v = np.float64(x[i])
        roc = v - np.float64(x[i - n])
        sum_roc = sum_roc - abs(np.float64(x[i - n]) - np.float64(x[i - n - 1])) + abs(v - np.float64(x[i - 1]))
        if sum_roc <= roc or (-cores.EPS < sum_roc < cores.EPS):
            er = 1.0
        else:
            er = abs(roc / sum_roc)
        sc = fma(er, KAMA_SPAN, KAMA_SLOW)
        sc *= sc
        prev = fma(v - prev, sc, prev)
        out[i] = prev
    return prev


def kama_exact_core(x, n, out):
    """kama_core bit for bit, `kama_lanes(x, n, out, KAMA_WARM)`; True when the lanes ran."""
    return kama_lanes(x, n, out, KAMA_WARM) >= 0


@register_jitable
def kama_lanes(x, n, out, warm):
    """kama_core bit for bit; where the efficiency ratio's float32 sums are exact, the steady
    rows in KAMA_LANES chunks side by side (as kernels.chunked_cores does for the recursions that
    contract).

    The ratio's running sum does not contract, but where `_unit_exponent(..., 2n + 2)` shows its
    sums exact (n differences of two values, and the row's own change), block by block as for
    SMA, they are int64 multiples of the block's unit, and each chunk starts from the exact sum. KAMA
    itself, kama = fma(x - kama, sc, kama), contracts by 1 - sc >= 1 - (2/31)^2 a row: chunk
    j >= 1 warms up `warm` rows on chunk j-1's last rows from that row's value, is checked bit
    for bit against the true end of chunk j-1, and is redone serially if it has not met it.
    Returns the number of chunks redone, or -1 where the portable core ran.
    1M float32 rows: 1.50-1.73 ms against the core's 2.02-2.06 (EPYC, thread CPU time; 1.38-1.46
    with one unit for the whole series, before each lane block had its own)."""
    t_len = x.shape[0]
    start = n + 1  # rows 0..n: the core's warm-up and seed
    lanes = KAMA_LANES
    size = (t_len - start) // lanes
    if n < 2 or size < 4 * warm or not _float32_bits(x):
        _kama_core(x, n, out)
        return -1
    bits = np.ascontiguousarray(x).view(np.uint32)
    stop = start + lanes * size
    # the rows after the last chunk run kama_core's own loop from a fresh sum: exact only where checked
    if _unit_exponent(bits[stop - n - 1 :], 2 * n + 2) == NOT_EXACT:
        _kama_core(x, n, out)
        return -1
    seed = np.empty(start)
    _kama_core(x[:start], n, seed)
    out[:start] = seed
    sums = np.empty(lanes, np.int64)
    los = np.empty(lanes, np.int64)
    prevs = np.empty(lanes)
    ints = np.empty(KAMA_ROWS + n + 1, np.int64)
    steps = np.empty(KAMA_ROWS, np.int64)
    work = np.empty((3, lanes * KAMA_PITCH))  # per lane: smoothing constants, inputs, outputs
    for j in range(lanes):  # the sum and a start at the row before each lane's first row
        b = start + j * size - (warm if j > 0 else 0)
        los[j] = _block_lo(bits[b - n - 1 : b], 2 * n + 2, 0)
        if los[j] == NOT_EXACT:
            _kama_core(x, n, out)
            return -1
        sums[j] = _kama_sum(x, n, b - 1, los[j])
        prevs[j] = np.float64(x[b - 1])
    prevs[0] = seed[n]
    # the warm-up: lanes j >= 1 on chunk j-1's last rows (lane 0 starts true)
    for r0 in range(0, warm, KAMA_ROWS):
        if not _kama_block(x, bits, n, start + size - warm, lanes - 1, size, r0, min(KAMA_ROWS, warm - r0),
                           los[1:], sums[1:], prevs[1:], out, False, ints, steps, work):
            _kama_core(x, n, out)
            return -1
    met = prevs.copy()
    for r0 in range(0, size, KAMA_ROWS):
        if not _kama_block(x, bits, n, start, lanes, size, r0, min(KAMA_ROWS, size - r0), los, sums, prevs, out,
                           True, ints, steps, work):
            _kama_core(x, n, out)  # rewrites every output
            return -1
    ends = prevs.copy()
    ends[lanes - 1] = _kama_rows(x, n, stop, t_len, prevs[lanes - 1], out)  # the rows after the last chunk
    redone = 0
    for j in range(1, lanes):  # chunk j against the true end of chunk j-1, redone if apart
        if chunked_cores._same_bits(met[j], ends[j - 1]):
            continue
        redone += 1
        last = start + (j + 1) * size if j < lanes - 1 else t_len
        ends[j] = _kama_rows(x, n, start + j * size, last, ends[j - 1], out)
    return redone
