"""ATC per-series cores, written once: plain Python loops compiled by `kernels.atc.cpu`
(numba.njit) and by `kernels.atc.cuda` (numba.cuda device functions), and callable as
they are (the CUDA simulator, `kernels.atc.stream`).

Contract: every core works on one series (1-D arrays of length T), writes into
preallocated outputs, allocates nothing and computes in float64 (every element read that
meets another goes through np.float64, as in `kernels.indicators.cores`). The formulas and the
interpretation decisions are those of the `kernels.atc` package docstring.

- `kama_step`: one Pine KAMA update (efficiency ratio -> smoothing constant -> new value),
  the single definition used by `kama_pine_core` (batch, cpu and cuda) and by
  `kernels.atc.stream.PineKAMAUpdater` (one bar at a time).
- `kama_pine_core`: the Pine-style KAMA over a series, with Pine v5's warm-up: bars
  0..L-1: noise is na in Pine, the ternary yields 0, so KAMA starts at 0 and moves by
  slow^2 per bar (kama[0] = 0.064^2 * x[0]); from bar L the efficiency ratio applies.
  It has a value on every bar (no NaN warm-up, unlike the other MAs).
- `ma`: the MA of a family index (FAMILIES order: EMA, "HMA" = SMA, WMA, DEMA, LSMA, KAMA),
  the one dispatch over the MA kinds; EMA..LSMA are the TA-Lib cores of `kernels.indicators.cores`.
- `returns_core`, `layer1_core`, `family_finish_core`, `layer2_core`, `final_core`: the
  two layers of the indicator. `layer1_step` is one bar of one MA in layer 1, shared by
  `layer1_core` (one MA a pass: cuda, one thread per symbol) and `layer1_family_core` (a
  family's nine MAs a pass, the same sums in the same order: cpu, where one MA's equity
  recursion alone leaves the core waiting on multiply latency).
- `kama_pine_lanes`: the KAMA family's lengths in one pass (cpu), each lane bit for bit
  `kama_pine_core`.

Cores that other cores call (`kama_step`, `kama_pine_core`, `layer1_step` and the `kernels.indicators.cores` MAs used
by `ma`) are registered with numba's `register_jitable`: the function itself is returned
unchanged (plain Python stays plain Python) and compiled code of either target (njit or
cuda, numba's "generic" overload target) compiles the call in. Only `math`, NumPy scalars
and the constants of `kernels.atc.params` are used, so the cores run the same under the CUDA simulator.
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable

from kernels.indicators import cores as _ta
from kernels.atc.params import CUT_LEVEL, EQUITY_FLOOR, KAMA_FAST, KAMA_SLOW

NAN = float("nan")

# The TA-Lib MA cores `ma` dispatches to, made callable from compiled ATC cores.
ema_core = register_jitable(_ta.ema_core)
sma_core = register_jitable(_ta.sma_core)
wma_core = register_jitable(_ta.wma_core)
dema_core = register_jitable(_ta.dema_core)
lsma_core = register_jitable(_ta.lsma_core)


@register_jitable
def kama_step(prev, x, x_n, noise):
    """One Pine KAMA update, returns the new value:
    ER = |x - x_n| / noise (x_n: the value n bars back; noise: sum of |x[i] - x[i-1]| over
    the last n bars), 0 when noise is 0 (a flat window), at most 1 (a rolled noise sum can
    drift an ulp below the change on a monotone window);
    sc = (ER*(KAMA_FAST - KAMA_SLOW) + KAMA_SLOW)^2;  kama = prev + sc*(x - prev).
    noise = NaN stands for Pine's na (bars 0..n-1, where the window of `math.sum` reaches
    before bar 0): `noise != 0 ? signal/noise : 0` with an na condition takes the else
    branch, so ER = 0 (sc = KAMA_SLOW^2) whatever x_n is; here `noise > 0.0` is false for NaN.
    Arguments are float64 (Python floats or NumPy float64 scalars)."""
    if noise > 0.0:  # false for 0 (a flat window) and for NaN (Pine's na)
        er = math.fabs(x - x_n) / noise
        if er > 1.0:
            er = 1.0
    else:
        er = 0.0
    sc = er * (KAMA_FAST - KAMA_SLOW) + KAMA_SLOW
    sc = sc * sc
    return prev + sc * (x - prev)


@register_jitable
def kama_pine_core(x, n, out):
    """Pine-style KAMA (see the package docstring), a value on every bar:
    bars 0..n-1: noise is na in Pine, the ternary yields 0, so KAMA starts at 0 and moves by
    slow^2 per bar (kama[0] = KAMA_SLOW^2 * x[0]: nz(KAMA[1]) is 0 on bar 0, then
    kama[t] = kama[t-1] + KAMA_SLOW^2 * (x[t] - kama[t-1])); from bar n the efficiency
    ratio applies (noise and x[t-n] both exist from bar n on). The noise sum is rolled
    (add the new move, then remove the one that left the window)."""
    t_len = x.shape[0]
    prev = 0.0  # nz(KAMA[1]) on bar 0
    for t in range(min(n, t_len)):
        prev = kama_step(prev, np.float64(x[t]), NAN, NAN)  # noise na: ratio 0
        out[t] = prev
    if t_len <= n:
        return
    noise = 0.0
    for i in range(1, n + 1):
        noise += math.fabs(np.float64(x[i]) - np.float64(x[i - 1]))
    for t in range(n, t_len):
        v = np.float64(x[t])
        if t > n:
            noise += math.fabs(v - np.float64(x[t - 1]))
            noise -= math.fabs(np.float64(x[t - n]) - np.float64(x[t - n - 1]))
        prev = kama_step(prev, v, np.float64(x[t - n]), noise)
        out[t] = prev


def ma(kind, x, n, out):
    """MA of family index `kind` (FAMILIES order) and length n of x into out."""
    if kind == 0:
        ema_core(x, n, out)
    elif kind == 1:
        sma_core(x, n, out)
    elif kind == 2:
        wma_core(x, n, out)
    elif kind == 3:
        dema_core(x, n, out)
    elif kind == 4:
        lsma_core(x, n, out)
    else:
        kama_pine_core(x, n, out)


def returns_core(x, growth, r):
    """r[t] = (x[t]/x[t-1] - 1) * growth[t] (growth = exp(lam*(t - cutout))); r[0] = NaN."""
    t_len = x.shape[0]
    if t_len > 0:
        r[0] = NAN
    for t in range(1, t_len):
        r[t] = (np.float64(x[t]) / np.float64(x[t - 1]) - 1.0) * np.float64(growth[t])


@register_jitable
def layer1_step(t, cutout, v, pv, m, pm, rt, d, sig, a, e):
    """Bar t of one MA in layer 1, returns the new (sig, a, e): v, pv the close at t and
    t-1, m, pm the MA at t and t-1, rt = r[t] (pv, pm, rt are not read at t = 0).
    a follows the previous bar's signal (sig is -1, 0 or +1, so sig*rt is rt or -rt
    exactly; 0 keeps a); the signal changes on a cross (a comparison with NaN is false);
    the equity starts at 1 on the cutout bar (or after a NaN), then e*d*(1 + a), floored.
    The comparisons are combined with `&`, not `and`: the same truth values, without a
    branch per comparison."""
    if t >= 1:
        if sig != 0.0:  # the previous bar's signal
            a = sig * rt
        over = (v > m) & (pv <= pm)
        under = (v < m) & (pv >= pm)
        if over:
            sig = 1.0
        elif under:
            sig = -1.0
    if t >= cutout:
        if math.isnan(e):
            e = 1.0
        else:
            e = (e * d) * (1.0 + a)
        if e < EQUITY_FLOOR:
            e = EQUITY_FLOOR
    return sig, a, e


def layer1_core(x, ma, r, d, cutout, nom, den):
    """One MA of layer 1: its cross signal s and equity e (start 1, decay multiplier d);
    adds s[t]*e[t] to nom[t] and e[t] to den[t]."""
    t_len = x.shape[0]
    sig = 0.0
    a = 0.0
    e = NAN
    pv = NAN
    pm = NAN
    rt = NAN
    for t in range(t_len):
        v = np.float64(x[t])
        m = np.float64(ma[t])
        if t >= 1:
            rt = np.float64(r[t])
        sig, a, e = layer1_step(t, cutout, v, pv, m, pm, rt, d, sig, a, e)
        nom[t] = nom[t] + sig * e
        den[t] = den[t] + e
        pv = v
        pm = m


def layer1_family_core(x, mas, r, d, cutout, nom, den):
    """A family's nine MAs (rows of mas [9, T], any strides) of layer 1 in one pass over the
    bars: the same operations as layer1_core on mas[0], ..., mas[8] in turn, and the same
    sums (nom[t] and den[t] get MA 0's addend, then 1's, ..., then 8's). The nine equity
    recursions are independent, so the CPU overlaps them (one alone waits on its own
    multiply latency every bar), and nom/den are read and written once per bar, not once
    per MA (500 x 2,000, one thread, nine MA rows per family: 78.6 -> 72.1 ms for the
    six families against three MAs a pass)."""
    t_len = x.shape[0]
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = s8 = 0.0
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = 0.0
    e0 = e1 = e2 = e3 = e4 = e5 = e6 = e7 = e8 = NAN
    p0 = p1 = p2 = p3 = p4 = p5 = p6 = p7 = p8 = NAN
    pv = NAN
    rt = NAN
    for t in range(t_len):
        v = np.float64(x[t])
        m0 = np.float64(mas[0, t])
        m1 = np.float64(mas[1, t])
        m2 = np.float64(mas[2, t])
        m3 = np.float64(mas[3, t])
        m4 = np.float64(mas[4, t])
        m5 = np.float64(mas[5, t])
        m6 = np.float64(mas[6, t])
        m7 = np.float64(mas[7, t])
        m8 = np.float64(mas[8, t])
        if t >= 1:
            rt = np.float64(r[t])
        s0, a0, e0 = layer1_step(t, cutout, v, pv, m0, p0, rt, d, s0, a0, e0)
        s1, a1, e1 = layer1_step(t, cutout, v, pv, m1, p1, rt, d, s1, a1, e1)
        s2, a2, e2 = layer1_step(t, cutout, v, pv, m2, p2, rt, d, s2, a2, e2)
        s3, a3, e3 = layer1_step(t, cutout, v, pv, m3, p3, rt, d, s3, a3, e3)
        s4, a4, e4 = layer1_step(t, cutout, v, pv, m4, p4, rt, d, s4, a4, e4)
        s5, a5, e5 = layer1_step(t, cutout, v, pv, m5, p5, rt, d, s5, a5, e5)
        s6, a6, e6 = layer1_step(t, cutout, v, pv, m6, p6, rt, d, s6, a6, e6)
        s7, a7, e7 = layer1_step(t, cutout, v, pv, m7, p7, rt, d, s7, a7, e7)
        s8, a8, e8 = layer1_step(t, cutout, v, pv, m8, p8, rt, d, s8, a8, e8)
        nom[t] = ((((((((nom[t] + s0 * e0) + s1 * e1) + s2 * e2) + s3 * e3) + s4 * e4) + s5 * e5) + s6 * e6)
                  + s7 * e7) + s8 * e8
        den[t] = ((((((((den[t] + e0) + e1) + e2) + e3) + e4) + e5) + e6) + e7) + e8
        pv = v
        p0 = m0
        p1 = m1
        p2 = m2
        p3 = m3
        p4 = m4
        p5 = m5
        p6 = m6
        p7 = m7
        p8 = m8


def kama_pine_lanes(x, ns, out, prev, noise):
    """`kama_pine_core` for the lengths ns in one pass over the bars: out [T, len(ns)]
    time-major, lane j bit for bit kama_pine_core(x, ns[j]) (the same noise sums in the
    same order: accumulated bar by bar through bar n, then rolled). `prev` and `noise`
    are scratch of len(ns). The independent lanes overlap each other's KAMA latency (500
    x 2,000 x 9 lengths: 18.0 -> 14.7 ms on one thread)."""
    t_len, n_lanes = out.shape
    nmax = 0
    for j in range(n_lanes):
        prev[j] = 0.0  # nz(KAMA[1]) on bar 0
        noise[j] = 0.0
        nmax = max(nmax, ns[j])
    for t in range(min(nmax + 1, t_len)):  # warm-up: each lane in its own phase
        v = np.float64(x[t])
        d = math.fabs(v - np.float64(x[t - 1])) if t >= 1 else 0.0
        for j in range(n_lanes):
            n = ns[j]
            if t < n:
                if t >= 1:
                    noise[j] += d
                prev[j] = kama_step(prev[j], v, NAN, NAN)  # noise na: ratio 0
            else:
                noise[j] += d
                if t > n:
                    noise[j] -= math.fabs(np.float64(x[t - n]) - np.float64(x[t - n - 1]))
                prev[j] = kama_step(prev[j], v, np.float64(x[t - n]), noise[j])
            out[t, j] = prev[j]
    for t in range(nmax + 1, t_len):
        v = np.float64(x[t])
        d = math.fabs(v - np.float64(x[t - 1]))
        for j in range(n_lanes):
            n = ns[j]
            xn = np.float64(x[t - n])
            noise[j] = (noise[j] + d) - math.fabs(xn - np.float64(x[t - n - 1]))
            prev[j] = kama_step(prev[j], v, xn, noise[j])
            out[t, j] = prev[j]


def family_finish_core(nom, den, out):
    """out[t] = round(nom[t]/den[t], 2), half away from zero; `out` may be `nom`."""
    for t in range(nom.shape[0]):
        q = nom[t] / den[t]
        if math.isnan(q):
            out[t] = NAN
        else:
            y = math.floor(math.fabs(q) * 100.0 + 0.5) / 100.0
            out[t] = y if q >= 0.0 else -y


def layer2_core(fam, r, d, cutout, start, fnom, fden):
    """One family of layer 2: the equity E driven by its signal (start = family weight);
    adds Cut(fam[t])*E[t] to fnom[t] and E[t] to fden[t]."""
    t_len = fam.shape[0]
    a = 0.0
    e = NAN
    for t in range(t_len):
        if t >= 1:
            sp = fam[t - 1]
            if sp > 0.0:
                a = np.float64(r[t])
            elif sp < 0.0:
                a = -np.float64(r[t])
        if t >= cutout:
            if math.isnan(e):
                e = start
            else:
                e = (e * d) * (1.0 + a)
            if e < EQUITY_FLOOR:
                e = EQUITY_FLOOR
        s = fam[t]
        c = 1.0 if s > CUT_LEVEL else (-1.0 if s < -CUT_LEVEL else 0.0)
        fnom[t] = fnom[t] + c * e
        fden[t] = fden[t] + e


def final_core(fnom, fden, out):
    """out[t] = fnom[t]/fden[t]."""
    for t in range(fnom.shape[0]):
        out[t] = fnom[t] / fden[t]
