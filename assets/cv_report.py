"""Stage `cv_report` (year): purged cross-validation of every specialist per horizon.

For year Y (walk-forward: only labels known by the end of Y), per horizon H and specialist:
PurgedKFold over the rows sorted by date, label intervals [date, date H rows ahead],
embargo `cv.embargo_days`; on each fold, Platt and isotonic calibrators are fitted on the
training rows (a score -> probability map) and scored on the test rows: AUC, Brier, log
loss. Specialists run in parallel (joblib) over one memory-mapped copy of the scores and
labels. Reports: `reports/cv/h{H}/{Y}.json`; the table of fold metrics is the output.
"""

import json

import polars as pl
from dagster import AllPartitionMapping, AssetExecutionContext, AssetIn, BackfillPolicy, MetadataValue, Output, asset

from domain.observe import observe, write_json_atomic
from domain.learning.training_data import training_frame
from config.partitions import years_partitions
from resources.io_manager import ALLOW_MISSING
from resources.project import ProjectResource
from domain.learning.cv_report import cv_horizon, summarize


@asset(
    partitions_def=years_partitions,
    backfill_policy=BackfillPolicy.single_run(),
    ins={"specialists": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True}),
         "labels": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True})},
    group_name="learning",
    kinds={"scikitlearn", "polars"},
)
def cv_report(context: AssetExecutionContext, specialists: pl.LazyFrame, labels: pl.LazyFrame, project: ProjectResource):
    """Purged, embargoed cross-validation of every specialist per horizon, with Platt and
    isotonic calibration fitted on the training folds: AUC, Brier and log loss per fold."""
    settings = project.settings()
    horizons = settings.labels.horizons
    tables, summary = [], {}
    with observe(context, settings.reports_dir, "cv_report") as obs:
        for year in (int(k) for k in context.partition_keys):
            frame = training_frame(specialists, labels, horizons, known_by_year=year)
            for h in horizons:
                rows = cv_horizon(frame, h, n_splits=settings.cv.n_splits, embargo_days=settings.cv.embargo_days,
                                  workers=settings.build.worker_count())
                report = {"year": year, "horizon": h, "n_splits": settings.cv.n_splits,
                          "embargo_days": settings.cv.embargo_days, "summary": summarize(rows), "folds": rows}
                write_json_atomic(settings.reports_dir / "cv" / f"h{h}" / f"{year}.json", report)
                summary[f"{year}/h{h}"] = report["summary"]
                tables.append(pl.DataFrame(rows).with_columns(pl.lit(year).alias("year")) if rows else None)
        table = pl.concat([t for t in tables if t is not None], how="diagonal_relaxed") if any(t is not None for t in tables) \
            else pl.DataFrame(schema={"year": pl.Int32})
        obs.record(table)
    yield Output(table, metadata={"summary": MetadataValue.json(json.loads(json.dumps(summary, default=str)))})
