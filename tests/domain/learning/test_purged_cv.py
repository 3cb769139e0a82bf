"""PurgedKFold: no kept training interval overlaps a test window; the latest test label counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.learning.purged_cv import PurgedKFold


def panel_intervals(n_days: int, n_symbols: int, horizon: int):
    """Rows of several symbols per day, sorted by day; label end = day + horizon."""
    t0 = np.repeat(np.arange(n_days), n_symbols)
    return t0, t0 + horizon


@pytest.mark.parametrize("horizon", [3, 7, 14])
def test_no_kept_training_interval_overlaps_its_test_window(horizon):
    t0, t1 = panel_intervals(120, 3, horizon)
    cv = PurgedKFold(5, t0, t1, embargo=2)
    for (train, test), (start, end) in zip(cv.split(t0), cv.test_windows()):
        assert len(np.intersect1d(train, test)) == 0
        assert not ((t0[train] <= end) & (t1[train] >= start)).any()
        assert not ((t0[train] > end) & (t0[train] <= end + 2)).any()  # embargo
        assert (t1[test] <= end).all() and (t0[test] >= start).all()


def test_window_ends_at_the_latest_test_label_not_the_first():
    # The first test sample has a short label, a later one a long label: the known bug
    # (using the first test label's end) would keep training samples that overlap it.
    t0 = np.arange(10)
    t1 = t0 + 1
    t1[5] = 9  # inside fold 2 (samples 4..5 with 5 folds of 2), its label runs to 9
    cv = PurgedKFold(5, t0, t1)
    train, test = list(cv.split())[2]
    assert list(test) == [4, 5]
    start, end = cv.test_windows()[2]
    assert end == 9 and t1[test[0]] == 5  # the first test label would end at 5
    assert set(train) == {0, 1, 2}  # 3 overlaps the window's start; 6..9 overlap its end


def test_datetimes_and_a_timedelta_embargo():
    days = np.arange("2020-01-01", "2020-03-01", dtype="datetime64[D]")
    cv = PurgedKFold(3, days, days + np.timedelta64(5, "D"), embargo=np.timedelta64(3, "D"))
    for train, test in cv.split(days):
        start, end = days[test[0]], (days + np.timedelta64(5, "D"))[test].max()
        assert not ((days[train] <= end) & (days[train] + np.timedelta64(5, "D") >= start)).any()


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="sorted by t0"):
        PurgedKFold(2, [3, 1], [4, 2])
    with pytest.raises(ValueError, match="sample 0: t1 0 is before t0 1"):
        PurgedKFold(2, [1, 2], [0, 3])
    with pytest.raises(ValueError, match="cannot split 2 samples into 3 folds"):
        list(PurgedKFold(3, [1, 2], [1, 2]).split())


def test_works_as_a_scikit_learn_cv_argument():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(0)
    t0, t1 = panel_intervals(200, 2, 3)
    X = rng.normal(size=(len(t0), 2))
    y = (X[:, 0] + rng.normal(0, 0.5, len(t0)) > 0).astype(int)
    scores = cross_val_score(LogisticRegression(), X, y, cv=PurgedKFold(4, t0, t1), scoring="roc_auc")
    assert len(scores) == 4 and scores.mean() > 0.8


@settings(max_examples=40, deadline=None)
@given(n=st.integers(10, 300), k=st.integers(2, 6), h=st.integers(0, 20), emb=st.integers(0, 10), seed=st.integers(0, 999))
def test_property_purged_train_never_overlaps(n, k, h, emb, seed):
    rng = np.random.default_rng(seed)
    t0 = np.sort(rng.integers(0, n, n))
    t1 = t0 + rng.integers(0, h + 1, n)
    cv = PurgedKFold(k, t0, t1, embargo=emb)
    for (train, _test), (start, end) in zip(cv.split(), cv.test_windows()):
        assert not ((t0[train] <= end) & (t1[train] >= start)).any()
        assert not ((t0[train] > end) & (t0[train] <= end + emb)).any()


def test_row_sample_is_none_at_or_below_the_cap_and_a_sorted_seeded_sample_above():
    from domain.learning.purged_cv import row_sample

    assert row_sample(1_000, None) is None and row_sample(1_000, 1_000) is None
    rows = row_sample(10_000, 1_000, seed=3)
    assert len(rows) == 1_000 and len(np.unique(rows)) == 1_000 and (np.diff(rows) > 0).all()
    assert rows.min() >= 0 and rows.max() < 10_000
    assert np.array_equal(rows, row_sample(10_000, 1_000, seed=3))  # the same sample in every process
    assert not np.array_equal(rows, row_sample(10_000, 1_000, seed=4))


def test_row_sample_covers_every_symbol_of_a_day_ordered_panel_where_a_stride_would_not():
    from domain.learning.purged_cv import row_sample

    symbols = 500
    symbol_of_row = np.tile(np.arange(symbols), 2_000)  # rows in (date, symbol) order
    assert len(np.unique(symbol_of_row[::5])) == 100  # a stride of 5 sees a fifth of the symbols
    assert len(np.unique(symbol_of_row[row_sample(len(symbol_of_row), 200_000)])) == symbols


@pytest.mark.parametrize("horizon", [3, 14])
def test_folds_on_a_sample_keep_each_fold_purged_and_map_back_to_the_same_rows(horizon):
    from domain.learning.purged_cv import folds_on, row_sample

    t0, t1 = panel_intervals(400, 5, horizon)
    cv = PurgedKFold(5, t0, t1, embargo=2)
    folds = list(cv.split())
    rows = row_sample(len(t0), 600, seed=1)
    sampled = folds_on(rows, folds, len(t0))
    assert len(sampled) == 5
    for (train, test), (s_train, s_test), (start, end) in zip(folds, sampled, cv.test_windows()):
        assert np.array_equal(rows[s_train], np.intersect1d(train, rows))
        assert np.array_equal(rows[s_test], np.intersect1d(test, rows))
        kept = rows[s_train]
        assert not ((t0[kept] <= end) & (t1[kept] >= start)).any()
        assert not ((t0[kept] > end) & (t0[kept] <= end + 2)).any()
