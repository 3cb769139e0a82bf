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

One registry serves both paths: every `Feature` / `Specialist` entry names its batch
formula and its `stream`, a factory that, handed a `StreamCalls` (`u`, the streaming
counterpart of the batch formulas' `k`), returns the entry's per-bar value. SymbolStream
builds one such tap per registry entry and fills its vectors in registry order, so
STREAM_FEATURES / STREAM_SPECIALISTS are just the registries' names. `u(core, inputs,
**params)` maps a batch core to its updater (STREAM_CORES) and shares one updater between
the entries that make the same call. tests/kernels/test_streaming.py replays every registry entry
on its own against its batch formula, bit for bit.

How the batch arithmetic is repeated
------------------------------------
* Indicators: the updaters perform the cores' float64 operations in the cores' order
  (kernels/updaters.py). Inputs are widened float32 -> float64 as the cores do.
* Outputs of precision float32 are rounded once, as the batch kernels store float64
  results into float32 arrays. Two places compute *in* float32 in the batch path and are
  repeated in float32 here: the registry's array arithmetic (f_vol_pct = atr14_f32 /
  close_f32 * 100, f_vol_ratio = atr14_f32 / atr28_f32: the entries' `u.apply`, NumPy
  scalars of the batch dtype, NEP 50 promotion as for the arrays), and the Hull MA, whose
  core keeps its intermediate series 2*WMA(n/2) - WMA(n) in a scratch array of the output
  dtype (so it is rounded to float32 before the final WMA reads it): `HMAUpdater(n,
  round_diff=True)`.
* mean_reversion = clip(-float32(zscore(close, 20)) / 2, -1, 1) and
  rsi = (float32(RSI14) - 50) / 50 are float32 operations, as in the registry (the
  specialists' `u` computes in float32 whatever the feature precision).
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
whole history for this reason). growth[t] is evaluated as `kernels.atc.AtcParams.growth`
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

from kernels.atc import (
    CUT_LEVEL,
    EQUITY_FLOOR,
    FAMILIES,
    AtcParams,
)
from kernels.atc.cores import kama_step
from kernels import indicators as K
from kernels.registry import features as _feature_registry
from kernels.registry import specialists as _specialist_registry
from kernels.registry.features import FEATURES
from kernels.registry.specialists import SPECIALISTS
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
    "STREAM_CORES",
    "STREAM_FEATURES",
    "STREAM_SPECIALISTS",
    "ATCUpdater",
    "EwmUpdater",
    "PineKAMAUpdater",
    "SellerExhaustionUpdater",
    "StreamCalls",
    "SpecWindowUpdater",
    "SymbolStream",
    "WindowTap",
    "replay_entry",
]

NAN = math.nan

# The registries' names, in their order: the order of SymbolStream's vectors.
STREAM_FEATURES = tuple(f.name for f in FEATURES)
STREAM_SPECIALISTS = tuple(s.name for s in SPECIALISTS)


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


# ---------------------------------------------------------------------------------------
# The streaming counterpart of the registries' kernel calls
# ---------------------------------------------------------------------------------------

# Updater of each core a registry `stream` may name, as its batch formula names it (a key
# of kernels.indicators.SPECS, same parameters) plus the specialists' "atc" and
# "seller_exhaustion". make(float32, **params) -> updater; `float32` is the output dtype of
# the batch call being repeated (only the Hull MA depends on it, see HMAUpdater).
def _moments(f32: bool, n: int, mode: int) -> Updater:
    if mode not in (0, 1):
        raise ValueError(f"moments: mode must be 0 (std) or 1 (zscore), got {mode!r}")
    return ZScoreUpdater(n) if mode else StdDevUpdater(n)


def _dmi(f32: bool, n: int, which: int = 0) -> Updater:
    if which != 0:
        raise ValueError(f"dmi: the streaming updater computes all three outputs (which=0), got which={which!r}")
    return DMIUpdater(n)


STREAM_CORES: dict[str, object] = {
    "rocp": lambda f32, n: ReturnsUpdater(n),
    "sma": lambda f32, n: SMAUpdater(n),
    "ema": lambda f32, n: EMAUpdater(n),
    "wma": lambda f32, n: WMAUpdater(n),
    "dema": lambda f32, n: DEMAUpdater(n),
    "tema": lambda f32, n: TEMAUpdater(n),
    "hma": lambda f32, n: HMAUpdater(n, round_diff=f32),
    "lsma": lambda f32, n: LSMAUpdater(n),
    "kama": lambda f32, n: KAMAUpdater(n),
    "rsi": lambda f32, n: RSIUpdater(n),
    "atr": lambda f32, n: ATRUpdater(n),
    "dmi": _dmi,
    "moments": _moments,
    "atc": lambda f32, **params: ATCUpdater(**params),
    "seller_exhaustion": lambda f32, preset="daily": SellerExhaustionUpdater(PRESETS[preset]),
}
# NumPy >= 2 (NEP 50) computes float32 scalar (op) Python float in float32, as it does for
# float32 arrays, so `StreamCalls.apply` repeats a formula's array arithmetic on scalars;
# NumPy 1.x would widen such a scalar expression to float64, so there `apply` computes on
# 1-element arrays (slower, the same values).
SCALARS_PROMOTE_AS_ARRAYS = type(np.float32(1.0) * 1.0) is np.float32
_DTYPE_DEPENDENT = frozenset({"hma"})  # cores whose updater depends on the output dtype
BAR_FIELDS = ("open", "high", "low", "close", "volume")
_FIELD = {name: i for i, name in enumerate(BAR_FIELDS)}


class SpecWindowUpdater(Updater):
    """The generic streaming path of a core without an updater in STREAM_CORES (a new
    kernel is its core in kernels/cores.py and its Spec in kernels.indicators.SPECS): keeps
    the last `window` input rows (the Spec's `stream_window`, default its lookback + 1) and
    runs the compiled core over them for each new bar, O(window) per bar. Equal to the
    batch core bit for bit when the core's value at a bar is computed from those rows
    alone, in the same way whatever the series length; recursive cores (EMA-type) and
    running sums differ within float rounding: give them an updater in STREAM_CORES."""

    def __init__(self, core: str, dtype=np.float64, **params) -> None:
        super().__init__()
        spec = K.SPECS[core]
        self.core, self.dtype = core, np.dtype(dtype)
        self.n_inputs, self.n_outputs = spec.n_inputs, spec.n_outputs
        self.params = (params.pop("n"), *params.values())
        lb = spec.lookback(*self.params)
        self.lookback = int(lb)
        self.window = int(spec.stream_window(*self.params)) if spec.stream_window else self.lookback + 1
        self._rows: deque = deque(maxlen=self.window)

    def update(self, *xs):
        self._count += 1
        self._rows.append(xs)
        cols = np.asarray(self._rows, dtype=np.float64).T
        outs = K.ragged(self.core, list(cols), np.array([0, cols.shape[1]]), self.params, dtype=self.dtype)
        vals = tuple(float(o[-1]) for o in outs)
        self.value = vals[0] if self.n_outputs == 1 else vals
        return self.value


class _Node:
    """One shared updater: fed its input fields once per bar; `out` is its last output."""

    __slots__ = ("key", "updater", "fields", "out")

    def __init__(self, key, updater: Updater, fields: tuple[int, ...]) -> None:
        self.key, self.updater, self.fields = key, updater, fields
        n_out = getattr(updater, "n_outputs", 1)
        self.out = NAN if n_out == 1 else (NAN,) * n_out


class StreamCalls:
    """The `u` handed to a registry entry's `stream` factory: the streaming counterpart of
    the `k` its batch formula receives. A factory runs once, when a stream is built, and
    returns a *tap*: a function of no arguments giving the entry's value for the current bar.

        u(core, inputs, output=0, **params)  tap of core `core` (as k names it: a key of
                      STREAM_CORES) over the bar fields `inputs`; one updater per distinct
                      call, shared by every entry that makes it (DMI runs once for +DI, -DI
                      and ADX), its float64 output as the updater gives it
        u.column(name)                       tap of the bar's field `name`
        u.apply(fn, *taps)                   tap of fn(*values), the values as NumPy scalars
                      of u.dtype: the formula's array arithmetic (e.g. atr / close * 100 on
                      float32 arrays) repeated on one bar's scalars, in the same dtype
        u.dtype                              the dtype the batch path computes in

    `step(open, high, low, close, volume)` feeds one bar to every updater (once each);
    `with_dtype(d)` is a view sharing the updaters but computing in dtype d (the
    specialists' batch functions run in float32 whatever the feature precision)."""

    def __init__(self, dtype=np.float32, _pool: dict | None = None, _bar: list | None = None) -> None:
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype}")
        self._scalar = self.dtype.type
        self._pool: dict = {} if _pool is None else _pool  # key -> _Node, in creation order
        self.bar: list = [NAN] * len(BAR_FIELDS) if _bar is None else _bar

    def with_dtype(self, dtype) -> StreamCalls:
        return StreamCalls(dtype, self._pool, self.bar)

    @property
    def nodes(self) -> list[_Node]:
        return list(self._pool.values())

    def __call__(self, core: str, inputs: tuple[str, ...], output: int = 0, **params):
        if core not in STREAM_CORES and core not in K.SPECS:
            raise KeyError(f"no streaming updater for core {core!r} (kernels.streaming.STREAM_CORES) and no such "
                           "core in kernels.indicators.SPECS")
        f32 = self.dtype == np.float32
        key = (core, tuple(inputs), tuple(sorted(params.items())), f32 if core in _DTYPE_DEPENDENT else None)
        node = self._pool.get(key)
        if node is None:
            make = STREAM_CORES.get(core)
            updater = make(f32, **params) if make is not None else SpecWindowUpdater(core, self.dtype, **params)
            if len(inputs) != updater.n_inputs:
                raise ValueError(f"{core} takes {updater.n_inputs} input fields, got {inputs!r}")
            node = self._pool[key] = _Node(key, updater, tuple(_FIELD[c] for c in inputs))
        n_out = getattr(node.updater, "n_outputs", 1)
        if not 0 <= output < n_out:
            raise ValueError(f"{core} has {n_out} output(s), got output={output!r}")
        if n_out == 1:
            return lambda: node.out
        return lambda: node.out[output]

    def column(self, name: str):
        i, bar = _FIELD[name], self.bar
        return lambda: bar[i]

    def apply(self, fn, *taps):
        if SCALARS_PROMOTE_AS_ARRAYS:
            scalar = self._scalar
            return lambda: float(fn(*[scalar(t()) for t in taps]))
        dtype = self.dtype  # NumPy 1.x: 1-element arrays, which promote as the formula's arrays
        return lambda: float(np.asarray(fn(*[np.array((t(),), dtype) for t in taps])).reshape(-1)[0])

    def step(self, open_, high, low, close, volume) -> None:
        bar = self.bar
        bar[0], bar[1], bar[2], bar[3], bar[4] = float(open_), float(high), float(low), float(close), float(volume)
        for node in self._pool.values():
            f = node.fields
            if len(f) == 1:
                node.out = node.updater.update(bar[f[0]])
            else:
                node.out = node.updater.update(*[bar[i] for i in f])


def replay_entry(entry, bars: dict[str, np.ndarray], dtype=np.float32) -> np.ndarray:
    """One registry entry's `stream` fed `bars` (field -> 1-D array) one bar at a time, on
    its own: its value at every bar, as an array of `dtype` (the entry's batch dtype)."""
    u = StreamCalls(dtype)
    tap = entry.stream(u)
    cols = [np.asarray(bars[c]) for c in BAR_FIELDS]
    out = np.empty(cols[0].shape[0], dtype=dtype)
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN / NaN during warm-up
        for t, bar in enumerate(zip(*(c.tolist() for c in cols))):
            u.step(*bar)
            out[t] = tap()
    return out


# ---------------------------------------------------------------------------------------
# Entries without an updater: the batch formula over the last rows
# ---------------------------------------------------------------------------------------


class WindowTap:
    """The live value of a registry entry that has no `stream` (a plugin's Formula, a
    Batch such as alpha158, a Specialist without one): it keeps the last `size` bars of the
    symbol (entry.window, default its longest warm-up + 1) and recomputes the entry's batch
    formula over them, once per bar, for the newest bar. Inputs are rebuilt as the batch
    path builds them: float32 bar fields, vwap = packs.typical_price (the batch path's own).

    Equal to the batch value bit for bit when the formula's value at a bar depends only on
    the window's rows and is computed the same way whatever the series length (e.g. NumPy
    reductions over `sliding_window_view`); recursive formulas (EMA-type) and the kernels'
    running sums differ within float rounding or need a longer `window` or a `stream`."""

    def __init__(self, entry, kind: str, dtype) -> None:
        self.entry, self.kind, self.dtype = entry, kind, np.dtype(dtype)
        if kind == "feature":
            self.columns = tuple(entry.columns)
            longest = max(entry.warmups.values(), default=0)
        else:
            self.columns = (f"spec_{entry.name}_score",)
            longest = int(entry.warmup)
        self.size = int(entry.window or longest + 1)
        self.rows: deque = deque(maxlen=self.size)
        self._fresh = False
        self._values: dict[str, float] = {}

    def step(self, bar) -> None:
        self.rows.append(tuple(bar))
        self._fresh = False

    def _arrays(self) -> dict[str, np.ndarray]:
        mat = np.asarray(self.rows, dtype=np.float32).reshape(-1, len(BAR_FIELDS))
        arrays = {name: np.ascontiguousarray(mat[:, i]) for i, name in enumerate(BAR_FIELDS)}
        from kernels.registry.packs import typical_price

        arrays["vwap"] = typical_price(arrays["high"], arrays["low"], arrays["close"])
        return arrays

    def value(self, column: str) -> float:
        if not self._fresh:
            self._fresh = True
            if not self.rows:
                self._values = dict.fromkeys(self.columns, NAN)
                return NAN
            arrays = self._arrays()
            with np.errstate(invalid="ignore", divide="ignore"):
                if self.kind == "feature":
                    from kernels.registry.features import compute_features

                    out = compute_features(arrays, None, "cpu", self.dtype, entries=(self.entry,))
                    self._values = {c: float(out[c][-1]) for c in self.columns}
                else:
                    from kernels.panel import Panel
                    from kernels.registry.specialists import PANEL_COLUMNS

                    panel = Panel.from_columns({c: arrays[c] for c in PANEL_COLUMNS})
                    self._values = {self.columns[0]: float(np.float32(self.entry.fn(panel)[-1]))}
        return self._values[column]

    def tap(self, column: str):
        return lambda: self.value(column)


# ---------------------------------------------------------------------------------------
# One symbol: every feature and specialist
# ---------------------------------------------------------------------------------------


class SymbolStream:
    """Every registered feature and specialist score of one symbol, one bar at a time: one
    tap per registry entry (its `stream`), over updaters shared between entries.

    update(open, high, low, close, volume) -> (features, scores):
        features  np.ndarray [len(FEATURES)] of the precision's dtype, registry order
        scores    np.ndarray float32 [len(SPECIALISTS)], registry order
    Warm-up values are NaN, as in the batch tables. `bars` counts the bars fed; the stream
    must see a symbol's history from its first bar (ATC indexes bars absolutely).
    `packs`: the selected packs by name, `(packs, plugins[, atc])` as Selection.names
    (kernels.registry.packs.select); None (default) is the registries, i.e. the `core` pack.
    Then `features` holds every column of the selection (Selection.feature_columns order) and
    `scores` every specialist of it; entries without a `stream` are WindowTaps.
    Picklable: the state is the updaters (plain Python objects) and the windows' rows; the
    taps are rebuilt from the registries on unpickling, which raises ValueError when the
    registries now need other updaters than the pickled ones (the state must then be
    rebuilt from history).
    """

    def __init__(self, precision: str = "float32", packs: tuple | None = None) -> None:
        if precision not in ("float32", "float64"):
            raise ValueError(f"precision must be 'float32' or 'float64', got {precision!r}")
        self.precision = precision
        self.dtype = np.dtype(np.float32 if precision == "float32" else np.float64)
        self.bars = 0
        self.packs = None if packs is None else tuple(tuple(p) for p in packs)  # (packs, plugins[, atc])
        self._build()
        self.features = np.full(len(self._feature_taps), np.nan, dtype=self.dtype)
        self.scores = np.full(len(self._score_taps), np.nan, dtype=np.float32)

    def _build(self) -> None:
        self._u = u = StreamCalls(self.dtype)
        # read from the registry modules now (not bound at import): a stream is built from
        # the registries in force
        if self.packs is None:
            features, specialists = _feature_registry.FEATURES, _specialist_registry.SPECIALISTS
        else:
            from kernels.registry.packs import select

            chosen = select(*self.packs)
            features, specialists = chosen.features, chosen.specialists
        self._windows: list[WindowTap] = []
        self._feature_taps = []
        for f in features:
            if f.stream is not None:
                self._feature_taps.append(f.stream(u))
            else:
                w = WindowTap(f, "feature", self.dtype)
                self._windows.append(w)
                self._feature_taps += [w.tap(c) for c in w.columns]
        u32 = u.with_dtype(np.float32)  # the specialists' batch functions compute in float32
        self._score_taps = []
        for s in specialists:
            if s.stream is not None:
                self._score_taps.append(s.stream(u32))
            else:
                w = WindowTap(s, "specialist", np.float32)
                self._windows.append(w)
                self._score_taps.append(w.tap(w.columns[0]))

    def _values(self) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):  # NaN / NaN during warm-up
            feats = np.array([tap() for tap in self._feature_taps], dtype=self.dtype)
            scores = np.array([tap() for tap in self._score_taps], dtype=np.float32)
        return feats, scores

    def update(self, open_, high, low, close, volume) -> tuple[np.ndarray, np.ndarray]:
        self.bars += 1
        self._u.step(open_, high, low, close, volume)
        for w in self._windows:
            w.step(self._u.bar)
        feats, scores = self._values()
        self.features, self.scores = feats, scores
        return feats, scores

    def replay(self, open_, high, low, close, volume) -> tuple[np.ndarray, np.ndarray]:
        """Feed whole 1-D arrays (continuing from the current state); returns every bar's
        features [T, F] and scores [T, S]."""
        cols = [np.asarray(a) for a in (open_, high, low, close, volume)]
        if any(a.ndim != 1 for a in cols) or len({a.shape[0] for a in cols}) != 1:
            raise ValueError(f"expected 1-D arrays of one length, got shapes {[a.shape for a in cols]}")
        t_len = cols[0].shape[0]
        feats = np.empty((t_len, len(self._feature_taps)), dtype=self.dtype)
        scores = np.empty((t_len, len(self._score_taps)), dtype=np.float32)
        update = self.update
        for t, bar in enumerate(zip(*(a.tolist() for a in cols))):
            feats[t], scores[t] = update(*bar)
        return feats, scores

    _STATE_FORMAT = "kernels.streaming.SymbolStream/2"  # 1: the hand-written per-name fields

    def __getstate__(self) -> dict:
        return {"format": self._STATE_FORMAT, "precision": self.precision, "bars": self.bars,
                "bar": list(self._u.bar), "nodes": [(n.key, n.updater, n.out) for n in self._u.nodes],
                "packs": self.packs, "windows": [(w.columns, list(w.rows)) for w in self._windows]}

    def __setstate__(self, state: dict) -> None:
        # ValueError for anything but this format (e.g. a state pickled by the earlier,
        # hand-written SymbolStream): callers treat it as unusable and rebuild from history
        if not isinstance(state, dict) or state.get("format") != self._STATE_FORMAT:
            raise ValueError("not a SymbolStream state of this format: rebuild it from history")
        if state["precision"] not in ("float32", "float64"):
            raise ValueError(f"bad precision {state['precision']!r} in a SymbolStream state")
        self.precision = state["precision"]
        self.dtype = np.dtype(np.float32 if self.precision == "float32" else np.float64)
        self.bars = state["bars"]
        self.packs = state.get("packs")
        self._build()
        windows = state.get("windows", [])
        if [c for c, _ in windows] != [w.columns for w in self._windows]:
            raise ValueError("this SymbolStream state was built for other packs: rebuild it from history")
        for w, (_, rows) in zip(self._windows, windows):
            w.rows.extend(rows)
        pool = self._u._pool
        saved = {key: (updater, out) for key, updater, out in state["nodes"]}
        if set(saved) != set(pool):
            raise ValueError("this SymbolStream state was built for other registries (its updaters "
                             f"{sorted(map(repr, set(saved) - set(pool)))} vs now "
                             f"{sorted(map(repr, set(pool) - set(saved)))}): rebuild it from history")
        for key, node in pool.items():
            node.updater, node.out = saved[key]
        self._u.bar[:] = state["bar"]
        if self.bars:
            self.features, self.scores = self._values()
        else:
            self.features = np.full(len(self._feature_taps), np.nan, dtype=self.dtype)
            self.scores = np.full(len(self._score_taps), np.nan, dtype=np.float32)
