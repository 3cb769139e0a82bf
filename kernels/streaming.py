"""Streaming features and specialist scores: one bar (open, high, low, close, volume) in,
every feature and every specialist score out, O(1) work per bar. Built from
`kernels.updaters` plus the few updaters this file adds.

    s = SymbolStream()                       # precision="float32" (default) | "float64"
    feats, scores = s.update(o, h, l, c, v)  # feats: [19] in STREAM_FEATURES order (precision dtype)
                                             # scores: float32 [4] in STREAM_SPECIALISTS order
    feats, scores = s.replay(o, h, l, c, v)  # whole arrays: [T, 19], [T, 4] (warm-up, tests)

Contract: fed the stored bars (float32) one at a time, `SymbolStream` gives, bit for bit,
what the batch path gives for the same bar from the same history:

    features     `kernels.registry.features.compute_features` (dtype = precision) of the
                 symbol's whole history. (The stored `features` rows are computed from a
                 halo of `halo.years` years only; recursive indicators may then differ from
                 the whole-history values within float32 tolerance, see assets/features.py.)
    specialists  `kernels.registry.specialists.run_specialists` over the symbol's whole
                 history, which is what the `specialists` asset stores.

The names and parameters below mirror the two registries (kernels may not import
assets); tests/test_streaming.py checks names and values against them on real prices, so
a registry change without its streaming counterpart fails there.

How the batch arithmetic is repeated
------------------------------------
* Indicators: the updaters perform the cores' float64 operations in the cores' order
  (kernels/updaters.py). Inputs are widened float32 -> float64 as the cores do.
* Outputs of precision float32 are rounded once, as the batch kernels store float64
  results into float32 arrays. Two places compute *in* float32 in the batch path and are
  repeated in float32 here: f_vol_pct = atr14_f32 / close_f32 * 100 and f_vol_ratio =
  atr14_f32 / atr28_f32 (float32 array arithmetic in the registry), and the Hull MA, whose
  core keeps its intermediate series 2*WMA(n/2) - WMA(n) in a scratch array of the output
  dtype (so it is rounded to float32 before the final WMA reads it): `HMAUpdater(n,
  round_diff=True)`.
* mean_reversion = clip(-float32(zscore(close, 20)) / 2, -1, 1) and
  rsi = (float32(RSI14) - 50) / 50 are float32 operations, as in the registry.
* seller_exhaustion (kernels.seller_exhaustion, PRESETS["daily"]): `EwmUpdater` is pandas'
  ewm(span, adjust=False): e[0] = x[0], e = a*x + (1-a)*e; ATR = SMAUpdater over the true
  range (TR[0] = high - low); vol_z = ZScoreUpdater(volume); tr_z = ZScoreUpdater over
  atr * atr_window, fed from the first valid ATR on (the batch `zscore_after_nan`).
* atc: exact and O(1) per bar, see `ATCUpdater`.

Adaptive Trend Classification, streaming
----------------------------------------
Every moving average ATC uses has an O(1) updater: EMA (EMAUpdater), its "HMA" which is
an SMA (SMAUpdater), WMA, DEMA, LSMA (LINEARREG) and the Pine-style KAMA
(`PineKAMAUpdater`, added here). Layer 1 (cross signal and equity per MA), the rounded
family signal and layer 2 (equity per family, Cut, final ratio) are recursions over the
previous bar's state, so each bar costs 54 MA updates + 54 + 6 equity steps whatever the
history length. The equity's return is scaled by growth[t] = exp(lam*(t - cutout)) of the
ABSOLUTE bar index t: the stream counts bars from the symbol's first stored bar, exactly as
the batch kernel indexes the whole history (the `specialists` asset computes ATC over the
whole history for this reason). growth[t] is evaluated as `kernels.atc.ATCParams.growth`
evaluates it (NumPy's exp of lam * (float64(t) - cutout); exp is elementwise, so a block
of 1,024 bars at a time gives the same float64 numbers), keeping the state O(1) in size.
Consequence: a stream must start at the symbol's first stored bar; a stream started later
gives a different (equally valid, but not the stored) ATC.
Cost: a SymbolStream update (ATC's 54 MAs and equity steps, 16 feature updaters, seller
exhaustion) takes about 0.1 ms in CPython; warming a stream up from a long history is the
slow part (about 0.1 s per 1,000 bars; benchmarks/bench_infer.py), which is why
`domain.live.inference` keeps warmed streams in memory and only feeds them new bars.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from kernels.atc import CUT_LEVEL, EQUITY_FLOOR, FAMILIES, KAMA_FAST, KAMA_SLOW, ATCParams
from kernels.seller_exhaustion import PRESETS, SellerParams
from kernels.updaters import (
    ATRUpdater,
    DEMAUpdater,
    DMIUpdater,
    EMAUpdater,
    HMAUpdater,
    KAMAUpdater,
    LSMAUpdater,
    ReturnsUpdater,
    RSIUpdater,
    SMAUpdater,
    StdDevUpdater,
    TEMAUpdater,
    Updater,
    WMAUpdater,
    ZScoreUpdater,
)

__all__ = [
    "STREAM_FEATURES",
    "STREAM_SPECIALISTS",
    "ATCUpdater",
    "EwmUpdater",
    "PineKAMAUpdater",
    "SellerExhaustionUpdater",
    "SymbolStream",
]

NAN = math.nan
_F32 = np.float32

# The feature registry's names, in its order (kernels/registry/features.py).
STREAM_FEATURES = (
    "f_ret1", "f_ret5", "f_sma20", "f_ema20", "f_wma20", "f_dema20", "f_tema20", "f_hma20", "f_lsma20",
    "f_kama10", "f_rsi14", "f_atr14", "f_plus_di14", "f_minus_di14", "f_adx14", "f_std20", "f_zscore20",
    "f_vol_pct", "f_vol_ratio",
)
# The specialist registry's names, in its order (kernels/registry/specialists.py).
STREAM_SPECIALISTS = ("mean_reversion", "rsi", "atc", "seller_exhaustion")


def _round32(v: float) -> float:
    """v rounded to the nearest float32 (round-to-nearest-even), as a Python float."""
    return float(_F32(v))


# ---------------------------------------------------------------------------------------
# Updaters that kernels/updaters.py does not have
# ---------------------------------------------------------------------------------------


class EwmUpdater(Updater):
    """pandas ewm(span, adjust=False).mean() (kernels.seller_exhaustion.ewm_adjust_false):
    e[0] = x[0]; e[t] = a*x[t] + (1 - a)*e[t-1], a = 2/(span + 1). Valid from the first bar."""

    def __init__(self, span: int) -> None:
        super().__init__()
        if isinstance(span, bool) or not isinstance(span, (int, np.integer)) or span < 1:
            raise ValueError(f"span must be an integer >= 1, got {span!r}")
        self.span = int(span)
        self._a = 2.0 / (self.span + 1.0)
        self._b = 1.0 - self._a

    def update(self, x) -> float:
        x = float(x)
        self._count += 1
        out = x if self._count == 1 else self._a * x + self._b * self.value
        self.value = out
        return out


class PineKAMAUpdater(Updater):
    """ATC's Pine-style KAMA (kernels.atc.kama_pine_core): noise = sum of |x[i] - x[i-1]|
    over the last n bars, ER = |x - x[t-n]| / noise (0 when noise is 0, at most 1),
    sc = (ER*(0.666 - 0.064) + 0.064)^2, kama = kama + sc*(x - kama) seeded from 0.
    NaN before bar n. The noise sum is rolled as the core rolls it (add the new move, then
    remove the one that left), so the values are the core's bit for bit."""

    def __init__(self, n: int) -> None:
        super().__init__()
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"period must be an integer >= 1, got {n!r}")
        self.n = int(n)
        self.lookback = self.n
        self._window: deque[float] = deque(maxlen=self.n + 1)  # x[t-n-1..t-1] before the append
        self._noise = 0.0
        self._kama = 0.0

    def update(self, x) -> float:
        x = float(x)
        n = self.n
        t = self._count
        self._count += 1
        w = self._window
        if t == 0:
            w.append(x)
            return NAN
        if t <= n:
            self._noise += math.fabs(x - w[-1])
        else:
            self._noise += math.fabs(x - w[-1])
            self._noise -= math.fabs(w[1] - w[0])  # |x[t-n] - x[t-n-1]|
        w.append(x)
        if t < n:
            return NAN
        change = math.fabs(x - w[-1 - n])  # x[t-n]
        noise = self._noise
        if noise > 0.0:
            er = change / noise
            if er > 1.0:
                er = 1.0
        else:
            er = 0.0
        sc = er * (KAMA_FAST - KAMA_SLOW) + KAMA_SLOW
        sc = sc * sc
        self._kama = self._kama + sc * (x - self._kama)
        self.value = self._kama
        return self._kama


class SellerExhaustionUpdater(Updater):
    """kernels.seller_exhaustion.seller_exhaustion, one bar at a time (see the module
    docstring there): update(high, low, close, volume) returns 1.0 on a signal bar, else 0.0;
    the intermediates of the last bar are attributes (ema_f, ema_s, atr, vol_z, tr_z, cloc)."""

    n_inputs = 4

    def __init__(self, params: SellerParams = PRESETS["daily"]) -> None:
        super().__init__()
        self.params = params
        self.lookback = params.atr_window - 1 + params.z_window - 1
        self._ema_f = EwmUpdater(params.ema_fast)
        self._ema_s = EwmUpdater(params.ema_slow)
        self._atr = SMAUpdater(params.atr_window)
        self._vol_z = ZScoreUpdater(params.z_window)
        self._tr_z = ZScoreUpdater(params.z_window)
        self._prev_close = NAN
        self.ema_f = self.ema_s = self.atr = self.vol_z = self.tr_z = self.cloc = NAN

    def update(self, high, low, close, volume) -> float:
        h, l, c, v = float(high), float(low), float(close), float(volume)
        p = self.params
        self._count += 1
        self.ema_f = self._ema_f.update(c)
        self.ema_s = self._ema_s.update(c)
        rng = h - l
        if self._count == 1:
            tr = rng
        else:
            pc = self._prev_close
            tr = max(rng, max(math.fabs(h - pc), math.fabs(l - pc)))
        self._prev_close = c
        self.atr = self._atr.update(tr)
        self.vol_z = self._vol_z.update(v)
        # tr_z: the z-score series starts at the first valid ATR (NaN warm-up skipped)
        self.tr_z = self._tr_z.update(self.atr * p.atr_window) if self._atr.ready else NAN
        self.cloc = (c - l) / rng if rng > 0 else NAN
        signal = (self.ema_f < self.ema_s and self.vol_z > p.vol_z_min and self.tr_z > p.tr_z_min
                  and self.cloc > p.cloc_min)
        self.value = 1.0 if signal else 0.0
        return self.value


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
    kernel's bit for bit (tests/test_streaming.py)."""

    _GROWTH_BLOCK = 1024

    def __init__(self, *, robustness: str = "Medium", length=28, lam: float = 0.02, decay: float = 0.03,
                 cutout: int = 0, weights=None) -> None:
        super().__init__()
        p = ATCParams(robustness, length, lam, decay, cutout, weights)
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
        """exp(lam*(t - cutout)), evaluated as `kernels.atc.ATCParams.growth` evaluates it
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


# ---------------------------------------------------------------------------------------
# One symbol: every feature and specialist
# ---------------------------------------------------------------------------------------


class SymbolStream:
    """Every registered feature and specialist score of one symbol, one bar at a time.

    update(open, high, low, close, volume) -> (features, scores):
        features  np.ndarray [len(STREAM_FEATURES)] of the precision's dtype
        scores    np.ndarray float32 [len(STREAM_SPECIALISTS)]
    Warm-up values are NaN, as in the batch tables. `bars` counts the bars fed; the stream
    must see a symbol's history from its first bar (ATC indexes bars absolutely).
    Picklable (plain Python state), so a warmed stream can be copied or stored.
    """

    def __init__(self, precision: str = "float32") -> None:
        if precision not in ("float32", "float64"):
            raise ValueError(f"precision must be 'float32' or 'float64', got {precision!r}")
        self.precision = precision
        self.dtype = np.dtype(np.float32 if precision == "float32" else np.float64)
        f32 = precision == "float32"
        self._ret1, self._ret5 = ReturnsUpdater(1), ReturnsUpdater(5)
        self._sma, self._ema, self._wma = SMAUpdater(20), EMAUpdater(20), WMAUpdater(20)
        self._dema, self._tema = DEMAUpdater(20), TEMAUpdater(20)
        self._hma, self._lsma, self._kama = HMAUpdater(20, round_diff=f32), LSMAUpdater(20), KAMAUpdater(10)
        self._rsi, self._atr14, self._atr28, self._dmi = RSIUpdater(14), ATRUpdater(14), ATRUpdater(28), DMIUpdater(14)
        self._std, self._z = StdDevUpdater(20), ZScoreUpdater(20)
        self._atc = ATCUpdater()
        self._seller = SellerExhaustionUpdater(PRESETS["daily"])
        self.bars = 0
        self.features = np.full(len(STREAM_FEATURES), np.nan, dtype=self.dtype)
        self.scores = np.full(len(STREAM_SPECIALISTS), np.nan, dtype=np.float32)

    def update(self, open_, high, low, close, volume) -> tuple[np.ndarray, np.ndarray]:
        h, l, c, v = float(high), float(low), float(close), float(volume)
        self.bars += 1
        rsi = self._rsi.update(c)
        z = self._z.update(c)
        atr14 = self._atr14.update(h, l, c)
        atr28 = self._atr28.update(h, l, c)
        pdi, mdi, adx = self._dmi.update(h, l, c)
        if self.precision == "float32":
            with np.errstate(invalid="ignore", divide="ignore"):  # NaN / NaN in warm-up
                a14, a28, c32 = _F32(atr14), _F32(atr28), _F32(c)
                vol_pct = float(a14 / c32 * _F32(100.0))
                vol_ratio = float(a14 / a28)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                vol_pct = float(np.float64(atr14) / np.float64(c) * 100.0)
                vol_ratio = float(np.float64(atr14) / np.float64(atr28))
        feats = np.array([
            self._ret1.update(c), self._ret5.update(c), self._sma.update(c), self._ema.update(c),
            self._wma.update(c), self._dema.update(c), self._tema.update(c), self._hma.update(c),
            self._lsma.update(c), self._kama.update(c), rsi, atr14, pdi, mdi, adx, self._std.update(c), z,
            vol_pct, vol_ratio,
        ], dtype=self.dtype)
        z32 = _F32(z)
        mean_rev = -z32 / _F32(2.0)
        if not np.isnan(mean_rev):
            mean_rev = min(max(mean_rev, _F32(-1.0)), _F32(1.0))
        rsi_score = (_F32(rsi) - _F32(50.0)) / _F32(50.0)
        atc = self._atc.update(c)
        seller = self._seller.update(h, l, c, v)
        scores = np.array([mean_rev, rsi_score, atc, seller], dtype=np.float32)
        self.features, self.scores = feats, scores
        return feats, scores

    def replay(self, open_, high, low, close, volume) -> tuple[np.ndarray, np.ndarray]:
        """Feed whole 1-D arrays (continuing from the current state); returns every bar's
        features [T, F] and scores [T, S]."""
        cols = [np.asarray(a) for a in (open_, high, low, close, volume)]
        if any(a.ndim != 1 for a in cols) or len({a.shape[0] for a in cols}) != 1:
            raise ValueError(f"expected 1-D arrays of one length, got shapes {[a.shape for a in cols]}")
        t_len = cols[0].shape[0]
        feats = np.empty((t_len, len(STREAM_FEATURES)), dtype=self.dtype)
        scores = np.empty((t_len, len(STREAM_SPECIALISTS)), dtype=np.float32)
        update = self.update
        for t, bar in enumerate(zip(*(a.tolist() for a in cols))):
            feats[t], scores[t] = update(*bar)
        return feats, scores
