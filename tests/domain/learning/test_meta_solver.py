"""The meta model's logistic fits use scikit-learn's newton-cholesky solver (train_meta's
default): the same L2 objective as lbfgs, solved to its optimum in a few Newton steps
instead of stopped at lbfgs's loose tolerance. solver="lbfgs" keeps the earlier models bit
for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from domain.learning.metamodel import SOLVERS, _search_C, train_meta


def _problem(seed=0, n=4_000):
    """Specialist-like scores on 0..100 plus a regime one-hot; y depends on two scores."""
    rng = np.random.default_rng(seed)
    scores = rng.uniform(0, 100, size=(n, 4))
    regime = np.eye(4)[rng.integers(0, 4, n)]
    X = np.hstack([scores, regime]).astype(np.float32)
    logit = (scores[:, 0] - 50) / 40 - (scores[:, 2] - 50) / 80
    y = (rng.uniform(size=n) < expit(logit)).astype(np.int8)
    splits = [(np.r_[0:i, i + n // 5:n], np.arange(i, i + n // 5)) for i in range(0, n, n // 5)]
    return X, y, splits


def _objective_gradient(X64, y, coef, intercept, C):
    """Gradient of sum(log loss) + ||coef||^2 / (2 C) (intercept unpenalised), sklearn's
    LogisticRegression(C) objective, at (coef, intercept), over standardised X."""
    r = expit(X64 @ coef + intercept) - y
    return np.r_[X64.T @ r + coef / C, r.sum()]


@pytest.mark.parametrize("solver", SOLVERS)
def test_train_meta_equals_sklearns_calibrated_pipeline_for_each_solver_bit_for_bit(solver):
    X, y, splits = _problem(1)
    model = train_meta(X, y, cv=splits, Cs=10, solver=solver)
    C = _search_C(X.astype(np.float64), y, 10, splits, 0, None, solver)
    assert model.info["C"] == C and model.info["solver"] == solver
    ref = CalibratedClassifierCV(
        Pipeline([("scale", StandardScaler()),
                  ("logit", LogisticRegression(C=C, max_iter=1000, random_state=0, solver=solver))]),
        method="isotonic", cv=splits).fit(X.astype(np.float64), y)
    for mine, theirs in zip(model.estimator.calibrated_classifiers_, ref.calibrated_classifiers_):
        np.testing.assert_array_equal(mine.estimator[-1].coef_, theirs.estimator[-1].coef_)
    np.testing.assert_array_equal(model.predict_proba(X), ref.predict_proba(X.astype(np.float64))[:, 1].astype(np.float32))


def test_newton_cholesky_reaches_the_optimum_lbfgs_stops_short_of():
    """On the same rows and C, the Newton fit's objective gradient is ~0 (optimum to float64
    rounding); lbfgs stops at its tolerance, with a gradient orders of magnitude larger; the
    two coefficient vectors agree to lbfgs's tolerance (a few 1e-3 here)."""
    X, y, _ = _problem(2, n=6_000)
    Z = StandardScaler().fit_transform(X.astype(np.float64))
    grads, coefs = {}, {}
    for solver in SOLVERS:
        lr = LogisticRegression(C=0.006, max_iter=1000, solver=solver).fit(Z, y)
        coefs[solver] = lr.coef_.ravel()
        grads[solver] = np.abs(_objective_gradient(Z, y, lr.coef_.ravel(), lr.intercept_[0], 0.006)).max()
    assert grads["newton-cholesky"] < 1e-6 * len(y)  # mean-loss gradient < 1e-6
    assert grads["newton-cholesky"] < grads["lbfgs"] / 100
    np.testing.assert_allclose(coefs["newton-cholesky"], coefs["lbfgs"], atol=1e-2)


def test_the_c_search_of_either_solver_scores_the_same_path_up_to_solver_tolerance():
    """The fold log losses along the C path differ by less than 1e-5 between the solvers:
    only near-ties between Cs (the flat top of the curve) can pick a different C."""
    from sklearn.linear_model import LogisticRegressionCV

    X, y, splits = _problem(3)
    scores = {}
    for solver in SOLVERS:
        lr = LogisticRegressionCV(Cs=10, cv=splits, scoring="neg_log_loss", max_iter=1000, refit=False, solver=solver,
                                  l1_ratios=(0.0,), use_legacy_attributes=False)
        Pipeline([("scale", StandardScaler()), ("logit", lr)]).fit(X.astype(np.float64), y)
        scores[solver] = lr.scores_.reshape(len(splits), -1)
    np.testing.assert_allclose(scores["newton-cholesky"], scores["lbfgs"], atol=1e-5, rtol=0)


def test_train_meta_refuses_an_unknown_solver():
    X, y, splits = _problem(4, n=500)
    with pytest.raises(ValueError, match="solver must be one of"):
        train_meta(X, y, cv=splits, solver="sag")
