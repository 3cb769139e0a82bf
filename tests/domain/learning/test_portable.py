"""The tree models stored without pickle are checked before the C code walks them
(domain.learning.portable): a crafted index that would read out of memory or loop is refused."""

import re

import numpy as np
import pytest
import skops.io as sio

from domain.learning.metamodel import train_meta
from domain.learning.portable import PortableEnsemble, _checked_hist_gbm, _checked_lightgbm_text, to_arrays


def _problem(n=600):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    X[::4, 1] = np.nan
    return X, (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(np.int8)


@pytest.mark.parametrize("kind", ["lightgbm", "hist_gbm"])
@pytest.mark.parametrize("calibration", ["isotonic", "sigmoid"])
def test_a_tree_model_rebuilt_from_arrays_predicts_as_the_fitted_one_bit_for_bit(kind, calibration):
    X, y = _problem()
    model = train_meta(X, y, model=kind, calibration=calibration, cv=3, missing="native")
    arrays, methods = to_arrays(model.estimator, kind)
    back = PortableEnsemble.from_arrays(arrays, kind, methods, "m", n_features=3)
    X64 = np.where(np.isinf(X), np.nan, X).astype(np.float64)
    np.testing.assert_array_equal(back.predict_proba(X64)[:, 1], model.estimator.predict_proba(X64)[:, 1])


def _lightgbm_text():
    X, y = _problem()
    return train_meta(X, y, model="lightgbm", cv=3, missing="native").estimator.calibrated_classifiers_[0] \
        .estimator.booster_.model_to_string()


@pytest.mark.parametrize("field, value", [("split_feature", "5000000"), ("left_child", "0"), ("right_child", "99")])
def test_a_lightgbm_text_with_an_index_outside_its_tree_is_refused_before_lightgbm_parses_it(field, value):
    text = _lightgbm_text()
    _checked_lightgbm_text(text, "m.npz", 3)
    crafted = re.sub(rf"{field}=(-?\d+)", f"{field}={value}", text, count=1)
    with pytest.raises(ValueError, match="m.npz: a LightGBM tree's split features or children fall outside the tree"):
        _checked_lightgbm_text(crafted, "m.npz", 3)
    with pytest.raises(ValueError, match="not one of 4 columns"):
        _checked_lightgbm_text(text, "m.npz", 4)


@pytest.mark.parametrize("field, value", [("is_categorical", 1), ("left", 0), ("right", 10**6), ("feature_idx", 7)])
def test_a_hist_gbm_tree_with_a_categorical_split_a_cycle_or_an_index_outside_is_refused(field, value):
    X, y = _problem()
    est = train_meta(X, y, model="hist_gbm", cv=3, missing="native").estimator.calibrated_classifiers_[0].estimator
    _checked_hist_gbm(sio.dumps(est), "m.npz", 3)
    est._predictors[0][0].nodes[field][0] = value
    with pytest.raises(ValueError, match="m.npz: a hist_gbm tree's node indices fall outside"):
        _checked_hist_gbm(sio.dumps(est), "m.npz", 3)
