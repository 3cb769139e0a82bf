"""The fast inference path (domain.live.inference) as a specification, on the session's learned
store (3 symbols x 2000-2003, meta models and predictions of 2003).

infer_one(symbol, now) scores the symbol's last stored bar at or before `now` with the
meta models of year(now), from streaming state warmed on the stored history: it must give
what the batch `predictions` asset stored for that day, with the stored specialist scores
and features as its snapshot. Tests that change the store write through DeltaStore into a copy of it.
"""

from __future__ import annotations

import json

import datetime as dt
import math
import shutil

import numpy as np
import polars as pl
import pytest
import yaml

from kernels.registry.features import FEATURE_NAMES
from domain.live.inference import InferenceSession, SymbolDataError, clear_sessions, get_session, infer_batch, infer_one
from kernels.registry.specialists import SPECIALIST_COLUMNS
from domain.learning.matrix import LSTM_COLUMN, REGIME_COLUMNS
from config.partitions import SymbolYear
from config.settings import read_settings
from resources.delta_store import DeltaStore
from tests.conftest import LEARNED_SYMBOLS, LEARNED_YEAR

HORIZONS = (3, 7, 14)
# (symbol, day of 2003): the first day, days across the year, the last day
PAIRS = [("AAA", dt.date(2003, 1, 2)), ("BBB", dt.date(2003, 2, 14)), ("CCC", dt.date(2003, 6, 2)),
         ("AAA", dt.date(2003, 9, 17)), ("BBB", dt.date(2003, 11, 3)), ("CCC", dt.date(2003, 12, 31))]


def _store(cfg) -> DeltaStore:
    return DeltaStore(read_settings(cfg).data_dir)


def _read(cfg, asset: str, year: int, symbol: str | None = None) -> pl.DataFrame:
    return DeltaStore(read_settings(cfg).table_root(asset)).read(asset, [SymbolYear(symbol, year) if symbol else year])


def _row(df: pl.DataFrame, day, symbol: str | None = None) -> dict:
    cond = pl.col("date") == pl.lit(dt.datetime(day.year, day.month, day.day)).cast(pl.Datetime("ns"))
    if symbol is not None:
        cond = cond & (pl.col("symbol") == symbol)
    out = df.filter(cond)
    assert out.height == 1, f"{symbol} {day}: {out.height} rows"
    return out.row(0, named=True)


@pytest.fixture
def store_copy(learned_store, tmp_path):
    """A writable copy of the learned store (data and models); returns its settings path."""
    src = read_settings(learned_store)
    root = tmp_path / "store"
    shutil.copytree(src.data_dir, root / "data")
    shutil.copytree(src.models_dir, root / "models" / src.experiment)
    data = yaml.safe_load(learned_store.read_text())
    data["paths"] = {"data": str(root / "data"), "reports": str(root / "reports"), "models": str(root / "models")}
    cfg = root / "settings.yaml"
    cfg.write_text(yaml.safe_dump(data))
    return cfg


# ---- equal to the batch path -------------------------------------------------------------


@pytest.mark.parametrize(("symbol", "day"), PAIRS, ids=[f"{s}-{d}" for s, d in PAIRS])
def test_infer_one_equals_the_stored_prediction_of_the_same_day(learned_store, symbol, day):
    out = infer_one(symbol, day, learned_store)
    stored = _row(_read(learned_store, "predictions", LEARNED_YEAR), day, symbol)
    assert out["symbol"] == symbol and out["date"] == dt.datetime(day.year, day.month, day.day)
    assert out["model_year"] == LEARNED_YEAR
    for h in HORIZONS:
        assert type(out[f"h{h}"]) is float
        assert abs(out[f"h{h}"] - stored[f"p_h{h}"]) <= 1e-6, h
    assert out["features"]["regime"] == stored["regime"]


@pytest.mark.parametrize(("symbol", "day"), PAIRS[:3], ids=[f"{s}-{d}" for s, d in PAIRS[:3]])
def test_the_snapshot_is_the_stored_features_and_specialist_rows_of_that_day(learned_store, symbol, day):
    snap = infer_one(symbol, day, learned_store)["features"]
    spec = _row(_read(learned_store, "specialists", LEARNED_YEAR, symbol), day)
    feat = _row(_read(learned_store, "features", LEARNED_YEAR, symbol), day)
    for col in SPECIALIST_COLUMNS:  # the stored scores come from the whole history too: exact
        assert snap[col] == float(np.float32(spec[col])), col
    # stored features come from a halo of halo.years years: equal within float32 tolerance
    np.testing.assert_allclose([snap[n] for n in FEATURE_NAMES], [feat[n] for n in FEATURE_NAMES], rtol=1e-6, atol=1e-7)
    # what the meta model saw: the scores, then the regime one-hot
    inputs = snap["meta_inputs"]
    assert list(inputs) == [*SPECIALIST_COLUMNS, *REGIME_COLUMNS]
    assert [inputs[c] for c in SPECIALIST_COLUMNS] == [snap[c] for c in SPECIALIST_COLUMNS]
    assert [inputs[c] for c in REGIME_COLUMNS] == [float(snap["regime"] == v) for v in (-1, 0, 1, 2)]


def test_infer_batch_equals_infer_one_row_by_row(learned_store):
    day = dt.date(2003, 7, 15)
    batch = infer_batch(LEARNED_SYMBOLS, day, learned_store)
    assert batch["symbol"].to_list() == LEARNED_SYMBOLS and batch.height == len(LEARNED_SYMBOLS)
    assert batch.schema["date"] == pl.Datetime("ns") and batch.schema["p_h7"] == pl.Float32
    for row, symbol in zip(batch.iter_rows(named=True), LEARNED_SYMBOLS):
        one = infer_one(symbol, day, learned_store)
        assert row["date"] == one["date"] and row["model_year"] == one["model_year"]
        assert row["regime"] == one["features"]["regime"]
        for h in HORIZONS:
            assert row[f"p_h{h}"] == one[f"h{h}"]
        for name in [*FEATURE_NAMES, *SPECIALIST_COLUMNS]:
            assert row[name] == one["features"][name], name


def test_daily_batches_over_the_last_months_equal_the_stored_predictions(learned_store):
    """The warm path, one new bar per call, over every day from September to the year's end."""
    stored = (_read(learned_store, "predictions", LEARNED_YEAR).filter(pl.col("date").dt.month() >= 9)
              .sort("date", "symbol"))
    session = InferenceSession(learned_store)
    got = pl.concat([session.infer_batch(LEARNED_SYMBOLS, d) for d in stored["date"].unique().sort().to_list()])
    got = got.sort("date", "symbol")
    assert got["date"].to_list() == stored["date"].to_list()
    for h in HORIZONS:
        np.testing.assert_allclose(got[f"p_h{h}"].to_numpy(), stored[f"p_h{h}"].to_numpy(), rtol=0, atol=1e-6)
    assert got["regime"].to_list() == stored["regime"].to_list()
    assert session.counters["cold_starts"] == len(LEARNED_SYMBOLS)
    assert session.counters["bars_fed"] == sum(
        _read(learned_store, "raw_bars", y, s).height for s in LEARNED_SYMBOLS for y in range(2000, LEARNED_YEAR + 1))


# ---- which bar, which model ------------------------------------------------------------------


def test_now_between_bars_picks_the_last_bar_before_it(learned_store):
    friday = infer_one("BBB", dt.date(2003, 3, 7), learned_store)
    for now in (dt.datetime(2003, 3, 8, 12, 0), "2003-03-09", np.datetime64("2003-03-09T23:59"),
                dt.datetime(2003, 3, 9, 23, 0, tzinfo=dt.UTC), dt.datetime(2003, 3, 7, 16, 30)):
        out = infer_one("BBB", now, learned_store)
        assert out["date"] == dt.datetime(2003, 3, 7), now
        assert [out[f"h{h}"] for h in HORIZONS] == [friday[f"h{h}"] for h in HORIZONS]


def test_a_symbol_without_data_is_a_clear_error_naming_the_symbol_and_the_table(learned_store):
    folder = read_settings(learned_store).data_dir / "raw_bars"
    with pytest.raises(SymbolDataError, match="ZZZ") as err:
        infer_one("ZZZ", dt.date(2003, 5, 5), learned_store)
    assert str(folder) in str(err.value)
    with pytest.raises(SymbolDataError, match="ZZZ"):
        infer_batch(["AAA", "ZZZ"], dt.date(2003, 5, 5), learned_store)
    skipped = infer_batch(["AAA", "ZZZ"], dt.date(2003, 5, 5), learned_store, skip_missing=True)
    assert skipped["symbol"].to_list() == ["AAA"]
    nothing = infer_batch(["ZZZ"], dt.date(2003, 5, 5), learned_store, skip_missing=True)
    assert nothing.height == 0 and nothing.columns == skipped.columns
    with pytest.raises(ValueError, match="not a valid symbol"):
        infer_one("../AAA", dt.date(2003, 5, 5), learned_store)


def test_a_date_before_the_first_bar_is_a_clear_error(learned_store):
    with pytest.raises(ValueError, match="AAA: no stored bar at or before 1999-12-31"):
        infer_one("AAA", dt.date(1999, 12, 31), learned_store)


def test_a_date_before_any_model_gives_nan_probabilities_and_no_model_year(learned_store):
    day = dt.date(2002, 6, 3)  # bars and specialists exist, the first meta models are of 2003
    out = infer_one("CCC", day, learned_store)
    assert out["model_year"] is None
    assert all(math.isnan(out[f"h{h}"]) for h in HORIZONS)
    assert out["features"]["meta_inputs"] == {}
    spec = _row(_read(learned_store, "specialists", 2002, "CCC"), day)
    assert [out["features"][c] for c in SPECIALIST_COLUMNS] == [float(np.float32(spec[c])) for c in SPECIALIST_COLUMNS]
    batch = infer_batch(["CCC"], day, learned_store)
    assert batch["model_year"].to_list() == [None] and batch["p_h3"].is_nan().all()


def test_the_models_are_those_of_the_year_of_now(learned_store):
    """New Year's Day 2003: the last bar is of 2002, the models are 2003's (trained before 2003)."""
    out = infer_one("AAA", dt.date(2003, 1, 1), learned_store)
    assert out["date"].year == 2002 and out["model_year"] == 2003
    assert all(0.0 <= out[f"h{h}"] <= 1.0 for h in HORIZONS)


# ---- the live state --------------------------------------------------------------------------


def test_repeated_calls_reuse_the_warm_state(learned_store):
    clear_sessions()
    first = infer_one("AAA", dt.date(2003, 4, 1), learned_store)
    session = get_session(learned_store)
    fed = session.counters["bars_fed"]
    again = infer_one("AAA", dt.date(2003, 4, 1), learned_store)
    nxt = infer_one("AAA", dt.date(2003, 4, 2), learned_store)
    assert again == first
    assert session.counters["bars_fed"] == fed + 1 and session.counters["cold_starts"] == 1
    assert nxt["date"] == dt.datetime(2003, 4, 2)


def test_a_date_before_the_cached_state_is_a_replay_that_leaves_the_state_alone(learned_store):
    session = InferenceSession(learned_store)
    late = session.infer_one("BBB", dt.date(2003, 10, 1))
    early = session.infer_one("BBB", dt.date(2003, 2, 3))
    assert session.counters["replays"] == 1
    assert early == InferenceSession(learned_store).infer_one("BBB", dt.date(2003, 2, 3))
    assert session._states["BBB"].last_date == np.datetime64("2003-10-01", "ns")
    assert session.infer_one("BBB", dt.date(2003, 10, 1)) == late


def test_new_bars_are_fed_incrementally_and_a_changed_history_rebuilds_the_state(store_copy, learned_store):
    store, key = _store(store_copy), SymbolYear("AAA", LEARNED_YEAR)
    full = store.read("raw_bars", [key])
    store.write("raw_bars", key, full.head(100))  # the store as it was after the 100th session of 2003
    session = InferenceSession(store_copy)
    day100, day101 = full["date"][99], full["date"][100]
    assert session.infer_one("AAA", day101)["date"] == day100  # no newer bar stored yet
    fed = session.counters["bars_fed"]
    store.write("raw_bars", key, full)  # the next bar arrives (a new commit)
    out = session.infer_one("AAA", day101)
    assert out["date"] == day101 and session.counters["bars_fed"] == fed + 1
    assert out == infer_one("AAA", day101, learned_store)
    # a correction of an old bar: the state fed from the old value is rebuilt
    old = SymbolYear("AAA", 2001)
    bars = store.read("raw_bars", [old])
    store.write("raw_bars", old, bars.with_columns(
        pl.when(pl.int_range(pl.len()) == 10).then(pl.col("close") * 1.01).otherwise(pl.col("close")).alias("close")))
    rebuilt = session.infer_one("AAA", full["date"][101])
    assert session.counters["rebuilds"] == 1
    assert rebuilt == InferenceSession(store_copy).infer_one("AAA", full["date"][101])


def test_a_day_without_a_stored_regime_is_tagged_causally_from_the_raw_bars(store_copy, learned_store):
    stored = _read(learned_store, "regime", LEARNED_YEAR)
    _store(store_copy).write_year("regime", LEARNED_YEAR, stored.clear())  # the year's rows deleted
    session = InferenceSession(store_copy)
    for symbol, day in PAIRS:
        out = session.infer_one(symbol, day)
        assert out["features"]["regime"] == _row(stored, day)["regime"], day
        assert out == infer_one(symbol, day, learned_store)


def test_persisted_states_are_used_only_when_they_match_the_stored_bars(store_copy):
    state_dir = read_settings(store_copy).data_dir / "live_state"
    day = dt.date(2003, 8, 1)
    writer = InferenceSession(store_copy, state_dir=state_dir)
    want = writer.infer_one("CCC", day)
    (path,) = writer.save_states()
    assert path == state_dir / "symbol=CCC" / "state.stream.json"
    assert json.loads(path.read_text())["format"] == "tradelab.live_state/2"  # plain data: no pickle
    reader = InferenceSession(store_copy, state_dir=state_dir)
    assert reader.infer_one("CCC", day) == want
    assert reader.counters["persisted_loads"] == 1 and reader.counters["bars_fed"] == 0
    # the bars it was fed from changed: the state is ignored, rebuilt from history
    store, raw = _store(store_copy), SymbolYear("CCC", 2000)
    store.write("raw_bars", raw, store.read("raw_bars", [raw]).with_columns(pl.col("volume") + 1.0))
    stale = InferenceSession(store_copy, state_dir=state_dir)
    stale.infer_one("CCC", day)
    assert stale.counters["persisted_loads"] == 0 and stale.counters["bars_fed"] > 0


def test_a_persisted_state_of_another_experiment_is_not_used_and_is_rebuilt(store_copy):
    """The live state records the experiment and settings hash that wrote it (its provenance):
    a session of another experiment rebuilds its own from history."""
    state_dir = read_settings(store_copy).data_dir / "live_state"
    day = dt.date(2003, 8, 1)
    writer = InferenceSession(store_copy, state_dir=state_dir)
    writer.infer_one("CCC", day)
    (path,) = writer.save_states()
    assert json.loads(path.read_text())["provenance"]["experiment"] == "default"
    other = store_copy.with_name("other.yaml")
    other.write_text(yaml.safe_dump({**yaml.safe_load(store_copy.read_text()), "experiment": "other"}))
    reader = InferenceSession(other, state_dir=state_dir)
    reader.infer_one("CCC", day)
    assert reader.counters["persisted_loads"] == 0 and reader.counters["bars_fed"] > 0


def test_a_model_that_uses_the_lstm_score_gets_the_stored_one_of_that_day(store_copy, monkeypatch):
    """The meta model sees the stored out-of-sample LSTM score of (symbol, date) as the batch
    scoring frame would carry it."""
    day = dt.datetime(2003, 5, 6)
    lstm = pl.DataFrame({"date": [day, day], "symbol": ["AAA", "BBB"], "spec_lstm_score": [0.75, 0.25]}).with_columns(
        pl.col("date").cast(pl.Datetime("ns")), pl.col("spec_lstm_score").cast(pl.Float32))
    store = DeltaStore(read_settings(store_copy).table_root("lstm_model"))  # the experiment's own table
    assert not store.exists("lstm_model")
    store.write_year("lstm_model", LEARNED_YEAR, lstm)

    class Seen:
        def __init__(self):
            self.feature_names = [*SPECIALIST_COLUMNS, LSTM_COLUMN]

        def predict_proba(self, X):
            self.X = X
            return X[:, -1].astype(np.float32)  # echoes the LSTM input

    session = InferenceSession(store_copy)
    model = Seen()
    monkeypatch.setattr(session, "models", lambda year: {7: model})
    out = session.infer_one("AAA", day)
    assert out["h7"] == 0.75 and math.isnan(out["h3"]) and out["features"]["spec_lstm_score"] == 0.75
    assert out["features"]["meta_inputs"][LSTM_COLUMN] == 0.75
    assert math.isnan(session.infer_one("CCC", day)["h7"])  # no stored score: incomplete input


def test_a_symbol_whose_stored_partitions_are_all_empty_is_a_clear_error(learned_copy):
    store = _store(learned_copy)
    store.write("raw_bars", SymbolYear("EMP", 2000), store.read("raw_bars", [SymbolYear("AAA", 2000)]).clear())
    assert SymbolYear("EMP", 2000) in store.partitions("raw_bars")  # materialized without rows
    with pytest.raises(SymbolDataError, match="EMP.*empty"):
        infer_one("EMP", dt.date(2003, 5, 5), learned_copy)
    assert infer_batch(["AAA", "EMP"], dt.date(2003, 5, 5), learned_copy, skip_missing=True)["symbol"].to_list() == ["AAA"]


# ---- live LSTM scoring -------------------------------------------------------------------


def test_the_lstm_score_is_scored_live_and_equals_the_batch_score_of_the_same_bar(store_copy, instance, monkeypatch):
    """With the LSTM of year(bar) saved, the live score of a bar is that model on the symbol's
    last seq_len stored feature rows up to the bar: the batch score the lstm_model asset
    stored for it (1e-6: one window vs a batch), and what the meta model sees. Without the
    model of that year, the stored score is used."""
    from dagster import materialize

    from assets.features import features
    from assets.labels import labels
    from assets.lstm_model import lstm_model
    from assets.raw_bars import raw_bars
    from domain.learning.lstm import load_lstm, score_latest
    from pipeline.definitions import build_resources
    from pipeline.symbols import register_symbols

    data = yaml.safe_load(store_copy.read_text())
    data["lstm"] = {"seq_len": 8, "hidden": 8, "layers": 1, "epochs": 1, "max_steps": 4, "batch_size": 64}
    store_copy.write_text(yaml.safe_dump(data))
    register_symbols(instance, LEARNED_SYMBOLS)
    assert materialize([raw_bars, features, labels, lstm_model], selection=[lstm_model], partition_key=str(LEARNED_YEAR),
                       instance=instance, resources=build_resources(str(store_copy))).success
    settings = read_settings(store_copy)
    stored = _read(store_copy, "lstm_model", LEARNED_YEAR)

    session = InferenceSession(store_copy)
    live = {}
    for symbol, day in PAIRS:
        batch = _row(stored, day, symbol)["spec_lstm_score"]
        assert math.isfinite(batch), (symbol, day)
        live[(symbol, day)] = session.lstm_score(symbol, np.datetime64(day, "ns"))
        assert abs(live[(symbol, day)] - batch) <= 1e-6, (symbol, day, live[(symbol, day)], batch)
    assert session._lstm_models[LEARNED_YEAR][1] is session.lstm_model(LEARNED_YEAR)  # loaded once per year

    class Seen:
        def __init__(self):
            self.feature_names = [*SPECIALIST_COLUMNS, LSTM_COLUMN]

        def predict_proba(self, X):
            return X[:, -1].astype(np.float32)  # echoes the LSTM input

    monkeypatch.setattr(session, "models", lambda year: {7: Seen()})
    for symbol, day in PAIRS[:3]:
        out = session.infer_one(symbol, day)
        want = np.float32(live[(symbol, day)])
        assert out["features"]["meta_inputs"][LSTM_COLUMN] == want
        assert out["features"]["spec_lstm_score"] == want and out["h7"] == want

    # live, not read back: a changed stored table does not move the score ...
    symbol, day = PAIRS[1]
    changed = stored.with_columns(pl.lit(0.5, dtype=pl.Float32).alias("spec_lstm_score"))
    DeltaStore(read_settings(store_copy).table_root("lstm_model")).write_year("lstm_model", LEARNED_YEAR, changed)
    assert InferenceSession(store_copy).lstm_score(symbol, np.datetime64(day, "ns")) == live[(symbol, day)]
    # ... a window that is not full is NaN, as in the batch ...
    saved = load_lstm(settings.models_dir, settings.lstm.horizon, LEARNED_YEAR)
    window = session.lstm_window(symbol, np.datetime64(day, "ns"), saved.seq_len)
    assert window.shape == (saved.seq_len, len(FEATURE_NAMES)) and window.dtype == np.float32
    assert score_latest(saved, window, device="cpu") == pytest.approx(live[(symbol, day)], abs=1e-6)
    assert math.isnan(score_latest(saved, window[1:]))
    assert math.isnan(score_latest(saved, np.where(np.arange(saved.seq_len)[:, None] == 3, np.nan, window)))
    # ... and without the model of that year the stored score is used
    (settings.models_dir / f"lstm_h{settings.lstm.horizon}_{LEARNED_YEAR}.pt").unlink()
    assert load_lstm(settings.models_dir, settings.lstm.horizon, LEARNED_YEAR) is None
    assert session.lstm_score(symbol, np.datetime64(day, "ns")) == 0.5
