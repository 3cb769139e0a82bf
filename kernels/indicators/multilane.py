"""Multi-lane variants of the indicator cores: several periods or several series per pass.

Each lane core advances L independent lanes per time step and writes out[t, j] into a
time-major [T, L] block (lanes contiguous, so numba vectorises the inner lane loop). Lane j
runs period ns[j] over column j of the inputs, which are time-major [T, Lx] too:

- lanes = periods of one series: Lx == 1 (the series as a [T, 1] column), every lane reads
  it, and what depends only on the series (a change, a true range, a directional move) is
  computed once per row for all lanes;
- lanes = series of one panel: Lx == L, lane j reads column j (ns all equal, or not).
  Fast when the panel is time-major in memory already: for series stored back to back
  (the feature stage's ragged layout) or [series, time], the transposes or strided reads
  cost more than the loop-carried latency the lanes save (measured, 500 x 6,500 rows), so
  `kernels.indicators.ragged` and 2-D calls keep one single-lane call per series.

Per lane, every operation is the one of the single-lane core in `kernels.indicators.cores`, in the same
order (no reassociation, fastmath off), so out[:, j] is bit for bit the single-lane core's
output for period ns[j] over lane j's series, warm-up NaN and seeds included
(tests/kernels/test_lane_cores.py checks it). The operations are the steps of
`kernels.indicators.steps`, the functions the single-lane cores call; what a lane core writes
itself is the schedule: the phases of the warm-up, and steady loops written twice where a
shared series is read once a row as a scalar and a panel a value a lane (the same step in both).

Shape of every core: a warm-up phase over the first rows, where lanes are in different
phases (NaN, seed sum, first value, update) and take the single core's branches, then a
steady phase from the row where every lane updates, a branch-free loop over lanes. Lanes
whose period exceeds the series stay NaN throughout.

CPU only (compiled by `kernels.indicators.cpu.compiled_lanes` with numba's "numpy"
error model: a quotient by zero is IEEE inf/NaN, computed for every lane and kept only where
the single core computes it): the cuda backend already runs one thread per series. Per-lane
state lives in small scratch arrays of length L (a float64 EMA block is its own state: each
row is read back as the lanes' EMA for the next). In the steady loops, what the lanes share
(a row's value, change or true range) is a scalar computed once per row: a pass over the
lanes is then loads of the state and constants, the arithmetic, and the block's row write,
which is what bounds the EMA family (benchmarks/LOG.md, "Issue 28: the EMA family").
"""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

from kernels.indicators._intrinsics import fma  # noqa: F401 (importing it registers the steps with numba)
from kernels.indicators.steps import (anchored_sums, dema_value, di_ratio, di_value, dm_tr, dmi_sums, dmi_terms, dx_ratio,
                                      ema2_seed, ema3_seed, ema_step2, ema_step3, ema_step_tied, gain_loss, kama_change_sum,
                                      kama_constant, kama_roll, kama_step, lsma_constants, lsma_roll, lsma_seed_step, lsma_value,
                                      moments_add, moments_drop, moments_out, moments_var, rsi_value, sma_step, tema_value,
                                      true_range, wilder_mean, wma_seed_step, wma_step)

NAN = float("nan")


@register_jitable
def _at(x, t, j):
    """Row t of lane j's input column (column 0 when all lanes share one series)."""
    return np.float64(x[t, j]) if x.shape[1] > 1 else np.float64(x[t, 0])


@register_jitable
def _col(x, j):
    """Lane j's input column as a 1-D view (column 0 when all lanes share one series): a series
    step (a seed) reads it as it reads a single series."""
    return x[:, j] if x.shape[1] > 1 else x[:, 0]


@register_jitable
def _load(x, t, buf):
    """buf[j] = lane j's input at row t (float64)."""
    if x.shape[1] == 1:
        v = np.float64(x[t, 0])
        for j in range(buf.shape[0]):
            buf[j] = v
    else:
        for j in range(buf.shape[0]):
            buf[j] = np.float64(x[t, j])


@register_jitable
def _max_period(ns):
    m = 0
    for j in range(ns.shape[0]):
        m = max(m, ns[j])
    return m


@register_jitable
def _zeros_aligned(n):
    """Zeros of length n starting on a 64-byte boundary (numba's arrays start on 32 bytes):
    the lane loop's 8-wide loads and stores of a state array then never straddle two cache
    lines (float32 EMA sweep: 0.82-0.93x the time with numba's alignment)."""
    buf = np.zeros(n + 8)
    off = (-(buf.ctypes.data // 8)) % 8
    return buf[off : off + n]


def sma_lanes(x, ns, out):
    """Lanes of `cores.sma_core`: total += x[t]; out = total/n; total -= x[t-n+1]."""
    t_len, n_lanes = out.shape
    total = np.zeros(n_lanes)
    v = np.empty(n_lanes)
    nmax = _max_period(ns)
    for i in range(min(nmax - 1, t_len)):
        _load(x, i, v)
        for j in range(n_lanes):
            n = ns[j]
            if i < n - 1:
                total[j] += v[j]
                out[i, j] = NAN
            else:
                out[i, j], total[j] = sma_step(total[j], v[j], _at(x, i - n + 1, j), n)
    for i in range(max(nmax - 1, 0), t_len):
        _load(x, i, v)
        row = out[i]
        for j in range(n_lanes):
            n = ns[j]
            row[j], total[j] = sma_step(total[j], v[j], _at(x, i - n + 1, j), n)


def ema_lanes(x, ns, out):
    """Lanes of `cores.ema_core`: SMA seed of the first n values, then e = v*k + e*(1-k),
    e kept where v == e.

    Steady phase (every lane updating): one row per pass over the lanes, the row's value
    read once as a scalar when the lanes share a series (no per-row lane buffer); into a
    float64 block the state is the row above (the same bits as `prev`), so the pass loads
    that row, k and 1-k and writes one row. Bound by writing the block (4 or 8 bytes per
    lane-step): benchmarks/LOG.md, "Issue 28: the EMA family"."""
    t_len, n_lanes = out.shape
    prev = _zeros_aligned(n_lanes)
    k = _zeros_aligned(n_lanes)
    omk = _zeros_aligned(n_lanes)
    v = np.empty(n_lanes)
    for j in range(n_lanes):
        k[j] = 2.0 / (ns[j] + 1)
        omk[j] = 1.0 - k[j]
    nmax = _max_period(ns)
    for i in range(min(nmax, t_len)):
        _load(x, i, v)
        for j in range(n_lanes):
            n = ns[j]
            if i < n - 1:
                prev[j] += v[j]
                out[i, j] = NAN
            elif i == n - 1:
                prev[j] = (prev[j] + v[j]) / n
                out[i, j] = prev[j]
            else:
                p = ema_step_tied(v[j], prev[j], k[j], omk[j])
                prev[j] = p
                out[i, j] = p
    shared = x.shape[1] == 1
    if out.itemsize == 8:
        # A float64 block holds each lane's state exactly: read it from the row above
        # (row nmax-1 is every lane's seed or update) instead of loading and storing `prev`.
        for i in range(nmax, t_len):
            row = out[i]
            above = out[i - 1]
            if shared:
                vv = np.float64(x[i, 0])
                for j in range(n_lanes):
                    row[j] = ema_step_tied(vv, above[j], k[j], omk[j])
            else:
                xr = x[i]
                for j in range(n_lanes):
                    row[j] = ema_step_tied(np.float64(xr[j]), above[j], k[j], omk[j])
        return
    for i in range(nmax, t_len):
        row = out[i]
        if shared:
            vv = np.float64(x[i, 0])
            for j in range(n_lanes):
                p = ema_step_tied(vv, prev[j], k[j], omk[j])
                prev[j] = p
                row[j] = p
        else:
            xr = x[i]
            for j in range(n_lanes):
                p = ema_step_tied(np.float64(xr[j]), prev[j], k[j], omk[j])
                prev[j] = p
                row[j] = p


@register_jitable
def _load_change(x, t, d):
    """d[j] = lane j's change x[t] - x[t-1] (computed once when the lanes share a series)."""
    if x.shape[1] == 1:
        v = np.float64(x[t, 0]) - np.float64(x[t - 1, 0])
        for j in range(d.shape[0]):
            d[j] = v
    else:
        for j in range(d.shape[0]):
            d[j] = np.float64(x[t, j]) - np.float64(x[t - 1, j])


def rsi_lanes(x, ns, out):
    """Lanes of `cores.rsi_core`: simple-mean seeds of the first n changes, then Wilder
    updates avg = avg*(1 - 1/n) + change*(1/n); RSI = 100*gain/(gain+loss), 0 at 0/0."""
    t_len, n_lanes = out.shape
    gain = np.zeros(n_lanes)
    loss = np.zeros(n_lanes)
    inv = np.empty(n_lanes)
    omn = np.empty(n_lanes)
    dd = np.empty(n_lanes)
    for j in range(n_lanes):
        inv[j] = 1.0 / ns[j]
        omn[j] = 1.0 - inv[j]
    nmax = _max_period(ns)
    for j in range(n_lanes if t_len > 0 else 0):
        out[0, j] = NAN
    for i in range(1, min(nmax + 1, t_len)):
        _load_change(x, i, dd)
        for j in range(n_lanes):
            n = ns[j]
            d = dd[j]
            if i <= n:
                if d < 0:
                    loss[j] -= d
                else:
                    gain[j] += d
                if i < n:
                    out[i, j] = NAN
                else:
                    loss[j] /= n
                    gain[j] /= n
                    out[i, j] = rsi_value(gain[j], loss[j])
            else:
                up, down = gain_loss(d)
                g = wilder_mean(gain[j], up, inv[j], omn[j])
                lo = wilder_mean(loss[j], down, inv[j], omn[j])
                gain[j] = g
                loss[j] = lo
                out[i, j] = rsi_value(g, lo)
    shared = x.shape[1] == 1
    for i in range(max(nmax + 1, 1), t_len):
        row = out[i]
        if shared:  # the change, its up and down parts once per row (no per-row lane buffer)
            up, down = gain_loss(np.float64(x[i, 0]) - np.float64(x[i - 1, 0]))
            for j in range(n_lanes):
                g = wilder_mean(gain[j], up, inv[j], omn[j])
                lo = wilder_mean(loss[j], down, inv[j], omn[j])
                gain[j] = g
                loss[j] = lo
                row[j] = rsi_value(g, lo)
            continue
        _load_change(x, i, dd)
        for j in range(n_lanes):
            up, down = gain_loss(dd[j])
            g = wilder_mean(gain[j], up, inv[j], omn[j])
            lo = wilder_mean(loss[j], down, inv[j], omn[j])
            gain[j] = g
            loss[j] = lo
            row[j] = rsi_value(g, lo)


@register_jitable
def _true_range(h, l, c, i, j):
    return true_range(np.float64(h[i, j]), np.float64(l[i, j]), np.float64(c[i - 1, j]))


@register_jitable
def _load_true_range(h, l, c, t, tr):
    """tr[j] = lane j's true range at row t >= 1 (once when the lanes share a series)."""
    if h.shape[1] == 1:
        v = _true_range(h, l, c, t, 0)
        for j in range(tr.shape[0]):
            tr[j] = v
    else:
        for j in range(tr.shape[0]):
            tr[j] = _true_range(h, l, c, t, j)


def atr_lanes(h, l, c, ns, out):
    """Lanes of `cores.atr_core`: ATR[n] = mean(TR[1..n]), then ATR*(1 - 1/n) + TR*(1/n)."""
    t_len, n_lanes = out.shape
    acc = np.zeros(n_lanes)
    inv = np.empty(n_lanes)
    omn = np.empty(n_lanes)
    trs = np.empty(n_lanes)
    for j in range(n_lanes):
        inv[j] = 1.0 / ns[j]
        omn[j] = 1.0 - inv[j]
    nmax = _max_period(ns)
    for j in range(n_lanes if t_len > 0 else 0):
        out[0, j] = NAN
    for i in range(1, min(nmax + 1, t_len)):
        _load_true_range(h, l, c, i, trs)
        for j in range(n_lanes):
            n = ns[j]
            tr = trs[j]
            if i < n:
                acc[j] += tr
                out[i, j] = NAN
            elif i == n:
                acc[j] = (acc[j] + tr) / n
                out[i, j] = acc[j]
            else:
                acc[j] = wilder_mean(acc[j], tr, inv[j], omn[j])
                out[i, j] = acc[j]
    shared = h.shape[1] == 1
    for i in range(max(nmax + 1, 1), t_len):
        row = out[i]
        if shared:  # the true range once per row (no per-row lane buffer)
            tr = _true_range(h, l, c, i, 0)
            for j in range(n_lanes):
                a = wilder_mean(acc[j], tr, inv[j], omn[j])
                acc[j] = a
                row[j] = a
            continue
        _load_true_range(h, l, c, i, trs)
        for j in range(n_lanes):
            a = wilder_mean(acc[j], trs[j], inv[j], omn[j])
            acc[j] = a
            row[j] = a


@register_jitable
def _dm_tr(h, l, c, i, j):
    """(+DM, -DM, TR) of lane j at row i >= 1, as in dmi_core (`steps.dm_tr`)."""
    return dm_tr(h[i, j], h[i - 1, j], l[i, j], l[i - 1, j], c[i - 1, j])


@register_jitable
def _load_moves(h, l, c, t, dmp, dmm, tr):
    """+DM, -DM and the true range of every lane at row t >= 1 (once for a shared series)."""
    if h.shape[1] == 1:
        p, m, r = _dm_tr(h, l, c, t, 0)
        for j in range(tr.shape[0]):
            dmp[j] = p
            dmm[j] = m
            tr[j] = r
    else:
        for j in range(tr.shape[0]):
            dmp[j], dmm[j], tr[j] = _dm_tr(h, l, c, t, j)


def dmi_lanes(h, l, c, ns, which, out):
    """Lanes of `cores.dmi_core`, one output: which == 0 ADX, 1 +DI, 2 -DI.

    Per lane the Wilder sums, DI, DX and ADX follow dmi_core's order exactly (ADX unchanged
    on rows where TR or +DI + -DI is exactly 0)."""
    t_len, n_lanes = out.shape
    pdm = np.zeros(n_lanes)
    mdm = np.zeros(n_lanes)
    tr_s = np.zeros(n_lanes)
    sum_dx = np.zeros(n_lanes)
    prev_adx = np.zeros(n_lanes)
    inv = np.empty(n_lanes)
    omn = np.empty(n_lanes)
    dmp = np.empty(n_lanes)
    dmm = np.empty(n_lanes)
    trs = np.empty(n_lanes)
    for j in range(n_lanes):
        inv[j] = 1.0 / ns[j]
        omn[j] = 1.0 - inv[j]
    nmax = _max_period(ns)
    steady = 2 * nmax if which == 0 else nmax  # first row where every lane emits its update
    for j in range(n_lanes if t_len > 0 else 0):
        out[0, j] = NAN
    for i in range(1, min(steady, t_len)):
        _load_moves(h, l, c, i, dmp, dmm, trs)
        for j in range(n_lanes):
            n = ns[j]
            if i < n:
                mdm[j] += dmm[j]
                pdm[j] += dmp[j]
                tr_s[j] += trs[j]
                out[i, j] = NAN
                continue
            pdm[j], mdm[j], tr_s[j] = dmi_sums(pdm[j], mdm[j], tr_s[j], dmp[j], dmm[j], trs[j], omn[j])
            if which == 1:
                out[i, j] = di_value(pdm[j], tr_s[j])
                continue
            if which == 2:
                out[i, j] = di_value(mdm[j], tr_s[j])
                continue
            _, _, have_dx, dx = dmi_terms(pdm[j], mdm[j], tr_s[j])
            if i < 2 * n - 1:
                sum_dx[j] += dx
                out[i, j] = NAN
            elif i == 2 * n - 1:
                sum_dx[j] += dx
                prev_adx[j] = sum_dx[j] / n
                out[i, j] = prev_adx[j]
            else:
                if have_dx:
                    prev_adx[j] = wilder_mean(prev_adx[j], dx, inv[j], omn[j])
                out[i, j] = prev_adx[j]
    for i in range(max(steady, 1), t_len):
        _load_moves(h, l, c, i, dmp, dmm, trs)
        row = out[i]
        if which == 1 or which == 2:  # one DI: the loop stays a select a lane (vectorises)
            for j in range(n_lanes):
                ps, ms, ts = dmi_sums(pdm[j], mdm[j], tr_s[j], dmp[j], dmm[j], trs[j], omn[j])
                pdm[j] = ps
                mdm[j] = ms
                tr_s[j] = ts
                row[j] = di_value(ps if which == 1 else ms, ts)
        else:
            for j in range(n_lanes):
                ps, ms, ts = dmi_sums(pdm[j], mdm[j], tr_s[j], dmp[j], dmm[j], trs[j], omn[j])
                mdm[j] = ms
                pdm[j] = ps
                tr_s[j] = ts
                # dx counts only where TR and +DI + -DI are non-zero; elsewhere ADX stays. The
                # divisions are taken for every lane and kept by the select (dmi_terms' branch
                # on TR, or di_value's and dx_value's selects, cost 5-8% here: they keep more
                # of the loop per lane)
                p = di_ratio(ps, ts)
                m = di_ratio(ms, ts)
                have_dx = (ts != 0.0) & (p + m != 0.0)
                a = prev_adx[j]
                a = wilder_mean(a, dx_ratio(p, m), inv[j], omn[j]) if have_dx else a
                prev_adx[j] = a
                row[j] = a


def kama_lanes(x, ns, out):
    """Lanes of `cores.kama_core` (TA-Lib KAMA): the seed at row n as in the single core,
    then the efficiency ratio over n rows and prev = fma(v - prev, sc, prev)."""
    t_len, n_lanes = out.shape
    sum_roc = np.zeros(n_lanes)
    prev = np.zeros(n_lanes)
    trailing = np.zeros(n_lanes)
    nmax = _max_period(ns)
    for i in range(min(nmax + 1, t_len)):
        for j in range(n_lanes):
            n = ns[j]
            if i < n:
                out[i, j] = NAN
            elif i == n:  # kama_core's seed
                s = kama_change_sum(_col(x, j), n, n + 1)
                tr0 = _at(x, 0, j)
                last = _at(x, n, j)
                p = kama_step(last, _at(x, n - 1, j), kama_constant(s, last - tr0))
                sum_roc[j] = s
                trailing[j] = tr0
                prev[j] = p
                out[i, j] = p
            else:
                out[i, j] = _kama_lane(x, i, n, j, sum_roc, trailing, prev)
    for i in range(nmax + 1, t_len):
        row = out[i]
        for j in range(n_lanes):
            row[j] = _kama_lane(x, i, ns[j], j, sum_roc, trailing, prev)


@register_jitable
def _kama_lane(x, i, n, j, sum_roc, trailing, prev):
    """kama_core's row i for lane j, its states in the lane arrays."""
    v = _at(x, i, j)
    tr = _at(x, i - n, j)
    s = kama_roll(sum_roc[j], trailing[j], tr, v, _at(x, i - 1, j))
    sum_roc[j] = s
    trailing[j] = tr
    p = kama_step(v, prev[j], kama_constant(s, v - tr))
    prev[j] = p
    return p


def wma_lanes(x, ns, out):
    """Lanes of `cores.wma_core` (TA-Lib's O(1) WMA update, weights 1..n)."""
    t_len, n_lanes = out.shape
    period_sum = np.zeros(n_lanes)
    period_sub = np.zeros(n_lanes)
    trailing = np.zeros(n_lanes)
    divider = np.empty(n_lanes)
    v = np.empty(n_lanes)
    for j in range(n_lanes):
        divider[j] = (ns[j] * (ns[j] + 1)) // 2
    nmax = _max_period(ns)
    for i in range(min(nmax - 1, t_len)):
        _load(x, i, v)
        for j in range(n_lanes):
            n = ns[j]
            if i < n - 1:
                period_sum[j], period_sub[j] = wma_seed_step(period_sum[j], period_sub[j], v[j], i + 1)
                out[i, j] = NAN
            else:
                out[i, j] = _wma_step(x, i, n, j, v[j], period_sum, period_sub, trailing, divider)
    for i in range(max(nmax - 1, 0), t_len):
        _load(x, i, v)
        row = out[i]
        for j in range(n_lanes):
            row[j] = _wma_step(x, i, ns[j], j, v[j], period_sum, period_sub, trailing, divider)


@register_jitable
def _wma_step(x, i, n, j, v, period_sum, period_sub, trailing, divider):
    """wma_core's row i for lane j (`steps.wma_step`), its states in the lane arrays (the row
    leaving the window is read before the sums are stored, as the loop did before the step)."""
    out, ps, sub = wma_step(period_sum[j], period_sub[j], v, trailing[j], n, divider[j])
    trailing[j] = _at(x, i - n + 1, j)
    period_sum[j] = ps
    period_sub[j] = sub
    return out


@register_jitable
def _dema_warm(xc, n, k, omk, stop, dst):
    """Rows 0..stop-1 of dema_core for one lane (its input column xc, its output column dst): NaN
    to its look 2(n-1), the seed (`steps.ema2_seed`), then `steps.ema_step2` rows; returns the
    state (e1, e2) after row stop-1 (zeros where stop <= look: the lane is NaN throughout)."""
    look = 2 * (n - 1)
    for i in range(min(look, stop)):
        dst[i] = NAN
    if stop <= look:
        return 0.0, 0.0
    e1, e2 = ema2_seed(xc, n, k, omk)
    dst[look] = dema_value(e1, e2)
    for i in range(look + 1, stop):
        e1, e2 = ema_step2(np.float64(xc[i]), e1, e2, k, omk)
        dst[i] = dema_value(e1, e2)
    return e1, e2


def dema_lanes(x, ns, out):
    """Lanes of `cores.dema_core`: 2*EMA - EMA(EMA), the second EMA seeded by the mean of
    the first n EMA values (look = 2(n-1)). Up to the row past the longest look each lane runs
    on its own column (`_dema_warm`: the core's seed and steps, lane by lane, where a row-major
    loop would need a branch a phase); from there a branch-free loop over the lanes."""
    t_len, n_lanes = out.shape
    e1 = np.zeros(n_lanes)
    e2 = np.zeros(n_lanes)
    k = np.empty(n_lanes)
    omk = np.empty(n_lanes)
    for j in range(n_lanes):
        k[j] = 2.0 / (ns[j] + 1)
        omk[j] = 1.0 - k[j]
    steady = min(2 * (_max_period(ns) - 1) + 1, t_len)  # first row past every lane's look
    for j in range(n_lanes):
        e1[j], e2[j] = _dema_warm(_col(x, j), ns[j], k[j], omk[j], steady, out[:, j])
    # two steady loops, one reading the row's value once (a shared series), one a value a lane;
    # the arithmetic of both is the step
    shared = x.shape[1] == 1
    for i in range(steady, t_len):
        row = out[i]
        if shared:
            vv = np.float64(x[i, 0])
            for j in range(n_lanes):
                a, b = ema_step2(vv, e1[j], e2[j], k[j], omk[j])
                e1[j] = a
                e2[j] = b
                row[j] = dema_value(a, b)
        else:
            xr = x[i]
            for j in range(n_lanes):
                a, b = ema_step2(np.float64(xr[j]), e1[j], e2[j], k[j], omk[j])
                e1[j] = a
                e2[j] = b
                row[j] = dema_value(a, b)


@register_jitable
def _tema_warm(xc, n, k, omk, stop, dst):
    """Rows 0..stop-1 of tema_core for one lane, as `_dema_warm`: NaN to its look 3(n-1), the
    seed (`steps.ema3_seed`), then `steps.ema_step3` rows; returns (e1, e2, e3) after row stop-1."""
    look = 3 * (n - 1)
    for i in range(min(look, stop)):
        dst[i] = NAN
    if stop <= look:
        return 0.0, 0.0, 0.0
    e1, e2, e3 = ema3_seed(xc, n, k, omk)
    dst[look] = tema_value(e1, e2, e3)
    for i in range(look + 1, stop):
        e1, e2, e3 = ema_step3(np.float64(xc[i]), e1, e2, e3, k, omk)
        dst[i] = tema_value(e1, e2, e3)
    return e1, e2, e3


def tema_lanes(x, ns, out):
    """Lanes of `cores.tema_core`: 3*EMA1 - 3*EMA2 + EMA3, EMA2 seeded at row 2n-2 and EMA3
    at row 3(n-1) by the means of the first n values of their inputs; each lane on its own
    column up to the row past the longest look (`_tema_warm`), then a branch-free loop over
    the lanes (two, as dema_lanes)."""
    t_len, n_lanes = out.shape
    e1 = np.zeros(n_lanes)
    e2 = np.zeros(n_lanes)
    e3 = np.zeros(n_lanes)
    k = np.empty(n_lanes)
    omk = np.empty(n_lanes)
    for j in range(n_lanes):
        k[j] = 2.0 / (ns[j] + 1)
        omk[j] = 1.0 - k[j]
    steady = min(3 * (_max_period(ns) - 1) + 1, t_len)  # first row past every lane's look
    for j in range(n_lanes):
        e1[j], e2[j], e3[j] = _tema_warm(_col(x, j), ns[j], k[j], omk[j], steady, out[:, j])
    shared = x.shape[1] == 1
    for i in range(steady, t_len):
        row = out[i]
        if shared:
            vv = np.float64(x[i, 0])
            for j in range(n_lanes):
                a, b, c = ema_step3(vv, e1[j], e2[j], e3[j], k[j], omk[j])
                e1[j] = a
                e2[j] = b
                e3[j] = c
                row[j] = tema_value(a, b, c)
        else:
            xr = x[i]
            for j in range(n_lanes):
                a, b, c = ema_step3(np.float64(xr[j]), e1[j], e2[j], e3[j], k[j], omk[j])
                e1[j] = a
                e2[j] = b
                e3[j] = c
                row[j] = tema_value(a, b, c)


def lsma_lanes(x, ns, out):
    """Lanes of `cores.lsma_core` (TA-Lib LINEARREG with the rolling Sy, Sty of the core)."""
    t_len, n_lanes = out.shape
    sy = np.zeros(n_lanes)
    sty = np.zeros(n_lanes)
    v = np.empty(n_lanes)
    for i in range(t_len):
        _load(x, i, v)
        for j in range(n_lanes):
            n = ns[j]
            if i <= n - 1:
                sy[j], sty[j] = lsma_seed_step(sy[j], sty[j], v[j], i)
                if i < n - 1:
                    out[i, j] = NAN
                    continue
            else:
                sy[j], sty[j] = lsma_roll(sy[j], sty[j], _at(x, i - n, j), v[j], n)
            st, divisor = lsma_constants(n)
            out[i, j] = lsma_value(sy[j], sty[j], n, st, divisor)


def moments_lanes(x, ns, zscore, out):
    """Lanes of `cores.moments_core`: zscore == 0 the rolling standard deviation, 1 the
    z-score, with the core's anchor re-set every n rows per lane."""
    t_len, n_lanes = out.shape
    s1 = np.zeros(n_lanes)
    s2 = np.zeros(n_lanes)
    anchor = np.empty(n_lanes)
    next_start = np.empty(n_lanes, dtype=np.int64)
    v = np.empty(n_lanes)
    if t_len > 0:
        _load(x, 0, anchor)
    for j in range(n_lanes):
        next_start[j] = ns[j]
    for i in range(t_len):
        _load(x, i, v)
        for j in range(n_lanes):
            n = ns[j]
            if i < n - 1:
                s1[j], s2[j] = moments_add(s1[j], s2[j], v[j] - anchor[j])
                out[i, j] = NAN
                continue
            start = i - n + 1
            if start == next_start[j]:
                next_start[j] += n
                anchor[j] = _at(x, start, j)
                s1[j], s2[j] = anchored_sums(_col(x, j), start, i, anchor[j])
            d = v[j] - anchor[j]
            a, b = moments_add(s1[j], s2[j], d)
            mean1, var = moments_var(a, b, 1.0 / n)
            s1[j], s2[j] = moments_drop(a, b, _at(x, start, j) - anchor[j])
            out[i, j] = moments_out(d - mean1, var, zscore)
