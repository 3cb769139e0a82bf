"""SMA and WMA over float32 inputs in integer arithmetic, where the cores' float64 sums are exact.

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
"""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

from kernels import cores

NAN = float("nan")
BLOCK = 2048  # output rows per block: the int64 scratch stays in L1/L2
ALL_ZERO = 0  # _unit_exponent of a block of zeros: any unit divides it
NOT_EXACT = -1

_sma_core = register_jitable(cores.sma_core)
_wma_core = register_jitable(cores.wma_core)


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
def _block_units(bits, first, back, rows, weight):
    """The unit exponent of each block of `rows` output rows from row `first` (its reach: from
    `back` rows before it), in one pass before the blocks run (a separate loop vectorises; inside
    the block loop it did not); a block of zeros takes the previous block's (127 for the first:
    any unit would do). (False, ...) when a block's sums could round."""
    t_len = bits.shape[0]
    units = np.empty((t_len - first + rows - 1) // rows, np.int64)
    lo_prev = 127
    for k in range(units.shape[0]):
        b = first + k * rows
        lo = _unit_exponent(bits[b - back : min(b + rows, t_len)], weight)
        if lo == NOT_EXACT:
            return False, units
        lo_prev = lo_prev if lo == ALL_ZERO else lo
        units[k] = lo_prev
    return True, units


def sma_exact_core(x, n, out):
    """sma_core bit for bit; in int64 where every window sum is exact (module docstring).
    The core's order, S + x[i] emitted then S - x[i-n+1], is the same exact integers."""
    t_len = x.shape[0]
    if t_len < n or x.itemsize != 4 or not x.flags.c_contiguous:
        _sma_core(x, n, out)
        return False
    rows = block_rows(n)
    exact, units = _block_units(np.ascontiguousarray(x).view(np.uint32), n - 1, n - 1, rows, n)
    if not exact:
        _sma_core(x, n, out)
        return False
    ints = np.empty(rows + n, np.int64)  # the block's reach as multiples of its unit: rows b-n+1 .. b+m-1
    sums = np.empty(rows, np.int64)
    steps = np.empty(rows, np.int64)
    for i in range(n - 1):
        out[i] = NAN
    s = 0
    lo_prev = units[0]
    for k in range(units.shape[0]):
        b = n - 1 + k * rows
        m = min(rows, t_len - b)
        lo = units[k]
        _to_units(x[b - n + 1 : b + m], lo, ints)
        if k == 0:  # the sum of the n-1 rows before the first output
            for r in range(n - 1):
                s += ints[r]
        s = _rescaled(s, lo_prev, lo)
        cur = ints[n - 1 : n - 1 + m]
        old = ints[:m]
        for r in range(m):  # S's steps apart, as in wma_exact_core
            steps[r] = cur[r] - old[r]
        for r in range(m):
            sums[r] = s + cur[r]
            s = s + steps[r]
        unit = 2.0 ** (lo - 150)
        dst = out[b : b + m]
        for r in range(m):
            dst[r] = (sums[r] * unit) / n
        lo_prev = lo
    return True


def wma_exact_core(x, n, out):
    """wma_core bit for bit; in int64 where every sum it forms is exact (module docstring).
    With S = sum x[i-n+1..i] and W = sum_k k*x[i-n+k] (weights 1..n, newest n), the core's
    steps are W += n*x[i] - S (S of the row before) and S += x[i] - x[i-n]; output W / (n(n+1)/2)."""
    t_len = x.shape[0]
    if n < 2 or t_len <= n or x.itemsize != 4 or not x.flags.c_contiguous:
        _wma_core(x, n, out)
        return False
    rows = block_rows(n)
    exact, units = _block_units(np.ascontiguousarray(x).view(np.uint32), n, n, rows, n * (n + 2))
    if not exact:
        _wma_core(x, n, out)
        return False
    divider = (n * (n + 1)) // 2
    ints = np.empty(rows + n, np.int64)  # the block's reach as multiples of its unit: rows b-n .. b+m-1
    sums = np.empty(rows, np.int64)
    steps = np.empty(rows, np.int64)
    for i in range(n - 1):
        out[i] = NAN
    s = 0
    w = 0
    lo_prev = units[0]
    for k in range(units.shape[0]):
        b = n + k * rows
        m = min(rows, t_len - b)
        lo = units[k]
        _to_units(x[b - n : b + m], lo, ints)
        if k == 0:  # the seed: row n-1's sums, from rows 0..n-1
            for r in range(n):
                s += ints[r]
                w += (r + 1) * ints[r]
            out[n - 1] = (w * 2.0 ** (lo - 150)) / divider
        s = _rescaled(s, lo_prev, lo)
        w = _rescaled(w, lo_prev, lo)
        cur = ints[n : n + m]
        old = ints[:m]
        for r in range(m):  # S's steps apart (a loop that vectorises): S's chain is then one add a row, where
            # LLVM turns S + (x[i] - x[i-n]) into (S + x[i]) - x[i-n], two
            steps[r] = cur[r] - old[r]
        for r in range(m):
            w = w + (cur[r] * n - s)
            sums[r] = w
            s = s + steps[r]
        unit = 2.0 ** (lo - 150)
        dst = out[b : b + m]
        for r in range(m):
            dst[r] = (sums[r] * unit) / divider
        lo_prev = lo
    return True
