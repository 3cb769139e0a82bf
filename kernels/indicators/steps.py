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
"""

from __future__ import annotations

import math

import numpy as np


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
