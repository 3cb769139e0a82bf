"""cv_report: walk-forward purged CV of the specialists with calibration, through Dagster."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
from dagster import materialize

from assets.cv_report import cv_report
from domain.learning.cv_report import cv_horizon
from assets.labels import labels
from assets.raw_bars import raw_bars
from assets.specialists import specialists
from domain.learning.training_data import training_frame
from domain.learning.purged_cv import PurgedKFold
from pipeline.definitions import build_resources
from config.settings import read_settings
from resources.delta_store import DeltaStore
from tests.conftest import run_assets

SYMS, YEARS = ["AAA", "BBB", "CCC"], [2000, 2001, 2002, 2003]


def test_cv_report_writes_fold_metrics_per_specialist_and_horizon(make_settings, instance):
    cfg = make_settings()
    assert run_assets([raw_bars, specialists, labels], cfg, instance, SYMS, YEARS).success
    res = materialize([raw_bars, specialists, labels, cv_report], selection=[cv_report], partition_key="2002",
                      instance=instance, resources=build_resources(str(cfg)))
    assert res.success
    assert [(e.check_name, e.passed) for e in res.get_asset_check_evaluations()] == [("fold_metrics_valid", True)]
    settings = read_settings(cfg)
    report = json.loads((settings.stage_reports_dir("cv_report") / "h7" / "2002.json").read_text())
    assert report["year"] == 2002 and report["n_splits"] == 5
    specs = {r["specialist"] for r in report["folds"]}
    assert specs == {"spec_mean_reversion_score", "spec_rsi_score", "spec_atc_score", "spec_seller_exhaustion_score"}
    for r in report["folds"]:
        assert r["method"] in ("sigmoid", "isotonic") and 0 <= r["brier"] <= 1 and r["log_loss"] > 0
    s = report["summary"]["spec_rsi_score"]["isotonic"]
    assert s["auc"] is None or 0 <= s["auc"] <= 1
    assert report["max_rows"] == 500_000 and {(r["rows"], r["rows_known"]) for r in report["folds"]} == {
        (report["folds"][0]["rows"],) * 2}  # fewer rows than cv.max_rows: every row
    # the stored table keeps the columns of the tables written before cv.max_rows (rows_known is
    # only in the JSON): a stored cv_report table takes a year's overwrite without a schema change
    stored = DeltaStore(settings.table_root("cv_report")).scan("cv_report").collect_schema().names()
    assert "rows_known" not in stored and {"year", "horizon", "specialist", "rows", "fold", "method", "auc"} <= set(stored)


def test_walk_forward_frame_keeps_only_labels_known_by_the_year_end(make_settings, instance):
    cfg = make_settings()
    run_assets([raw_bars, specialists, labels], cfg, instance, SYMS, YEARS)
    store = DeltaStore(read_settings(cfg).data_dir)
    frame = training_frame(store.scan("specialists"), store.scan("labels"), [3, 14], known_by_year=2001)
    assert frame["date"].max().year == 2001 and frame["date"].is_sorted()
    known = frame.filter(pl.col("label_bin_h14").is_not_null())
    assert known["t1_h14"].max().year == 2001  # no label that looks into 2002
    last = frame.filter(pl.col("symbol") == "AAA").tail(14)
    assert last["label_bin_h14"].null_count() == 14


def test_folds_are_purged_on_the_label_intervals(make_settings, instance):
    cfg = make_settings()
    run_assets([raw_bars, specialists, labels], cfg, instance, SYMS, YEARS)
    store = DeltaStore(read_settings(cfg).data_dir)
    frame = training_frame(store.scan("specialists"), store.scan("labels"), [7], known_by_year=2003)
    rows = cv_horizon(frame, 7, n_splits=4, embargo_days=3)
    assert {r["fold"] for r in rows} == {0, 1, 2, 3}
    data = frame.filter(pl.col("label_bin_h7").is_not_null()).drop_nans().drop_nulls(["spec_atc_score"])
    t0 = data["date"].to_numpy().astype("datetime64[D]")
    t1 = data["t1_h7"].to_numpy().astype("datetime64[D]")
    cv = PurgedKFold(4, t0, t1, embargo=np.timedelta64(3, "D"))
    for (train, _), (start, end) in zip(cv.split(), cv.test_windows()):
        assert not ((t0[train] <= end) & (t1[train] >= start)).any()
