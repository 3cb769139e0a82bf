"""Stage `meta_model` (year): per horizon, a calibrated meta model over the specialists.

Out-of-sample metrics of year Y: AUC, Brier, log loss, and IC (Spearman rank correlation
of the predicted probability with the realised forward return).

Walk-forward: the model of year Y is trained on the rows whose labels were known by the end
of Y-1 (domain.learning.training_data) and scored on the rows of Y, so every figure it reports for
Y is out of sample. Features: the specialist scores, the LSTM score (`lstm_model`: each
year's scores come from a model trained before that year, so they are out of fold for
every row here) when it covers at least half of the training rows, and the regime one-hot
(the seed's "condition by regime"); rows missing any feature are left out. Model: logistic regression
with isotonic calibration (kernels.learn.meta), its calibration folds purged on the label
intervals. Saved as `models/meta_h{H}_{Y}.joblib` + JSON (features, versions, window);
a calibration curve PNG and the out-of-sample metrics under `reports/meta/`.
"""

import numpy as np
import polars as pl
from dagster import AllPartitionMapping, AssetExecutionContext, AssetIn, BackfillPolicy, MetadataValue, Output, asset

from domain.observe import observe, write_json_atomic
from domain.learning.training_data import training_frame
from kernels.learn.meta import calibration_png, save_meta
from config.partitions import years_partitions
from resources.io_manager import ALLOW_MISSING
from resources.project import ProjectResource
from domain.learning.meta import LSTM_COLUMN, LSTM_MIN_COVERAGE, fit_year


@asset(
    partitions_def=years_partitions,
    backfill_policy=BackfillPolicy.single_run(),
    ins={"specialists": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True}),
         "labels": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True}),
         "regime": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True}),
         "lstm_model": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True})},
    group_name="learning",
    kinds={"scikitlearn"},
)
def meta_model(context: AssetExecutionContext, specialists: pl.LazyFrame, labels: pl.LazyFrame, regime: pl.LazyFrame,
               lstm_model: pl.LazyFrame, project: ProjectResource):
    """Per horizon, the calibrated meta model of year Y (trained on labels known before Y)
    and its out-of-sample AUC, Brier and log loss on year Y."""
    settings = project.settings()
    horizons = settings.meta.horizons or settings.labels.horizons
    rows, previews = [], {}
    with observe(context, settings.reports_dir, "meta_model") as obs:
        for year in (int(k) for k in context.partition_keys):
            train = training_frame(specialists, labels, horizons, known_by_year=year - 1, regime=regime)
            test = training_frame(specialists, labels, horizons, known_by_year=year, regime=regime).filter(
                pl.col("date").dt.year() == year)
            if LSTM_COLUMN in lstm_model.collect_schema().names():
                scores = lstm_model.select("symbol", "date", LSTM_COLUMN).collect()
                train = train.join(scores, on=["symbol", "date"], how="left")
                coverage = train[LSTM_COLUMN].drop_nans().drop_nulls().len() / max(train.height, 1)
                if coverage >= LSTM_MIN_COVERAGE:
                    test = test.join(scores, on=["symbol", "date"], how="left")
                else:
                    train = train.drop(LSTM_COLUMN)
                    context.log.info(f"meta_model {year}: LSTM scores cover {coverage:.0%} of training rows; not used")
            for h in horizons:
                if train.filter(pl.col(f"label_bin_h{h}").is_not_null()).height < 200:
                    context.log.warning(f"meta_model {year} h{h}: too little history before {year}; skipped")
                    continue
                model, metrics, p, y = fit_year(train, test, h, n_splits=settings.cv.n_splits,
                                                embargo_days=settings.cv.embargo_days, model=settings.meta.model,
                                                calibration=settings.meta.calibration)
                stem = settings.models_dir / f"meta_h{h}_{year}"
                save_meta(model, stem.with_suffix(".joblib"), stem.with_suffix(".json"))
                if len(y) and len(np.unique(y)) == 2:
                    calibration_png(y, p, settings.reports_dir / "meta" / f"calibration_h{h}_{year}.png",
                                    title=f"meta h{h}, out of sample {year}")
                write_json_atomic(settings.reports_dir / "meta" / f"h{h}_{year}.json", {"year": year, "horizon": h, **metrics})
                rows.append({"year": year, "horizon": h, **{k: metrics[k] for k in ("auc", "brier", "log_loss", "ic", "n", "train_rows")}})
                previews[f"{year}/h{h}"] = metrics
        table = pl.DataFrame(rows) if rows else pl.DataFrame(schema={"year": pl.Int32})
        obs.record(table)
    yield Output(table, metadata={"out_of_sample": MetadataValue.json(previews)})
