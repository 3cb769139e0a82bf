"""predictions: the meta models of Y applied to every symbol and day of Y (out of sample)."""

from __future__ import annotations

import numpy as np
import polars as pl

from domain.learning.predictions import load_year_models, score_rows, scoring_frame
from kernels.registry.specialists import SPECIALIST_COLUMNS
from config.settings import read_settings
from resources.delta_store import DeltaStore
from tests.conftest import LEARNED_SYMBOLS, LEARNED_YEAR


def _stored(cfg, asset):
    return DeltaStore(read_settings(cfg).table_root(asset)).scan(asset)


def test_predictions_cover_every_symbol_and_day_of_the_year_including_unlabelled_last_days(learned_store):
    pred = _stored(learned_store, "predictions").collect()
    spec = _stored(learned_store, "specialists").filter(pl.col("date").dt.year() == LEARNED_YEAR).collect()
    assert pred.height == spec.height and sorted(pred["symbol"].unique()) == LEARNED_SYMBOLS
    assert pred["date"].dt.year().unique().to_list() == [LEARNED_YEAR]
    for h in (3, 7, 14):
        p = pred[f"p_h{h}"].drop_nans()
        assert p.dtype == pl.Float32 and p.len() > 0.9 * pred.height and p.min() >= 0 and p.max() <= 1
    last_day = pred.filter(pl.col("date") == pred["date"].max())
    assert last_day["p_h14"].is_not_nan().all()  # no label yet, but a prediction


def test_predictions_equal_the_saved_model_applied_to_the_stored_scores(learned_store):
    s = read_settings(learned_store)
    models = load_year_models(s.models_dir, LEARNED_YEAR, [3, 7, 14])
    assert sorted(models) == [3, 7, 14]
    frame = scoring_frame(_stored(learned_store, "specialists"), _stored(learned_store, "regime"), None, LEARNED_YEAR)
    probs = score_rows(frame, models, [3, 7, 14])
    pred = _stored(learned_store, "predictions").sort("date", "symbol").collect()
    np.testing.assert_array_equal(pred["p_h7"].to_numpy(), probs["p_h7"])


def test_score_rows_gives_nan_for_a_horizon_without_a_model_and_for_incomplete_rows(learned_store):
    s = read_settings(learned_store)
    models = load_year_models(s.models_dir, LEARNED_YEAR, [7])
    frame = pl.DataFrame({c: [0.1, float("nan")] for c in SPECIALIST_COLUMNS}).with_columns(
        pl.Series("regime", [1, 1], dtype=pl.Int8))
    out = score_rows(frame, models, [3, 7])
    assert np.isnan(out["p_h3"]).all()
    assert np.isfinite(out["p_h7"][0]) and np.isnan(out["p_h7"][1])
