"""meta.inputs: features+specialists — the feature registry's columns in the meta model, in
training (meta_model), batch scoring (predictions) and live inference (domain.live.inference).

On a copy of the session's learned store (3 symbols x 2000-2003): the meta models and
predictions of 2003 are re-made with the setting, for LightGBM and the logistic model.
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest
import yaml
from dagster import materialize

from assets.meta_model import meta_model
from assets.predictions import predictions
from config.settings import parse_settings, read_settings
from domain.learning.meta import feature_columns, feature_frame
from domain.learning.predictions import extra_columns, load_year_models, score_rows, scoring_frame
from domain.live.inference import InferenceSession
from domain.learning.matrix import REGIME_COLUMNS, build_meta_matrix
from kernels.registry.features import FEATURE_NAMES
from kernels.registry.specialists import SPECIALIST_COLUMNS
from pipeline.definitions import ALL_ASSETS, build_resources
from tests.conftest import LEARNED_SYMBOLS, LEARNED_YEAR, project_instance_for_test


def _scan(cfg, asset):
    from resources.delta_store import DeltaStore

    return DeltaStore(read_settings(cfg).table_root(asset)).scan(asset)


def test_the_setting_defaults_to_specialists_and_names_the_allowed_values():
    assert parse_settings({}).meta.inputs == "specialists"
    assert parse_settings({"meta": {"inputs": "features+specialists"}}).meta.inputs == "features+specialists"
    with pytest.raises(ValueError, match="features\\+specialists"):
        parse_settings({"meta": {"inputs": "features"}})
    assert feature_columns("specialists") == [] and feature_columns("features+specialists") == FEATURE_NAMES


def test_build_meta_matrix_appends_named_feature_columns_last_and_keeps_nan():
    spec = np.array([[10.0, 20.0], [30.0, 40.0]], np.float32)
    feats = np.array([[1.5, np.nan], [2.5, 3.5]], np.float64)
    X, names = build_meta_matrix(spec, None, np.array([1, 0]), specialist_names=["a", "b"], features=feats,
                                 feature_columns=["f_x", "f_y"])
    assert names == ["a", "b", *REGIME_COLUMNS, "f_x", "f_y"] and X.dtype == np.float32
    np.testing.assert_array_equal(X[:, -2:], feats.astype(np.float32))
    with pytest.raises(ValueError, match="2 feature column names for 1"):
        build_meta_matrix(spec, features=feats[:, :1], feature_columns=["f_x", "f_y"])
    with pytest.raises(ValueError, match="duplicate"):
        build_meta_matrix(spec, specialist_names=["a", "b"], features=feats, feature_columns=["a", "f_y"])


def test_an_empty_features_table_is_a_clear_error():
    with pytest.raises(ValueError, match="materialize `features`"):
        feature_frame(pl.LazyFrame(), FEATURE_NAMES).collect()


@pytest.fixture(scope="module", params=["lightgbm", "logistic"])
def features_store(request, learned_store, tmp_path_factory):
    """A copy of the learned store whose meta models and predictions of 2003 are made with
    meta.inputs features+specialists and meta.model `param`."""
    import shutil

    from pipeline.symbols import register_symbols

    src = learned_store.parent
    dst = tmp_path_factory.mktemp(f"features_{request.param}") / "store"
    shutil.copytree(src, dst)
    cfg = yaml.safe_load(learned_store.read_text())
    cfg["paths"] = {k: str(dst / k) for k in ("data", "reports", "models")}
    cfg["meta"] = {"inputs": "features+specialists", "model": request.param}
    cfg["experiment"] = f"features-{request.param}"  # other model settings: another experiment
    path = dst / "settings.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with project_instance_for_test() as inst:
        register_symbols(inst, LEARNED_SYMBOLS)
        assert materialize(ALL_ASSETS, selection=[meta_model, predictions], partition_key=str(LEARNED_YEAR),
                           instance=inst, resources=build_resources(str(path))).success
    return path


def test_a_features_model_records_and_uses_the_feature_columns(features_store):
    s = read_settings(features_store)
    side = json.loads((s.models_dir / f"meta_h7_{LEARNED_YEAR}.json").read_text())
    # the groups it was trained on (no LSTM score is stored in this store: that group is not used)
    assert side["kind"] == s.meta.model and side["window"]["inputs"] == ["specialists", "regime", "core"]
    assert side["features"] == [*SPECIALIST_COLUMNS, *REGIME_COLUMNS, *FEATURE_NAMES]
    assert side["window"]["input_columns"] == len(side["features"])
    assert side["missing"] == ("fill" if s.meta.model == "logistic" else "native")
    models = load_year_models(s.models_dir, LEARNED_YEAR, [3, 7, 14])
    assert sorted(models) == [3, 7, 14] and all(extra_columns(m) == FEATURE_NAMES for m in models.values())
    if s.meta.model == "lightgbm":  # the trees split on feature columns
        booster = models[7].estimator.bases[0]  # the first calibrated copy's LightGBM booster
        gain = booster.feature_importance("split")
        assert gain[len(SPECIALIST_COLUMNS) + len(REGIME_COLUMNS):].sum() > 0
    else:  # the logistic coefficients of the features are not all zero
        coef = side["folds"][0]["coef"]
        assert any(abs(coef[f]) > 0 for f in FEATURE_NAMES)
    report = json.loads((s.stage_reports_dir("meta_model") / f"h7_{LEARNED_YEAR}.json").read_text())
    assert report["n"] > 200 and 0 <= report["auc"] <= 1


def test_features_model_predictions_equal_the_model_on_the_stored_features(features_store):
    s = read_settings(features_store)
    models = load_year_models(s.models_dir, LEARNED_YEAR, [3, 7, 14])
    frame = scoring_frame(_scan(features_store, "specialists"), _scan(features_store, "regime"), None, LEARNED_YEAR,
                          _scan(features_store, "features"), FEATURE_NAMES)
    pred = _scan(features_store, "predictions").sort("date", "symbol").collect()
    probs = score_rows(frame, models, [3, 7, 14])
    for h in (3, 7, 14):
        np.testing.assert_array_equal(pred[f"p_h{h}"].to_numpy(), probs[f"p_h{h}"])
        assert pred[f"p_h{h}"].is_not_nan().mean() > 0.9
    with pytest.raises(ValueError, match="lacks"):
        score_rows(frame.drop("f_rsi14"), models, [7])


def test_features_model_live_inference_agrees_with_the_stored_predictions(features_store):
    stored = (_scan(features_store, "predictions").filter(pl.col("date").dt.year() == LEARNED_YEAR).collect()
              .filter(pl.col("date").dt.month() >= 11).sort("date", "symbol"))
    session = InferenceSession(features_store)
    got = pl.concat([session.infer_batch(LEARNED_SYMBOLS, d) for d in stored["date"].unique().sort().to_list()])
    got = got.sort("date", "symbol")
    assert got["date"].to_list() == stored["date"].to_list()
    for h in (3, 7, 14):
        a, b = got[f"p_h{h}"].to_numpy(), stored[f"p_h{h}"].to_numpy()
        assert np.isfinite(a).all() and np.isfinite(b).all()
        # the streaming features equal the stored ones within float32 tolerance (tests/domain/test_inference.py);
        # measured: the probabilities are identical here, the bound is test_inference.py's
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    one = session.infer_one("BBB", dt.date(LEARNED_YEAR, 12, 1))
    assert list(one["features"]["meta_inputs"]) == [*SPECIALIST_COLUMNS, *REGIME_COLUMNS, *FEATURE_NAMES]
    assert [one["features"]["meta_inputs"][f] for f in FEATURE_NAMES] == [
        float(np.float32(one["features"][f])) for f in FEATURE_NAMES]
