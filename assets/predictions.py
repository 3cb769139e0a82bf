"""Stage `predictions` (year): every symbol's meta-model probabilities for the days of Y.

    p_h{H}[symbol, date] = meta_h{H}_{Y}.predict_proba(X[symbol, date])   for date in Y

X is the matrix the model was trained on (kernels.learn.meta.build_meta_matrix): the
specialist scores of the day, the LSTM score when the model uses it, the regime one-hot, and
the feature registry's columns (`features`, read only when a model of Y uses them).
The model of year Y was trained on labels known by the end of Y-1 (`meta_model`), so every
probability stored here is out of sample. A day whose inputs are incomplete (warm-up, no
LSTM score) gets NaN, as does a horizon whose model of Y does not exist (too little
history before Y). Rows: every (symbol, date) of Y with specialist scores, labelled or not:
the last days of a year have no realised label yet but still have a prediction.

Columns: symbol, date, regime (int8, null when untagged), p_h3, p_h7, p_h14 (float32).
`domain.learning.predictions.score_rows` is the one function that turns scores into
probabilities; the inference path (domain.live.inference) calls it too, so batch and live
predictions cannot drift apart.
"""


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


@yearly_asset(reads=("specialists", "regime", "lstm_model", "features"), latest_only=("meta_model",),
              group_name="learning", kinds={"scikitlearn", "polars"},
              check_specs=[AssetCheckSpec("probabilities_in_unit_interval", asset="predictions",
                                          description="every p_h{H} in [0, 1] or NaN; one row per symbol and day")])
def predictions(context: AssetExecutionContext, specialists: pl.LazyFrame, regime: pl.LazyFrame,
                lstm_model: pl.LazyFrame, features: pl.LazyFrame, meta_model: pl.LazyFrame, project: ProjectResource):
    """Out-of-sample P(label = 1) per horizon for every symbol and day of Y, from the meta
    models of Y (trained before Y)."""
    from domain.learning.predictions import predict_years
    from domain.observe import observe

    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "predictions") as obs:
        table, coverage = predict_years(specialists, regime, lstm_model, years, settings.models_dir,
                                        settings.labels.horizons, log=context.log, features=features)
        obs.extra["coverage"] = coverage
        obs.record(table)
    yield Output(table, metadata={"coverage": MetadataValue.json(coverage)})
    from domain.checks import probabilities_in_unit_interval

    passed, meta = probabilities_in_unit_interval(table)
    yield AssetCheckResult(check_name="probabilities_in_unit_interval", passed=passed, metadata=meta)
