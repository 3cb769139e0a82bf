"""The feature registry: every feature's name, formula over the kernels, warm-up, and
streaming updater.

This registry is the `core` pack (kernels.registry.packs, which also declares the other
built-in packs and loads plugin packs); the `features` table holds the columns of every
selected pack, core's in the registry's order. To add a feature, append one
`Feature` here, with its batch `formula` and its `stream` (`_kernel` when both are one and
the same kernel call): the batch stage, the live
stream (kernels.indicators.streaming.SymbolStream), the schema, the halo check and the tests
(tests/kernels/test_streaming.py replays every entry against its formula) pick it up.

A feature's `formula` receives `k(core, inputs, output=0, **params)`, which runs a kernel
core (a key of `kernels.indicators.SPECS`) over the bar columns named in `inputs`, once per
distinct call (a multi-output core such as `dmi` runs once for +DI, -DI and ADX).
`compute_features(arrays, offsets)` evaluates the registry over many symbols stored back to
back (symbol k is rows offsets[k]:offsets[k+1]).

A feature's `stream` receives `u` (kernels.indicators.streaming.StreamCalls), the same calls one bar at
a time: `u(core, inputs, output=0, **params)` and `u.column(name)` give this bar's value of
the same kernel call (an O(1) updater per distinct call), `u.apply(fn, *taps)` repeats the
formula's array arithmetic on this bar's values in the formula's dtype. It returns the
entry's per-bar value (a function of no arguments); nothing here imports the updaters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from kernels import indicators as K


@dataclass(frozen=True)
class Feature:
    """One column from kernel calls (`formula(k) -> array`, over many symbols back to back).

    The warm-up is the lookback of `lookback_of` (indicator, n) or, without it, `warmup_rows`.
    `stream` is optional: without one the live path keeps the last `window` rows (default
    warm-up + 1) of `inputs` per symbol and recomputes `formula` on them for the newest bar
    (kernels.indicators.streaming.WindowTap). `version`: bump it when the formula changes, so Dagster
    marks the stored partitions stale (kernels.registry.packs.Selection)."""

    name: str
    formula: Callable  # k -> array
    lookback_of: tuple[str, int] | None = None  # (indicator, n) whose lookback is this feature's warm-up
    stream: Callable | None = None  # u -> (() -> this bar's value): the formula, one bar at a time
    inputs: tuple[str, ...] = ("high", "low", "close")
    warmup_rows: int | None = None
    window: int | None = None
    version: str = "1"

    @property
    def warmup(self) -> int:
        """Rows before the first valid value."""
        if self.lookback_of is not None:
            return K.lookback(*self.lookback_of)
        return int(self.warmup_rows or 0)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.name,)

    @property
    def warmups(self) -> dict[str, int]:
        return {self.name: self.warmup}

    def compute(self, k: "_KernelCalls") -> dict[str, np.ndarray]:
        """{name: this feature over k's arrays} (k: the shared, memoised kernel calls)."""
        return {self.name: np.asarray(self.formula(k), dtype=k.dtype)}


C, HLC = ("close",), ("high", "low", "close")


def _kernel(name: str, lookback_of: tuple[str, int], core: str, inputs: tuple[str, ...], **params) -> Feature:
    """A feature that is one kernel call: the same call is its formula (on `k`) and its
    stream (on `u`)."""
    def call(f):
        return f(core, inputs, **params)

    return Feature(name, call, lookback_of, call)


def _pct(atr, close):
    return atr / close * 100.0


def _ratio(a, b):
    return a / b


FEATURES: tuple[Feature, ...] = (
    _kernel("f_ret1", ("returns", 1), "rocp", C, n=1),
    _kernel("f_ret5", ("returns", 5), "rocp", C, n=5),
    _kernel("f_sma20", ("sma", 20), "sma", C, n=20),
    _kernel("f_ema20", ("ema", 20), "ema", C, n=20),
    _kernel("f_wma20", ("wma", 20), "wma", C, n=20),
    _kernel("f_dema20", ("dema", 20), "dema", C, n=20),
    _kernel("f_tema20", ("tema", 20), "tema", C, n=20),
    _kernel("f_hma20", ("hma", 20), "hma", C, n=20),
    _kernel("f_lsma20", ("lsma", 20), "lsma", C, n=20),
    _kernel("f_kama10", ("kama", 10), "kama", C, n=10),
    _kernel("f_rsi14", ("rsi", 14), "rsi", C, n=14),
    _kernel("f_atr14", ("atr", 14), "atr", HLC, n=14),
    _kernel("f_plus_di14", ("plus_di", 14), "dmi", HLC, output=0, n=14, which=0),
    _kernel("f_minus_di14", ("minus_di", 14), "dmi", HLC, output=1, n=14, which=0),
    _kernel("f_adx14", ("adx", 14), "dmi", HLC, output=2, n=14, which=0),
    _kernel("f_std20", ("rolling_std", 20), "moments", C, n=20, mode=0),
    _kernel("f_zscore20", ("zscore", 20), "moments", C, n=20, mode=1),
    # the trade log's columns: Volatility Percent = ATR14 / close * 100, Volatility Ratio = ATR14 / ATR28
    # (array arithmetic in the feature dtype, repeated per bar by u.apply)
    Feature("f_vol_pct", lambda k: _pct(k("atr", HLC, n=14), k.column("close")), ("atr", 14),
            lambda u: u.apply(_pct, u("atr", HLC, n=14), u.column("close"))),
    Feature("f_vol_ratio", lambda k: _ratio(k("atr", HLC, n=14), k("atr", HLC, n=28)), ("atr", 28),
            lambda u: u.apply(_ratio, u("atr", HLC, n=14), u("atr", HLC, n=28))),
)
FEATURE_NAMES = [f.name for f in FEATURES]
MAX_WARMUP = max(f.warmup for f in FEATURES)


class ResultShapeError(ValueError):
    """A formula's result of the wrong shape: what came back (the message) and what was
    expected (EntryError wraps it with the entry and column)."""

    def __init__(self, what: str, expected: str = "one value per row of the symbol"):
        self.what, self.expected = what, expected
        super().__init__(what, expected)

    def __str__(self) -> str:
        return self.what


class EntryError(ValueError):
    """A feature entry whose formula raised or returned a result of the wrong shape: the
    entry's name, the column, what happened and what was expected. Kernels know no modules:
    the domain names the plugin module (domain.features)."""

    def __init__(self, entry: str, column: str, what: str, expected: str):
        self.entry, self.column, self.what, self.expected = entry, column, what, expected
        super().__init__(entry, column, what, expected)

    def __str__(self) -> str:
        return f"entry {self.entry!r} (column {self.column}): {self.what}; expected {self.expected}"


def describe_result(result) -> str:
    """What a formula returned, in words: `None`, `a single float`, `5 values`, `an array of
    shape (3, 2)`, `a str`."""
    if result is None:
        return "None"
    try:
        shape = np.shape(result)
    except Exception:  # ragged nested sequences
        return f"a {type(result).__name__}"
    if shape == ():
        return f"a single {type(result).__name__}"
    if len(shape) == 1:
        return f"{shape[0]} value" + ("" if shape[0] == 1 else "s")
    return f"an array of shape {shape}"


def one_line(text: str, limit: int = 300) -> str:
    """`text` on one line (runs of whitespace, newlines included, become one space), cut at
    `limit` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _columns_text(columns: tuple[str, ...]) -> str:
    return ", ".join(columns[:3]) + (f", ... ({len(columns)} columns)" if len(columns) > 3 else "")


def run_entry(entry, k: "_KernelCalls", rows: int) -> dict[str, np.ndarray]:
    """entry.compute(k), checked: each of the entry's columns one 1-D array of `rows` values.
    EntryError (one line) when the formula raises or returns anything else."""
    try:
        got = entry.compute(k)
    except ResultShapeError as exc:
        raise EntryError(entry.name, _columns_text(entry.columns), exc.what, exc.expected) from exc
    except MemoryError:  # the machine's, not the formula's
        raise
    except Exception as exc:
        raise EntryError(entry.name, _columns_text(entry.columns), f"raised {type(exc).__name__}: {one_line(exc)}",
                         "a formula that runs on the bars and returns one value per row") from exc
    for c in entry.columns:
        value = got.get(c) if isinstance(got, dict) else None
        if value is None or np.shape(value) != (rows,):
            raise EntryError(entry.name, c, f"returned {describe_result(value)} for {rows} rows",
                             f"one value per row (an array of length {rows})")
    return got


class _KernelCalls:
    """The `k` handed to formulas: memoised ragged kernel runs over one set of arrays."""

    def __init__(self, arrays: dict[str, np.ndarray], offsets: np.ndarray, backend: str, dtype, threads: int = 1):
        self.arrays, self.offsets, self.backend, self.dtype, self.threads = arrays, offsets, backend, dtype, threads
        self._memo: dict[tuple, list[np.ndarray]] = {}

    def column(self, name: str) -> np.ndarray:
        return self.arrays[name].astype(self.dtype, copy=False)

    def per_symbol(self, fn: Callable, inputs: tuple[str, ...]) -> np.ndarray:
        """fn(*one symbol's input columns in the dtype) -> that symbol's array, for every
        symbol, back to back (a NumPy formula never sees two symbols at once)."""
        cols = [self.column(c) for c in inputs]
        out = np.empty(len(cols[0]) if cols else 0, dtype=self.dtype)
        for a, b in zip(self.offsets[:-1].tolist(), self.offsets[1:].tolist()):
            got = fn(*[c[a:b] for c in cols])
            if got is None or np.shape(got) != (b - a,):
                raise ResultShapeError(f"returned {describe_result(got)} for a symbol of {b - a} rows")
            out[a:b] = got
        return out

    def __call__(self, core: str, inputs: tuple[str, ...], output: int = 0, **params) -> np.ndarray:
        ordered = (params.pop("n"), *params.values())
        key = (core, inputs, ordered)
        if key not in self._memo:
            cols = [self.arrays[c] for c in inputs]
            self._memo[key] = K.ragged(core, cols, self.offsets, ordered, backend=self.backend, dtype=self.dtype,
                                        threads=self.threads)
        return self._memo[key][output]


def compute_features(arrays: dict[str, np.ndarray], offsets: np.ndarray | None = None, backend: str = "cpu",
                     dtype=np.float32, entries=None, threads: int = 1) -> dict[str, np.ndarray]:
    """Every registered feature (or every column of `entries`, feature entries of
    kernels.registry.packs: Feature, Formula, Batch) over `arrays` (name -> 1-D array;
    series back to back); each kernel call splits the series over `threads` threads.
    EntryError for an entry that raises or returns other than one value per row."""
    total = len(next(iter(arrays.values())))
    offsets = np.array([0, total], dtype=np.int64) if offsets is None else np.asarray(offsets, dtype=np.int64)
    k = _KernelCalls(arrays, offsets, backend, dtype, threads)
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN / NaN during warm-up
        for f in FEATURES if entries is None else entries:
            out.update(run_entry(f, k, total))
    return out
