"""Stage `evaluation` (year, and overall): how good were the out-of-sample predictions?

Join: the prediction made at day t (`predictions`, p_h{H}) with the label realised at t + H
(`labels`: the row of day t holds label_bin_h{H} and label_ret_h{H}, the outcome H trading
rows later; null while t + H is not stored yet, and those rows are left out).

Per horizon (kernels.learn.evaluation): AUC, PR-AUC, Brier, log loss, IC (Spearman of p with
the realised forward return), decile returns overall and by market regime, a reliability
diagram, and Qlib-style signal analysis: daily cross-sectional rank IC, ICIR, the cumulative
IC curve, the top-minus-bottom decile return series and its annualized Sharpe, top / bottom
decile turnover (days with fewer than `evaluation.min_symbols_per_day` symbols left out and
counted). Scopes: each requested year Y, and `overall` (every stored prediction year).
Reports under reports/eval/: `<Y>.json`, `overall.json` and PNGs per horizon and scope.
The asset's metadata shows the `overall` plots of every horizon (cumulative IC, long-short,
decile bars, reliability) as images inside the Dagster UI (markdown with base64 data URIs).
The stored table (year partition): one row per horizon with the headline metrics.
The stage logic: domain.evaluation.build_evaluation.
"""

import base64

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    MetadataValue,
    Output,
)

from config.partitions import yearly_asset
from resources.project import ProjectResource


@yearly_asset(reads=("predictions", "labels"), group_name="evaluation", kinds={"scikitlearn", "polars"},
              check_specs=[AssetCheckSpec("metrics_in_range", asset="evaluation",
                                          description="AUC, PR-AUC and Brier in [0, 1], IC and rank IC in [-1, 1], "
                                                      "log loss >= 0")])
def evaluation(context: AssetExecutionContext, predictions: pl.LazyFrame, labels: pl.LazyFrame, project: ProjectResource):
    """AUC, PR-AUC, Brier, log loss and IC per horizon, decile returns overall and by regime,
    reliability diagrams, daily rank IC / ICIR / long-short / turnover: for each year and over
    every stored prediction year."""
    from domain.evaluation import build_evaluation
    from domain.observe import observe

    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "evaluation") as obs:
        table, preview, images = build_evaluation(predictions, labels, settings.labels.horizons, years,
                                                  settings.reports_dir / "eval",
                                                  settings.evaluation.min_symbols_per_day)
        obs.record(table)
    metadata = {"metrics": MetadataValue.json(preview)}
    for key, plots in images.items():
        note = preview["overall"][key]["cross_section"].get("note")
        parts = [f"_{note}_"] if note else []
        parts += [f"![{name}_{key}](data:image/png;base64,{base64.b64encode(png).decode()})" for name, png in plots.items()]
        metadata[f"plots_{key}"] = MetadataValue.md(f"**{key}, overall**\n\n" + "\n\n".join(parts))
    yield Output(table, metadata=metadata)
    from domain.checks import metrics_in_range

    passed, meta = metrics_in_range(table)
    yield AssetCheckResult(check_name="metrics_in_range", passed=passed, metadata=meta)
