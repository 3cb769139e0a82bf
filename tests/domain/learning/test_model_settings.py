"""Models as settings (meta.lightgbm, meta.hist_gbm): validated, in the settings hash only off
their defaults, reaching the estimator; and each model's importance per column."""

import numpy as np
import pytest

from config.experiments import settings_hash
from config.settings import SettingsError, parse_settings
from domain.learning.meta import model_importance
from domain.learning.metamodel import LIGHTGBM_DEFAULTS, HIST_GBM_DEFAULTS, train_meta


def test_the_defaults_are_the_models_of_before_and_keep_the_hash():
    s = parse_settings({})
    lgbm = s.meta.lightgbm.estimator_params()
    assert {k: lgbm[k] for k in ("n_estimators", "learning_rate", "num_leaves", "min_child_samples", "reg_lambda")} == \
        {k: LIGHTGBM_DEFAULTS[k] for k in ("n_estimators", "learning_rate", "num_leaves", "min_child_samples", "reg_lambda")}
    assert {k: v for k, v in s.meta.hist_gbm.estimator_params().items() if k in HIST_GBM_DEFAULTS} == \
        {k: v for k, v in HIST_GBM_DEFAULTS.items() if k != "early_stopping"}
    assert settings_hash(parse_settings({"meta": {"lightgbm": {"num_leaves": 15}}})) == settings_hash(s)
    assert settings_hash(parse_settings({"meta": {"lightgbm": {"num_leaves": 31}}})) != settings_hash(s)
    assert settings_hash(parse_settings({"meta": {"hist_gbm": {"max_iter": 50}}})) != settings_hash(s)


@pytest.mark.parametrize("section, bad", [("lightgbm", {"num_leaves": 1}), ("lightgbm", {"bagging_fraction": 0}),
                                          ("lightgbm", {"trees": 5}), ("hist_gbm", {"learning_rate": 2.0})])
def test_a_bad_hyperparameter_is_a_settings_error_naming_it(section, bad):
    with pytest.raises(SettingsError, match=f"meta.{section}.{next(iter(bad))}"):
        parse_settings({"meta": {section: bad}})


def _problem(n=800):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    return X, (2 * X[:, 0] + 0.2 * X[:, 1] + rng.normal(size=n) > 0).astype(np.int8)


def test_the_settings_reach_lightgbm_and_bagging_replaces_goss():
    X, y = _problem()
    params = parse_settings({"meta": {"lightgbm": {"n_estimators": 7, "bagging_fraction": 0.5, "max_bin": 15}}}).meta.lightgbm
    model = train_meta(X, y, model="lightgbm", cv=3, lgbm_params=params.estimator_params())
    base = model.estimator.calibrated_classifiers_[0].estimator
    assert base.booster_.num_trees() == 7 and base.get_params()["data_sample_strategy"] == "bagging"
    assert base.booster_.params["max_bin"] == 15  # the booster binned each column into at most 15 bins
    assert "max_bin" not in parse_settings({}).meta.lightgbm.estimator_params()  # LightGBM's own 255


def test_importance_ranks_the_column_that_carries_the_signal_first():
    X, y = _problem()
    names = ["signal", "weak", "noise"]
    for kind in ("logistic", "lightgbm"):
        imp = model_importance(train_meta(X, y, model=kind, cv=3, feature_names=names))
        assert list(imp["values"])[0] == "signal" and sum(imp["values"].values()) == pytest.approx(1.0, abs=1e-5), kind
    trees = train_meta(X, y, model="hist_gbm", cv=3, feature_names=names)
    assert model_importance(trees) is None  # permutation needs rows to shuffle


def test_hist_gbm_importance_is_the_auc_lost_when_a_column_is_shuffled():
    X, y = _problem(1600)
    names = ["signal", "weak", "noise"]
    trees = train_meta(X[:800], y[:800], model="hist_gbm", cv=3, feature_names=names)
    imp = model_importance(trees, X[800:], y[800:], seed=0)
    assert imp["kind"] == "permutation: mean AUC drop (800 out-of-sample rows, 2 shuffles)"
    assert list(imp["values"]) == ["signal", "weak", "noise"]
    assert imp["values"]["signal"] > 0.8 and sum(imp["values"].values()) == pytest.approx(1.0, abs=1e-5)
    assert model_importance(trees, X[800:], y[800:], seed=0) == imp  # seeded: the same shares
    assert model_importance(trees, X[800:850], y[800:850]) is None  # under 100 rows
