"""The ATC scanner (the Pine script's Adaptive Trend Classification): the current Adaptive Trend Classification state of every

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.atc_scan`, whose docstring states them.
"""


import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    MetadataValue,
    Output,
    asset,
)

from config.partitions import SYMBOLS

from resources.compute import GPU_POOL, ComputeResource, gpu_step_tags
from resources.project import ProjectResource


@asset(group_name="live", kinds={"numba", "polars"},
       ins={"raw_bars": AssetIn()}, pool=GPU_POOL, op_tags=gpu_step_tags(),
       check_specs=[
           AssetCheckSpec("every_symbol_scanned", asset="atc_scan",
                          description="every registered symbol and every symbol with bars has exactly one row"),
           AssetCheckSpec("states_and_values_in_range", asset="atc_scan",
                          description="state in {-1, 0, 1}; atc and the family signals in [-1, 1] (NaN only as neutral)"),
       ])
def atc_scan(context: AssetExecutionContext, raw_bars: pl.LazyFrame, project: ProjectResource, compute: ComputeResource):
    """The current Adaptive Trend Classification state of every symbol (latest date)."""
    from domain import checks
    from domain.atc_scan import scan_store, scan_summary
    from resources.observe import observe

    settings = project.settings()
    a = settings.atc
    with observe(context, settings.reports_dir, "atc_scan", args=a.model_dump()) as obs:
        # a chunk of symbols at a time: the whole universe is never held in memory
        table, stats, symbols = scan_store(raw_bars, n_bars=a.scan_bars, chunk_symbols=a.chunk_symbols,
                                           device_backend=compute.backend, robustness=a.robustness, length=a.length,
                                           lam=a.lam, decay=a.decay, cutout=a.cutout, cache=a.cache)
        obs.record(table)
        obs.extra.update({"chunks": stats.chunks, "backends": stats.backends, "chunk_backends": stats.chunk_backends[:200],
                          "gpu_fallbacks": stats.fallbacks,
                          "ma_cache": stats.cache or "off"})
    scan_md, states = scan_summary(table)
    yield Output(table, metadata={"scan": MetadataValue.md(scan_md), "states": states})
    expected = set(context.instance.get_dynamic_partitions(SYMBOLS)) | set(symbols)
    passed, meta = checks.every_symbol_scanned(table, expected)
    yield AssetCheckResult(check_name="every_symbol_scanned", passed=passed, metadata=meta)
    passed, meta = checks.states_and_values_in_range(table)
    yield AssetCheckResult(check_name="states_and_values_in_range", passed=passed, metadata=meta)
