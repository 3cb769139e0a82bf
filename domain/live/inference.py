"""The fast inference path: features -> specialists -> meta model ->
P(label = 1) per horizon for one symbol at a time `now`, or a list of symbols.

    infer_one(symbol, now, settings=None) -> dict
        {"symbol", "date": the last stored bar at or before `now` (datetime),
         "h3", "h7", "h14": float probabilities (one key per labels.horizons; NaN without a model
                            or with incomplete inputs),
         "model_year": the year whose meta models scored the row (year of `now`), None when
                       no model of that year exists,
         "features": {every f_* feature, every spec_*_score, "regime" (int or None),
                      "meta_inputs": {the meta model's feature name: the value it saw}},
         "bar": {"open", "high", "low", "close", "volume"} of that date}
    infer_batch(symbols, now, settings=None) -> polars.DataFrame, one row per symbol:
        symbol, date, model_year, p_h{H}..., regime, the features, the specialist scores.

`settings` is a Settings object, a settings-file path, or None (the settings in force,
`config.settings.load_settings`).

Contract (tests/domain/test_inference.py):
* The probabilities come from `assets.predictions.score_rows`, the function the batch
  `predictions` asset uses, fed the float32 specialist scores, the day's regime, (when
  a model uses it) the LSTM score (scored live, see "LSTM" below) and (when a model was trained with
  `meta.inputs: features+specialists` or pack names) the streaming features of the day
  (the selected packs' columns, settings `features`; entries without an updater are
  recomputed over their window, kernels.indicators.streaming.WindowTap): for a date of year Y they equal the stored predictions of Y (to float32 rounding
  of the meta model's output; a features model sees the streaming features, which agree
  with the stored ones within float32 tolerance, see below).
* Specialist scores equal the stored `specialists` rows bit for bit (both come from the
  symbol's whole stored history; kernels/indicators/streaming.py). Features equal
  `compute_features` over the whole history bit for bit; the stored `features` rows come
  from a halo of `halo.years` years and agree with them within float32 tolerance.
* Walk-forward: the meta models of year(now) (`models/<experiment>/meta_h{H}_{Y}.npz`, trained
  before Y). A `now` inside year Y whose last bar is in Y therefore uses the same models
  as the batch predictions of that bar. No model of that year: NaN, model_year None (no
  fallback to an older model: the caller sees that the year's models are missing).
* Nothing after `now` is read into the state: the bar used is the last one at or before it.

How it is fast: LiveState and InferenceSession
----------------------------------------------
A `LiveState` per symbol holds a `kernels.indicators.streaming.SymbolStream` fed with the symbol's
stored raw_bars from its first bar (cold: O(history), ~0.1 ms per bar in Python) and then
only with bars it has not seen (warm: O(1) per new bar). An `InferenceSession` keeps the
states, the symbols' bars, the meta models and the regime table in memory; the module's
`infer_one` / `infer_batch` use one session per (data dir, models dir, precision), so
repeated calls in a process are warm. A symbol's bars are one scan of the raw_bars Delta
table filtered on the symbol (pruned to its files), cached with the table's version.
Every call re-checks the version (a stat of the next commit file in `_delta_log`) and the
model files: after a new commit the symbol is read again and new bars are fed, a
re-trained model file is reloaded, and if the bars the state was fed from have changed
(a backfill or correction), that state is rebuilt from history.
The state only moves forward: a `now` before a state's last bar is answered by a fresh
replay up to that bar (cold cost), leaving the cached state where it was.

Persistence (optional): `InferenceSession(settings, state_dir=...)` (e.g.
`<data>/live_state`) loads `<state_dir>/symbol=<S>/state.stream.json` at a cold start and
`save_states()` writes every state there atomically. A stored state is used only if its
format, the precision, the provenance (the experiment and settings hash of the session that
wrote it: domain.learning.provenance), the source of the streaming code (a hash of the kernel
modules the stream is made of) and a blake2b digest of the bars it was fed all match the current ones;
otherwise it is ignored and rebuilt from history, so a stale or foreign state can cost
time but never change a value. The state is plain data (`state.stream.json`: numbers and
containers set into updaters built anew, kernels.indicators.plain_state; a `state.pkl` of before is never
read), and a state file is read only when
it is this user's, not world-writable, and has the sha256 recorded in `state.json` beside it
when it was written (resources.verified_files); any other is never read: a warning line
names it, and it is rebuilt from history (counter `rejected_states`).
The module-level functions do not persist.

Regime of the day: the stored `regime` row of that date (the year's rows of the regime
table, cached with its version). When that date is not stored
(no partition, or a bar newer than the last regime run) it is computed causally with
`assets.regime.build_regime` (kernels.regime.tag_regime) from the stored raw_bars of every
symbol for years Y-2..Y up to that date, as a single-year `regime` run would tag it
(the tagger only uses trailing windows). Values are cached per session.

LSTM: when a meta model's features include the LSTM score, it is scored live on the
latest sequence when the LSTM of year(bar date) exists (`models/<experiment>/lstm_h{H}_{Y}.pt` + JSON,
H = lstm.horizon): the model is loaded once per year (`domain.learning.lstm.load_lstm`,
reloaded when a file changes), the window is the symbol's last `seq_len` rows of the
stored `features` table up to and including the bar (the live job builds it before
inference), in registry order FEATURE_NAMES, float32 as in training, and
`domain.learning.lstm.score_latest` runs `predict_lstm` on it (GPU when present, else
CPU). It equals the batch score the `lstm_model` asset stored for that bar within 1e-6
(one window vs a batch). NaN when the window is not full: fewer than `seq_len` rows, a
non-finite value in it, or no `features` row of the bar's date (stale table). Without a
model of that year, the stored out-of-sample `spec_lstm_score` of (symbol, date) from
the `lstm_model` asset is used (NaN, hence NaN probabilities, when absent). Live scores
are cached per (symbol, date) with the features table version and the model files.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from config.partitions import REGIME_HALO_YEARS
from config.settings import SYMBOL_PATTERN, Settings, load_settings
from domain.feature_packs import feature_selection
from domain.learning.predictions import load_year_models, model_path, models_features, score_rows
from domain.learning.matrix import LSTM_COLUMN
from domain.learning.meta import frame_matrix
from kernels.registry.features import FEATURE_NAMES
from kernels.registry.specialists import SPECIALIST_COLUMNS
from kernels.indicators.streaming import SymbolStream
from resources.delta_store import DeltaStore
from resources.verified_files import UnverifiedFileError, load_verified, write_verified

if TYPE_CHECKING:  # torch loads with domain.learning.lstm: only when a meta model uses the LSTM score
    from domain.learning.lstm import SavedLSTM

STATE_FORMAT = "tradelab.live_state/2"  # 1: a pickle (state.pkl), never read since
STATE_FILE = "state.stream.json"  # plain data (kernels.indicators.plain_state): nothing in it can run code
STATE_SIDECAR = "state.json"  # {"sha256": ...} of the state file, written after it: read only if it matches
LIVE_STATE_KIND = "live_state"  # the kind its provenance records (the experiment and settings hash that wrote it)
BAR_COLUMNS = ("open", "high", "low", "close", "volume")
STORED_LSTM_COLUMN = "spec_lstm_score"  # the lstm_model asset's column


class SymbolDataError(FileNotFoundError):
    """No stored raw_bars for a symbol (the message names the symbol and the table)."""


# ---------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------


def to_datetime64(now) -> np.datetime64:
    """`now` (datetime, date, ISO string, numpy datetime64, pandas/polars timestamp) as a
    naive datetime64[ns]; a timezone-aware datetime is converted to UTC first; a date is
    its midnight (daily bars are stamped at midnight, so the day's bar is included)."""
    if isinstance(now, np.datetime64):
        return now.astype("datetime64[ns]")
    if isinstance(now, str):
        return np.datetime64(now, "ns")
    if isinstance(now, dt.datetime):
        if now.tzinfo is not None:
            now = now.astimezone(dt.UTC).replace(tzinfo=None)
        return np.datetime64(now, "ns")
    if isinstance(now, dt.date):
        return np.datetime64(dt.datetime(now.year, now.month, now.day), "ns")
    if hasattr(now, "to_datetime64"):  # pandas Timestamp
        return np.datetime64(now.to_datetime64(), "ns")
    raise TypeError(f"now must be a datetime, date, ISO string or numpy datetime64, got {type(now).__name__}")


def _year(t: np.datetime64) -> int:
    return int(t.astype("datetime64[Y]").astype(np.int64)) + 1970


def _as_datetime(t: np.datetime64) -> dt.datetime:
    return t.astype("datetime64[us]").item()


def _stat(path: Path) -> tuple[int, int, int] | None:
    """A file's identity for the caches: (inode, mtime, size); atomic writes (temp file +
    rename) always give a new inode. None when the file does not exist."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _code_fingerprint() -> str:
    """A hash of the source files the streaming state is made of (for persisted states)."""
    import kernels.atc
    import kernels.seller_exhaustion
    import kernels.indicators.streaming
    import kernels.indicators.updaters

    h = hashlib.blake2b(digest_size=16)
    for mod in (kernels.indicators.streaming, kernels.indicators.updaters, kernels.atc, kernels.seller_exhaustion):
        path = Path(mod.__file__)
        # a package (kernels.atc) counts with every module in its folder
        for f in sorted(path.parent.glob("*.py")) if path.name == "__init__.py" else [path]:
            h.update(f.read_bytes())
    return h.hexdigest()


def _symbol_folder(symbol: str) -> str:
    """`symbol=<S>` (the persisted state's folder) for a valid symbol name (never a path:
    `../x` is refused)."""
    if not isinstance(symbol, str) or not SYMBOL_PATTERN.fullmatch(symbol):
        raise ValueError(f"symbol {symbol!r} is not a valid symbol name: expected [A-Z0-9._-]{{1,16}}")
    return f"symbol={symbol}"


# ---------------------------------------------------------------------------------------
# stored bars of one symbol
# ---------------------------------------------------------------------------------------


@dataclass
class SymbolBars:
    """A symbol's stored raw_bars, every year, in date order: dates datetime64[ns] [T] and
    ohlcv float32 [T, 5]; `stats` is the raw_bars table version they were read at."""

    symbol: str
    folder: Path
    dates: np.ndarray
    ohlcv: np.ndarray
    stats: tuple

    def __len__(self) -> int:
        return self.dates.shape[0]

    def digest(self, n: int) -> str:
        """blake2b of the first n bars (dates and values)."""
        h = hashlib.blake2b(digest_size=16)
        h.update(np.ascontiguousarray(self.dates[:n]).view(np.int64).tobytes())
        h.update(np.ascontiguousarray(self.ohlcv[:n]).tobytes())
        return h.hexdigest()


def _arrays(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    df = df.sort("date")
    dates = df["date"].cast(pl.Datetime("ns")).to_numpy()
    ohlcv = np.column_stack([df[c].cast(pl.Float32).to_numpy() for c in BAR_COLUMNS]) if df.height else \
        np.empty((0, len(BAR_COLUMNS)), np.float32)
    return dates, np.ascontiguousarray(ohlcv, dtype=np.float32)


# ---------------------------------------------------------------------------------------
# the live state of one symbol
# ---------------------------------------------------------------------------------------


def _state_to_plain(st: LiveState) -> dict:
    """A LiveState as plain data: its symbol, bars fed, last date and bar, and its stream's
    state (SymbolStream.to_plain)."""
    return {"symbol": st.symbol, "n_bars": int(st.n_bars),
            "last_date": None if st.last_date is None else str(st.last_date),  # its unit kept by its digits
            "bar": [float(x) for x in st.bar], "stream": st.stream.to_plain()}


def _state_from_plain(d: dict) -> LiveState:
    """The LiveState of `_state_to_plain`'s data (ValueError when its stream is of other code)."""
    return LiveState(str(d["symbol"]), SymbolStream.from_plain(d["stream"]), int(d["n_bars"]),
                     None if d["last_date"] is None else np.datetime64(d["last_date"]),
                     np.asarray(d["bar"], dtype=np.float32))


@dataclass
class LiveState:
    """A symbol's streaming state after its first `n_bars` stored bars.

    `features` (precision dtype, STREAM_FEATURES order) and `scores` (float32,
    STREAM_SPECIALISTS order) are the values of the last bar fed (`last_date`, `bar`)."""

    symbol: str
    stream: SymbolStream
    n_bars: int = 0
    last_date: np.datetime64 | None = None
    bar: np.ndarray = field(default_factory=lambda: np.full(len(BAR_COLUMNS), np.nan, np.float32))

    @classmethod
    def new(cls, symbol: str, precision: str = "float32", packs: tuple | None = None) -> LiveState:
        """`packs`: the settings' (packs, plugins) (None: the registries, the `core` pack)."""
        return cls(symbol, SymbolStream(precision, packs))

    @property
    def features(self) -> np.ndarray:
        return self.stream.features

    @property
    def scores(self) -> np.ndarray:
        return self.stream.scores

    def advance(self, bars: SymbolBars, upto: int) -> int:
        """Feed bars[n_bars .. upto] (inclusive); returns how many bars were fed."""
        if upto + 1 < self.n_bars:
            raise ValueError(f"{self.symbol}: the state is at bar {self.n_bars - 1}, cannot go back to {upto}")
        start = self.n_bars
        if upto < start:
            return 0
        update = self.stream.update
        for row in bars.ohlcv[start : upto + 1].tolist():
            update(*row)
        self.n_bars = upto + 1
        self.last_date = bars.dates[upto]
        self.bar = bars.ohlcv[upto].copy()
        return upto + 1 - start


# ---------------------------------------------------------------------------------------
# the session
# ---------------------------------------------------------------------------------------


def _settings(settings) -> Settings:
    if settings is None:
        return load_settings()
    if isinstance(settings, Settings):
        return settings
    return load_settings(settings)


class InferenceSession:
    """In-memory caches for repeated inference over one store (see the module docstring).

    Not thread-safe: use one session per thread."""

    def __init__(self, settings=None, *, state_dir: Path | str | None = None):
        self.settings = _settings(settings)
        self.store = DeltaStore(self.settings.data_dir)
        self.models_dir = Path(self.settings.models_dir)
        self.horizons = list(self.settings.labels.horizons)
        self.precision = self.settings.precision
        # the selected feature packs: the stream's features and scores, in their order
        selection = feature_selection(self.settings)
        self.packs = None if selection.names == (("core",), ()) else selection.names
        self.feature_names = selection.feature_columns
        self.specialist_columns = selection.specialist_columns
        self._packs_version = f"{selection.features_version}.{selection.specialists_version}"
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self._bars: dict[str, SymbolBars] = {}
        self._versions: dict[str, int | None] = {}  # asset -> table version last seen
        self._states: dict[str, LiveState] = {}
        self._models: dict[int, tuple] = {}  # year -> (stats, models)
        self._regime_stored: dict[int, tuple] = {}  # year -> (version, {date int64: regime or None})
        self._regime_computed: dict[int, int | None] = {}
        self._lstm: dict[int, tuple] = {}  # year -> (version, {(symbol, date int64): score})
        self._lstm_models: dict[int, tuple] = {}  # year -> (file stats, SavedLSTM or None)
        self._requests: dict[str, dict] = {}  # kind -> the provenance a stored model must have (_wanted)
        self._lstm_live: dict[tuple, tuple] = {}  # (symbol, date int64) -> ((version, stats), score)
        self._code: str | None = None
        self.counters = {"bars_fed": 0, "cold_starts": 0, "rebuilds": 0, "replays": 0, "persisted_loads": 0,
                         "rejected_states": 0}

    # -- tables --------------------------------------------------------------------------
    def store_of(self, asset: str) -> DeltaStore:
        """The store holding `asset`: the experiment's own tables (lstm_model) or the shared ones."""
        root = self.settings.table_root(asset)
        return self.store if root == self.settings.data_dir else DeltaStore(root)

    def version(self, asset: str) -> int | None:
        """The asset's table version (None: no table): re-read only when the commit file
        after the version last seen exists (one or two stats on a warm call)."""
        store = self.store_of(asset)
        log = store.asset_dir(asset) / "_delta_log"
        known = self._versions.get(asset)
        if (known is not None and (log / f"{known:020d}.json").is_file()
                and not (log / f"{known + 1:020d}.json").is_file()):
            return known
        version = store.version(asset) if store.exists(asset) else None
        self._versions[asset] = version
        return version

    # -- bars --------------------------------------------------------------------------
    def bars(self, symbol: str) -> SymbolBars:
        """The symbol's stored bars (one scan filtered on the symbol), re-read only after a
        new commit of raw_bars; drops a cached state whose bars changed under it."""
        _symbol_folder(symbol)  # a valid name, or ValueError
        table = self.store.asset_dir("raw_bars")
        stats = (self.version("raw_bars"),)
        cached = self._bars.get(symbol)
        if cached is not None and cached.stats == stats:
            return cached
        if stats[0] is None:
            raise SymbolDataError(
                f"no raw_bars stored for symbol {symbol!r}: {table} is not a Delta table yet "
                f"(materialize raw_bars for {symbol} first, or check the data dir {self.store.root})")
        df = (self.store.scan("raw_bars", version=stats[0]).filter(pl.col("symbol") == symbol)
              .select("date", *BAR_COLUMNS).collect())
        if df.height == 0:
            if any(k.symbol == symbol for k in self.store.partitions("raw_bars")):  # materialized, no rows
                raise SymbolDataError(f"no raw bars of symbol {symbol!r}: every partition of {symbol} in {table} "
                                      f"is empty (check the source for {symbol})")
            raise SymbolDataError(
                f"no raw_bars stored for symbol {symbol!r}: {table} has no rows of {symbol} "
                f"(materialize raw_bars for {symbol} first, or check the data dir {self.store.root})")
        dates, ohlcv = _arrays(df)
        fresh = SymbolBars(symbol, table, dates, ohlcv, stats)
        state = self._states.get(symbol)
        if state is not None and cached is not None:
            n = state.n_bars
            same = (len(fresh) >= n and np.array_equal(cached.dates[:n], fresh.dates[:n])
                    and np.array_equal(cached.ohlcv[:n], fresh.ohlcv[:n]))
            if not same:
                del self._states[symbol]
                self.counters["rebuilds"] += 1
        self._bars[symbol] = fresh
        return fresh

    # -- states ------------------------------------------------------------------------
    def state(self, symbol: str, now) -> tuple[LiveState, SymbolBars]:
        """The state of `symbol` at its last stored bar at or before `now` (fed as needed)."""
        t = to_datetime64(now)
        bars = self.bars(symbol)
        idx = int(np.searchsorted(bars.dates, t, side="right")) - 1
        if idx < 0:
            raise ValueError(f"{symbol}: no stored bar at or before {t}; the first bar in {bars.folder} is "
                             f"{bars.dates[0]}")
        st = self._states.get(symbol)
        if st is None:
            st = self._load_state(symbol, bars) or LiveState.new(symbol, self.precision, self.packs)
            self.counters["cold_starts"] += 1
        if idx + 1 < st.n_bars:  # a date before the cached state: a fresh replay, cache untouched
            self._states[symbol] = st
            tmp = LiveState.new(symbol, self.precision, self.packs)
            self.counters["bars_fed"] += tmp.advance(bars, idx)
            self.counters["replays"] += 1
            return tmp, bars
        self.counters["bars_fed"] += st.advance(bars, idx)
        self._states[symbol] = st
        return st, bars

    def reset(self, symbol: str | None = None) -> None:
        """Forget the cached state (and bars) of one symbol, or of all."""
        for d in (self._states, self._bars):
            if symbol is None:
                d.clear()
            else:
                d.pop(symbol, None)

    def _state_path(self, symbol: str) -> Path:
        return self.state_dir / _symbol_folder(symbol) / STATE_FILE

    def _code_id(self) -> str:
        if self._code is None:
            self._code = f"{_code_fingerprint()}+packs:{self._packs_version}"
        return self._code

    def _load_state(self, symbol: str, bars: SymbolBars) -> LiveState | None:
        if self.state_dir is None:
            return None
        path = self._state_path(symbol)
        if not path.is_file():
            return None
        try:
            payload = load_verified(path, path.with_name(STATE_SIDECAR), lambda fh: json.loads(fh.read()),
                                    rebuild="it is rebuilt from history and overwritten at the next save")
        except UnverifiedFileError as err:  # never read: planted, changed or foreign
            warnings.warn(str(err), UserWarning, stacklevel=2)
            self.counters["rejected_states"] += 1
            return None
        except (OSError, ValueError, RecursionError):  # unreadable: rebuilt from history
            return None
        if not isinstance(payload, dict) or payload.get("format") != STATE_FORMAT:
            return None
        if (payload.get("code") != self._code_id() or payload.get("precision") != self.precision
                or payload.get("provenance") != self._wanted(LIVE_STATE_KIND)
                or not isinstance(payload.get("state"), dict)):
            return None  # another experiment's, settings', code's or precision's: rebuilt from history
        try:
            st = _state_from_plain(payload["state"])
        except (KeyError, TypeError, ValueError, OverflowError, RecursionError):  # other code's: rebuilt from history
            return None
        if st.symbol != symbol or st.n_bars > len(bars) or payload.get("digest") != bars.digest(st.n_bars):
            return None
        self.counters["persisted_loads"] += 1
        return st

    def save_states(self) -> list[Path]:
        """Write every cached state to `state_dir` (atomically, as plain data); returns the paths."""
        if self.state_dir is None:
            raise ValueError("this session has no state_dir: InferenceSession(settings, state_dir=...)")
        out = []
        for symbol, st in self._states.items():
            bars = self._bars[symbol]
            payload = {"format": STATE_FORMAT, "code": self._code_id(), "precision": self.precision,
                       "provenance": self._wanted(LIVE_STATE_KIND), "digest": bars.digest(st.n_bars),
                       "state": _state_to_plain(st)}
            data = json.dumps(payload).encode()
            path = self._state_path(symbol)
            sha256 = write_verified(path, lambda fh, d=data: fh.write(d))
            write_verified(path.with_name(STATE_SIDECAR), lambda fh, h=sha256: fh.write(json.dumps({"sha256": h}).encode()))
            out.append(path)
        return out

    # -- models, regime, lstm -------------------------------------------------------------
    def models(self, year: int) -> dict:
        """The meta models of `year` by horizon (reloaded when a file changes)."""
        stats = tuple(_stat(model_path(self.models_dir, h, year)) for h in self.horizons)
        hit = self._models.get(year)
        if hit is None or hit[0] != stats:
            hit = (stats, load_year_models(self.models_dir, year, self.horizons, self._wanted(self.settings.meta.model)))
            self._models[year] = hit
        return hit[1]

    def _wanted(self, kind: str) -> dict:
        """What a stored model must have been trained for to serve this session: its
        experiment, settings hash and `kind` (domain.learning.provenance.request; the hash is
        computed once per session and kind, not per model or state file)."""
        from domain.learning.provenance import request

        if kind not in self._requests:
            self._requests[kind] = request(self.settings, kind=kind)
        return self._requests[kind]

    def _year_table(self, cache: dict, asset: str, year: int, build) -> dict:
        """`build(frame)` of the stored rows of `year` of `asset`, cached until the table's
        version changes ({} when there is no table)."""
        version = self.version(asset)
        hit = cache.get(year)
        if hit is None or hit[0] != version:
            rows = (self.store_of(asset).scan(asset, version=version).filter(pl.col("year") == year).collect()
                    if version is not None else None)
            hit = (version, build(rows) if rows is not None and rows.height else {})
            cache[year] = hit
        return hit[1]

    def regime(self, date: np.datetime64) -> int | None:
        """The regime tag of `date` (stored, else computed causally; None when untagged)."""
        table = self._year_table(self._regime_stored, "regime", _year(date), lambda df: dict(
            zip(df["date"].cast(pl.Datetime("ns")).cast(pl.Int64).to_list(), df["regime"].to_list())))
        key = int(date.astype("datetime64[ns]").astype(np.int64))
        if key in table:
            return table[key]
        if key not in self._regime_computed:
            self._regime_computed[key] = self._compute_regime(date)
        return self._regime_computed[key]

    def _compute_regime(self, date: np.datetime64) -> int | None:
        from domain.regime import build_regime

        year = _year(date)
        version = self.version("raw_bars")
        if version is None:
            return None
        bars = self.store.scan("raw_bars", version=version).filter(
            pl.col("year").is_between(year - REGIME_HALO_YEARS, year)).select(
            pl.col("date").cast(pl.Datetime("ns")), pl.col("symbol").cast(pl.String), "close").filter(
            pl.col("date") <= pl.lit(_as_datetime(date)).cast(pl.Datetime("ns"))).collect()
        if bars.height == 0:
            return None
        tags = build_regime(bars, [year], self.settings.regime.index_symbol)
        row = tags.filter(pl.col("date").cast(pl.Datetime("ns")) == pl.lit(_as_datetime(date)).cast(pl.Datetime("ns")))
        return None if row.height == 0 else row["regime"][0]

    def lstm_model(self, year: int) -> SavedLSTM | None:
        """The saved LSTM of `year` (None without one), loaded once, reloaded when a file changes."""
        from domain.learning.lstm import load_lstm, lstm_path

        path = lstm_path(self.models_dir, self.settings.lstm.horizon, year)
        stats = (_stat(path), _stat(path.with_suffix(".json")))
        hit = self._lstm_models.get(year)
        if hit is None or hit[0] != stats:
            hit = (stats, load_lstm(self.models_dir, self.settings.lstm.horizon, year, self._wanted("lstm")))
            self._lstm_models[year] = hit
        return hit[1]

    def lstm_window(self, symbol: str, date: np.datetime64, seq_len: int, version: int | None = None) -> np.ndarray | None:
        """float32 [<= seq_len, F]: the symbol's last `seq_len` stored `features` rows up to and
        including `date` (registry order, oldest first); None when there is no features row
        of `date` itself."""
        if version is None:
            version = self.version("features")
        if version is None:
            return None
        year, end = _year(date), pl.lit(_as_datetime(date)).cast(pl.Datetime("ns"))
        base = self.store.scan("features", version=version).filter((pl.col("symbol") == symbol) & (pl.col("date") <= end))
        back = seq_len // 240 + 1  # years that hold seq_len daily rows; widened below if not
        df = base.filter(pl.col("year").is_between(year - back, year)).select("date", *FEATURE_NAMES).collect()
        if df.height < seq_len:
            df = base.select("date", *FEATURE_NAMES).collect()
        df = df.sort("date").tail(seq_len)
        if df.height == 0 or df["date"].cast(pl.Datetime("ns")).cast(pl.Int64)[-1] != int(
                date.astype("datetime64[ns]").astype(np.int64)):
            return None
        return df.select(FEATURE_NAMES).to_numpy().astype(np.float32)

    def lstm_score(self, symbol: str, date: np.datetime64) -> float:
        """The LSTM score of (symbol, date): scored live on the latest sequence by the LSTM of
        year(date) when it exists, else the stored out-of-sample score (NaN when absent)."""
        from domain.learning.lstm import score_latest

        year = _year(date)
        saved = self.lstm_model(year)
        if saved is not None:
            key = (symbol, int(date.astype("datetime64[ns]").astype(np.int64)))
            version = self.version("features")
            ident = (version, self._lstm_models[year][0])
            hit = self._lstm_live.get(key)
            if hit is None or hit[0] != ident:
                window = self.lstm_window(symbol, date, saved.seq_len, version)
                hit = (ident, math.nan if window is None else score_latest(saved, window))
                self._lstm_live[key] = hit
            return hit[1]

        # no model of that year: the stored out-of-sample score
        def build(df: pl.DataFrame) -> dict:
            if STORED_LSTM_COLUMN not in df.columns:
                return {}
            keys = zip(df["symbol"].to_list(), df["date"].cast(pl.Datetime("ns")).cast(pl.Int64).to_list())
            return dict(zip(keys, df[STORED_LSTM_COLUMN].to_list()))

        table = self._year_table(self._lstm, "lstm_model", _year(date), build)
        v = table.get((symbol, int(date.astype("datetime64[ns]").astype(np.int64))))
        return math.nan if v is None else float(v)

    # -- inference ---------------------------------------------------------------------
    def _rows(self, symbols: list[str], now, skip_missing: bool):
        rows = []
        for symbol in symbols:
            try:
                st, _ = self.state(symbol, now)
            except SymbolDataError:
                if skip_missing:
                    continue
                raise
            rows.append(st)
        return rows

    def _frame(self, states: list[LiveState], models: dict) -> pl.DataFrame:
        """The scoring frame of `score_rows` (batch layout): symbol, date, spec_* (float32),
        regime (Int8, null when untagged), the LSTM score when a model uses it, the streaming
        features (registry order, float32) when a model uses feature columns."""
        n = len(states)
        scores = np.stack([s.scores for s in states]) if n else np.empty((0, len(self.specialist_columns)), np.float32)
        dates = [s.last_date for s in states]
        at = {c: j for j, c in enumerate(self.specialist_columns)}
        if missing := [c for c in SPECIALIST_COLUMNS if c not in at]:
            raise ValueError(f"the meta models score {missing} (the core pack's specialists); add core to features.packs")
        cols = [pl.Series("symbol", [s.symbol for s in states], dtype=pl.String),
                pl.Series("date", np.array(dates, dtype="datetime64[ns]")),
                *[pl.Series(c, scores[:, at[c]], dtype=pl.Float32) for c in SPECIALIST_COLUMNS],
                pl.Series("regime", [self.regime(d) for d in dates], dtype=pl.Int8)]
        if any(LSTM_COLUMN in m.feature_names for m in models.values()):
            lstm = np.array([self.lstm_score(s.symbol, s.last_date) for s in states], dtype=np.float32)
            cols += [pl.Series(STORED_LSTM_COLUMN, lstm, dtype=pl.Float32), pl.Series(LSTM_COLUMN, lstm, dtype=pl.Float32)]
        wanted = models_features(models)
        if wanted:
            names = self.feature_names
            if unknown := [c for c in wanted if c not in names]:
                raise ValueError(f"a meta model uses columns {unknown[:6]} that the selected feature packs "
                                 "(settings features) do not make")
            feats = np.stack([s.features for s in states]) if n else np.empty((0, len(names)))
            cols += [pl.Series(c, feats[:, names.index(c)], dtype=pl.Float32) for c in wanted]
        return pl.DataFrame(cols)

    def _score(self, states: list[LiveState], now) -> tuple[pl.DataFrame, dict, int | None, dict]:
        year = _year(to_datetime64(now))
        models = self.models(year)
        frame = self._frame(states, models)
        probs = score_rows(frame, models, self.horizons)
        return frame, probs, (year if models else None), models

    def infer_one(self, symbol: str, now) -> dict:
        """See the module docstring."""
        (st,) = self._rows([symbol], now, skip_missing=False)
        frame, probs, model_year, models = self._score([st], now)
        regime = frame["regime"][0]
        features = {name: float(v) for name, v in zip(self.feature_names, st.features.tolist())}
        features.update({c: float(v) for c, v in zip(self.specialist_columns, st.scores.tolist())})
        features["regime"] = None if regime is None else int(regime)
        if LSTM_COLUMN in frame.columns:
            features[STORED_LSTM_COLUMN] = float(frame[LSTM_COLUMN][0])
        features["meta_inputs"] = _meta_inputs(frame, models)
        out = {"symbol": symbol, "date": _as_datetime(st.last_date), "model_year": model_year}
        out.update({f"h{h}": float(probs[f"p_h{h}"][0]) for h in self.horizons})
        out["features"] = features
        out["bar"] = {c: float(v) for c, v in zip(BAR_COLUMNS, st.bar.tolist())}
        return out

    def infer_batch(self, symbols, now, *, skip_missing: bool = False) -> pl.DataFrame:
        """One row per symbol (see the module docstring); `skip_missing` leaves out symbols
        without stored bars instead of raising."""
        states = self._rows(list(symbols), now, skip_missing)
        frame, probs, model_year, _ = self._score(states, now)
        dtype = pl.Float32 if self.precision == "float32" else pl.Float64
        feats = np.stack([s.features for s in states]) if states else np.empty((0, len(self.feature_names)))
        scores = np.stack([s.scores for s in states]) if states else np.empty((0, len(self.specialist_columns)))
        return frame.select("symbol", "date").with_columns(
            pl.lit(model_year, dtype=pl.Int32).alias("model_year"),
            *[pl.Series(k, v, dtype=pl.Float32) for k, v in probs.items()],
            frame["regime"],
            *[pl.Series(name, feats[:, j], dtype=dtype) for j, name in enumerate(self.feature_names)],
            *[pl.Series(c, scores[:, j], dtype=pl.Float32) for j, c in enumerate(self.specialist_columns)],
            *([frame[STORED_LSTM_COLUMN]] if STORED_LSTM_COLUMN in frame.columns else []),
        )


def _meta_inputs(frame: pl.DataFrame, models: dict) -> dict[str, float]:
    """{feature name: value} of the first row as the meta models saw it (the union of their
    features; empty without a model)."""
    if not models:
        return {}
    names = list(dict.fromkeys(n for m in models.values() for n in m.feature_names))
    X = frame_matrix(frame.head(1), names)
    return {n: float(X[0, j]) for j, n in enumerate(names)}


# ---------------------------------------------------------------------------------------
# module-level API: one session per store
# ---------------------------------------------------------------------------------------

_SESSIONS: dict[tuple, InferenceSession] = {}


def get_session(settings=None) -> InferenceSession:
    """The process's session for these settings' data dir, models dir, precision and horizons."""
    s = _settings(settings)
    key = (str(Path(s.data_dir).resolve()), str(Path(s.models_dir).resolve()), s.precision,
           tuple(s.labels.horizons), s.regime.index_symbol)
    session = _SESSIONS.get(key)
    if session is None:
        session = _SESSIONS[key] = InferenceSession(s)
    return session


def clear_sessions() -> None:
    """Drop every cached session (the next call starts cold)."""
    _SESSIONS.clear()


def infer_one(symbol: str, now, settings=None) -> dict:
    """P(label = 1) per horizon for `symbol` at its last bar at or before `now`, with the
    feature snapshot used (see the module docstring)."""
    return get_session(settings).infer_one(symbol, now)


def infer_batch(symbols, now, settings=None, *, skip_missing: bool = False) -> pl.DataFrame:
    """`infer_one` for several symbols as one frame, one meta-model call per horizon."""
    return get_session(settings).infer_batch(symbols, now, skip_missing=skip_missing)
