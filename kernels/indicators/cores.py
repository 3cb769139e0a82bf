"""Per-series indicator cores, written once and compiled twice: the serial schedule.

Each core is a plain loop over one series that writes into preallocated outputs: no
allocation; its per-bar arithmetic is the steps of `kernels.indicators.steps` (SMA's and WMA's
rows, LINEARREG's sums and line, KAMA's ratio and fma step, EMA, DEMA, TEMA, Wilder's smoothing,
RSI, true range, DMI's row, the moments' anchored sums: the same functions the lane, chunk,
shifted and streaming schedules call; KAMA's fma is `kernels.indicators.fused.fma`, one fused
multiply-add when compiled, exact in Python); float64 accumulators. (The cpu variants of
`CPU_VARIANTS`, compiled for the cpu backend only, allocate scratch blocks.) The cpu backend
compiles them with `numba.njit`, the cuda backend with `numba.cuda.jit(device=True)` (one
thread per series, reading a time-major column view; the steps, registered with
`register_jitable`, compile for either target). Outputs are NaN during warm-up.

The arithmetic follows TA-Lib's C code step by step (same seeds, same update order, same
zero tests: `|v| < 1e-14` where TA-Lib uses a fixed band, exact zero where its scale-aware
test applies to a sum of non-negative terms), so values agree with TA-Lib to float64
rounding; KAMA, which fuses its multiply-adds where TA-Lib's build does, to the last bit.

Conventions: `x` (or `h`, `l`, `c`) is one series of length T, float32 or float64; `n` the
period; outputs have length T. Every element read that meets another element goes through
`np.float64(...)` first (numba types `float()` of a float32 as float32), so the arithmetic is
float64 whatever the input dtype, compiled or under the CUDA simulator (NumPy scalars). Lookbacks (index of the first valid output):
    sma, wma, lsma, moments (stddev, zscore): n-1     ema: n-1     dema: 2(n-1)     tema: 3(n-1)
    hma: n-1 + int(sqrt(n))-1     kama, rsi, atr, plus_di, minus_di: n     adx: 2n-1
    rocp: n
"""

from __future__ import annotations

import math

import numpy as np

from kernels.indicators._intrinsics import fma  # noqa: F401 (importing it registers the steps with numba, cpu and cuda)
from kernels.indicators.steps import EPS  # noqa: F401 (cores.EPS: TA-Lib's TA_EPSILON, read by the schedules)
from kernels.indicators.steps import (anchored_sums, dema_value, dmi_moves, dmi_row, ema2_seed, ema3_seed, ema_step, ema_step2,
                                      ema_step3, ema_step_tied, gain_loss, kama_change_sum, kama_constant, kama_roll, kama_step,
                                      lsma_constants, lsma_line, lsma_numerator, lsma_roll, lsma_seed, lsma_value, moments_add,
                                      moments_drop, moments_out, moments_var, rsi_seed, rsi_value, sma_step, tema_value,
                                      true_range, wilder_mean, window_sum, wma_seed_step, wma_step)

NAN = float("nan")


def sma_core(x, n, out):
    """out[t] = mean(x[t-n+1..t]); running sum in TA-Lib's order (add, emit, subtract)."""
    t_len = x.shape[0]
    for i in range(min(n - 1, t_len)):
        out[i] = NAN
    if t_len < n:
        return
    total = window_sum(x, 0, n - 1)
    for i in range(n - 1, t_len):
        out[i], total = sma_step(total, np.float64(x[i]), np.float64(x[i - n + 1]), n)


def ema_core(x, n, out):
    """EMA with k = 2/(n+1), seeded by the SMA of the first n values (TA-Lib default).

    Update e = x*k + e*(1-k), and e unchanged where x == e: TA-Lib's (x - e)*k + e
    rearranged so that the loop-carried chain is one multiply and one add (x*k is off the
    chain), with TA-Lib's exactness on a tie kept (a constant input leaves the EMA exactly
    where it is). Equal to TA-Lib to float64 rounding; the last bits may differ from
    (x - e)*k + e (TA-Lib itself fuses that multiply-add where the CPU has FMA)."""
    t_len = x.shape[0]
    for i in range(min(n - 1, t_len)):
        out[i] = NAN
    if t_len < n:
        return
    k = 2.0 / (n + 1)
    omk = 1.0 - k
    prev = window_sum(x, 0, n) / n
    out[n - 1] = prev
    i = n
    while i < t_len:
        # The tie test exits the loop instead of selecting the kept value: a predicted
        # branch, off the loop-carried chain (a select put compare + blend on it: 1.9 ->
        # 1.35 ns per row). Ties are rare; the row that has one takes the guarded step below.
        while i < t_len:
            v = np.float64(x[i])
            if v == prev:
                break
            prev = ema_step(v, prev, k, omk)
            out[i] = prev
            i += 1
        if i < t_len:
            prev = ema_step_tied(np.float64(x[i]), prev, k, omk)
            out[i] = prev
            i += 1


def wma_core(x, n, out):
    """Linearly weighted mean, weights 1..n (newest n), divisor n(n+1)/2 (TA-Lib's O(1) update)."""
    t_len = x.shape[0]
    for i in range(min(n - 1, t_len)):
        out[i] = NAN
    if t_len < n:
        return
    divider = (n * (n + 1)) // 2
    period_sum = 0.0
    period_sub = 0.0
    for i in range(n - 1):
        period_sum, period_sub = wma_seed_step(period_sum, period_sub, np.float64(x[i]), i + 1)
    trailing = 0.0
    # Views indexed by the loop counter: numba then knows no index is negative and drops
    # the wraparound arithmetic of x[i - n + 1] (float32: 15.0 -> 14.0 ms at 10M rows).
    cur = x[n - 1 :]
    old = x[: t_len - n + 1]
    dst = out[n - 1 :]
    for j in range(t_len - n + 1):
        dst[j], period_sum, period_sub = wma_step(period_sum, period_sub, np.float64(cur[j]), trailing, n, divider)
        trailing = np.float64(old[j])


def dema_core(x, n, out):
    """2*EMA(x) - EMA(EMA(x)); the second EMA is seeded by the SMA of the first n EMA values.

    The seeds are `steps.ema2_seed` (shared with tema_core, the lanes and the chunks); the steady
    rows are `steps.ema_step2`, run as in ema_core: untied rows through the branch-free chains
    (`steps.ema_step`, a tie leaves the inner loop), a tie through the guarded step."""
    t_len = x.shape[0]
    look = 2 * (n - 1)
    for i in range(min(look, t_len)):
        out[i] = NAN
    if t_len <= look:
        return
    k = 2.0 / (n + 1)
    omk = 1.0 - k
    e1, e2 = ema2_seed(x, n, k, omk)
    out[look] = dema_value(e1, e2)
    i = look + 1
    while i < t_len:
        while i < t_len:  # no tie: the branch-free chains (see ema_core)
            v = np.float64(x[i])
            if v == e1:
                break
            n1 = ema_step(v, e1, k, omk)
            if n1 == e2:
                break
            e2 = ema_step(n1, e2, k, omk)
            e1 = n1
            out[i] = dema_value(e1, e2)
            i += 1
        if i < t_len:
            e1, e2 = ema_step2(np.float64(x[i]), e1, e2, k, omk)
            out[i] = dema_value(e1, e2)
            i += 1


def tema_core(x, n, out):
    """3*EMA1 - 3*EMA2 + EMA3, each EMA seeded by the SMA of the first n values of its input.

    The seeds are `steps.ema3_seed`; the steady rows are `steps.ema_step3`, run as in ema_core:
    untied rows through the branch-free chains, a tie through the guarded step. That loop is
    dema_core's with a third level, written out again: a loop over the levels would hold the
    states in an array, a store and a load on each chain (see ema_core and the chunked cores)."""
    t_len = x.shape[0]
    look = 3 * (n - 1)
    for i in range(min(look, t_len)):
        out[i] = NAN
    if t_len <= look:
        return
    k = 2.0 / (n + 1)
    omk = 1.0 - k
    e1, e2, e3 = ema3_seed(x, n, k, omk)
    out[look] = tema_value(e1, e2, e3)
    i = look + 1
    while i < t_len:
        while i < t_len:  # no tie: the branch-free chains (see ema_core)
            v = np.float64(x[i])
            if v == e1:
                break
            n1 = ema_step(v, e1, k, omk)
            if n1 == e2:
                break
            n2 = ema_step(n1, e2, k, omk)
            if n2 == e3:
                break
            e3 = ema_step(n2, e3, k, omk)
            e1 = n1
            e2 = n2
            out[i] = tema_value(e1, e2, e3)
            i += 1
        if i < t_len:
            e1, e2, e3 = ema_step3(np.float64(x[i]), e1, e2, e3, k, omk)
            out[i] = tema_value(e1, e2, e3)
            i += 1


def hma_core(x, n, out, diff):
    """Hull MA: WMA(2*WMA(x, n//2) - WMA(x, n), int(sqrt(n))), the three WMAs rolled as in wma_core.

    `diff` is scratch in the output's dtype (a float32 output rounds each difference before the
    outer WMA sums it, as the composition of float32 calls does). Only its first int(sqrt(n))
    entries are used, as a ring of the last differences: the rest is never touched, so a T-long
    scratch costs no memory traffic (at 10M rows, writing it all took a tenth of the call)."""
    t_len = x.shape[0]
    half = n // 2
    m = int(math.sqrt(n))
    look = n - 1 + m - 1
    for i in range(min(look, t_len)):
        out[i] = NAN
    # Rolling WMA states (TA-Lib update) for the half and the full window.
    div_h = (half * (half + 1)) // 2
    div_f = (n * (n + 1)) // 2
    div_m = (m * (m + 1)) // 2
    sum_h = 0.0
    sub_h = 0.0
    sum_f = 0.0
    sub_f = 0.0
    sum_m = 0.0
    sub_m = 0.0
    slot = 0
    for i in range(t_len):
        v = np.float64(x[i])
        # half window (before a row has left it, wma_step subtracts 0.0: the same bits)
        if i < half - 1:
            sum_h, sub_h = wma_seed_step(sum_h, sub_h, v, i + 1)
            w_h = NAN
        else:
            w_h, sum_h, sub_h = wma_step(sum_h, sub_h, v, np.float64(x[i - half]) if i >= half else 0.0, half, div_h)
        # full window
        if i < n - 1:
            sum_f, sub_f = wma_seed_step(sum_f, sub_f, v, i + 1)
            continue
        w_f, sum_f, sub_f = wma_step(sum_f, sub_f, v, np.float64(x[i - n]) if i >= n else 0.0, n, div_f)
        j = i - (n - 1)  # index within the diff series; its ring slot is j % m
        old = np.float64(diff[slot]) if j >= m else 0.0  # the difference m rows back
        diff[slot] = 2.0 * w_h - w_f
        d = np.float64(diff[slot])  # read back: the value added now is the value subtracted m rows later
        slot = slot + 1 if slot + 1 < m else 0
        if j < m - 1:
            sum_m, sub_m = wma_seed_step(sum_m, sub_m, d, j + 1)
        else:
            out[i], sum_m, sub_m = wma_step(sum_m, sub_m, d, old, m, div_m)


def lsma_core(x, n, out):
    """TA-Lib LINEARREG: the least-squares line over the last n values, evaluated at the newest.

    With t = 0..n-1 (oldest to newest): slope = (n*Sty - St*Sy) / (n*Stt - St^2),
    out = (Sy - slope*St)/n + slope*(n-1). Sy and Sty roll in O(1):
    Sty' = Sty - (Sy - x_oldest) + (n-1)*x_new.
    """
    t_len = x.shape[0]
    for i in range(min(n - 1, t_len)):
        out[i] = NAN
    if t_len < n:
        return
    st, divisor = lsma_constants(n)
    sy, sty = lsma_seed(x, n)
    for i in range(n - 1, t_len):
        if i > n - 1:
            sy, sty = lsma_roll(sy, sty, np.float64(x[i - n]), np.float64(x[i]), n)
        out[i] = lsma_value(sy, sty, n, st, divisor)


def kama_core(x, n, out):
    """Kaufman adaptive MA, TA-Lib: ER over n bars, sc = (ER*(2/3 - 2/31) + 2/31)^2,
    kama = (x - kama)*sc + kama seeded with np.float64(x[n-1]); first output at n.

    Both multiply-adds are fused (`kernels.indicators.fused.fma`) as TA-Lib's C library fuses them, so
    the output is TA-Lib's bit for bit, and the loop-carried chain is sub+fma."""
    t_len = x.shape[0]
    for i in range(min(n, t_len)):
        out[i] = NAN
    if t_len <= n:
        return
    sum_roc = kama_change_sum(x, n, n + 1)
    trailing = np.float64(x[0])
    last = np.float64(x[n])
    prev = kama_step(last, np.float64(x[n - 1]), kama_constant(sum_roc, last - trailing))
    out[n] = prev
    cur = x[n + 1 :]
    old = x[1 : t_len - n]
    dst = out[n + 1 :]
    for i in range(t_len - n - 1):  # row n+1+i; views, and x[t-1] carried: fewer loads (float32 2.09 -> 2.00 ns a row)
        v = np.float64(cur[i])
        tr = np.float64(old[i])
        sum_roc = kama_roll(sum_roc, trailing, tr, v, last)
        prev = kama_step(v, prev, kama_constant(sum_roc, v - tr))
        dst[i] = prev
        trailing = tr
        last = v


def rsi_core(x, n, out):
    """Wilder RSI: average gain/loss seeded by simple means of the first n changes, then
    avg = avg*(1 - 1/n) + change*(1/n) (a one-multiply-one-add loop-carried chain;
    TA-Lib computes (avg*(n-1) + change)/n or, with FMA, the same rearrangement);
    RSI = 100*gain/(gain+loss), 0 when both are exactly 0 (TA-Lib's scale-aware zero test
    reduces to that for a sum of non-negative terms)."""
    t_len = x.shape[0]
    for i in range(min(n, t_len)):
        out[i] = NAN
    if t_len <= n:
        return
    inv_n = 1.0 / n
    omn = 1.0 - inv_n
    gain, loss = rsi_seed(x, n)
    out[n] = rsi_value(gain, loss)
    for i in range(n + 1, t_len):
        up, down = gain_loss(np.float64(x[i]) - np.float64(x[i - 1]))
        gain = wilder_mean(gain, up, inv_n, omn)
        loss = wilder_mean(loss, down, inv_n, omn)
        out[i] = rsi_value(gain, loss)


def atr_core(h, l, c, n, out):
    """Wilder ATR: TR[t] = max(h-l, |h-c[t-1]|, |l-c[t-1]|) from t=1; ATR[n] = mean(TR[1..n]),
    then ATR = ATR*(1 - 1/n) + TR*(1/n) (TA-Lib 0.6's form; one multiply and one add on the
    loop-carried chain). With n == 1 it is the true range."""
    t_len = h.shape[0]
    for i in range(min(n, t_len)):
        out[i] = NAN
    if t_len <= n:
        return
    acc = 0.0
    for i in range(1, n + 1):  # warm-up: the seed mean (or the true range itself when n == 1)
        tr = true_range(np.float64(h[i]), np.float64(l[i]), np.float64(c[i - 1]))
        acc += tr
    acc = acc / n
    out[n] = acc
    inv_n = 1.0 / n
    omn = 1.0 - inv_n
    for i in range(n + 1, t_len):
        tr = true_range(np.float64(h[i]), np.float64(l[i]), np.float64(c[i - 1]))
        acc = wilder_mean(acc, tr, inv_n, omn)
        out[i] = acc


def dmi_core(h, l, c, n, which, plus_di, minus_di, adx):
    """Wilder's directional movement (TA-Lib PLUS_DI, MINUS_DI, ADX) in one pass.

    +DM = up move if up > down and up > 0, -DM = down move if down > up and down > 0;
    +DM, -DM and TR are summed over bars 1..n-1, then Wilder-smoothed (s = s - s/n + v,
    computed as s*(1 - 1/n) + v: one multiply and one add on the loop-carried chain).
    DI = 100*DM/TR from bar n (0 when TR is exactly 0). DX = 100*|+DI - -DI|/(+DI + -DI);
    ADX[2n-1] = mean of DX over bars n..2n-1, then ADX = ADX*(1 - 1/n) + DX/n, unchanged on
    bars where TR or +DI + -DI is exactly 0 (sums of non-negative terms: TA-Lib's
    scale-aware zero test reduces to an exact one).
    `which`: 0 writes all three outputs; 1 only +DI and 2 only -DI (no DX/ADX work; the
    other outputs keep their warm-up NaN and are otherwise left unwritten); 3 only ADX (the
    DIs computed, not stored: `adx` alone then never touches the pages of two outputs it
    drops, whose first-touch faults cost more than the core at 10M float64 rows).
    Returns the states after the last row: the smoothed (+DM, -DM, TR) and ADX (float64, what
    the outputs of a float32 call round; 0.0 where the series is too short or ADX not computed),
    from which `kernels.indicators.chunks.dmi_chunked_core` goes on. Each row from n on is
    `steps.dmi_row`, as in the chunks' walk.
    """
    t_len = h.shape[0]
    for i in range(min(n, t_len)):
        plus_di[i] = NAN
        minus_di[i] = NAN
    for i in range(min(2 * n - 1, t_len)):
        adx[i] = NAN
    if t_len <= n:
        return 0.0, 0.0, 0.0, 0.0
    inv_n = 1.0 / n
    omn = 1.0 - inv_n
    pdm = 0.0
    mdm = 0.0
    tr_s = 0.0
    sum_dx = 0.0
    prev_adx = 0.0
    for i in range(1, n):  # the sums of rows 1..n-1 (adding 0.0 leaves these non-negative sums unchanged)
        dm_plus, dm_minus, tr = dmi_moves(h, l, c, i)
        mdm += dm_minus
        pdm += dm_plus
        tr_s += tr
    for i in range(n, t_len):
        pdm, mdm, tr_s, have_dx, dx = dmi_row(h, l, c, i, which, omn, pdm, mdm, tr_s, plus_di, minus_di)
        if which == 1 or which == 2:
            continue
        if i < 2 * n - 1:
            sum_dx += dx
        elif i == 2 * n - 1:
            sum_dx += dx
            prev_adx = sum_dx / n
            adx[i] = prev_adx
        else:
            if have_dx:
                prev_adx = wilder_mean(prev_adx, dx, inv_n, omn)
            adx[i] = prev_adx
    return pdm, mdm, tr_s, prev_adx


def moments_core(x, n, zscore, out):
    """Rolling population moments over n rows: var = E[d^2] - E[d]^2 with d = x - anchor.

    The anchor is the oldest value of the window, re-set every n rows (the window's sums
    are then recomputed, amortised O(1); the means are sums times 1/n): sums of deviations do not suffer the cancellation
    of raw E[x^2] - E[x]^2 on prices whose variance is tiny next to their square.
    zscore == 0: out = sqrt(var), the standard deviation (TA-Lib STDDEV, nbdev 1), 0 where
    var < 1e-14. zscore == 1: out = (x - mean) / sqrt(var), 0 where var < 1e-14.
    """
    t_len = x.shape[0]
    for i in range(min(n - 1, t_len)):
        out[i] = NAN
    if t_len < n:
        return
    inv_n = 1.0 / n
    next_start = n  # the window start at which the anchor moves next (a multiple of n)
    anchor = np.float64(x[0])
    s1, s2 = anchored_sums(x, 0, n - 1, anchor)
    for i in range(n - 1, t_len):
        start = i - n + 1
        if start == next_start:
            next_start += n
            anchor = np.float64(x[start])
            s1, s2 = anchored_sums(x, start, i, anchor)
        d = np.float64(x[i]) - anchor
        s1, s2 = moments_add(s1, s2, d)
        mean1, var = moments_var(s1, s2, inv_n)
        s1, s2 = moments_drop(s1, s2, np.float64(x[start]) - anchor)
        out[i] = moments_out(d - mean1, var, zscore)


def moments_blocked_core(x, n, zscore, out):
    """`moments_core` for the cpu backend, bit for bit: the same sums in the same order, but
    each block of SCRATCH_BLOCK outputs first stores its variances (and the z-score's
    numerators) in scratch rows, then takes the square roots (and quotients) in a second,
    vectorised loop. In the one-loop core every output waits for a scalar sqrt (and
    division) beside the running sums; split, the sums run alone and the roots go four to
    an instruction: 10M rows 32 -> 21 ms (TA-Lib STDDEV, which also takes its roots in a
    second pass: 25 ms). The scratch rows are an allocation, which the cuda backend's
    device functions cannot make: it compiles `moments_core` (kernels.indicators.cores.CPU_VARIANTS)."""
    t_len = x.shape[0]
    for i in range(min(n - 1, t_len)):
        out[i] = NAN
    if t_len < n:
        return
    inv_n = 1.0 / n
    var_b = np.empty(SCRATCH_BLOCK)
    num_b = np.empty(SCRATCH_BLOCK)
    next_start = n
    anchor = np.float64(x[0])
    s1, s2 = anchored_sums(x, 0, n - 1, anchor)
    for b0 in range(n - 1, t_len, SCRATCH_BLOCK):
        b1 = min(b0 + SCRATCH_BLOCK, t_len)
        for i in range(b0, b1):
            start = i - n + 1
            if start == next_start:
                next_start += n
                anchor = np.float64(x[start])
                s1, s2 = anchored_sums(x, start, i, anchor)
            d = np.float64(x[i]) - anchor
            s1, s2 = moments_add(s1, s2, d)
            mean1, var_b[i - b0] = moments_var(s1, s2, inv_n)
            num_b[i - b0] = d - mean1
            s1, s2 = moments_drop(s1, s2, np.float64(x[start]) - anchor)
        dst = out[b0:b1]
        if zscore == 0:  # a constant zscore in each loop: moments_out's test on it folds away
            for k in range(b1 - b0):
                dst[k] = moments_out(num_b[k], var_b[k], 0)
        else:
            for k in range(b1 - b0):
                dst[k] = moments_out(num_b[k], var_b[k], 1)


def lsma_blocked_core(x, n, out):
    """`lsma_core` for the cpu backend, bit for bit: the same rolling sums in the same
    order, but each block of SCRATCH_BLOCK outputs first stores its slope numerators and
    Sy in scratch rows, then finishes them (two divisions each) in a second, vectorised
    loop. In the one-loop core the two scalar divisions per row, not the sums, bound the
    loop (500 series x 2,000 rows x 9 lengths: 16.2 -> 13.1 ms)."""
    t_len = x.shape[0]
    for i in range(min(n - 1, t_len)):
        out[i] = NAN
    if t_len < n:
        return
    st, divisor = lsma_constants(n)
    sy, sty = lsma_seed(x, n)
    num_b = np.empty(SCRATCH_BLOCK)
    sy_b = np.empty(SCRATCH_BLOCK)
    num_b[0] = lsma_numerator(sy, sty, n, st)  # row n-1: the sums of the first window
    sy_b[0] = sy
    cur = x[n:]  # the row entering the window at output n-1+k (k >= 1) is cur[k-1]
    old = x[: t_len - n]
    m = t_len - n + 1  # outputs at rows n-1 .. t_len-1
    first = 1
    for b0 in range(0, m, SCRATCH_BLOCK):
        b1 = min(b0 + SCRATCH_BLOCK, m)
        for k in range(first, b1 - b0):
            j = b0 + k - 1
            sy, sty = lsma_roll(sy, sty, np.float64(old[j]), np.float64(cur[j]), n)
            num_b[k] = lsma_numerator(sy, sty, n, st)
            sy_b[k] = sy
        first = 0
        dst = out[n - 1 + b0 : n - 1 + b1]
        for k in range(b1 - b0):
            dst[k] = lsma_line(num_b[k], sy_b[k], n, st, divisor)


SCRATCH_BLOCK = 256
# Cores the cpu backend replaces with a variant of its own (same outputs bit for bit): here
# (tests/kernels/test_core_variants.py), in kernels.indicators.chunks, the time-chunked ones
# (tests/kernels/test_chunked_cores.py), or in kernels.indicators.exact, the integer ones where
# float32 sums are exact (tests/kernels/test_exact_cores.py). The cuda backend compiles the
# portable core.
CPU_VARIANTS = {"moments_core": "moments_blocked_core", "lsma_core": "lsma_blocked_core",
                "atr_core": "atr_chunked_core", "ema_core": "ema_chunked_core", "rsi_core": "rsi_chunked_core",
                "tema_core": "tema_chunked_core", "sma_core": "sma_exact_core", "wma_core": "wma_exact_core",
                "kama_core": "kama_exact_core", "dmi_core": "dmi_chunked_core"}


def rocp_core(x, n, out):
    """Simple return over n rows (TA-Lib ROCP): (x[t] - x[t-n]) / x[t-n], 0 when x[t-n] is 0."""
    t_len = x.shape[0]
    for i in range(min(n, t_len)):
        out[i] = NAN
    if t_len <= n:
        return
    cur = x[n:]
    old = x[: t_len - n]
    dst = out[n:]
    for i in range(t_len - n):  # views: indices are plain loop counters, so the loop vectorizes
        prev = np.float64(old[i])
        dst[i] = (np.float64(cur[i]) - prev) / prev if prev != 0.0 else 0.0
