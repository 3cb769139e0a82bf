"""Stage `predictions` (year): every symbol's meta-model probabilities for the days of Y.

    p_h{H}[symbol, date] = meta_h{H}_{Y}.predict_proba(X[symbol, date])   for date in Y

X is the matrix the model was trained on (kernels.learn.meta.build_meta_matrix): the
specialist scores of the day, the LSTM score when the model uses it, the regime one-hot.
The model of year Y was trained on labels known by the end of Y-1 (`meta_model`), so every
probability stored here is out of sample. A day whose inputs are incomplete (warm-up, no
LSTM score) gets NaN, as does a horizon whose model of Y does not exist (too little
history before Y). Rows: every (symbol, date) of Y with specialist scores, labelled or not:
the last days of a year have no realised label yet but still have a prediction.

Columns: symbol, date, regime (int8, null when untagged), p_h3, p_h7, p_h14 (float32).
`score_rows` is the one function that turns scores into probabilities; the inference path
(domain.live.inference) calls it too, so batch and live predictions cannot drift apart.
"""


import polars as pl
from dagster import AllPartitionMapping, AssetExecutionContext, AssetIn, BackfillPolicy, MetadataValue, Output, asset

from domain.observe import observe
from config.partitions import years_partitions
from resources.io_manager import ALLOW_MISSING
from resources.project import ProjectResource
from domain.learning.predictions import load_year_models, predict_year


@asset(
    partitions_def=years_partitions,
    backfill_policy=BackfillPolicy.single_run(),
    ins={"specialists": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True}),
         "regime": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True}),
         "lstm_model": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True}),
         "meta_model": AssetIn(metadata={ALLOW_MISSING: True})},
    group_name="learning",
    kinds={"scikitlearn", "polars"},
)
def predictions(context: AssetExecutionContext, specialists: pl.LazyFrame, regime: pl.LazyFrame,
                lstm_model: pl.LazyFrame, meta_model: pl.LazyFrame, project: ProjectResource):
    """Out-of-sample P(label = 1) per horizon for every symbol and day of Y, from the meta
    models of Y (trained before Y)."""
    settings = project.settings()
    horizons = settings.labels.horizons
    frames, coverage = [], {}
    with observe(context, settings.reports_dir, "predictions") as obs:
        for year in (int(k) for k in context.partition_keys):
            models = load_year_models(settings.models_dir, year, horizons)
            if not models:
                context.log.warning(f"predictions {year}: no meta model of {year} in {settings.models_dir}; all NaN")
            df = predict_year(specialists, regime, lstm_model, year, models, horizons)
            frames.append(df)
            coverage[str(year)] = {f"h{h}": round(float(df[f"p_h{h}"].is_not_nan().mean() or 0.0), 4) for h in horizons}
        table = pl.concat(frames) if frames else pl.DataFrame()
        obs.extra["coverage"] = coverage
        obs.record(table)
    yield Output(table, metadata={"coverage": MetadataValue.json(coverage)})
