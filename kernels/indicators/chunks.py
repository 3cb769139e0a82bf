"""Time-chunked variants of recursive cores (ATR, EMA, RSI, TEMA, DMI): one series in LANES chunks side by side.

A recursive indicator computes each row from the state the row before left, so a single
series is bound by the latency of that loop-carried chain (mul+add 1.43 ns a row on the
EPYC of benchmarks/RESULTS.md; `benchmarks/probe_chains.py`), not by the arithmetic. These
variants cut the steady phase into LANES equal chunks and advance all of them in one loop:
independent chains that the CPU overlaps. The first chunk starts from the true state (the
seeds as in `kernels.indicators.cores`); chunk j >= 1 starts `warm` rows early, from an arbitrary state,
on the last rows of chunk j-1.

Why that gives the exact bits: the recurrences here contract (Wilder's `a*(1-1/n) + v/n`,
the EMA's `v*k + e*(1-k)`), so two runs from different states draw together by a factor
below 1 a row until both round to the same float64, and from then on they are the same
bits (the same operations on the same inputs). After the pass, chunk j's state at its first
row is compared bit for bit with the state chunk j-1 (true by then) ended with; a chunk whose
warm-up has not met it (a NaN or inf in the warm-up rows, a period too long for `warm`) is
recomputed serially from that state. The outputs never depend on the meeting, only the
time does (tests/kernels/test_chunked_cores.py: every variant against its core, bit for bit,
warm-ups that meet and ones that do not). `dmi_chunked_core` has no warm-up: its chunks start
from zeros and are walked again serially afterwards until they meet (as
`kernels.indicators.exact.kama_lanes`). The lanes' states live in named variables (registers), not
in an array, where a loop was bound by the store and load of every step; RSI, DMI and float32
ATR run in tiles, each lane's per-row terms first in loops that vectorise, then the chains.

Per row, every operation is the one of the core in `kernels.indicators.cores`, in the same order
(the steps of `kernels.indicators.steps`: the same functions the cores call). What repeats from
one variant to the next is the schedule, not the arithmetic: the rows after the last chunk and the
check-and-redo of each chunk, written per indicator because the state differs (one float for ATR
and EMA, two for RSI, three for TEMA, four for DMI, in registers). A
series shorter than LANES chunks of 4 x `warm` rows runs the portable core itself (whose
serial loop is the faster one for a single chain), and the seeds come from it where its
output is the whole state (ATR, EMA). CPU only
(`kernels.indicators.cores.CPU_VARIANTS`; the cuda backend compiles the portable cores, one thread per
series).

Running sums (SMA, WMA, KAMA's efficiency ratio) do not contract: a chunk started from another
state keeps its offset. Where their float32 sums are exact, `kernels.indicators.exact` computes them
in integers instead; elsewhere `kernels.indicators.shifted` runs SMA's and KAMA's in lanes whose
offset it finds and applies exactly.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from kernels.indicators import cores
from kernels.indicators._intrinsics import prefetch
from kernels.indicators.steps import (dm_tr, dmi_row, dmi_sums, ema3_seed, ema_step3, ema_step_tied, gain_loss, rsi_seed,
                                      rsi_value, tema_value, true_range, wilder_mean)

NAN = float("nan")
LANES = 8  # chains of one input series: 8 hide the latency; 16 lose more to their 32 memory streams (measured)
ATR_LANES = 6  # ATR reads three series: 6 chains (24 streams) beat 8 (32 streams), 1.11 against 1.34 ns a row
RSI_TILE = 1024  # rows a lane per tile of _rsi_tiles: eight lanes' gains and losses, 132 KiB (in L2); against
# 512, ours/TA-Lib float64 0.51 -> 0.48 at 1M rows, 0.58 -> 0.53 at 10M (bench_indicators, 2026-11-27)
RSI_TILE_PITCH = RSI_TILE + 8
ATR_TILE = 1024  # rows a lane per tile of _atr_tiles: six lanes' true ranges, 48 KiB of float64
ATR_TILE_PITCH = ATR_TILE + 8  # lanes 64 bytes off a multiple of 4 KiB apart, else they share L1 sets


@register_jitable
def _same_bits(a, b):
    """a and b are the same float64 (== with the sign of zero; NaN is never the same)."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@register_jitable
def atr_warm(n):
    """Rows a chunk of atr_chunked_core warms up on: 48n + 64 (see there)."""
    return 48 * n + 64


@register_jitable
def rsi_warm(n):
    """Rows a chunk of rsi_chunked_core warms up on: 48n + 64, as ATR (the same Wilder step)."""
    return 48 * n + 64


@register_jitable
def ema_warm(n):
    """Rows a chunk of ema_chunked_core warms up on: 32(n+1) + 64 (see there)."""
    return 32 * (n + 1) + 64


@register_jitable
def tema_warm(n):
    """Rows a chunk of tema_chunked_core warms up on: 64(n+1) + 64 (see there)."""
    return 64 * (n + 1) + 64


# the portable cores, callable from these variants (compiled inline)
_atr_core = register_jitable(cores.atr_core)
_ema_core = register_jitable(cores.ema_core)
_rsi_core = register_jitable(cores.rsi_core)
_tema_core = register_jitable(cores.tema_core)


def _is_float32(a):
    """Whether a is a float32 array (decided when compiled)."""
    return a.dtype == np.float32


@overload(_is_float32)
def _is_float32_compiled(a):
    is_float32 = isinstance(a, types.Array) and a.dtype == types.float32
    return lambda a: is_float32


@register_jitable
def _chunked(t_len, first_steady, warm, lanes):
    """Whether a series is long enough for `lanes` chunks of at least 4 x `warm` steady rows."""
    return (t_len - first_steady) // lanes >= 4 * warm


@register_jitable
def _fetch_ahead(h, l, c, ahead, size, lanes, r, stop):
    """Step r of a tile's loop prefetches, in h, l and c, row ahead + (r % lanes)*size + 8*(r //
    lanes) (capped at stop - 1): lane r % lanes of the next tile, eight rows (one line of
    float64, half a line of float32) a step of that lane, so a tile of `lanes` x 8k steps
    covers 8k rows of each lane."""
    i = min(ahead + (r % lanes) * size + (r // lanes) * 8, stop - 1)
    prefetch(h, i)
    prefetch(l, i)
    prefetch(c, i)


@register_jitable
def _tr_ordered(hi, lo, cp):
    """_tr where hi - lo >= 0 (no NaN and no inf - inf among hi, lo): max(hi, cp) - min(lo, cp).

    _tr is the largest of three rounded differences, and rounding is monotonic, so it is the
    rounded largest difference: this one. A NaN close gives hi - lo in both (numba's max and
    min, like Python's, keep their first argument against a NaN). max and min pick among the
    inputs in their own precision, so float32 inputs take two conversions to float64 a row
    instead of three, which bound the float32 loop (benchmarks/RESULTS.md, note 8)."""
    return np.float64(max(hi, cp)) - np.float64(min(lo, cp))


@register_jitable
def _true_range(h, l, c, i):
    """atr_core's true range of row i (i >= 1)."""
    return true_range(np.float64(h[i]), np.float64(l[i]), np.float64(c[i - 1]))


@register_jitable
def _atr_rows(hs, ls, cs, os, size, st, omn, inv_n):
    """The chunked pass row by row: lane j is rows [j*size, (j+1)*size) of the flat views, its
    state st[j] on entry and exit. Returns whether every row's high - low >= 0 (then
    `_tr_ordered` is the core's true range)."""
    ordered = True
    for r in range(size):
        for j in range(ATR_LANES):
            q = j * size + r
            hi = hs[q]
            lo = ls[q]
            ordered &= hi - lo >= 0.0
            a = wilder_mean(st[j], _tr_ordered(hi, lo, cs[q]), inv_n, omn)
            st[j] = a
            os[q] = a
    return ordered


@register_jitable
def _tr_tile(h, l, c, dst):
    """dst[r] = _tr_ordered(h[r], l[r], c[r]) for a lane's rows, in a loop that vectorises (the
    float32 max, min and conversions 8 or 16 at a time); whether every high - low >= 0."""
    ordered = True
    for r in range(h.shape[0]):
        hi = h[r]
        lo = l[r]
        ordered &= hi - lo >= 0.0
        dst[r] = _tr_ordered(hi, lo, c[r])
    return ordered


@register_jitable
def _atr_tiles(hs, ls, cs, os, size, st, omn, inv_n):
    """_atr_rows in tiles of ATR_TILE rows a lane: each lane's true ranges first (`_tr_tile`),
    then the six chains side by side over them, their states in registers. Row by row, each
    lane's step reads three float32 inputs, picks, widens and subtracts: about 22 instructions
    that bound the loop (1M float32 rows: 1.05 ms); here 0.53 ms (EPYC, thread CPU time). The
    same tiles over float64 inputs take longer than the rows (1.0 against 0.8 ms)."""
    ordered = True
    tr = np.empty(ATR_LANES * ATR_TILE_PITCH)
    p = ATR_TILE_PITCH
    for r0 in range(0, size, ATR_TILE):
        m = min(ATR_TILE, size - r0)
        for j in range(ATR_LANES):
            first = j * size + r0
            ordered &= _tr_tile(hs[first : first + m], ls[first : first + m], cs[first : first + m],
                                tr[j * p : j * p + m])
        a0, a1, a2, a3, a4, a5 = st[0], st[1], st[2], st[3], st[4], st[5]
        for r in range(m):
            q = r0 + r
            a0 = _wilder(a0, tr[r], omn, inv_n, os, q)
            a1 = _wilder(a1, tr[p + r], omn, inv_n, os, size + q)
            a2 = _wilder(a2, tr[2 * p + r], omn, inv_n, os, 2 * size + q)
            a3 = _wilder(a3, tr[3 * p + r], omn, inv_n, os, 3 * size + q)
            a4 = _wilder(a4, tr[4 * p + r], omn, inv_n, os, 4 * size + q)
            a5 = _wilder(a5, tr[5 * p + r], omn, inv_n, os, 5 * size + q)
        st[0], st[1], st[2], st[3], st[4], st[5] = a0, a1, a2, a3, a4, a5
    return ordered


@register_jitable
def _wilder(a, v, omn, inv_n, dst, q):
    """Wilder's step a*(1 - 1/n) + v/n, as the cores compute it; stored at dst[q]."""
    a = wilder_mean(a, v, inv_n, omn)
    dst[q] = a
    return a


def atr_chunked_core(h, l, c, n, out):
    """atr_core bit for bit; the steady phase (rows n+1..) in ATR_LANES chunks at once.

    Wilder's step `a*(1 - 1/n) + TR/n` contracts by 1 - 1/n a row: `warm` = 48n + 64 rows take
    a start from nothing (0.0) to below 2^-69 of the true state. 10M float64 rows: 1.11 ns a
    row against 1.55 for the serial loop (EPYC, thread CPU time, minimum of 9).
    The chunked rows take the true range as `_tr_ordered` (two conversions a row for float32
    inputs instead of three: 0.90-0.92x the float32 call, float64 unchanged); a row where it
    could differ from the core's (high - low not >= 0) hands the series to the core. Float32
    inputs run in tiles (`_atr_tiles`), float64 row by row (`_atr_rows`)."""
    t_len = h.shape[0]
    start = n + 1
    warm = atr_warm(n)
    if not _chunked(t_len, start, warm, ATR_LANES):
        _atr_core(h, l, c, n, out)
        return
    seed = np.empty(start)  # rows 0..n as the core computes them, in float64: seed[n] is the state
    _atr_core(h[:start], l[:start], c[:start], n, seed)
    out[:start] = seed
    inv_n = 1.0 / n
    omn = 1.0 - inv_n
    size = (t_len - start) // ATR_LANES
    stop = start + ATR_LANES * size
    # flat views of the chunked rows: chunk j is [j*size, (j+1)*size) (any input layout)
    hs = h[start:stop]
    ls = l[start:stop]
    cs = c[start - 1 : stop - 1]
    os = out[start:stop]
    st = np.zeros(ATR_LANES)
    for r in range(size - warm, size):  # chunk j >= 1 warms up on chunk j-1's last rows
        for j in range(1, ATR_LANES):
            q = (j - 1) * size + r
            tr = true_range(np.float64(hs[q]), np.float64(ls[q]), np.float64(cs[q]))
            st[j] = wilder_mean(st[j], tr, inv_n, omn)
    met = st.copy()
    st[0] = seed[n]
    if _is_float32(h):
        ordered = _atr_tiles(hs, ls, cs, os, size, st, omn, inv_n)
    else:
        ordered = _atr_rows(hs, ls, cs, os, size, st, omn, inv_n)
    if not ordered:  # a NaN, an infinite range or a low above its high: the core rewrites every output
        _atr_core(h, l, c, n, out)
        return
    acc = st[ATR_LANES - 1]
    for i in range(stop, t_len):  # the rows after the last chunk, on its chain
        acc = wilder_mean(acc, _true_range(h, l, c, i), inv_n, omn)
        out[i] = acc
    st[ATR_LANES - 1] = acc
    for j in range(1, ATR_LANES):  # chunk j checked against the true end of chunk j-1, redone if apart
        if _same_bits(met[j], st[j - 1]):
            continue
        acc = st[j - 1]
        for i in range(start + j * size, start + (j + 1) * size if j < ATR_LANES - 1 else t_len):
            acc = wilder_mean(acc, _true_range(h, l, c, i), inv_n, omn)
            out[i] = acc
        st[j] = acc


@register_jitable
def _ema_put(xs, os, q, e, k, omk):
    """_ema_step on xs[q], stored at os[q]."""
    e = ema_step_tied(np.float64(xs[q]), e, k, omk)
    os[q] = e
    return e


def ema_chunked_core(x, n, out):
    """ema_core bit for bit; the steady phase (rows n..) in LANES chunks at once.

    The EMA contracts by 1 - k = (n-1)/(n+1) a row: `warm` = 32(n+1) + 64 rows take a start
    from the first warm-up value to below e^-64 of the gap. 10M float64 rows: 0.63 ns a row
    against 1.52 for the serial loop (EPYC, thread CPU time); with the states in registers,
    1M rows 0.58 -> 0.35 ms (float64), 0.58 -> 0.46 (float32)."""
    t_len = x.shape[0]
    start = n
    warm = ema_warm(n)
    if not _chunked(t_len, start, warm, LANES):
        _ema_core(x, n, out)
        return
    seed = np.empty(start)  # rows 0..n-1 as the core computes them, in float64: seed[n-1] is the state
    _ema_core(x[:start], n, seed)
    out[:start] = seed
    k = 2.0 / (n + 1)
    omk = 1.0 - k
    size = (t_len - start) // LANES
    stop = start + LANES * size
    xs = x[start:stop]
    os = out[start:stop]
    st = np.zeros(LANES)
    for j in range(1, LANES):  # chunk j >= 1 warms up on chunk j-1's last rows, from its first
        st[j] = np.float64(xs[j * size - warm])
    for r in range(size - warm, size):
        for j in range(1, LANES):
            st[j] = ema_step_tied(np.float64(xs[(j - 1) * size + r]), st[j], k, omk)
    met = st.copy()
    st[0] = seed[n - 1]
    e0, e1, e2, e3, e4, e5, e6, e7 = st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7]
    for r in range(size):  # the eight chains' states in registers (in st[j], each step waits on a store and a load)
        e0 = _ema_put(xs, os, r, e0, k, omk)
        e1 = _ema_put(xs, os, size + r, e1, k, omk)
        e2 = _ema_put(xs, os, 2 * size + r, e2, k, omk)
        e3 = _ema_put(xs, os, 3 * size + r, e3, k, omk)
        e4 = _ema_put(xs, os, 4 * size + r, e4, k, omk)
        e5 = _ema_put(xs, os, 5 * size + r, e5, k, omk)
        e6 = _ema_put(xs, os, 6 * size + r, e6, k, omk)
        e7 = _ema_put(xs, os, 7 * size + r, e7, k, omk)
    st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7] = e0, e1, e2, e3, e4, e5, e6, e7
    e = st[LANES - 1]
    for i in range(stop, t_len):  # the rows after the last chunk, on its chain
        e = ema_step_tied(np.float64(x[i]), e, k, omk)
        out[i] = e
    st[LANES - 1] = e
    for j in range(1, LANES):  # chunk j checked against the true end of chunk j-1, redone if apart
        if _same_bits(met[j], st[j - 1]):
            continue
        e = st[j - 1]
        for i in range(start + j * size, start + (j + 1) * size if j < LANES - 1 else t_len):
            e = ema_step_tied(np.float64(x[i]), e, k, omk)
            out[i] = e
        st[j] = e


def tema_chunked_core(x, n, out):
    """tema_core bit for bit; the steady phase (rows 3(n-1)+1..) in LANES chunks at once.

    Each EMA contracts by 1 - k = (n-1)/(n+1) a row; the third follows the second, so
    `warm` = 64(n+1) + 64 rows (more than twice what one EMA needs). 10M float64 rows: 1.59-1.62
    ns a row against 1.99-2.10 for the serial loop (EPYC; three chains a row leave less latency
    to hide than ATR's one). Its output is not its state (three EMAs), so it repeats the
    core's seeds (`steps.ema3_seed`: the two seed sums over the first 3(n-1) rows)."""
    t_len = x.shape[0]
    look = 3 * (n - 1)
    start = look + 1
    warm = tema_warm(n)
    if not _chunked(t_len, start, warm, LANES):
        _tema_core(x, n, out)
        return
    for i in range(look):
        out[i] = NAN
    k = 2.0 / (n + 1)
    omk = 1.0 - k
    e1, e2, e3 = ema3_seed(x, n, k, omk)
    out[look] = tema_value(e1, e2, e3)
    size = (t_len - start) // LANES
    stop = start + LANES * size
    xs = x[start:stop]
    os = out[start:stop]
    s1 = np.zeros(LANES)
    for j in range(1, LANES):  # chunk j >= 1 warms up on chunk j-1's last rows, from its first
        s1[j] = np.float64(xs[j * size - warm])
    s2 = s1.copy()
    s3 = s1.copy()
    for r in range(size - warm, size):
        for j in range(1, LANES):
            a, b, d = ema_step3(np.float64(xs[(j - 1) * size + r]), s1[j], s2[j], s3[j], k, omk)
            s1[j] = a
            s2[j] = b
            s3[j] = d
    m1 = s1.copy()
    m2 = s2.copy()
    m3 = s3.copy()
    s1[0] = e1
    s2[0] = e2
    s3[0] = e3
    for r in range(size):
        for j in range(LANES):
            q = j * size + r
            a, b, d = ema_step3(np.float64(xs[q]), s1[j], s2[j], s3[j], k, omk)
            s1[j] = a
            s2[j] = b
            s3[j] = d
            os[q] = tema_value(a, b, d)
    e1 = s1[LANES - 1]
    e2 = s2[LANES - 1]
    e3 = s3[LANES - 1]
    for i in range(stop, t_len):  # the rows after the last chunk, on its chain
        e1, e2, e3 = ema_step3(np.float64(x[i]), e1, e2, e3, k, omk)
        out[i] = tema_value(e1, e2, e3)
    s1[LANES - 1] = e1
    s2[LANES - 1] = e2
    s3[LANES - 1] = e3
    for j in range(1, LANES):  # chunk j checked against the true end of chunk j-1, redone if apart
        if _same_bits(m1[j], s1[j - 1]) and _same_bits(m2[j], s2[j - 1]) and _same_bits(m3[j], s3[j - 1]):
            continue
        e1 = s1[j - 1]
        e2 = s2[j - 1]
        e3 = s3[j - 1]
        for i in range(start + j * size, start + (j + 1) * size if j < LANES - 1 else t_len):
            e1, e2, e3 = ema_step3(np.float64(x[i]), e1, e2, e3, k, omk)
            out[i] = tema_value(e1, e2, e3)
        s1[j] = e1
        s2[j] = e2
        s3[j] = e3


@register_jitable
def _rsigain_loss(cur, before, inv_n, gains, losses):
    """gains[r] and losses[r] = rsi_core's gain and loss of the change cur[r] - before[r], over n
    (the addends of its Wilder steps: products off the chains), in a loop that vectorises."""
    for r in range(cur.shape[0]):
        up, down = gain_loss(np.float64(cur[r]) - np.float64(before[r]))
        gains[r] = up * inv_n
        losses[r] = down * inv_n


@register_jitable
def _rsi_put(g, lo, omn, gains, losses, t):
    """rsi_core's two Wilder steps on the addends at entry t, the averages stored over them.
    steps.wilder_mean split in two: its product v*(1/n) is taken for a tile ahead in a loop
    that vectorises (`_rsi_moves`), its multiply-add on the chain here: the same two
    roundings in the same order."""
    g = g * omn + gains[t]
    lo = lo * omn + losses[t]
    gains[t] = g
    losses[t] = lo
    return g, lo


@register_jitable
def _rsi_outs(gains, losses, dst):
    """dst[r] = rsi_value(gains[r], losses[r]) in a loop that vectorises (np.true_divide has no
    zero-division branch, which `/` has under the Python error model these cores compile with;
    the select keeps rsi_value's 0 where both are 0): steps.rsi_value's roundings, restated."""
    for r in range(dst.shape[0]):
        s = gains[r] + losses[r]
        v = 100.0 * np.true_divide(gains[r], s)
        dst[r] = v if s != 0.0 else 0.0


@register_jitable
def _rsi_tiles(cur, before, os, size, g, lo, omn, inv_n):
    """The chunked pass of rsi_chunked_core in tiles of RSI_TILE rows a lane: the LANES pairs of
    chains side by side, their states in registers, storing the averages; then each lane's
    outputs, whose division a row (the loop's bound row by row, 1.28 ns a row) runs 4 or 8 at
    a time. Lane j is rows [j*size, (j+1)*size) of the flat views, its states g[j] and lo[j] on
    entry and exit. 1M rows: 1.28 -> 1.05 ms float64, 1.62 -> 1.19 float32 (EPYC). Each lane's
    gains and losses over n come first, in a loop that vectorises, so the chains take one
    multiply and one add a step (float32 1.19 -> 0.90); that loop reads a lane's tile in a burst,
    so the chains' loop prefetches the next tile (10M float64 rows 18.4 -> 12.3 ms, against 13.9
    for the tiles without either)."""
    p = RSI_TILE_PITCH
    gains = np.empty(LANES * p)
    losses = np.empty(LANES * p)
    for r0 in range(0, size, RSI_TILE):
        m = min(RSI_TILE, size - r0)
        for j in range(LANES):
            first = j * size + r0
            _rsigain_loss(cur[first : first + m], before[first : first + m], inv_n, gains[j * p : j * p + m],
                       losses[j * p : j * p + m])
        g0, g1, g2, g3, g4, g5, g6, g7 = g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]
        l0, l1, l2, l3, l4, l5, l6, l7 = lo[0], lo[1], lo[2], lo[3], lo[4], lo[5], lo[6], lo[7]
        ahead = min(r0 + RSI_TILE, size - 1)  # the next tile's first row of lane 0
        for r in range(m):
            prefetch(cur, min(ahead + (r & 7) * size + (r >> 3) * 8, cur.shape[0] - 1))  # lane r % 8's next tile
            g0, l0 = _rsi_put(g0, l0, omn, gains, losses, r)
            g1, l1 = _rsi_put(g1, l1, omn, gains, losses, p + r)
            g2, l2 = _rsi_put(g2, l2, omn, gains, losses, 2 * p + r)
            g3, l3 = _rsi_put(g3, l3, omn, gains, losses, 3 * p + r)
            g4, l4 = _rsi_put(g4, l4, omn, gains, losses, 4 * p + r)
            g5, l5 = _rsi_put(g5, l5, omn, gains, losses, 5 * p + r)
            g6, l6 = _rsi_put(g6, l6, omn, gains, losses, 6 * p + r)
            g7, l7 = _rsi_put(g7, l7, omn, gains, losses, 7 * p + r)
        g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7] = g0, g1, g2, g3, g4, g5, g6, g7
        lo[0], lo[1], lo[2], lo[3], lo[4], lo[5], lo[6], lo[7] = l0, l1, l2, l3, l4, l5, l6, l7
        for j in range(LANES):
            _rsi_outs(gains[j * p : j * p + m], losses[j * p : j * p + m], os[j * size + r0 : j * size + r0 + m])


def rsi_chunked_core(x, n, out):
    """rsi_core bit for bit; the steady phase (rows n+1..) in LANES chunks at once.

    Two Wilder averages (gains, losses), each contracting by 1 - 1/n a row as ATR's, so the
    same `warm`. Its output is not its state, so it repeats the core's seed (the means of the
    first n gains and losses)."""
    t_len = x.shape[0]
    start = n + 1
    warm = rsi_warm(n)
    if not _chunked(t_len, start, warm, LANES):
        _rsi_core(x, n, out)
        return
    for i in range(n):
        out[i] = NAN
    inv_n = 1.0 / n
    omn = 1.0 - inv_n
    gain, loss = rsi_seed(x, n)
    out[n] = rsi_value(gain, loss)
    size = (t_len - start) // LANES
    stop = start + LANES * size
    cur = x[start:stop]
    before = x[start - 1 : stop - 1]
    os = out[start:stop]
    g = np.zeros(LANES)
    lo = np.zeros(LANES)
    for r in range(size - warm, size):  # chunk j >= 1 warms up on chunk j-1's last rows, from 0
        for j in range(1, LANES):
            q = (j - 1) * size + r
            d = np.float64(cur[q]) - np.float64(before[q])
            up, down = gain_loss(d)
            g[j] = wilder_mean(g[j], up, inv_n, omn)
            lo[j] = wilder_mean(lo[j], down, inv_n, omn)
    mg = g.copy()
    ml = lo.copy()
    g[0] = gain
    lo[0] = loss
    _rsi_tiles(cur, before, os, size, g, lo, omn, inv_n)
    gain = g[LANES - 1]
    loss = lo[LANES - 1]
    for i in range(stop, t_len):  # the rows after the last chunk, on its chain
        up, down = gain_loss(np.float64(x[i]) - np.float64(x[i - 1]))
        gain = wilder_mean(gain, up, inv_n, omn)
        loss = wilder_mean(loss, down, inv_n, omn)
        out[i] = rsi_value(gain, loss)
    g[LANES - 1] = gain
    lo[LANES - 1] = loss
    for j in range(1, LANES):  # chunk j checked against the true end of chunk j-1, redone if apart
        if _same_bits(mg[j], g[j - 1]) and _same_bits(ml[j], lo[j - 1]):
            continue
        gain = g[j - 1]
        loss = lo[j - 1]
        for i in range(start + j * size, start + (j + 1) * size if j < LANES - 1 else t_len):
            up, down = gain_loss(np.float64(x[i]) - np.float64(x[i - 1]))
            gain = wilder_mean(gain, up, inv_n, omn)
            loss = wilder_mean(loss, down, inv_n, omn)
            out[i] = rsi_value(gain, loss)
        g[j] = gain
        lo[j] = loss


_dmi_core = register_jitable(cores.dmi_core)
DMI_TILE = 512  # rows a lane per tile of dmi_chunked_core: its five scratch rows of eight lanes, 166 KiB (in L2)
DMI_TILE_PITCH = DMI_TILE + 8


@register_jitable
def _dmi_walk(h, l, c, first, stop, which, omn, inv_n, st, plus_di, minus_di, adx):
    """dmi_core's steady rows (i >= 2n) first..stop-1 (`steps.dmi_row`, then ADX's step) from the
    states st = [+DM, -DM, TR, ADX] (smoothed) at row first-1, which it leaves at row stop-1."""
    pdm, mdm, tr_s, prev_adx = st[0], st[1], st[2], st[3]
    for i in range(first, stop):
        pdm, mdm, tr_s, have_dx, dx = dmi_row(h, l, c, i, which, omn, pdm, mdm, tr_s, plus_di, minus_di)
        if which == 1 or which == 2:
            continue
        if have_dx:
            prev_adx = wilder_mean(prev_adx, dx, inv_n, omn)
        adx[i] = prev_adx
    st[0], st[1], st[2], st[3] = pdm, mdm, tr_s, prev_adx


@register_jitable
def _dm_tile(h, l, c, first, m, dst, t):
    """+DM, -DM and the true range of rows first..first+m-1 into dst[0..2, t + r] (`steps.dm_tr`
    over views, in a loop that vectorises)."""
    hi = h[first : first + m]
    hp = h[first - 1 : first - 1 + m]
    lo = l[first : first + m]
    lp = l[first - 1 : first - 1 + m]
    cp = c[first - 1 : first - 1 + m]
    dp = dst[0, t : t + m]
    dn = dst[1, t : t + m]
    dt = dst[2, t : t + m]
    for r in range(m):
        dp[r], dn[r], dt[r] = dm_tr(hi[r], hp[r], lo[r], lp[r], cp[r])


@register_jitable
def _dm_put(s, t, a, b, d, omn):
    """The three smoothing steps s*(1 - 1/n) + v of lane entry t (s[0..2]: +DM, -DM, TR;
    `steps.dmi_sums`), the states stored over their inputs."""
    a, b, d = dmi_sums(a, b, d, s[0, t], s[1, t], s[2, t], omn)
    s[0, t] = a
    s[1, t] = b
    s[2, t] = d
    return a, b, d


@register_jitable
def _di_tile(s, t, m, which, omn, inv_n, plus_di, minus_di, first):
    """The DIs of m rows of one lane from its smoothed +DM, -DM and TR (s[0..2, t + r]), as dmi_core
    computes them, stored by `which`; then DX as the ADX step's factor and addend: s[3] = 1 - 1/n
    and s[4] = DX/n where the core takes the step, 1 and 0 where it keeps ADX (a*1 + 0 is a,
    ADX being never -0). Loops that vectorise: every division taken (np.true_divide: no
    zero-division branch), then selects where the core branches.
    Why not steps.di_value / dx_value / wilder_mean: the chunked cores compile with numba's
    Python error model, where `a / b` carries a zero-division branch that keeps this loop
    scalar; the same roundings in the same order, the division written as np.true_divide
    (tests/kernels/test_chunked_cores.py checks the bits)."""
    pdm = s[0, t : t + m]
    mdm = s[1, t : t + m]
    trs = s[2, t : t + m]
    pl = plus_di[first : first + m]
    mi = minus_di[first : first + m]
    mul = s[3, t : t + m]
    add = s[4, t : t + m]
    if which == 1 or which == 2:
        dms = pdm if which == 1 else mdm
        dst = pl if which == 1 else mi
        for r in range(m):
            q = 100.0 * np.true_divide(dms[r], trs[r])
            dst[r] = q if trs[r] != 0.0 else 0.0
        return
    for r in range(m):
        nz = trs[r] != 0.0
        qp = 100.0 * np.true_divide(pdm[r], trs[r])
        qm = 100.0 * np.true_divide(mdm[r], trs[r])
        p = qp if nz else 0.0
        mm = qm if nz else 0.0
        sm = p + mm
        dx = 100.0 * np.true_divide(math.fabs(mm - p), sm)
        have = nz & (sm != 0.0)
        mul[r] = omn if have else 1.0
        add[r] = dx * inv_n if have else 0.0
        if which == 0:
            pl[r] = p
            mi[r] = mm


@register_jitable
def _adx_put(s, t, a, adx, i):
    """ADX's step for lane entry t: a * s[3, t] + s[4, t], stored at adx[i]."""
    a = a * s[3, t] + s[4, t]
    adx[i] = a
    return a


def dmi_chunked_core(h, l, c, n, which, plus_di, minus_di, adx):
    """dmi_core bit for bit; the steady rows (2n..) in LANES chunks at once, in tiles of DMI_TILE
    rows a lane.

    Row by row the core takes three divisions (the DIs and DX), which bound it; here each tile
    runs: the lanes' +DM, -DM and true ranges (`_dm_tile`), the three smoothing chains of the
    eight lanes side by side (`_dm_put`, 24 states in registers), the DIs and DX of each lane
    with their divisions vectorised (`_di_tile`), then the ADX chains of the lanes side by side.
    The chains' loop prefetches the next tile's inputs (`_fetch_ahead`): the first pass over a
    tile otherwise waits on memory for its 24 streams (1M float64 rows, all three outputs: 3.9
    -> 2.8-3.1 ms; the core 3.8; float32 2.2 against the core's 4.5; EPYC, thread CPU time).
    Chunk j >= 1 starts from zeros; the smoothings contract by 1 - 1/n a row, and ADX (a
    Wilder average of DX) by as much where it steps, so each lane draws together with the true
    states. After the pass, chunk j is walked again serially (`_dmi_walk`) from the true end of
    chunk j-1 until its four states equal the lane's at a tile's end (`kernels.indicators.exact.
    kama_lanes` does the same); a chunk that never meets is walked to its end.
    Returns the rows walked again, or -1 where the portable core ran."""
    t_len = h.shape[0]
    start = 2 * n  # rows 0..2n-1: the seeds, as the core computes them
    size = (t_len - start) // LANES
    if n < 2 or size < 4 * DMI_TILE:
        _dmi_core(h, l, c, n, which, plus_di, minus_di, adx)
        return -1
    # the seeds: rows 0..2n-1 by the core, which returns its states at row 2n-1 (float64)
    pdm, mdm, tr_s, adx0 = _dmi_core(h[:start], l[:start], c[:start], n, which, plus_di[:start], minus_di[:start],
                                     adx[:start])
    inv_n = 1.0 / n
    omn = 1.0 - inv_n
    need_adx = which == 0 or which == 3
    st = np.zeros((4, LANES))  # +DM, -DM, TR, ADX of each lane
    st[0, 0], st[1, 0], st[2, 0], st[3, 0] = pdm, mdm, tr_s, adx0
    p = DMI_TILE_PITCH
    s = np.empty((5, LANES * p))
    tiles = (size + DMI_TILE - 1) // DMI_TILE
    marks = np.empty((tiles, 4, LANES))
    for k in range(tiles):
        r0 = k * DMI_TILE
        m = min(DMI_TILE, size - r0)
        for j in range(LANES):
            _dm_tile(h, l, c, start + j * size + r0, m, s, j * p)
        a0, b0, d0 = st[0, 0], st[1, 0], st[2, 0]
        a1, b1, d1 = st[0, 1], st[1, 1], st[2, 1]
        a2, b2, d2 = st[0, 2], st[1, 2], st[2, 2]
        a3, b3, d3 = st[0, 3], st[1, 3], st[2, 3]
        a4, b4, d4 = st[0, 4], st[1, 4], st[2, 4]
        a5, b5, d5 = st[0, 5], st[1, 5], st[2, 5]
        a6, b6, d6 = st[0, 6], st[1, 6], st[2, 6]
        a7, b7, d7 = st[0, 7], st[1, 7], st[2, 7]
        ahead = min(start + r0 + DMI_TILE, t_len - 1)  # the next tile's first row of lane 0
        for r in range(m):
            _fetch_ahead(h, l, c, ahead, size, LANES, r, t_len)
            a0, b0, d0 = _dm_put(s, r, a0, b0, d0, omn)
            a1, b1, d1 = _dm_put(s, p + r, a1, b1, d1, omn)
            a2, b2, d2 = _dm_put(s, 2 * p + r, a2, b2, d2, omn)
            a3, b3, d3 = _dm_put(s, 3 * p + r, a3, b3, d3, omn)
            a4, b4, d4 = _dm_put(s, 4 * p + r, a4, b4, d4, omn)
            a5, b5, d5 = _dm_put(s, 5 * p + r, a5, b5, d5, omn)
            a6, b6, d6 = _dm_put(s, 6 * p + r, a6, b6, d6, omn)
            a7, b7, d7 = _dm_put(s, 7 * p + r, a7, b7, d7, omn)
        st[0, 0], st[1, 0], st[2, 0] = a0, b0, d0
        st[0, 1], st[1, 1], st[2, 1] = a1, b1, d1
        st[0, 2], st[1, 2], st[2, 2] = a2, b2, d2
        st[0, 3], st[1, 3], st[2, 3] = a3, b3, d3
        st[0, 4], st[1, 4], st[2, 4] = a4, b4, d4
        st[0, 5], st[1, 5], st[2, 5] = a5, b5, d5
        st[0, 6], st[1, 6], st[2, 6] = a6, b6, d6
        st[0, 7], st[1, 7], st[2, 7] = a7, b7, d7
        for j in range(LANES):
            _di_tile(s, j * p, m, which, omn, inv_n, plus_di, minus_di, start + j * size + r0)
        if need_adx:
            x0, x1, x2, x3, x4, x5, x6, x7 = st[3, 0], st[3, 1], st[3, 2], st[3, 3], st[3, 4], st[3, 5], st[3, 6], st[3, 7]
            i = start + r0
            for r in range(m):
                x0 = _adx_put(s, r, x0, adx, i + r)
                x1 = _adx_put(s, p + r, x1, adx, i + size + r)
                x2 = _adx_put(s, 2 * p + r, x2, adx, i + 2 * size + r)
                x3 = _adx_put(s, 3 * p + r, x3, adx, i + 3 * size + r)
                x4 = _adx_put(s, 4 * p + r, x4, adx, i + 4 * size + r)
                x5 = _adx_put(s, 5 * p + r, x5, adx, i + 5 * size + r)
                x6 = _adx_put(s, 6 * p + r, x6, adx, i + 6 * size + r)
                x7 = _adx_put(s, 7 * p + r, x7, adx, i + 7 * size + r)
            st[3, 0], st[3, 1], st[3, 2], st[3, 3], st[3, 4], st[3, 5], st[3, 6], st[3, 7] = x0, x1, x2, x3, x4, x5, x6, x7
        marks[k] = st
    walked = 0
    true_end = st[:, 0].copy()  # the first chunk's end: true
    state = np.empty(4)
    for j in range(1, LANES):  # chunk j walked from the true end of chunk j-1 until it meets the lane
        first = start + j * size
        state[:] = true_end
        true_end[:] = st[:, j]  # the lane's end, true once it has met
        met = False
        for k in range(tiles):
            r0 = k * DMI_TILE
            r1 = min(r0 + DMI_TILE, size)
            _dmi_walk(h, l, c, first + r0, first + r1, which, omn, inv_n, state, plus_di, minus_di, adx)
            walked += r1 - r0
            met = (_same_bits(state[0], marks[k, 0, j]) and _same_bits(state[1], marks[k, 1, j])
                   and _same_bits(state[2], marks[k, 2, j]) and (not need_adx or _same_bits(state[3], marks[k, 3, j])))
            if met:
                break
        if not met:
            true_end[:] = state  # never met: walked to its end
    _dmi_walk(h, l, c, start + LANES * size, t_len, which, omn, inv_n, true_end, plus_di, minus_di, adx)
    return walked
