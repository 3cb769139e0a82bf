"""Stage `lstm_model` (year): the LSTM specialist of year Y and its scores for year Y.

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.learning.lstm`, whose docstring states them.
"""


import polars as pl
from dagster import AssetCheckResult, AssetCheckSpec, AssetExecutionContext, Output

from resources.partitions import yearly_asset
from resources.compute import GPU_POOL, ComputeResource, gpu_step_tags
from resources.project import ProjectResource


@yearly_asset(reads=("features", "labels"), group_name="learning", kinds={"pytorch"}, pool=GPU_POOL, op_tags=gpu_step_tags(),
              check_specs=[AssetCheckSpec("scores_in_unit_interval", asset="lstm_model",
                                          description="spec_lstm_score finite in [0, 1]; NaN only before a symbol's "
                                                      "first full sequence")])
def lstm_model(context: AssetExecutionContext, features: pl.LazyFrame, labels: pl.LazyFrame, project: ProjectResource,
               compute: ComputeResource):
    """The LSTM specialist trained before year Y (walk-forward, purged validation block) and
    its out-of-sample scores for the rows of Y (`spec_lstm_score`)."""
    from domain.checks import scores_in_unit_interval
    from domain.learning.lstm import train_years
    from resources.observe import observe

    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "lstm_model", args=settings.lstm.model_dump()) as obs:
        table = train_years(features, labels, years, settings, compute.selected.torch_device, log=context.log)
        obs.record(table)
    yield Output(table)
    passed, meta = scores_in_unit_interval(table)
    yield AssetCheckResult(check_name="scores_in_unit_interval", passed=passed, metadata=meta)
