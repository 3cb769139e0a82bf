"""Stage `cv_report` (year): purged cross-validation of every specialist per horizon.

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.learning.cv_report`, whose docstring states them.
"""

import json

import polars as pl
from dagster import AssetCheckResult, AssetCheckSpec, AssetExecutionContext, MetadataValue, Output

from resources.partitions import yearly_asset
from resources.project import ProjectResource


@yearly_asset(reads=("specialists", "labels"), group_name="evaluation", kinds={"scikitlearn", "polars"},
              check_specs=[AssetCheckSpec("fold_metrics_valid", asset="cv_report",
                                          description="every fold's AUC and Brier in [0, 1], log loss finite (a fold "
                                                      "without AUC is counted), cv.n_splits folds per specialist")])
def cv_report(context: AssetExecutionContext, specialists: pl.LazyFrame, labels: pl.LazyFrame, project: ProjectResource):
    """Purged, embargoed cross-validation of every specialist per horizon, with Platt and
    isotonic calibration fitted on the training folds: AUC, Brier and log loss per fold. Per
    horizon, the best and mean AUC are top-level float metadata (`h{H}_best_auc`, ...:
    domain.figures) that the Plots tab charts."""
    from domain.checks import fold_metrics_valid
    from domain.learning.cv_report import build_cv_report
    from resources.observe import observe

    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "cv_report") as obs:
        table, summary = build_cv_report(specialists, labels, years, settings, log=context.log)
        obs.record(table)
    from domain.figures import cv_figures, rounded_tree

    yield Output(table, metadata={
        **{k: MetadataValue.float(v) for k, v in cv_figures(summary, settings.labels.horizons).items()},
        "experiment": MetadataValue.text(settings.experiment),  # which experiment each plotted point is
        "summary": MetadataValue.json(rounded_tree(json.loads(json.dumps(summary, default=str))))})
    passed, meta = fold_metrics_valid(table, settings.cv.n_splits)
    yield AssetCheckResult(check_name="fold_metrics_valid", passed=passed, metadata=meta)
