"""Stage `meta_model` (year): per horizon, a calibrated meta model over the specialists.

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.learning.meta`, whose docstring states them.
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


@yearly_asset(reads=("specialists", "labels", "regime", "lstm_model", "features"), group_name="learning",
              kinds={"scikitlearn"},
              check_specs=[AssetCheckSpec("out_of_sample_metrics_valid", asset="meta_model",
                                          description="AUC and Brier in [0, 1], log loss >= 0, IC in [-1, 1], "
                                                      "out-of-sample rows > 0 for every model trained")])
def meta_model(context: AssetExecutionContext, specialists: pl.LazyFrame, labels: pl.LazyFrame, regime: pl.LazyFrame,
               lstm_model: pl.LazyFrame, features: pl.LazyFrame, project: ProjectResource):
    """Per horizon, the calibrated meta model of year Y (trained on labels known before Y)
    and its out-of-sample AUC, Brier and log loss on year Y."""
    from domain.learning.meta import build_meta_models
    from resources.observe import observe

    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "meta_model") as obs:
        table, previews = build_meta_models(specialists, labels, regime, lstm_model, years, settings, log=context.log,
                                            features=features)
        obs.record(table)
    plots = [settings.stage_reports_dir("meta_model") / f"calibration_h{h}_{y}.png" for y in years
             for h in (settings.meta.horizons or settings.labels.horizons)]
    images = [f"![{p.stem}](data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()})" for p in plots if p.exists()]
    from domain.figures import rounded_tree

    counts = {}  # what the out-of-sample figures of the partition's years stand on, per horizon
    for key, m in previews.items():
        h = key.split("/")[1]
        for k, v in m["coverage"]["test"].items():  # rows summed over the years, symbols the most of a year
            counts[f"{h}_{k}"] = max(counts.get(f"{h}_{k}", 0), v) if k.startswith("symbols") else counts.get(f"{h}_{k}", 0) + v
    yield Output(table, metadata={"out_of_sample": MetadataValue.json(rounded_tree(previews)),
                                  "model": settings.meta.model, "inputs": settings.meta.inputs,
                                  "missing": settings.meta.missing_rule(),
                                  **{k: MetadataValue.int(v) for k, v in sorted(counts.items())},
                                  **({"calibration": MetadataValue.md("\n\n".join(images[-6:]))} if images else {})})
    from domain.checks import out_of_sample_metrics_valid

    passed, meta = out_of_sample_metrics_valid(table)
    yield AssetCheckResult(check_name="out_of_sample_metrics_valid", passed=passed, metadata=meta)
