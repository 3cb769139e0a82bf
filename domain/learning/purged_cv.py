"""Purged K-fold cross-validation with an embargo (scikit-learn splitter interface).

Sample i uses time positions t0[i] (its observation) to t1[i] (the end of its label: the
row H trading days ahead); samples are sorted by t0. Test folds are contiguous blocks of
samples. For a test fold, the test window runs from the first test sample's t0 to the
LATEST t1 of any test sample (a known bug elsewhere used the first test label's end, which
leaves later test labels overlapping the training set). A training sample is purged when
its interval [t0, t1] overlaps the test window, and embargoed when its t0 falls within
`embargo` after the window's end (serial correlation does not stop at the label's end).

t0, t1 and embargo are integers (positions) or datetimes and a timedelta.

Large stores: `row_sample` (a seeded uniform sample of at most N rows) bounds the work of a
cross-validation whose rows grow with symbols x years. cv_report (setting cv.max_rows) builds
new purged folds on the sampled rows; the meta model's C search (meta.search_rows) keeps the
folds it was given, restricted to the sample (`folds_on`), since they are also the
calibration's folds.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


class PurgedKFold:
    def __init__(self, n_splits: int = 5, t0=None, t1=None, embargo=0):
        if n_splits < 2:
            raise ValueError(f"n_splits must be >= 2, got {n_splits}")
        if t0 is None or t1 is None:
            raise ValueError("t0 and t1 are required: the first and last time position each sample uses")
        self.n_splits = n_splits
        self.t0, self.t1 = np.asarray(t0), np.asarray(t1)
        if self.t0.shape != self.t1.shape or self.t0.ndim != 1:
            raise ValueError("t0 and t1 must be 1-D arrays of one length")
        if (self.t1 < self.t0).any():
            i = int(np.flatnonzero(self.t1 < self.t0)[0])
            raise ValueError(f"sample {i}: t1 {self.t1[i]} is before t0 {self.t0[i]}")
        if len(self.t0) > 1 and (self.t0[1:] < self.t0[:-1]).any():
            raise ValueError("samples must be sorted by t0")
        self.embargo = embargo

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        return self.n_splits

    def test_windows(self) -> list[tuple]:
        """(start, end) of each fold's test window."""
        return [(self.t0[f[0]], self.t1[f].max()) for f in np.array_split(np.arange(len(self.t0)), self.n_splits)]

    def split(self, X=None, y=None, groups=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        n = len(self.t0)
        if X is not None and len(X) != n:
            raise ValueError(f"X has {len(X)} samples, t0/t1 have {n}")
        if n < self.n_splits:
            raise ValueError(f"cannot split {n} samples into {self.n_splits} folds")
        for test in np.array_split(np.arange(n), self.n_splits):
            start, end = self.t0[test[0]], self.t1[test].max()
            overlaps = (self.t0 <= end) & (self.t1 >= start)
            embargoed = (self.t0 > end) & (self.t0 <= end + self.embargo)
            keep = ~(overlaps | embargoed)
            keep[test] = False
            yield np.flatnonzero(keep), test


def folds_on(rows: np.ndarray, folds, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (train, test) `folds` of n samples restricted to the samples at positions `rows`
    (ascending), as positions into `rows`: the same folds with fewer samples. A subset of a
    purged, embargoed training set is still purged and embargoed against its test fold."""
    at = np.full(n, -1, dtype=np.int64)
    at[rows] = np.arange(len(rows))
    out = []
    for train, test in folds:
        tr, te = at[np.asarray(train)], at[np.asarray(test)]
        out.append((tr[tr >= 0], te[te >= 0]))
    return out


def row_sample(n: int, cap: int | None, seed: int = 0) -> np.ndarray | None:
    """Positions of a seeded uniform sample of `cap` of `n` rows, ascending (so rows sorted
    by date stay sorted), or None when every row is used (`cap` None, or n <= cap).

    The same (n, cap, seed) give the same sample, so a year's fit or report does not depend
    on the run or the process (for one NumPy version: NumPy does not promise that
    `Generator.choice` draws the same rows across versions). A uniform sample keeps the rows' spread over the years and the
    symbols; a stride would not (rows are in (date, symbol) order, and a stride that divides
    the symbol count picks the same symbols every day)."""
    if cap is None or n <= cap:
        return None
    return np.sort(np.random.default_rng(seed).choice(n, size=cap, replace=False))
