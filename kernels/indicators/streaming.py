"""Streaming features and specialist scores: one bar (open, high, low, close, volume) in,
every feature and every specialist score out, O(1) work per bar. Built from
`kernels.indicators.updaters` plus the few updaters this file adds.

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
STREAM_FEATURES / STREAM_SPECIALISTS are just the registries' names. One vocabulary names
the updaters: `u(core, inputs, **params)` takes a core as the batch formula names it (a
key of kernels.indicators.SPECS, the Spec's parameters) and maps it to its updater
(kernels.indicators.updaters.UPDATERS); a family with updaters of its own hands the updater itself to
`u.updater(make, inputs, **params)` (kernels.atc.stream.ATCUpdater,
kernels.seller_exhaustion.SellerExhaustionUpdater). Either shares one updater between the
entries that make the same call. tests/kernels/test_streaming.py replays every registry entry
on its own against its batch formula, bit for bit.

How the batch arithmetic is repeated
------------------------------------
* Indicators: the updaters perform the cores' float64 operations in the cores' order
  (kernels/indicators/updaters.py). Inputs are widened float32 -> float64 as the cores do.
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
* seller_exhaustion: exact, see kernels.seller_exhaustion (SellerExhaustionUpdater).
* atc: exact and O(1) per bar, see kernels.atc.stream (ATCUpdater). Its equity growth
  counts bars from the symbol's first stored bar, as the batch kernel indexes the whole
  history (the `specialists` asset computes ATC over the whole history for this reason):
  a stream must start there.

Cost: a SymbolStream update (ATC's 54 MAs and equity steps, 16 feature updaters, seller
exhaustion) takes about 0.1 ms in CPython; warming a stream up from a long history is the
slow part (about 0.1 s per 1,000 bars; benchmarks/bench_infer.py), which is why
`domain.live.inference` keeps warmed streams in memory and only feeds them new bars.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from kernels import indicators as K
from kernels.registry import features as _feature_registry
from kernels.registry import specialists as _specialist_registry
from kernels.registry.features import FEATURES
from kernels.registry.specialists import SPECIALISTS
from kernels.indicators.updaters import UPDATERS, Updater

__all__ = [
    "STREAM_FEATURES",
    "STREAM_SPECIALISTS",
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
# The streaming counterpart of the registries' kernel calls
# ---------------------------------------------------------------------------------------

# NumPy >= 2 (NEP 50) computes float32 scalar (op) Python float in float32, as it does for
# float32 arrays, so `StreamCalls.apply` repeats a formula's array arithmetic on scalars;
# NumPy 1.x would widen such a scalar expression to float64, so there `apply` computes on
# 1-element arrays (slower, the same values).
SCALARS_PROMOTE_AS_ARRAYS = type(np.float32(1.0) * 1.0) is np.float32
_DTYPE_DEPENDENT = frozenset({"hma"})  # cores whose updater depends on the output dtype
BAR_FIELDS = ("open", "high", "low", "close", "volume")
_FIELD = {name: i for i, name in enumerate(BAR_FIELDS)}


class SpecWindowUpdater(Updater):
    """The generic streaming path of a core without an updater in UPDATERS (a new
    kernel is its core in kernels/indicators/cores.py and its Spec in kernels.indicators.SPECS): keeps
    the last `window` input rows (the Spec's `stream_window`, default its lookback + 1) and
    runs the compiled core over them for each new bar, O(window) per bar. Equal to the
    batch core bit for bit when the core's value at a bar is computed from those rows
    alone, in the same way whatever the series length; recursive cores (EMA-type) and
    running sums differ within float rounding: give them an updater in UPDATERS."""

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
                      kernels.indicators.SPECS, its updater kernels.indicators.updaters.UPDATERS[core])
                      over the bar fields `inputs`; one updater per distinct call, shared by
                      every entry that makes it (DMI runs once for +DI, -DI and ADX), its
                      float64 output as the updater gives it
        u.updater(make, inputs, output=0, **params)  the same for a family's own updater
                      class `make` (ATCUpdater, SellerExhaustionUpdater)
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
        if core not in K.SPECS:
            raise KeyError(f"no core {core!r} in kernels.indicators.SPECS (the streaming vocabulary); a family's own "
                           "updater goes through u.updater(make, inputs, **params)")
        f32 = self.dtype == np.float32
        key = (core, tuple(inputs), tuple(sorted(params.items())), f32 if core in _DTYPE_DEPENDENT else None)
        make = UPDATERS.get(core)
        build = (lambda: make(f32, **params)) if make is not None else (
            lambda: SpecWindowUpdater(core, self.dtype, **params))
        return self._tap(key, core, build, inputs, output)

    def updater(self, make, inputs: tuple[str, ...], output: int = 0, **params):
        """Tap of the updater `make(**params)` (a family's own class, e.g.
        kernels.atc.stream.ATCUpdater) over the bar fields `inputs`, shared like a core's."""
        key = (make, tuple(inputs), tuple(sorted(params.items())), None)
        return self._tap(key, getattr(make, "__name__", repr(make)), lambda: make(**params), inputs, output)

    def _tap(self, key, label: str, build, inputs: tuple[str, ...], output: int):
        node = self._pool.get(key)
        if node is None:
            updater = build()
            if len(inputs) != updater.n_inputs:
                raise ValueError(f"{label} takes {updater.n_inputs} input fields, got {inputs!r}")
            node = self._pool[key] = _Node(key, updater, tuple(_FIELD[c] for c in inputs))
        n_out = getattr(node.updater, "n_outputs", 1)
        if not 0 <= output < n_out:
            raise ValueError(f"{label} has {n_out} output(s), got output={output!r}")
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
                    from kernels.registry.specialists import PANEL_COLUMNS, run_specialists

                    panel = Panel.from_columns({c: arrays[c] for c in PANEL_COLUMNS})
                    score = run_specialists(panel, (self.entry,))[self.entry.column]  # checked: one value per row
                    self._values = {self.columns[0]: float(np.float32(score[-1]))}
        return self._values[column]

    def tap(self, column: str):
        return lambda: self.value(column)


# ---------------------------------------------------------------------------------------
# One symbol: every feature and specialist
# ---------------------------------------------------------------------------------------


def _key_text(key) -> str:
    """A node key (core or factory, inputs, parameters, dtype) as stable text: a function or
    class by its module and qualified name (not its address), the rest by repr."""
    if isinstance(key, tuple):
        return "(" + ", ".join(_key_text(k) for k in key) + ")"
    if callable(key) and hasattr(key, "__qualname__"):
        return f"{getattr(key, '__module__', '?')}.{key.__qualname__}"
    return repr(key)


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

    _PLAIN_FORMAT = "kernels.indicators.streaming.SymbolStream/plain-1"

    def to_plain(self) -> dict:
        """The stream's state as plain data (kernels.indicators.plain_state; JSON-ready, no pickle): the
        precision, the packs, the bars fed, the last bar, each shared updater's state in the
        pool's order (with its class name) and its last output, and the windows' rows."""
        from kernels.indicators.plain_state import to_plain

        return {"format": self._PLAIN_FORMAT, "precision": self.precision, "bars": self.bars,
                "packs": to_plain(self.packs), "bar": to_plain(list(self._u.bar)),
                "nodes": [{"key": _key_text(n.key), "class": type(n.updater).__name__, "state": to_plain(n.updater),
                           "out": to_plain(n.out)} for n in self._u.nodes],
                "windows": [{"columns": list(w.columns), "rows": [list(r) for r in w.rows]} for w in self._windows]}

    @classmethod
    def from_plain(cls, data: dict) -> SymbolStream:
        """The stream of `to_plain`'s data: built anew from the registries for its packs, then
        every updater's state set into it. ValueError (rebuild it from history) for another
        format, or a state whose updaters or windows the registries no longer build."""
        from kernels.indicators.plain_state import from_plain, restore

        if not isinstance(data, dict) or data.get("format") != cls._PLAIN_FORMAT:
            raise ValueError("not a plain SymbolStream state of this format: rebuild it from history")
        if data.get("precision") not in ("float32", "float64"):
            raise ValueError(f"bad precision {data.get('precision')!r} in a SymbolStream state")
        packs = from_plain(data["packs"])
        stream = cls(data["precision"], packs)
        nodes, saved = stream._u.nodes, data["nodes"]
        if [(_key_text(n.key), type(n.updater).__name__) for n in nodes] != [(x.get("key"), x["class"]) for x in saved]:
            raise ValueError("this SymbolStream state was built for other registries (other updaters or "
                             "parameters): rebuild it from history")
        if [list(w.columns) for w in stream._windows] != [w["columns"] for w in data["windows"]]:
            raise ValueError("this SymbolStream state was built for other packs: rebuild it from history")
        for node, x in zip(nodes, saved):
            restore(node.updater, x["state"])
            node.out = from_plain(x["out"], node.out)
        for w, x in zip(stream._windows, data["windows"]):
            w.rows.extend(tuple(r) for r in x["rows"])
        stream.bars = int(data["bars"])
        stream._u.bar[:] = from_plain(data["bar"])
        if stream.bars:
            stream.features, stream.scores = stream._values()
        return stream

    _STATE_FORMAT = "kernels.indicators.streaming.SymbolStream/2"  # 1: the hand-written per-name fields

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
