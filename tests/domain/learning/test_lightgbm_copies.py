"""LightGBM's calibrated copies on columns binned once (domain.learning.lightgbm_copies,
settings meta.lightgbm.shared_bins): the same boosters as LGBMClassifier, the same copies,
calibration and average as CalibratedClassifierCV wherever the bins are the same, and stored
and loaded like every meta model."""

import lightgbm
import numpy as np
import pytest

from config.settings import parse_settings
from domain.learning.lightgbm_copies import booster_params
from domain.learning.metamodel import _lightgbm, train_meta
from domain.learning.persistence import load_arrays, meta_from_arrays, save_meta
from domain.learning.portable import PortableEnsemble


def _levels(n=3000, seed=3):
    """Columns of 8 integer levels: every level is a bin of its own whatever rows are binned,
    so shared bins and per-copy bins are the same bins."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(n, 5)).astype(np.float32)
    return X, ((X[:, 0] - 3.5) * (X[:, 1] - 3.5) + 4 * rng.normal(size=n) > 0).astype(np.int8)


def test_booster_params_train_the_trees_of_lgbm_classifier():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=2000) > 0).astype(int)
    est = _lightgbm(0, None, {"n_estimators": 20, "colsample_bytree": 0.5, "max_bin": 63})
    fitted = est.fit(X, y).booster_
    params, rounds = booster_params(est.get_params())
    ours = lightgbm.train(params, lightgbm.Dataset(X, label=y, params=params), num_boost_round=rounds)
    assert rounds == 20 and params["objective"] == "binary"
    assert ours.model_to_string().split("end of trees")[0] == fitted.model_to_string().split("end of trees")[0]


@pytest.mark.parametrize("calibration", ["isotonic", "sigmoid"])
@pytest.mark.parametrize("copies", [None, 2])
def test_shared_bins_give_calibrated_classifier_cvs_model_where_the_bins_are_the_same(calibration, copies):
    X, y = _levels()
    kw = dict(model="lightgbm", cv=3, missing="native", calibration=calibration, copies=copies)
    per_copy = train_meta(X, y, **kw, lgbm_params={"n_estimators": 30})
    shared = train_meta(X, y, **kw, lgbm_params={"n_estimators": 30, "shared_bins": True})
    assert isinstance(shared.estimator, PortableEnsemble) and len(shared.estimator.bases) == (copies or 3)
    assert shared.info["shared_bins"] is True and "shared_bins" not in per_copy.info
    assert shared.info["lgbm_params"] == per_copy.info["lgbm_params"]
    np.testing.assert_array_equal(shared.predict_proba(X), per_copy.predict_proba(X))


def test_shared_bins_on_continuous_columns_stay_close_to_per_copy_bins():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4000, 6)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + 0.5 * rng.normal(size=4000) > 0).astype(np.int8)
    per_copy = train_meta(X, y, model="lightgbm", cv=3, missing="native", lgbm_params={"n_estimators": 40})
    shared = train_meta(X, y, model="lightgbm", cv=3, missing="native",
                        lgbm_params={"n_estimators": 40, "shared_bins": True})
    assert np.corrcoef(per_copy.predict_proba(X), shared.predict_proba(X))[0, 1] > 0.95


def test_a_shared_bins_model_is_stored_and_loaded_without_pickle_predicting_the_same(tmp_path):
    X, y = _levels(1500)
    model = train_meta(X, y, model="lightgbm", cv=3, missing="native",
                       lgbm_params={"n_estimators": 15, "shared_bins": True})
    save_meta(model, tmp_path / "m.npz")
    with open(tmp_path / "m.npz", "rb") as fh:
        arrays = load_arrays(fh, "m.npz")
    import json

    back = meta_from_arrays(arrays, json.loads((tmp_path / "m.json").read_text()), "m.npz")
    np.testing.assert_array_equal(back.predict_proba(X), model.predict_proba(X))


def test_the_setting_is_off_by_default_and_reaches_the_fit_only_when_on():
    assert "shared_bins" not in parse_settings({}).meta.lightgbm.estimator_params()
    assert parse_settings({"meta": {"lightgbm": {"shared_bins": True}}}).meta.lightgbm.estimator_params()["shared_bins"]
