"""Stage `evaluation` (year, and overall): how good were the out-of-sample predictions?

Join: the prediction made at day t (`predictions`, p_h{H}) with the label realised at t + H
(`labels`: the row of day t holds label_bin_h{H} and label_ret_h{H}, the outcome H trading
rows later; null while t + H is not stored yet, and those rows are left out).

Per horizon (kernels.learn.evaluation): AUC, PR-AUC, Brier, log loss, IC (Spearman of p with
the realised forward return), decile returns overall and by market regime, and a reliability
diagram. Scopes: each requested year Y, and `overall` (every stored prediction year).
Reports under reports/eval/: `<Y>.json`, `overall.json`, `reliability_h{H}_<Y|overall>.png`.
The stored table (year partition): one row per horizon with the headline metrics.
"""

import polars as pl
from dagster import AllPartitionMapping, AssetExecutionContext, AssetIn, BackfillPolicy, MetadataValue, Output, asset

from domain.observe import observe
from config.partitions import years_partitions
from resources.io_manager import ALLOW_MISSING
from resources.project import ProjectResource
from domain.evaluation import HEADLINE, evaluate_scope, outcomes


@asset(
    partitions_def=years_partitions,
    backfill_policy=BackfillPolicy.single_run(),
    ins={"predictions": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True}),
         "labels": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True})},
    group_name="evaluation",
    kinds={"scikitlearn", "polars"},
)
def evaluation(context: AssetExecutionContext, predictions: pl.LazyFrame, labels: pl.LazyFrame, project: ProjectResource):
    """AUC, PR-AUC, Brier, log loss and IC per horizon, decile returns overall and by regime,
    reliability diagrams: for each year and over every stored prediction year."""
    settings = project.settings()
    horizons = settings.labels.horizons
    out_dir = settings.reports_dir / "eval"
    years = [int(k) for k in context.partition_keys]
    rows, preview = [], {}
    with observe(context, settings.reports_dir, "evaluation") as obs:
        joined = outcomes(predictions, labels, horizons)
        for y in years:
            report = evaluate_scope(joined.filter(pl.col("date").dt.year() == y), horizons, str(y), out_dir)
            for h in horizons:
                rows.append({"year": y, "horizon": h, **{k: report[f"h{h}"][k] for k in HEADLINE}})
            preview[str(y)] = {f"h{h}": {k: report[f"h{h}"][k] for k in HEADLINE} for h in horizons}
        overall = evaluate_scope(joined, horizons, "overall", out_dir)
        preview["overall"] = {f"h{h}": {k: overall[f"h{h}"][k] for k in HEADLINE} for h in horizons}
        table = pl.DataFrame(rows, schema={"year": pl.Int32, "horizon": pl.Int32, "auc": pl.Float64, "pr_auc": pl.Float64,
                                           "brier": pl.Float64, "log_loss": pl.Float64, "ic": pl.Float64, "n": pl.Int64})
        obs.record(table)
    yield Output(table, metadata={"metrics": MetadataValue.json(preview)})
