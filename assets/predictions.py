"""Stage `predictions` (year): every symbol's meta-model probabilities for the days of Y.

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.learning.predictions`, whose docstring states them.
"""


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


@yearly_asset(reads=("specialists", "regime", "lstm_model", "features"), latest_only=("meta_model",),
              group_name="learning", kinds={"scikitlearn", "polars"},
              check_specs=[AssetCheckSpec("probabilities_in_unit_interval", asset="predictions",
                                          description="every p_h{H} in [0, 1] or NaN; one row per symbol and day")])
def predictions(context: AssetExecutionContext, specialists: pl.LazyFrame, regime: pl.LazyFrame,
                lstm_model: pl.LazyFrame, features: pl.LazyFrame, meta_model: pl.LazyFrame, project: ProjectResource):
    """Out-of-sample P(label = 1) per horizon for every symbol and day of Y, from the meta
    models of Y (trained before Y)."""
    from domain.learning.predictions import predict_years
    from domain.learning.provenance import request
    from resources.observe import observe

    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "predictions") as obs:
        table, coverage = predict_years(specialists, regime, lstm_model, years, settings.models_dir,
                                        settings.labels.horizons, log=context.log, features=features,
                                        want=request(settings, kind=settings.meta.model))
        obs.extra["coverage"] = coverage
        obs.record(table)
    yield Output(table, metadata={"coverage": MetadataValue.json(coverage)})
    from domain.checks import probabilities_in_unit_interval

    passed, meta = probabilities_in_unit_interval(table)
    yield AssetCheckResult(check_name="probabilities_in_unit_interval", passed=passed, metadata=meta)
