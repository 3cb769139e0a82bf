"""Stage `lstm_model` (year): the LSTM specialist of year Y and its scores for year Y.

Walk-forward: the model of year Y is trained on rows whose labels (horizon `lstm.horizon`)
end before a validation block of `lstm.val_days` calendar days that closes at the start of
Y; early stopping watches that block (purged: its rows' labels also end before Y, and no
training label reaches into it). It then scores the rows of Y, so every stored
`spec_lstm_score` comes from a model that never saw those rows. Sequences stay within one
symbol (kernels.learn.lstm). Weights: `models/lstm_h{H}_{Y}.pt` + JSON (standardizer,
architecture, history, window). Runs in `lstm_job` (training on a CPU is slow: see
benchmarks/RESULTS.md).
"""


import polars as pl
import torch
from dagster import AllPartitionMapping, AssetExecutionContext, AssetIn, BackfillPolicy, Output, asset

from kernels.registry.features import FEATURE_NAMES
from domain.observe import observe, write_json_atomic
from config.partitions import years_partitions
from resources.compute import GPU_POOL, ComputeResource, gpu_step_tags
from resources.io_manager import ALLOW_MISSING
from resources.project import ProjectResource
from domain.learning.lstm import fit_and_score, lstm_frame, save_weights


@asset(
    partitions_def=years_partitions,
    backfill_policy=BackfillPolicy.single_run(),
    ins={"features": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True}),
         "labels": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True})},
    group_name="lstm",
    kinds={"pytorch"},
    pool=GPU_POOL,
    op_tags=gpu_step_tags(),
)
def lstm_model(context: AssetExecutionContext, features: pl.LazyFrame, labels: pl.LazyFrame, project: ProjectResource,
               compute: ComputeResource):
    """The LSTM specialist trained before year Y (walk-forward, purged validation block) and
    its out-of-sample scores for the rows of Y (`spec_lstm_score`)."""
    settings = project.settings()
    cfg = settings.lstm
    device = compute.selected.torch_device
    parts = []
    with observe(context, settings.reports_dir, "lstm_model", args=cfg.model_dump()) as obs:
        for year in (int(k) for k in context.partition_keys):
            frame = lstm_frame(features, labels, cfg.horizon, year)
            result, scores, window = fit_and_score(frame, year, cfg.horizon, cfg, device, seed=cfg.seed)
            stem = settings.models_dir / f"lstm_h{cfg.horizon}_{year}"
            save_weights(result.model.state_dict(), stem.with_suffix(".pt"))
            write_json_atomic(stem.with_suffix(".json"), {
                "year": year, "features": FEATURE_NAMES, "window": window, "seq_len": result.seq_len,
                "spec": result.spec, "standardizer": result.standardizer.to_dict(), "history": result.history,
                "best_epoch": result.best_epoch, "device": result.device, "precision": result.precision,
                "samples_per_s": result.samples_per_s, "torch": torch.__version__})
            context.log.info(f"lstm_model {year}: best epoch {result.best_epoch}, {result.samples_per_s:.0f} samples/s on {result.device}")
            parts.append(scores)
        table = pl.concat(parts) if parts else pl.DataFrame(schema={"date": pl.Datetime("ns")})
        obs.record(table)
    yield Output(table)
