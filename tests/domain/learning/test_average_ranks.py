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
