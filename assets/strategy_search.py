"""Stage `strategy_search` (symbol): NSGA-II over seller-exhaustion parameter sets.

Partitioned by symbol alone (the dynamic `symbols` dimension of config.partitions): the search
fits one parameter set per symbol over its whole stored history, so partition SYMBOL reads
raw_bars of SYMBOL for every stored year (a symbol x year split would cut the history into
years too short for `min_trades` trades and give one front per year, which nobody asks for).
`domain.strategy_search.search_symbol` is the stage logic (also behind
`python -m pipeline.cli strategy-search`): Optuna NSGA-II, one population backtest per
generation (kernels.strategy), settings `strategy_search.*`. The report:
`reports/strategy_search/front_<SYMBOL>.json`; nothing goes to the Parquet store (the report is the
product). The Pareto front is shown as a markdown table. Check (domain.checks): front_is_pareto.
Job: `strategy_search_job`.
"""

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AllPartitionMapping,
    AssetIn,
    MetadataValue,
    MultiToSingleDimensionPartitionMapping,
    Output,
    asset,
)

from config.partitions import ALLOW_MISSING, EVERY_PARTITION
from resources.partitions import GROUPED, symbol_partitions
from resources.compute import GPU_POOL, gpu_step_tags
from resources.project import ProjectResource


@asset(
    partitions_def=symbol_partitions,
    # a symbol's partition reads the raw_bars of its symbol; with symbol groups (whose keys are not
    # symbols) the input is every partition, a lazy scan that search_symbol narrows to the symbol
    ins={"raw_bars": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True, EVERY_PARTITION: True})
         if GROUPED else
         AssetIn(partition_mapping=MultiToSingleDimensionPartitionMapping(partition_dimension_name="symbol"),
                 metadata={ALLOW_MISSING: True})},
    group_name="search",
    kinds={"numba", "optuna"},
    pool=GPU_POOL,
    op_tags=gpu_step_tags(),
    check_specs=[AssetCheckSpec("front_is_pareto", asset="strategy_search",
                                description="the front is non-empty when a trial is feasible; every member has "
                                            "min_trades trades, finite objectives and no feasible trial dominating it")],
)
def strategy_search(context: AssetExecutionContext, raw_bars: pl.LazyFrame, project: ProjectResource):
    """The Pareto front (total return, Sharpe) of seller-exhaustion parameter sets on one
    symbol's whole history (NSGA-II; reports/strategy_search/front_<SYMBOL>.json)."""
    from domain.checks import front_is_pareto
    from resources.observe import observe
    from domain.strategy_search import OBJECTIVES, front_markdown, search_symbol

    settings = project.settings()
    cfg = settings.strategy_search
    symbol = context.partition_key
    with observe(context, settings.reports_dir, "strategy_search", args=cfg.model_dump()) as obs:
        run = search_symbol(raw_bars, symbol, cfg, settings.stage_reports_dir("strategy_search"))
        obs.record(run.result.front)
        obs.extra.update({"bars": run.bars, "trials": run.result.trials.height, "evaluations": run.result.evaluations})
    res = run.result
    yield Output(None, metadata={
        "front": MetadataValue.md(front_markdown(res.front, cfg.front_rows)),
        "front_size": res.front.height, "trials": res.trials.height, "feasible": run.report["feasible"],
        "bars": run.bars, "span": f"{run.report['from']}..{run.report['to']}", "backend": str(run.report["backend"]),
        "report": MetadataValue.path(str(run.path)),
    })
    passed, meta = front_is_pareto(res.front, res.trials, OBJECTIVES, cfg.min_trades)
    yield AssetCheckResult(check_name="front_is_pareto", passed=passed, metadata=meta)
