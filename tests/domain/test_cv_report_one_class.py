"""domain.learning.cv_report with one-class labels: a horizon whose label
has one class is skipped with one warning line; a fold whose training rows have one class
is left out, the other folds are kept."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from domain.learning.cv_report import cv_horizon
from kernels.registry.specialists import SPECIALIST_COLUMNS


class _Log:
    def __init__(self):
        self.warnings: list[str] = []

    def warning(self, msg: str) -> None:
        self.warnings.append(msg)


def _frame(labels: np.ndarray) -> pl.DataFrame:
    n = len(labels)
    dates = [dt.date(2010, 1, 1) + dt.timedelta(days=i) for i in range(n)]
    rng = np.random.default_rng(1)
    return pl.DataFrame({"date": dates, "t1_h3": [d + dt.timedelta(days=3) for d in dates],
                         "label_bin_h3": labels.astype(np.int8),
                         **{c: rng.random(n).astype(np.float32) for c in SPECIALIST_COLUMNS}})


def test_a_label_of_one_class_skips_the_horizon_with_one_warning():
    log = _Log()
    assert cv_horizon(_frame(np.ones(200)), 3, year=2016, log=log) == []
    assert log.warnings == ["cv_report 2016 h3: the label has one class (all 1) in the training years; horizon skipped"]


def test_a_fold_whose_training_rows_have_one_class_is_left_out_and_the_others_kept():
    labels = np.r_[np.ones(160), np.tile([0, 1], 20)]  # the first 4/5 only rose: the last fold trains on them alone
    log = _Log()
    rows = cv_horizon(_frame(labels), 3, n_splits=5, embargo_days=0, year=2016, log=log)
    assert log.warnings == []
    assert sorted({r["fold"] for r in rows}) == [0, 1, 2, 3]
    assert len(rows) == 4 * 2 * len(SPECIALIST_COLUMNS)  # folds x (sigmoid, isotonic) x specialists
