"""Stage `evaluation` (year, and overall): how good were the out-of-sample predictions?

Join: the prediction made at day t (`predictions`, p_h{H}) with the label realised at t + H
(`labels`: the row of day t holds label_bin_h{H} and label_ret_h{H}, the outcome H trading
rows later; null while t + H is not stored yet, and those rows are left out).

Per horizon (kernels.learn.evaluation): AUC, PR-AUC, Brier, log loss, IC (Spearman of p with
the realised forward return), decile returns overall and by market regime, and a reliability
diagram. Scopes: each requested year Y, and `overall` (every stored prediction year).
Reports under reports/eval/: `<Y>.json`, `overall.json`, `reliability_h{H}_<Y|overall>.png`.
The stored table (year partition): one row per horizon with the headline metrics.
The stage logic: domain.evaluation.build_evaluation.
"""

import polars as pl
from dagster import AssetExecutionContext, MetadataValue, Output

from config.partitions import yearly_asset
from resources.project import ProjectResource


@yearly_asset(reads=("predictions", "labels"), group_name="evaluation", kinds={"scikitlearn", "polars"})
def evaluation(context: AssetExecutionContext, predictions: pl.LazyFrame, labels: pl.LazyFrame, project: ProjectResource):
    """AUC, PR-AUC, Brier, log loss and IC per horizon, decile returns overall and by regime,
    reliability diagrams: for each year and over every stored prediction year."""
    from domain.evaluation import build_evaluation
    from domain.observe import observe

    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "evaluation") as obs:
        table, preview = build_evaluation(predictions, labels, settings.labels.horizons, years,
                                          settings.reports_dir / "eval")
        obs.record(table)
    yield Output(table, metadata={"metrics": MetadataValue.json(preview)})
