"""Each indicator's arithmetic written once: its per-bar state update and output, as steps.

The schedules (`kernels.indicators.cores`: one series serially, compiled for cpu and as CUDA
device functions; `multilane`: several periods or series per pass; `chunks`: time chunks
re-walked until they meet) are drivers over these steps: they decide which rows a step
sees in which order and where its state lives (a register, a lane of a block, a chunk's
entry state), never what a step computes. Bit for bit across schedules follows: every
schedule applies the same rounded operations in the same order to a series' rows.

The live path's O(1) updaters (`kernels.indicators.updaters`) call the same steps in plain
Python: this module imports no numba, so the updaters stay light. `kernels.indicators._intrinsics`
(imported by every compiled schedule) registers each step with numba's `register_jitable`, as
`kernels.atc.cores` shares its steps between cpu and cuda: the function itself stays as it
is (plain Python for the CUDA simulator and the updaters), and compiled code of either
target (njit or cuda) compiles the call in; LLVM inlines these one-line bodies into the
caller's loop (the speed figures of benchmarks/LOG.md, issue 45), so a lane loop still
vectorises across its lanes. Arguments are float64 scalars (the schedules widen every
element they read with np.float64 first; a seed that reads a series does too); only `math`
and NumPy scalars are used.

Steps:
    ema_step(v, e, k, omk)        EMA update without a tie: v*k + e*(1-k) (EMA, DEMA, TEMA)
    ema_step_tied(v, e, k, omk)   the same, e kept where v == e (TA-Lib's exactness on a tie)
    wilder_mean(a, v, inv_n, omn) Wilder's smoothing of a mean: a*(1 - 1/n) + v*(1/n) (RSI's
                                  gain and loss, ATR, ADX)
    wilder_sum(s, v, omn)         Wilder's smoothing of a sum: s*(1 - 1/n) + v (DMI's +DM, -DM, TR)
    gain_loss(d)                  RSI's up and down parts of a change d
    rsi_value(gain, loss)         100*gain/(gain + loss), 0 where both are exactly 0
    rsi_seed(x, n)                RSI's seed: the mean gain and loss of the first n changes of x
                                  (a series: the seeds read rows, the other steps take scalars)
    true_range(hi, lo, pc)        max(hi - lo, |hi - pc|, |lo - pc|) (ATR, DMI)
    directional_moves(hi, hp, lo, lp)   (+DM, -DM) of a row against the row before
    di_ratio(dm, tr_s)            100*dm/tr_s (+DI, -DI where tr_s != 0)
    di_value(dm, tr_s)            di_ratio, 0 where tr_s is exactly 0 (+DI, -DI)
    dx_ratio(p, m)                100*|m - p|/(p + m) (DX where p + m != 0)
    dx_value(p, m)                (whether DX counts, DX = 100*|m - p|/(p + m)); DX counts
                                  where p + m != 0 (ADX keeps its value elsewhere)
    dmi_terms(pdm, mdm, tr_s)     (+DI, -DI, whether DX counts, DX) from the smoothed sums, with
                                  a branch on TR == 0 (the serial schedules; the lane loops take
                                  di_value and dx_value, selects, to vectorise)
    dm_tr(hi, hp, lo, lp, cp), dmi_moves(h, l, c, i)   (+DM, -DM, TR) of a row (scalars; row i of a series)
    dmi_sums(pdm, mdm, tr_s, dm_plus, dm_minus, tr, omn)   the three Wilder sums of a row (DMI)
    dmi_row(h, l, c, i, which, omn, pdm, mdm, tr_s, plus_di, minus_di)   a steady row of DMI
                                  (i >= n) of a series: moves, sums, the DIs stored by `which`;
                                  returns the sums and (have, DX) for ADX (dmi_core, the chunks' walk)

    window_sum(x, first, stop)    x[first] + ... + x[stop-1] in float64, left to right (the seeds of
                                  SMA, EMA, DEMA, TEMA, and shifted SMA's lanes)
    sum_step(s, v, old)           a running sum's row: (t = s + v, t - old), add-emit-subtract (SMA)
    sma_value(t, n), sma_step(s, v, old, n)   SMA's output t/n; its row (t/n, t - old)
    wma_seed_step(ws, sub, v, w)  a WMA warm-up row: (ws + v*w, sub + v)
    wma_step(ws, sub, v, trailing, n, divider)   TA-Lib's O(1) WMA row: (out, ws, sub) (WMA, HMA)
    lsma_constants(n)             LINEARREG's (St, n*Stt - St^2)
    lsma_seed_step(sy, sty, v, i), lsma_seed(x, n)   its warm-up sums (a row; the first n rows)
    lsma_roll(sy, sty, oldest, v, n), lsma_numerator(sy, sty, n, st), lsma_line(num, sy, n, st,
    divisor), lsma_value(...)     its rolling sums, slope numerator and the line at the newest row
    kama_change_sum(x, n, first)  KAMA's ratio sum |x[k] - x[k-1]| over k = first-n..first-1
    kama_roll(s, trailing, tr, v, last)   that sum's row: s - |trailing - tr| + |v - last|
    kama_flat(s, roc), kama_er(s, roc), kama_sc(er), kama_constant(s, roc), kama_step(v, prev, sc)
                                  the efficiency ratio (1 where flat), the smoothing constant
                                  fma(er, span, slow)^2 and KAMA's fma(v - prev, sc, prev)
    anchored_sums(x, first, stop, anchor), moments_add(s1, s2, d), moments_drop(s1, s2, d),
    moments_var(s1, s2, inv_n), moments_out(num, var, zscore)   the rolling moments' anchored
                                  sums, their mean and variance, and STDDEV / z-score (0 where var < EPS)
    ema_step2(v, e1, e2, k, omk), ema_step3(...)   DEMA's and TEMA's chained tied EMA updates
    dema_value(e1, e2), tema_value(e1, e2, e3)    2*e1 - e2 and 3*e1 - 3*e2 + e3
    ema2_seed(x, n, k, omk), ema3_seed(x, n, k, omk)   DEMA's state at row 2(n-1), TEMA's at 3(n-1)

Where a schedule keeps a formulation of its own (the same roundings in the same order, written
differently because the schedule needs it; each says why in its docstring):
    shifted._sum_step, _divided   SMA's sum and division apart: the sums are checked and shifted
                                  between the two, the divisions vectorised after
    shifted.kama_smoothing, exact._kama_block   KAMA's ratio with the division taken for every row
                                  (np.true_divide) and selected after: loops that vectorise; exact
                                  tests flatness on integer sums and on the sum times its unit
    exact (int64 sums)            SMA, WMA and KAMA's ratio sums in integers where float32 sums are exact
    chunks._di_tile, _rsi_put     DI/DX and RSI's Wilder step split so that loops vectorise
    chunks._tr_ordered            the true range as max - min where high - low >= 0
    multilane dmi_lanes (ADX)     di_ratio/dx_ratio taken for every lane and selected (dmi_terms branches)
    cores dema_core, tema_core    the tie-exit loop (ema_core's) at two and three levels
    updaters                      a bar at a time: seeds the cores form over a window (EMA's mean,
                                  KAMA's ratio sum, the moments' re-anchored sums, RSI's seed) are
                                  accumulated bar by bar in the same order
"""

from __future__ import annotations

import math

import numpy as np

from kernels.indicators.fused import fma

EPS = 1e-14  # TA-Lib's TA_EPSILON: |v| < EPS counts as zero (KAMA's ratio sum, the moments' variance)
KAMA_SLOW = 2.0 / (30.0 + 1.0)  # KAMA's slowest and fastest smoothing: sc = (er*SPAN + SLOW)^2
KAMA_SPAN = 2.0 / (2.0 + 1.0) - KAMA_SLOW


def ema_step(v, e, k, omk):
    """The EMA update where v != e: v*k + e*(1-k) (the loop-carried chain one multiply and
    one add; x*k is off it). TA-Lib's (v - e)*k + e rearranged (kernels.indicators.cores.ema_core)."""
    return v * k + e * omk


def ema_step_tied(v, e, k, omk):
    """The EMA update with TA-Lib's exactness on a tie: e itself where v == e."""
    return ema_step(v, e, k, omk) if v != e else e


def wilder_mean(a, v, inv_n, omn):
    """Wilder's smoothed mean: a*(1 - 1/n) + v*(1/n) (TA-Lib 0.6's form of (a*(n-1) + v)/n;
    one multiply and one add on the loop-carried chain)."""
    return a * omn + v * inv_n


def wilder_sum(s, v, omn):
    """Wilder's smoothed sum: s - s/n + v, computed as s*(1 - 1/n) + v."""
    return s * omn + v


def gain_loss(d):
    """RSI's (up, down) parts of the change d: (d, 0) for a rise, (0, -d) for a fall, (0, 0) else."""
    up = d if d > 0.0 else 0.0
    down = -d if d < 0.0 else 0.0
    return up, down


def rsi_value(gain, loss):
    """RSI from the smoothed gain and loss: 100*gain/(gain + loss), 0 when both are exactly 0
    (TA-Lib's scale-aware zero test reduces to that for a sum of non-negative terms)."""
    s = gain + loss
    return 100.0 * (gain / s) if s != 0.0 else 0.0


def rsi_seed(x, n):
    """(gain, loss): the means of the rises and of the falls among the first n changes of the
    series x (rows 1..n), added in row order. A change that is not a fall adds to the gain
    (a NaN change makes the gain NaN, as TA-Lib's seed does), unlike gain_loss."""
    gain = 0.0
    loss = 0.0
    for i in range(1, n + 1):
        d = np.float64(x[i]) - np.float64(x[i - 1])  # float() of a float32 is a float32 in numba
        if d < 0:
            loss -= d
        else:
            gain += d
    return gain / n, loss / n


def true_range(hi, lo, pc):
    """The true range of a row (high hi, low lo) after the close pc: max(hi - lo, |hi - pc|, |lo - pc|)."""
    return max(max(hi - lo, math.fabs(hi - pc)), math.fabs(lo - pc))


def directional_moves(hi, hp, lo, lp):
    """(+DM, -DM) of a row (high hi, low lo) after the row (hp, lp): the up move hi - hp where it
    is positive and larger than the down move lp - lo, the down move likewise, else 0.
    `&`, not `and`: no short-circuit branch, so both are selects (the conditions are coin flips
    on real data; a branch would mispredict half the time, and a lane loop would not vectorise)."""
    diff_p = hi - hp
    diff_m = lp - lo
    dm_plus = diff_p if ((diff_p > 0) & (diff_p > diff_m)) else 0.0
    dm_minus = diff_m if ((diff_m > 0) & (diff_p < diff_m)) else 0.0
    return dm_plus, dm_minus


def di_ratio(dm, tr_s):
    """100*dm/tr_s, the directional indicator where tr_s != 0 (a schedule that takes the division
    for every lane and selects after, compiled with numba's "numpy" error model, calls it bare)."""
    return 100.0 * (dm / tr_s)


def di_value(dm, tr_s):
    """A directional indicator from a smoothed DM and TR: 100*dm/tr_s, 0 where tr_s is exactly 0."""
    return di_ratio(dm, tr_s) if tr_s != 0.0 else 0.0


def dx_ratio(p, m):
    """DX = 100*|m - p|/(p + m) where p + m != 0 (taken bare as di_ratio)."""
    return 100.0 * (math.fabs(m - p) / (p + m))


def dx_value(p, m):
    """(have, dx) from +DI p and -DI m: dx = 100*|m - p|/(p + m) where p + m != 0 (have), else 0."""
    have = p + m != 0.0
    return have, (dx_ratio(p, m) if have else 0.0)


def dmi_terms(pdm, mdm, tr_s):
    """(+DI, -DI, have, DX) of a row from the smoothed +DM, -DM and TR: the DIs 0 and DX not
    counted where TR is exactly 0 (TR and +DI + -DI are sums of non-negative terms: TA-Lib's
    scale-aware zero test reduces to an exact one)."""
    if tr_s != 0.0:
        p = di_ratio(pdm, tr_s)
        m = di_ratio(mdm, tr_s)
        have, dx = dx_value(p, m)
        return p, m, have, dx
    return 0.0, 0.0, False, 0.0


def dmi_sums(pdm, mdm, tr_s, dm_plus, dm_minus, tr, omn):
    """The three Wilder sums of a DMI row: (+DM, -DM, TR) smoothed, s*(1 - 1/n) + v each."""
    return wilder_sum(pdm, dm_plus, omn), wilder_sum(mdm, dm_minus, omn), wilder_sum(tr_s, tr, omn)


def dm_tr(hi, hp, lo, lp, cp):
    """(+DM, -DM, TR) of a row from its high and low, the high and low before and the close
    before (any float type: widened to float64 first)."""
    hi = np.float64(hi)
    lo = np.float64(lo)
    dm_plus, dm_minus = directional_moves(hi, np.float64(hp), lo, np.float64(lp))
    return dm_plus, dm_minus, true_range(hi, lo, np.float64(cp))


def dmi_moves(h, l, c, i):
    """`dm_tr` of row i >= 1 of the series h, l, c."""
    return dm_tr(h[i], h[i - 1], l[i], l[i - 1], c[i - 1])


def dmi_row(h, l, c, i, which, omn, pdm, mdm, tr_s, plus_di, minus_di):
    """Row i >= n of DMI over the series h, l, c, from the sums (+DM, -DM, TR) of row i-1: the
    row's moves and true range, the sums smoothed, and the DIs stored by `which` (0 both, 1 +DI
    alone, 2 -DI alone, 3 neither: dmi_core's contract). Returns (pdm, mdm, tr_s, have, dx): the
    row's sums, and whether DX counts and DX for ADX's step (False, 0.0 where which is 1 or 2:
    no DX work there). The serial schedules' row (kernels.indicators.cores.dmi_core, the chunks'
    walk); the lane and tile loops take dmi_sums, di_value, dx_ratio themselves (selects that
    vectorise, one output a call)."""
    dm_plus, dm_minus, tr = dmi_moves(h, l, c, i)
    pdm, mdm, tr_s = dmi_sums(pdm, mdm, tr_s, dm_plus, dm_minus, tr, omn)
    if which == 1:
        plus_di[i] = di_value(pdm, tr_s)
        return pdm, mdm, tr_s, False, 0.0
    if which == 2:
        minus_di[i] = di_value(mdm, tr_s)
        return pdm, mdm, tr_s, False, 0.0
    p, m, have, dx = dmi_terms(pdm, mdm, tr_s)
    if which != 3:
        plus_di[i] = p
        minus_di[i] = m
    return pdm, mdm, tr_s, have, dx


def window_sum(x, first, stop):
    """x[first] + ... + x[stop-1] in float64, added left to right from 0.0."""
    s = 0.0
    for k in range(first, stop):
        s += np.float64(x[k])
    return s


def sum_step(s, v, old):
    """A running sum's row in TA-Lib's order (add, emit, subtract): (t, t - old) with t = s + v,
    t the window's sum at this row and t - old the state the next row adds to."""
    t = s + v
    return t, t - old


def sma_value(t, n):
    """SMA from its window's sum: t/n."""
    return t / n


def sma_step(s, v, old, n):
    """SMA's row: (t/n, t - old) with t = s + v (`sum_step`)."""
    t, s = sum_step(s, v, old)
    return sma_value(t, n), s


def wma_seed_step(ws, sub, v, w):
    """A WMA warm-up row (w = its 1-based index): (ws + v*w, sub + v)."""
    return ws + v * w, sub + v


def wma_step(ws, sub, v, trailing, n, divider):
    """TA-Lib's O(1) WMA row, weights 1..n: sub' = sub + v - trailing (the row leaving the window,
    0.0 before one has: x - 0.0 is x to the bit), ws + v*n is the weighted sum, divided by
    `divider` = n(n+1)/2 for the output; returns (out, ws + v*n - sub', sub')."""
    sub = sub + v
    sub = sub - trailing
    ws = ws + v * n
    return ws / divider, ws - sub, sub


def lsma_constants(n):
    """LINEARREG's (St, divisor): St = sum t and divisor = n*Stt - St^2 over t = 0..n-1."""
    st = n * (n - 1) * 0.5
    stt = n * (n - 1) * (2.0 * n - 1) / 6.0
    return st, n * stt - st * st


def lsma_seed_step(sy, sty, v, i):
    """A LINEARREG warm-up row i (0-based, i < n): (Sy + v, Sty + i*v)."""
    return sy + v, sty + i * v


def lsma_seed(x, n):
    """LINEARREG's sums (Sy, Sty) over the first n rows of x (`lsma_seed_step` row by row)."""
    sy = 0.0
    sty = 0.0
    for i in range(n):
        sy, sty = lsma_seed_step(sy, sty, np.float64(x[i]), i)
    return sy, sty


def lsma_roll(sy, sty, oldest, v, n):
    """LINEARREG's rolling sums one row on: (Sy - oldest + v, Sty - (Sy - oldest) + (n-1)*v)."""
    return sy - oldest + v, sty - (sy - oldest) + (n - 1) * v


def lsma_numerator(sy, sty, n, st):
    """The slope's numerator n*Sty - St*Sy."""
    return n * sty - st * sy


def lsma_line(num, sy, n, st, divisor):
    """The least-squares line at the newest row from the slope's numerator: slope = num/divisor,
    (Sy - slope*St)/n + slope*(n-1)."""
    slope = num / divisor
    return (sy - slope * st) / n + slope * (n - 1)


def lsma_value(sy, sty, n, st, divisor):
    """LINEARREG from its sums (`lsma_numerator`, `lsma_line`)."""
    return lsma_line(lsma_numerator(sy, sty, n, st), sy, n, st, divisor)


def kama_change_sum(x, n, first):
    """KAMA's efficiency-ratio sum before row `first`: |x[k] - x[k-1]| over k = first-n..first-1,
    added left to right (|a - b| is |b - a| to the bit)."""
    s = 0.0
    for k in range(first - n, first):
        s += math.fabs(np.float64(x[k]) - np.float64(x[k - 1]))
    return s


def kama_roll(s, trailing, tr, v, last):
    """The ratio's sum one row on (the row n+1 back `trailing`, the row n back `tr`, the row's
    value v, the row before `last`): s - |trailing - tr| + |v - last|. The arguments in the order
    the sum reads them: a lane loop that loaded x[i-1] before the lane's `trailing` (float64 arrays
    that may alias) ran its float64 KAMA sweep 10-13% slower (measured, 2026-11-28)."""
    s = s - math.fabs(trailing - tr)
    return s + math.fabs(v - last)


def kama_flat(s, roc):
    """Whether KAMA's efficiency ratio counts as 1: the sum s <= the change roc, or |s| < EPS
    (for selects: `kernels.indicators.shifted.kama_smoothing`)."""
    return s <= roc or (-EPS < s < EPS)


def kama_er(s, roc):
    """KAMA's efficiency ratio |roc/s|, 1 where the ratio is flat (no division there). The test is
    `kama_flat`'s, written out: branching on kama_flat's returned bool cost the float64 KAMA lanes
    10-15% (the bool kept as a value, then tested again; measured, 2026-11-28)."""
    if s <= roc or (-EPS < s < EPS):
        return 1.0
    return math.fabs(roc / s)


def kama_sc(er):
    """KAMA's smoothing constant from the ratio: fma(er, SPAN, SLOW)^2 (fused as TA-Lib fuses it)."""
    sc = fma(er, KAMA_SPAN, KAMA_SLOW)
    return sc * sc


def kama_constant(s, roc):
    """KAMA's smoothing constant of a row from its ratio sum s and change roc."""
    return kama_sc(kama_er(s, roc))


def kama_step(v, prev, sc):
    """KAMA's update: fma(v - prev, sc, prev)."""
    return fma(v - prev, sc, prev)


def anchored_sums(x, first, stop, anchor):
    """(sum d, sum d*d) over d = x[k] - anchor, k = first..stop-1, left to right (`moments_add`)."""
    s1 = 0.0
    s2 = 0.0
    for k in range(first, stop):
        s1, s2 = moments_add(s1, s2, np.float64(x[k]) - anchor)
    return s1, s2


def moments_add(s1, s2, d):
    """The moments' sums with the deviation d added: (s1 + d, s2 + d*d)."""
    return s1 + d, s2 + d * d


def moments_drop(s1, s2, d):
    """The moments' sums with the deviation d taken out: (s1 - d, s2 - d*d)."""
    return s1 - d, s2 - d * d


def moments_var(s1, s2, inv_n):
    """(mean, var) of the deviations from their sums: mean = s1/n, var = s2/n - mean^2 (/n as *(1/n))."""
    mean = s1 * inv_n
    return mean, s2 * inv_n - mean * mean


def moments_out(num, var, zscore):
    """STDDEV (zscore == 0: sqrt(var)) or the z-score (num/sqrt(var), num = d - mean), 0 where
    var < EPS."""
    if var < EPS:
        return 0.0
    if zscore == 0:
        return math.sqrt(var)
    return num / math.sqrt(var)


def ema_step2(v, e1, e2, k, omk):
    """DEMA's two EMAs one row on (each kept where its input equals it): e1 on v, e2 on e1."""
    e1 = ema_step_tied(v, e1, k, omk)
    return e1, ema_step_tied(e1, e2, k, omk)


def ema_step3(v, e1, e2, e3, k, omk):
    """TEMA's three EMAs one row on: e1 on v, e2 on e1, e3 on e2 (each tied as ema_step_tied)."""
    e1, e2 = ema_step2(v, e1, e2, k, omk)
    return e1, e2, ema_step_tied(e2, e3, k, omk)


def dema_value(e1, e2):
    """DEMA from its EMAs: 2*e1 - e2."""
    return 2.0 * e1 - e2


def tema_value(e1, e2, e3):
    """TEMA from its EMAs: 3*e1 - 3*e2 + e3."""
    return 3.0 * e1 - 3.0 * e2 + e3


def ema2_seed(x, n, k, omk):
    """DEMA's state (e1, e2) at row 2(n-1) of x (which has more rows): e1 the EMA seeded by the
    mean of x[0..n-1]; e2 seeded by the mean of e1's first n values (rows n-1..2n-2)."""
    e1 = window_sum(x, 0, n) / n
    acc = e1
    for i in range(n, 2 * n - 1):
        e1 = ema_step_tied(np.float64(x[i]), e1, k, omk)
        acc += e1
    return e1, acc / n


def ema3_seed(x, n, k, omk):
    """TEMA's state (e1, e2, e3) at row 3(n-1) of x (which has more rows): `ema2_seed`, then e3
    seeded by the mean of e2's first n values (rows 2n-2..3n-3)."""
    e1, e2 = ema2_seed(x, n, k, omk)
    acc = e2
    for i in range(2 * n - 1, 3 * n - 2):
        e1, e2 = ema_step2(np.float64(x[i]), e1, e2, k, omk)
        acc += e2
    return e1, e2, acc / n
