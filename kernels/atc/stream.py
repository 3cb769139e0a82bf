"""Adaptive Trend Classification, streaming: one close in, the final value out, exact and
O(1) per bar (the live path's `atc` specialist; kernels.indicators.streaming.SymbolStream builds it
through `StreamCalls.updater`).

Every moving average ATC uses has an O(1) updater: EMA (kernels.indicators.updaters.EMAUpdater), its
"HMA" which is an SMA (SMAUpdater), WMA, DEMA, LSMA (LINEARREG) and the Pine-style KAMA
(`PineKAMAUpdater`, here). Layer 1 (cross signal and equity per MA), the rounded family
signal and layer 2 (equity per family, Cut, final ratio) are recursions over the previous
bar's state, so each bar costs 54 MA updates + 54 + 6 equity steps whatever the history
length. The equity's return is scaled by growth[t] = exp(lam*(t - cutout)) of the ABSOLUTE
bar index t: the stream counts bars from the symbol's first stored bar, exactly as the
batch kernel indexes the whole history. growth[t] is evaluated as
`kernels.atc.AtcParams.growth` evaluates it (NumPy's exp of lam * (float64(t) - cutout);
exp is elementwise, so a block of 1,024 bars at a time gives the same float64 numbers),
keeping the state O(1) in size. Consequence: a stream must start at the symbol's first
stored bar; a stream started later gives a different (equally valid, but not the stored)
ATC. tests/kernels/test_streaming.py checks both updaters against the batch kernels.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from kernels.atc.cores import kama_step
from kernels.atc.params import CUT_LEVEL, EQUITY_FLOOR, FAMILIES, AtcParams
from kernels.indicators.updaters import DEMAUpdater, EMAUpdater, LSMAUpdater, SMAUpdater, Updater, WMAUpdater

__all__ = ["ATCUpdater", "PineKAMAUpdater"]

NAN = math.nan


class PineKAMAUpdater(Updater):
    """ATC's Pine-style KAMA (kernels.atc.cores.kama_pine_core): noise = sum of |x[i] - x[i-1]|
    over the last n bars, ER = |x - x[t-n]| / noise (0 when noise is 0, at most 1),
    sc = (ER*(0.666 - 0.064) + 0.064)^2, kama = kama + sc*(x - kama) from 0 (Pine's
    nz(KAMA[1]) on bar 0). A value from the first bar on (lookback 0): bars 0..n-1: noise is
    na in Pine, the ternary yields 0, so KAMA starts at 0 and moves by slow^2 per bar
    (kama[0] = 0.064^2 * x[0]); from bar n the efficiency ratio applies. The noise sum is
    rolled as the core rolls it (add the new move, then remove the one that left) and the
    update is the core's own `kama_step` (noise NaN = na on the first n bars), so the values
    are the core's bit for bit."""

    def __init__(self, n: int) -> None:
        super().__init__()
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"period must be an integer >= 1, got {n!r}")
        self.n = int(n)
        self.lookback = 0
        self._window: deque[float] = deque(maxlen=self.n + 1)  # x[t-n-1..t-1] before the append
        self._noise = 0.0
        self._kama = 0.0

    def update(self, x) -> float:
        x = float(x)
        n = self.n
        t = self._count
        self._count += 1
        w = self._window
        if t >= 1:
            if t <= n:
                self._noise += math.fabs(x - w[-1])
            else:
                self._noise += math.fabs(x - w[-1])
                self._noise -= math.fabs(w[1] - w[0])  # |x[t-n] - x[t-n-1]|
        w.append(x)
        if t < n:  # noise na: ratio 0
            self._kama = kama_step(self._kama, x, NAN, NAN)
        else:
            self._kama = kama_step(self._kama, x, w[-1 - n], self._noise)  # w[-1 - n] = x[t-n]
        self.value = self._kama
        return self._kama


class ATCUpdater(Updater):
    """Adaptive Trend Classification (`kernels.atc.average_signal`, cpu backend), one close
    at a time, exact: update(close) returns the final value (float64; the batch API's
    float32 output is its rounding), `families` holds the six layer-1 family signals.

    Per MA j (54: six families x nine lengths, the batch bank's order) the state is the MA
    updater, the cross signal s_j, the last held return a_j and the equity e_j; per family f
    the layer-2 a_f, E_f and the previous family signal. With r[t] = (x[t]/x[t-1] - 1) *
    growth[t], growth[t] = exp(lam*(t - cutout)) and d = 1 - decay:
        a_j = +-r[t] by s_j[t-1] (kept when s_j[t-1] == 0); s_j from the crosses of x and MA_j;
        e_j = 1 at t == cutout, then max((e_j*d)*(1 + a_j), 0.25); NaN before the cutout
        family_f = round2(sum s_j*e_j / sum e_j) (half away from zero) over its nine MAs
        E_f likewise from family_f[t-1], starting at weights[f]
        final = sum Cut(family_f)*E_f / sum E_f,  Cut(q) = sign(q) if |q| > 0.49 else 0
    Sums are accumulated from 0.0 in the batch kernel's order, so every value is the
    kernel's bit for bit (tests/kernels/test_streaming.py)."""

    _GROWTH_BLOCK = 1024

    def __init__(self, *, robustness: str = "Medium", length=28, lam: float = 0.02, decay: float = 0.03,
                 cutout: int = 0, weights=None) -> None:
        super().__init__()
        p = AtcParams(robustness, length, lam, decay, cutout, weights)
        self._params = p
        self.lookback = int(cutout)
        self._d = float(p.d)
        self._cutout = int(p.cutout)
        self._weights = [float(w) for w in p.weights]
        lens = p.lens.tolist()
        makers = (EMAUpdater, SMAUpdater, WMAUpdater, DEMAUpdater, LSMAUpdater, PineKAMAUpdater)
        self._mas = [[make(int(n)) for n in lens[f]] for f, make in enumerate(makers)]
        n_ma = sum(len(row) for row in lens)
        self._sig = [0.0] * n_ma
        self._a = [0.0] * n_ma
        self._e = [NAN] * n_ma
        self._prev_ma = [NAN] * n_ma
        self._fa = [0.0] * len(FAMILIES)
        self._fe = [NAN] * len(FAMILIES)
        self.families = [NAN] * len(FAMILIES)
        self._prev_x = NAN
        self._lam = float(p.lam)
        self._growth = np.empty(0)
        self._growth_start = 0

    def _growth_at(self, t: int) -> float:
        """exp(lam*(t - cutout)), evaluated as `kernels.atc.AtcParams.growth` evaluates it
        (NumPy's exp of lam * (float64(t) - cutout)), a block of bars at a time."""
        i = t - self._growth_start
        if not 0 <= i < self._growth.shape[0]:
            self._growth_start = t
            bars = np.arange(t, t + self._GROWTH_BLOCK, dtype=np.float64)
            self._growth = np.exp(self._lam * (bars - self._cutout))
            i = 0
        return float(self._growth[i])

    def update(self, x) -> float:
        x = float(x)
        if not math.isfinite(x):
            raise ValueError("close must be finite (no NaN or inf)")
        t = self._count
        self._count += 1
        d, cutout, floor = self._d, self._cutout, EQUITY_FLOOR
        r = (x / self._prev_x - 1.0) * self._growth_at(t) if t >= 1 else NAN
        px = self._prev_x
        sig_l, a_l, e_l, pm_l = self._sig, self._a, self._e, self._prev_ma
        after_cut = t >= cutout
        fnom = 0.0
        fden = 0.0
        j = 0
        for f, row in enumerate(self._mas):
            nom = 0.0
            den = 0.0
            for ma in row:
                m = ma.update(x)
                sig = sig_l[j]
                if t >= 1:
                    if sig > 0.0:
                        a_l[j] = r
                    elif sig < 0.0:
                        a_l[j] = -r
                    pm = pm_l[j]
                    if x > m and px <= pm:
                        sig = 1.0
                    elif x < m and px >= pm:
                        sig = -1.0
                    sig_l[j] = sig
                pm_l[j] = m
                e = e_l[j]
                if after_cut:
                    if math.isnan(e):  # the first bar of the cutout
                        e = 1.0
                    else:
                        e = (e * d) * (1.0 + a_l[j])
                    if e < floor:
                        e = floor
                    e_l[j] = e
                nom = nom + sig * e
                den = den + e
                j += 1
            q = nom / den
            if math.isnan(q):
                fam = NAN
            else:
                y = math.floor(math.fabs(q) * 100.0 + 0.5) / 100.0
                fam = y if q >= 0.0 else -y
            # layer 2 for family f, driven by its previous value
            if t >= 1:
                sp = self.families[f]
                if sp > 0.0:
                    self._fa[f] = r
                elif sp < 0.0:
                    self._fa[f] = -r
            fe = self._fe[f]
            if after_cut:
                if math.isnan(fe):
                    fe = self._weights[f]
                else:
                    fe = (fe * d) * (1.0 + self._fa[f])
                if fe < floor:
                    fe = floor
                self._fe[f] = fe
            self.families[f] = fam
            c = 1.0 if fam > CUT_LEVEL else (-1.0 if fam < -CUT_LEVEL else 0.0)
            fnom = fnom + c * fe
            fden = fden + fe
        self._prev_x = x
        out = fnom / fden
        self.value = out
        return out
