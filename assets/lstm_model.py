"""Stage `lstm_model` (year): the LSTM specialist of year Y and its scores for year Y.

Walk-forward: the model of year Y is trained on rows whose labels (horizon `lstm.horizon`)
end before a validation block of `lstm.val_days` calendar days that closes at the start of
Y; early stopping watches that block (purged: its rows' labels also end before Y, and no
training label reaches into it). It then scores the rows of Y, so every stored
`spec_lstm_score` comes from a model that never saw those rows. Sequences stay within one
symbol (kernels.learn.lstm). Weights: `models/lstm_h{H}_{Y}.pt` + JSON (standardizer,
architecture, history, window), by domain.learning.lstm.train_years. Runs in `lstm_job`
(training on a CPU is slow: see benchmarks/RESULTS.md). Check (domain.checks):
scores_in_unit_interval.
"""


import polars as pl
from dagster import AssetCheckResult, AssetCheckSpec, AssetExecutionContext, Output

from config.partitions import yearly_asset
from resources.compute import GPU_POOL, ComputeResource, gpu_step_tags
from resources.project import ProjectResource


@yearly_asset(reads=("features", "labels"), group_name="lstm", kinds={"pytorch"}, pool=GPU_POOL, op_tags=gpu_step_tags(),
              check_specs=[AssetCheckSpec("scores_in_unit_interval", asset="lstm_model",
                                          description="spec_lstm_score finite in [0, 1]; NaN only before a symbol's "
                                                      "first full sequence")])
def lstm_model(context: AssetExecutionContext, features: pl.LazyFrame, labels: pl.LazyFrame, project: ProjectResource,
               compute: ComputeResource):
    """The LSTM specialist trained before year Y (walk-forward, purged validation block) and
    its out-of-sample scores for the rows of Y (`spec_lstm_score`)."""
    from domain.checks import scores_in_unit_interval
    from domain.learning.lstm import train_years
    from domain.observe import observe

    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "lstm_model", args=settings.lstm.model_dump()) as obs:
        table = train_years(features, labels, years, settings, compute.selected.torch_device, log=context.log)
        obs.record(table)
    yield Output(table)
    passed, meta = scores_in_unit_interval(table)
    yield AssetCheckResult(check_name="scores_in_unit_interval", passed=passed, metadata=meta)
