"""Score calibration and probability metrics: arrays in, arrays and dicts out.

- `fit_calibrator(scores, y, method)`: maps one raw score (a specialist's 0..100 score, a
  logit, anything where higher means "more likely positive") to a probability.
    sigmoid   Platt scaling (sklearn's name, also the settings' `meta.calibration`): a penalised
              1-D logistic fit (domain.learning.platt: Newton, == sklearn LogisticRegression(C=1)
              to its tolerance) on the standardised score: p = sigmoid(a * z + b), smooth,
              strictly monotone (decreasing if the score is anti-informative, a < 0).
    isotonic  IsotonicRegression(increasing=True, out_of_bounds="clip"): a non-decreasing
              step/linear map fitted by pool-adjacent-violators; scores outside the
              training range take the value at the nearest end.
  `Calibrator.predict(scores)` returns float32 probabilities in [0, 1]; a non-finite score
  gives NaN (the caller decides what a missing score means).
- `fold_metrics(y, p)`: auc, brier, log_loss, n, positives of one fold (Python scalars, so
  the dict goes straight into JSON). A fold with ONE class has no ROC curve: auc is None
  there, brier and log_loss are still defined (log_loss with labels=[0, 1]). An empty fold
  gives None for all three scores.
- `reliability_curve(y, p, bins)`: the reliability diagram's points
  (sklearn.calibration.calibration_curve) plus the count per non-empty bin.
- `expected_calibration_error(y, p, bins)`: sum over bins of count/n * |mean(y) - mean(p)|.

Every metric refuses non-finite probabilities (mask them first): a metric must not quietly
score fewer rows than the caller thinks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.calibration import calibration_curve
from sklearn.isotonic import IsotonicRegression

from domain.learning.platt import fit_platt

METHODS = ("sigmoid", "isotonic")  # the one calibration vocabulary (settings meta.calibration)


def binary_labels(y, n: int | None = None) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if n is not None and y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} rows, expected {n}")
    if y.dtype == bool:
        return y.astype(np.int8)
    if y.size and not ((y == 0) | (y == 1)).all():  # == np.isin(y, (0, 1)).all(), without its setup
        bad = np.unique(y[~np.isin(y, (0, 1))])[:5]
        raise ValueError(f"y must be binary 0/1, found values {bad.tolist()}")
    return y.astype(np.int8)


def both_classes(y: np.ndarray) -> bool:
    """Whether 0/1 labels hold both classes (np.unique(y).size == 2 without the sort)."""
    return bool(y.size) and bool(y.min() != y.max())


def _probabilities(p, n: int) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1 or p.shape[0] != n:
        raise ValueError(f"p must be 1-D with {n} rows, got shape {p.shape}")
    if not np.isfinite(p).all():
        raise ValueError("p has non-finite values: score only the rows that have a prediction")
    if p.size and (p.min() < 0.0 or p.max() > 1.0):
        raise ValueError(f"p must lie in [0, 1], got [{p.min()}, {p.max()}]")
    return p


@dataclass(frozen=True)
class Calibrator:
    """A fitted score -> probability map (see the module docstring)."""

    method: str
    model: Any  # PlattFit (sigmoid) or IsotonicRegression (isotonic)
    center: float = 0.0  # sigmoid: the score is standardised before the logistic fit
    scale: float = 1.0

    def predict(self, scores) -> np.ndarray:
        s = np.asarray(scores, dtype=np.float64)
        if s.ndim != 1:
            raise ValueError(f"scores must be 1-D, got shape {s.shape}")
        out = np.full(s.shape[0], np.nan, dtype=np.float32)
        ok = np.isfinite(s)
        if ok.any():
            if self.method == "sigmoid":
                z = ((s[ok] - self.center) / self.scale).reshape(-1, 1)
                out[ok] = self.model.predict_proba(z)[:, 1]
            else:
                out[ok] = np.clip(self.model.predict(s[ok]), 0.0, 1.0)
        return out


def fit_calibrator(scores, y, method: str = "sigmoid") -> Calibrator:
    """Fit a calibrator on finite (score, label) pairs; both classes must be present."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {s.shape}")
    y = binary_labels(y, s.shape[0])
    if not np.isfinite(s).all():
        raise ValueError("scores have non-finite values: fit on the rows that have a score")
    if not both_classes(y):
        raise ValueError("calibration needs both classes in y")
    if method == "isotonic":
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
        return Calibrator("isotonic", iso.fit(s, y))
    center = float(s.mean())
    scale = float(s.std()) or 1.0
    lr = fit_platt((s - center) / scale, y, C=1.0)  # == LogisticRegression(C=1.0) to its tolerance
    return Calibrator("sigmoid", lr, center, scale)


def average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of a finite 1-D array, ties at their average rank: scipy.stats.rankdata's
    values exactly (integers and halves are exact in float64), without its per-call checks,
    which cost more than the ranking on a day of a few symbols (cross_section ranks every day; fold_metrics ranks every fold)."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    start = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])  # first sorted position of each tie group
    count = np.diff(np.r_[start, xs.shape[0]])
    ranks = np.empty(xs.shape[0], dtype=np.float64)
    ranks[order] = np.repeat(start + (count + 1) / 2.0, count)
    return ranks


def fold_metrics(y, p) -> dict:
    """{auc, brier, log_loss, n, positives} of one fold; auc None when y has one class."""
    y = binary_labels(y)
    n = int(y.shape[0])
    p = _probabilities(p, n)
    positives = int(y.sum())
    if n == 0:
        return {"auc": None, "brier": None, "log_loss": None, "n": 0, "positives": 0}
    auc = _auc(y, p, positives) if 0 < positives < n else None
    return {
        "auc": auc,
        "brier": float(np.mean((p - y) ** 2)),  # == sklearn.metrics.brier_score_loss
        "log_loss": _log_loss(y, p),
        "n": n,
        "positives": positives,
    }


def _auc(y: np.ndarray, p: np.ndarray, positives: int) -> float:
    """ROC AUC as the Mann-Whitney statistic on average ranks (ties count 1/2): the area
    sklearn's roc_auc_score integrates, to float64 rounding, without its validation cost.
    The ranks are scipy's rankdata values exactly (average_ranks), so the same sum."""
    negatives = y.shape[0] - positives
    rank_sum = float(average_ranks(p)[y == 1].sum())
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def _log_loss(y: np.ndarray, p: np.ndarray) -> float:
    """sklearn's log_loss(y, p, labels=[0, 1]): the probability of the true class clipped
    to [eps, 1 - eps] (float64 eps), mean of -log."""
    eps = np.finfo(np.float64).eps
    q = np.where(y == 1, p, 1.0 - p)
    return float(np.mean(-np.log(np.clip(q, eps, 1.0 - eps))))


def reliability_curve(y, p, bins: int = 10, strategy: str = "uniform") -> dict[str, np.ndarray]:
    """Reliability diagram points over non-empty bins.

    prob_pred  mean predicted probability per bin (x axis)
    prob_true  fraction of positives per bin (y axis)
    count      rows per bin (int64), same binning as sklearn's calibration_curve
    """
    y = binary_labels(y)
    p = _probabilities(p, y.shape[0])
    if y.size == 0:
        empty = np.zeros(0)
        return {"prob_true": empty, "prob_pred": empty, "count": np.zeros(0, dtype=np.int64)}
    prob_true, prob_pred = calibration_curve(y, p, n_bins=bins, strategy=strategy)
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, bins + 1)
    else:
        edges = np.percentile(p, np.linspace(0.0, 100.0, bins + 1))
    counts = np.bincount(np.searchsorted(edges[1:-1], p), minlength=bins)
    return {"prob_true": prob_true, "prob_pred": prob_pred, "count": counts[counts > 0].astype(np.int64)}


def expected_calibration_error(y, p, bins: int = 10) -> float:
    """Count-weighted mean |observed rate - mean prediction| over uniform bins."""
    c = reliability_curve(y, p, bins)
    if c["count"].sum() == 0:
        return float("nan")
    w = c["count"] / c["count"].sum()
    return float(np.sum(w * np.abs(c["prob_true"] - c["prob_pred"])))
