"""information_coefficient ranks with `average_ranks`: scipy's rankdata values exactly, so the
daily ICs are the same bit for bit, without scipy's per-call cost on every day."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata

import domain.learning.metrics as metrics


@pytest.mark.parametrize("x", [
    np.array([3.0]),
    np.array([2.0, 2.0, 2.0]),                       # all tied
    np.array([0.5, -1.0, 0.5, 7.0, -1.0, 0.5]),      # two tie groups
    np.round(np.random.default_rng(0).normal(size=1_000), 1),
], ids=["one", "all_tied", "two_tie_groups", "many_ties"])
def test_average_ranks_equal_scipy_rankdata_exactly(x):
    r = metrics.average_ranks(x)
    assert r.dtype == np.float64 and np.array_equal(r, rankdata(x))


def test_information_coefficient_ranks_without_scipy_and_equals_the_rankdata_formula(monkeypatch):
    rng = np.random.default_rng(1)
    p, ret = np.round(rng.uniform(size=12), 1), rng.normal(size=12)
    rp, rr = rankdata(p) - 6.5, rankdata(ret) - 6.5
    expected = float(np.dot(rp, rr) / np.sqrt(np.dot(rp, rp) * np.dot(rr, rr)))

    def refuse(*a, **k):
        raise AssertionError("scipy rankdata called per day")

    monkeypatch.setattr("scipy.stats.rankdata", refuse)
    monkeypatch.setattr(metrics, "rankdata", refuse, raising=False)
    assert metrics.information_coefficient(p, ret) == expected


@pytest.mark.parametrize("p", [
    np.random.default_rng(2).uniform(size=2_000),                 # no ties
    np.round(np.random.default_rng(3).uniform(size=2_000), 2),    # many ties, across the classes
    np.full(50, 0.5),                                             # one tie group: AUC 1/2
], ids=["no_ties", "ties", "constant"])
def test_fold_auc_is_the_mann_whitney_statistic_on_rankdata_ranks_exactly(p):
    """cv_report's fold AUC ranks with average_ranks (one fold, ~1,000 per run): the same
    rank sum as scipy's rankdata, so the same AUC bit for bit; sklearn's to float64 rounding."""
    from sklearn.metrics import roc_auc_score

    from domain.learning.calibration import fold_metrics

    y = (np.random.default_rng(4).uniform(size=p.shape[0]) < 0.4).astype(np.int8)
    pos = int(y.sum())
    expected = (float(rankdata(p)[y == 1].sum()) - pos * (pos + 1) / 2.0) / (pos * (len(y) - pos))
    auc = fold_metrics(y, p)["auc"]
    assert auc == expected
    assert auc == pytest.approx(roc_auc_score(y, p), abs=1e-12)


@pytest.mark.parametrize("y,both", [([], False), ([1], False), ([0, 0, 0], False), ([1, 0], True), ([0, 0, 1], True)])
def test_both_classes_is_true_only_with_a_zero_and_a_one(y, both):
    from domain.learning.calibration import both_classes

    assert both_classes(np.asarray(y, dtype=np.int8)) is both
