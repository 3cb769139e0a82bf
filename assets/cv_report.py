"""Stage `cv_report` (year): purged cross-validation of every specialist per horizon.

For year Y (walk-forward: only labels known by the end of Y), per horizon H and specialist:
PurgedKFold over the rows sorted by date, label intervals [date, date H rows ahead],
embargo `cv.embargo_days`; on each fold, Platt and isotonic calibrators are fitted on the
training rows (a score -> probability map) and scored on the test rows: AUC, Brier, log
loss. Specialists run in parallel (joblib) over one memory-mapped copy of the scores and
labels (domain.learning.cv_report.build_cv_report). Reports: `reports/cv/h{H}/{Y}.json`;
the table of fold metrics is the output. Check (domain.checks): fold_metrics_valid.
"""

import json

import polars as pl
from dagster import AssetCheckResult, AssetCheckSpec, AssetExecutionContext, MetadataValue, Output

from config.partitions import yearly_asset
from resources.project import ProjectResource


@yearly_asset(reads=("specialists", "labels"), group_name="learning", kinds={"scikitlearn", "polars"},
              check_specs=[AssetCheckSpec("fold_metrics_valid", asset="cv_report",
                                          description="every fold's AUC and Brier in [0, 1], log loss finite (a fold "
                                                      "without AUC is counted), cv.n_splits folds per specialist")])
def cv_report(context: AssetExecutionContext, specialists: pl.LazyFrame, labels: pl.LazyFrame, project: ProjectResource):
    """Purged, embargoed cross-validation of every specialist per horizon, with Platt and
    isotonic calibration fitted on the training folds: AUC, Brier and log loss per fold."""
    from domain.checks import fold_metrics_valid
    from domain.learning.cv_report import build_cv_report
    from domain.observe import observe

    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "cv_report") as obs:
        table, summary = build_cv_report(specialists, labels, years, settings)
        obs.record(table)
    yield Output(table, metadata={"summary": MetadataValue.json(json.loads(json.dumps(summary, default=str)))})
    passed, meta = fold_metrics_valid(table, settings.cv.n_splits)
    yield AssetCheckResult(check_name="fold_metrics_valid", passed=passed, metadata=meta)
