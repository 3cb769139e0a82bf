"""The meta model's C search scores its folds with `neg_log_loss_score`: sklearn's
"neg_log_loss" scorer bit for bit (so the same C and the same model), without the scorer's
per-call validation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.metrics import get_scorer, log_loss, make_scorer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from domain.learning.metamodel import neg_log_loss_score, train_meta


@pytest.mark.parametrize("seed,rows,cols,scale", [(0, 50, 1, 1.0), (1, 700, 6, 30.0), (2, 30, 12, 0.01)])
def test_neg_log_loss_score_equals_sklearn_scorer_bit_for_bit(seed, rows, cols, scale):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, cols)) * scale
    y = (rng.uniform(size=rows) < 0.4).astype(np.int8)
    lr = LogisticRegression()
    lr.classes_ = np.array([0, 1], dtype=np.int8)
    w = rng.normal(size=cols + 1) * 5  # a path point as LogisticRegressionCV sets it: 1-D coef
    lr.coef_, lr.intercept_ = w[..., :-1], w[..., -1]
    ref = make_scorer(log_loss, greater_is_better=False, response_method="predict_proba", labels=lr.classes_)
    assert neg_log_loss_score(lr, X, y) == ref(lr, X, y)
    fitted = LogisticRegression().fit(X, y)  # 2-D coef_, as after a fit
    assert neg_log_loss_score(fitted, X, y) == get_scorer("neg_log_loss")(fitted, X, y)


def test_meta_model_c_search_chooses_the_c_of_sklearns_neg_log_loss_search():
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 100, size=(1_500, 4)).astype(np.float32)
    y = (rng.uniform(size=1_500) < 1 / (1 + np.exp(-(X[:, 0] - 50) / 25))).astype(np.int8)
    model = train_meta(X, y, cv=3, Cs=10, seed=0)
    ref = Pipeline([("scale", StandardScaler()),
                    ("logit", LogisticRegressionCV(Cs=10, cv=3, scoring="neg_log_loss", max_iter=1000, random_state=0,
                                                   l1_ratios=(0.0,), use_legacy_attributes=False))])
    ref.fit(X.astype(np.float64), y)
    assert model.info["C"] == float(np.ravel(ref.named_steps["logit"].C_)[0])


@pytest.mark.parametrize("seed,rows,cols,signal", [(4, 2_000, 8, 0.05), (5, 800, 3, 2.0), (6, 3_000, 12, 0.0),
                                                   (7, 400, 1, 0.5)])
def test_c_search_without_the_refit_chooses_the_c_of_the_refitting_search(seed, rows, cols, signal):
    """_search_C skips LogisticRegressionCV's refit on all rows (its coefficients are not
    used) and takes refit=True's C: argmax of the fold scores summed over folds. Weak,
    strong, no signal (the scores of the large Cs nearly tie) and one column."""
    from domain.learning.metamodel import _search_C

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, cols)) * rng.uniform(0.1, 50, size=cols)
    y = (rng.uniform(size=rows) < 1 / (1 + np.exp(-signal * X[:, 0] / X[:, 0].std()))).astype(np.int8)
    splits = [(np.r_[0:i, i + rows // 4:rows], np.arange(i, i + rows // 4)) for i in range(0, rows, rows // 4)]
    ref = Pipeline([("scale", StandardScaler()),
                    ("logit", LogisticRegressionCV(Cs=10, cv=splits, scoring="neg_log_loss", max_iter=1000,
                                                   random_state=0, l1_ratios=(0.0,), use_legacy_attributes=False))])
    expected = float(np.ravel(ref.fit(X, y).named_steps["logit"].C_)[0])
    assert _search_C(X, y, 10, splits, 0, None) == expected
    assert _search_C(X, y, [0.01, 0.1, 1.0], splits, 0, None) == float(np.ravel(
        ref.set_params(logit__Cs=[0.01, 0.1, 1.0]).fit(X, y).named_steps["logit"].C_)[0])


def _purged_problem(rows: int, seed: int):
    from domain.learning.purged_cv import PurgedKFold

    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 100, size=(rows, 4)).astype(np.float32)
    y = (rng.uniform(size=rows) < 1 / (1 + np.exp(-(X[:, 0] - 50) / 40))).astype(np.int8)
    t0 = np.repeat(np.arange(rows // 4), 4)  # 4 symbols a day, sorted by day
    return X, y, list(PurgedKFold(5, t0, t0 + 3, embargo=1).split())


def test_c_search_on_a_row_sample_is_the_search_on_those_rows_with_the_same_folds():
    """search_rows: the C of `_search_C` over the sampled rows and the full folds restricted
    to them; the calibrated copies still fit every row (the model records both counts)."""
    from domain.learning.metamodel import _search_C
    from domain.learning.purged_cv import folds_on, row_sample

    X, y, folds = _purged_problem(4_000, 8)
    model = train_meta(X, y, cv=folds, Cs=10, seed=2, search_rows=1_000)
    rows = row_sample(len(y), 1_000, seed=2)
    expected = _search_C(X[rows].astype(np.float64), y[rows], 10, folds_on(rows, folds, len(y)), 2, None,
                         "newton-cholesky")
    assert model.info["C"] == expected and model.info["search_rows"] == 1_000 and model.info["n_train"] == 4_000


def test_c_search_rows_at_or_above_the_training_rows_give_the_same_model_bit_for_bit():
    X, y, folds = _purged_problem(1_200, 9)
    every = train_meta(X, y, cv=folds, Cs=10, search_rows=None)
    capped = train_meta(X, y, cv=folds, Cs=10, search_rows=1_200)
    assert every.info["C"] == capped.info["C"] and capped.info["search_rows"] == 1_200
    assert np.array_equal(every.predict_proba(X), capped.predict_proba(X))
