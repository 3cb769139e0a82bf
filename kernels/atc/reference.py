"""Adaptive Trend Classification: a plain NumPy/Python reference, one series, bar by bar.

This module follows the formulas of `kernels.atc` (see its docstring for every
interpretation decision) line by line with explicit loops and no compiled code, so the
optimised kernels (cpu numba, cuda, torch) can be tested against it. It is slow on purpose:
every moving average is recomputed from its window at every bar (no rolling sums).

Everything is float64. Inputs are 1-D close series; run it per symbol for a batch.
"""

from __future__ import annotations

import math

import numpy as np

FAMILIES = ("EMA", "HMA", "WMA", "DEMA", "LSMA", "KAMA")
OFFSETS = {"Narrow": (1, 2, 3, 4), "Medium": (1, 2, 4, 6), "Wide": (1, 3, 5, 7)}
KAMA_FAST = 0.666
KAMA_SLOW = 0.064
EQUITY_FLOOR = 0.25
CUT_LEVEL = 0.49


# ---------------------------------------------------------------------------------------
# Moving averages (NaN during warm-up), recomputed from their windows at every bar
# ---------------------------------------------------------------------------------------


def sma(x: np.ndarray, n: int) -> np.ndarray:
    """Mean of the last n closes (first value at n-1). The original's "HMA" is this."""
    out = np.full(len(x), np.nan)
    for t in range(n - 1, len(x)):
        out[t] = sum(x[t - n + 1 : t + 1]) / n
    return out


def ema(x: np.ndarray, n: int) -> np.ndarray:
    """EMA with k = 2/(n+1), seeded at bar n-1 with the mean of the first n values, updated
    in TA-Lib's form prev + k*(x - prev): exact on a constant series (Pine's
    k*x + (1-k)*prev jitters there by an ulp, which would make crosses out of nothing)."""
    out = np.full(len(x), np.nan)
    if len(x) < n:
        return out
    k = 2.0 / (n + 1)
    out[n - 1] = sum(x[:n]) / n
    for t in range(n, len(x)):
        out[t] = out[t - 1] + k * (x[t] - out[t - 1])
    return out


def wma(x: np.ndarray, n: int) -> np.ndarray:
    """Weights 1..n, newest heaviest, divided by n(n+1)/2."""
    out = np.full(len(x), np.nan)
    weights = np.arange(1, n + 1, dtype=np.float64)
    for t in range(n - 1, len(x)):
        out[t] = float(np.dot(weights, x[t - n + 1 : t + 1])) / (n * (n + 1) / 2)
    return out


def dema(x: np.ndarray, n: int) -> np.ndarray:
    """2*EMA(x) - EMA(EMA(x)); the outer EMA runs over the valid part of the inner one
    (seeded by the mean of its first n values), so the first value is at 2(n-1)."""
    out = np.full(len(x), np.nan)
    e1 = ema(x, n)
    if len(x) < n:
        return out
    e2 = np.full(len(x), np.nan)
    e2[n - 1 :] = ema(e1[n - 1 :], n)
    for t in range(len(x)):
        out[t] = 2.0 * e1[t] - e2[t]
    return out


def lsma(x: np.ndarray, n: int) -> np.ndarray:
    """Least-squares line through the last n closes, evaluated at the newest (linreg, offset 0)."""
    out = np.full(len(x), np.nan)
    idx = np.arange(n, dtype=np.float64)
    i_mean = idx.mean()
    for t in range(n - 1, len(x)):
        y = x[t - n + 1 : t + 1]
        y_mean = sum(y) / n
        slope = sum((idx - i_mean) * (y - y_mean)) / sum((idx - i_mean) ** 2)
        out[t] = y_mean + slope * (n - 1 - i_mean)
    return out


def _na_sum(values: list) -> float:
    """Pine's math.sum over a window: na (NaN) if any value in it is na."""
    return math.nan if any(math.isnan(v) for v in values) else sum(values)


def kama(x: np.ndarray, n: int) -> np.ndarray:
    """Pine-style KAMA, the script's lines run bar by bar with na as NaN:
        noise  = math.sum(math.abs(source - source[1]), n)   (na while the window holds
                 bar 0's move, whose source[1] is na, or reaches before bar 0: bars 0..n-1)
        signal = math.abs(source - source[n])                 (na on bars 0..n-1)
        ratio  = noise != 0 ? signal / noise : 0              (an na condition is not true:
                 ratio 0 on bars 0..n-1; capped at 1 here, a no-op on a recomputed sum)
        smooth = (ratio*(0.666 - 0.064) + 0.064)^2
        KAMA  := nz(KAMA[1]) + smooth * (source - nz(KAMA[1]))   (KAMA[1] is na on bar 0)
    So kama[0] = 0.064^2 * x[0], the first n bars move by 0.064^2 a bar, and the
    efficiency ratio applies from bar n. No NaN anywhere."""
    t_len = len(x)
    move = [math.nan] + [abs(float(x[i]) - float(x[i - 1])) for i in range(1, t_len)]  # |source - source[1]|
    out = np.empty(t_len)
    kama_prev = math.nan  # KAMA[1] on bar 0
    for t in range(t_len):
        window = [move[i] if i >= 0 else math.nan for i in range(t - n + 1, t + 1)]
        noise = _na_sum(window)
        signal = abs(float(x[t]) - float(x[t - n])) if t - n >= 0 else math.nan
        condition = (not math.isnan(noise)) and noise != 0.0  # na != 0 is not true in Pine
        ratio = min(signal / noise, 1.0) if condition else 0.0
        smooth = (ratio * (KAMA_FAST - KAMA_SLOW) + KAMA_SLOW) ** 2
        base = 0.0 if math.isnan(kama_prev) else kama_prev  # nz(KAMA[1])
        out[t] = base + smooth * (float(x[t]) - base)
        kama_prev = out[t]
    return out


MA_FUNCTIONS = {"EMA": ema, "HMA": sma, "WMA": wma, "DEMA": dema, "LSMA": lsma, "KAMA": kama}


def ma_lengths(length: int, robustness: str = "Medium") -> tuple[int, ...]:
    """The nine lengths of one family, in summation order: L, L+a1..L+a4, L-a1..L-a4."""
    offs = OFFSETS[robustness]
    return (length, *(length + a for a in offs), *(length - a for a in offs))


# ---------------------------------------------------------------------------------------
# Signals and equity curves
# ---------------------------------------------------------------------------------------


def crossover_signal(close: np.ndarray, ma: np.ndarray) -> np.ndarray:
    """+1 from a bar where close crosses over ma, -1 from a cross under, else unchanged (0 at
    first). Over: close[t] > ma[t] and close[t-1] <= ma[t-1]; under mirrored. A NaN on
    either bar makes the comparisons false, so nothing changes there."""
    sig = np.zeros(len(close))
    state = 0.0
    for t in range(1, len(close)):
        if close[t] > ma[t] and close[t - 1] <= ma[t - 1]:
            state = 1.0
        elif close[t] < ma[t] and close[t - 1] >= ma[t - 1]:
            state = -1.0
        sig[t] = state
    return sig


def scaled_returns(close: np.ndarray, lam: float, cutout: int) -> np.ndarray:
    """r[t] = (close[t]/close[t-1] - 1) * exp(lam*(t - cutout)), lam already scaled (/1000);
    r[0] = NaN (no previous close)."""
    growth = np.exp(lam * (np.arange(len(close), dtype=np.float64) - cutout))
    r = np.full(len(close), np.nan)
    for t in range(1, len(close)):
        r[t] = (close[t] / close[t - 1] - 1.0) * growth[t]
    return r


def equity_curve(start: float, sig: np.ndarray, r: np.ndarray, decay: float, cutout: int) -> np.ndarray:
    """Pine's eq(): a = r if sig[t-1] > 0, -r if sig[t-1] < 0, else a keeps its value (0 at
    first); e = start at the cutout bar (and on the bar after a NaN equity), then
    e = (e[t-1] * (1 - decay)) * (1 + a), floored at 0.25; NaN before the cutout.
    `decay` already scaled (/100)."""
    t_len = len(sig)
    e = np.full(t_len, np.nan)
    d = 1.0 - decay
    a = 0.0
    for t in range(t_len):
        if t >= 1:
            if sig[t - 1] > 0:
                a = r[t]
            elif sig[t - 1] < 0:
                a = -r[t]
        if t < cutout:
            continue
        if t == 0 or math.isnan(e[t - 1]):
            e[t] = start
        else:
            e[t] = (e[t - 1] * d) * (1.0 + a)
        if e[t] < EQUITY_FLOOR:
            e[t] = EQUITY_FLOOR
    return e


def round_half_away(v: float, digits: int = 2) -> float:
    """Round to `digits` decimals, ties away from zero (the tie is judged on |v|*10^digits
    in float64); NaN stays NaN."""
    if math.isnan(v):
        return math.nan
    scale = 10.0**digits
    y = math.floor(abs(v) * scale + 0.5) / scale
    return y if v >= 0 else -y


def cut(v: float) -> float:
    """1 above 0.49, -1 below -0.49, else 0 (NaN gives 0)."""
    if v > CUT_LEVEL:
        return 1.0
    if v < -CUT_LEVEL:
        return -1.0
    return 0.0


# ---------------------------------------------------------------------------------------
# The two layers
# ---------------------------------------------------------------------------------------


def _per_family(value, default):
    if value is None:
        return {f: default for f in FAMILIES}
    if isinstance(value, dict):
        return {f: value.get(f, default) for f in FAMILIES}
    return {f: value for f in FAMILIES}


def compute(close, *, robustness="Medium", length=28, lam=0.02, decay=0.03, cutout=0, weights=None):
    """(family signals {family: array}, final average signal array) for one series.
    lam and decay as typed in the original's inputs (scaled here: /1000 and /100)."""
    close = np.asarray(close, dtype=np.float64)
    t_len = len(close)
    lengths = _per_family(length, 28)
    starts = _per_family(weights, 1.0)
    lam_s = lam / 1000.0
    decay_s = decay / 100.0
    r = scaled_returns(close, lam_s, cutout)

    families = {}
    for fam in FAMILIES:
        nom = np.zeros(t_len)
        den = np.zeros(t_len)
        for n in ma_lengths(int(lengths[fam]), robustness):
            ma = MA_FUNCTIONS[fam](close, n)
            sig = crossover_signal(close, ma)
            e = equity_curve(1.0, sig, r, decay_s, cutout)
            for t in range(t_len):
                nom[t] = nom[t] + sig[t] * e[t]
                den[t] = den[t] + e[t]
        families[fam] = np.array([round_half_away(nom[t] / den[t], 2) for t in range(t_len)])

    fnom = np.zeros(t_len)
    fden = np.zeros(t_len)
    for fam in FAMILIES:
        s = families[fam]
        e = equity_curve(float(starts[fam]), s, r, decay_s, cutout)
        for t in range(t_len):
            fnom[t] = fnom[t] + cut(s[t]) * e[t]
            fden[t] = fden[t] + e[t]
    final = fnom / fden
    return families, final


def average_signal(close, *, robustness="Medium", length=28, lam=0.02, decay=0.03, cutout=0, weights=None):
    """The final Average Signal, float64, NaN before the cutout."""
    return compute(close, robustness=robustness, length=length, lam=lam, decay=decay, cutout=cutout, weights=weights)[1]


def family_signals(close, *, robustness="Medium", length=28, lam=0.02, decay=0.03, cutout=0, weights=None):
    """{family: layer-1 family signal}, float64, NaN before the cutout."""
    return compute(close, robustness=robustness, length=length, lam=lam, decay=decay, cutout=cutout, weights=weights)[0]
