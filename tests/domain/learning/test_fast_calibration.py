"""cv_report's calibrators and fold metrics without sklearn's per-call costs: Platt as a
Newton solve (== LogisticRegression(C=1) to its tolerance), fold metrics in NumPy (== sklearn
to float64 rounding, no warning), isotonic fits on pre-sorted rows (== the fit on the rows
as given, bit for bit)."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss, roc_auc_score

from domain.learning.calibration import fit_calibrator, fold_metrics
from domain.learning.cv_report import cv_horizon
from domain.learning.platt import fit_platt
from domain.learning.purged_cv import PurgedKFold
from kernels.registry.specialists import SPECIALIST_COLUMNS


def _problem(seed: int, n: int, slope: float, ties: bool = False):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    if ties:
        z = np.round(z, 1)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(slope * z + 0.3)))).astype(np.int8)
    return z, y


@pytest.mark.parametrize("seed,n,slope,ties", [
    (0, 2_000, 1.5, False),    # informative
    (1, 500, -2.0, False),     # anti-informative: a < 0
    (2, 300, 0.0, True),       # no signal, tied scores
    (3, 40, 8.0, False),       # few rows, nearly separable
])
def test_platt_newton_equals_sklearn_logistic_regression_to_tolerance(seed, n, slope, ties):
    z, y = _problem(seed, n, slope, ties)
    fit = fit_platt(z, y, C=1.0)
    ref = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(z.reshape(-1, 1), y)
    assert fit.a == pytest.approx(float(ref.coef_[0, 0]), abs=1e-6)
    assert fit.b == pytest.approx(float(ref.intercept_[0]), abs=1e-6)
    grid = np.linspace(-4, 4, 81)
    np.testing.assert_allclose(fit.predict_proba(grid), ref.predict_proba(grid.reshape(-1, 1)), atol=1e-7, rtol=0)


def test_platt_separable_rows_give_a_finite_slope():
    z = np.r_[np.linspace(-3, -1, 50), np.linspace(1, 3, 50)]
    y = np.r_[np.zeros(50), np.ones(50)].astype(np.int8)
    fit = fit_platt(z, y)
    ref = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(z.reshape(-1, 1), y)
    assert np.isfinite(fit.a) and fit.a == pytest.approx(float(ref.coef_[0, 0]), abs=1e-6)


def test_sigmoid_calibrator_fits_without_sklearn_solver(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("LogisticRegression.fit called for a Platt calibrator")

    monkeypatch.setattr(LogisticRegression, "fit", refuse)
    z, y = _problem(4, 1_000, 1.0)
    cal = fit_calibrator(z * 10 + 50, y, "sigmoid")
    p = cal.predict(np.array([20.0, 50.0, 80.0, np.nan]))
    assert p.dtype == np.float32 and p[0] < p[1] < p[2] and np.isnan(p[3])


def test_fold_metrics_with_ties_and_certain_probabilities_equal_sklearn_without_warning():
    rng = np.random.default_rng(5)
    y = (rng.uniform(size=400) < 0.35).astype(np.int8)
    p = np.round(rng.uniform(size=400), 1)  # 11 distinct values: many ties
    p[:10], p[10:20] = 0.0, 1.0  # log loss clipped at float64 eps, as sklearn clips
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # sklearn 1.9's log_loss(y, p) warned on every fold
        m = fold_metrics(y, p)
    assert m["auc"] == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert m["log_loss"] == pytest.approx(log_loss(y, y_proba=p, labels=[0, 1]), abs=1e-12)
    assert m["n"] == 400 and m["positives"] == int(y.sum())


def test_isotonic_fit_on_presorted_rows_is_bit_for_bit_the_fit_on_rows_as_given():
    rng = np.random.default_rng(6)
    s = np.round(rng.uniform(0, 100, 3_000), 0)  # tied scores with both labels
    y = (rng.uniform(size=s.size) < s / 100).astype(np.int8)
    order = np.lexsort((y, s))
    a, b = fit_calibrator(s, y, "isotonic"), fit_calibrator(s[order], y[order], "isotonic")
    assert np.array_equal(a.model.X_thresholds_, b.model.X_thresholds_)
    assert np.array_equal(a.model.y_thresholds_, b.model.y_thresholds_)


def test_cv_horizon_metrics_equal_per_fold_sklearn_fits():
    """Every fold's isotonic metrics bit for bit, Platt's to 1e-6, of sklearn fits per fold."""
    rng = np.random.default_rng(7)
    dates = np.repeat(np.arange(np.datetime64("2001-01-02"), np.datetime64("2001-05-01")), 3)
    n = dates.size
    scores = {c: np.round(rng.uniform(0, 100, n), 1).astype(np.float32) for c in SPECIALIST_COLUMNS}
    y = (rng.uniform(size=n) < scores[SPECIALIST_COLUMNS[0]] / 100).astype(np.int8)
    frame = pl.DataFrame({"date": dates, "symbol": np.tile(["A", "B", "C"], n // 3), **scores,
                          "label_bin_h3": y, "t1_h3": dates + np.timedelta64(3, "D")})
    rows = cv_horizon(frame, 3, n_splits=3, embargo_days=2)
    folds = list(PurgedKFold(3, dates, dates + np.timedelta64(3, "D"), embargo=np.timedelta64(2, "D")).split())
    assert len(rows) == len(SPECIALIST_COLUMNS) * 3 * 2
    for r in rows:
        train, test = folds[r["fold"]]
        s = scores[r["specialist"]].astype(np.float64)
        if r["method"] == "isotonic":
            iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip").fit(s[train], y[train])
            p = np.clip(iso.predict(s[test]), 0.0, 1.0).astype(np.float32).astype(np.float64)
            assert r["auc"] == roc_auc_score(y[test], p) or r["auc"] == pytest.approx(roc_auc_score(y[test], p), abs=1e-15)
            assert r["brier"] == float(np.mean((p - y[test]) ** 2))
        else:
            c, sd = s[train].mean(), s[train].std()
            lr = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(((s[train] - c) / sd).reshape(-1, 1), y[train])
            p = lr.predict_proba(((s[test] - c) / sd).reshape(-1, 1))[:, 1]
            assert r["brier"] == pytest.approx(float(np.mean((p - y[test]) ** 2)), abs=1e-6)
            assert r["log_loss"] == pytest.approx(log_loss(y[test], y_proba=p, labels=[0, 1]), abs=1e-6)


def _cv_frame(seed: int, days: int = 200, symbols: int = 4) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    dates = np.repeat(np.arange(np.datetime64("2001-01-02"), np.datetime64("2001-01-02") + days), symbols)
    n = dates.size
    scores = {c: np.round(rng.uniform(0, 100, n), 1).astype(np.float32) for c in SPECIALIST_COLUMNS}
    y = (rng.uniform(size=n) < scores[SPECIALIST_COLUMNS[0]] / 100).astype(np.int8)
    return pl.DataFrame({"date": dates, "symbol": np.tile([f"S{i}" for i in range(symbols)], days), **scores,
                         "label_bin_h3": y, "t1_h3": dates + np.timedelta64(3, "D")})


def test_cv_horizon_over_max_rows_cross_validates_the_seeded_sample_of_the_rows():
    """cv.max_rows: the report of a year with more rows is the report of a uniform sample of
    that many rows (purged_cv.row_sample), each fold row naming the rows used and known."""
    from domain.learning.purged_cv import row_sample

    frame = _cv_frame(8)
    capped = cv_horizon(frame, 3, n_splits=3, embargo_days=2, max_rows=300)
    on_sample = cv_horizon(frame[row_sample(frame.height, 300)], 3, n_splits=3, embargo_days=2)
    assert [dict(r, rows_known=None) for r in capped] == [dict(r, rows_known=None) for r in on_sample]
    assert {(r["rows"], r["rows_known"]) for r in capped} == {(300, 800)}


def test_cv_horizon_at_or_under_max_rows_is_the_report_on_every_row():
    frame = _cv_frame(9, days=60)
    assert cv_horizon(frame, 3, n_splits=3, embargo_days=2, max_rows=240) == cv_horizon(frame, 3, n_splits=3, embargo_days=2)
