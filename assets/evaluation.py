"""Stage `evaluation` (year, and overall): how good were the out-of-sample predictions?

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.evaluation`, whose docstring states them.
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

from resources.partitions import yearly_asset
from resources.project import ProjectResource


@yearly_asset(reads=("predictions", "labels"), group_name="evaluation", kinds={"scikitlearn", "polars"},
              check_specs=[AssetCheckSpec("metrics_in_range", asset="evaluation",
                                          description="AUC, PR-AUC and Brier in [0, 1], IC and rank IC in [-1, 1], "
                                                      "log loss >= 0")])
def evaluation(context: AssetExecutionContext, predictions: pl.LazyFrame, labels: pl.LazyFrame, project: ProjectResource):
    """AUC, PR-AUC, Brier, log loss and IC per horizon, decile returns overall and by regime,
    reliability diagrams, daily rank IC / ICIR / long-short / turnover: for each year and over
    every stored prediction year. The overall figures are also top-level float metadata
    (`h{H}_auc`, `h{H}_rank_ic`, ...: domain.figures) that the Plots tab charts."""
    from domain.evaluation import build_evaluation
    from domain.schema import require_stored
    from resources.observe import observe

    settings = project.settings()
    require_stored(predictions, "predictions", settings.experiment, "train-meta")
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "evaluation") as obs:
        table, preview, images = build_evaluation(predictions, labels, settings.labels.horizons, years,
                                                  settings.stage_reports_dir("evaluation"),
                                                  settings.evaluation.min_symbols_per_day,
                                                  year_figures=settings.evaluation.year_figures)
        obs.record(table)
    from domain.figures import coverage_figures, evaluation_figures, rounded_tree

    hs = settings.labels.horizons
    metadata = {**{k: MetadataValue.float(v) for k, v in evaluation_figures(preview["overall"], hs).items()},
                **{k: MetadataValue.int(v) for k, v in coverage_figures(preview["overall"], hs).items()},
                "metrics": MetadataValue.json(rounded_tree(preview)),
                "experiment": MetadataValue.text(settings.experiment)}  # which experiment each plotted point is
    for key, plots in images.items():
        note = preview["overall"][key]["cross_section"].get("note")
        parts = [f"_{note}_"] if note else []
        parts += [f"![{name}_{key}](data:image/png;base64,{base64.b64encode(png).decode()})" for name, png in plots.items()]
        metadata[f"plots_{key}"] = MetadataValue.md(f"**{key}, overall**\n\n" + "\n\n".join(parts))
    yield Output(table, metadata=metadata)
    from domain.checks import metrics_in_range

    passed, meta = metrics_in_range(table)
    yield AssetCheckResult(check_name="metrics_in_range", passed=passed, metadata=meta)
