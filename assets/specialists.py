"""Stage `specialists` (symbol x year): the specialist registry over each symbol's panel.

Partition SYMBOL|Y reads the symbol's whole stored history up to Y (raw_bars of every year
from the first) and stores the rows of Y. ATC's equity curves scale returns by
exp(lambda * (bar - cutout)), an absolute bar index, so no finite halo could reproduce
them: the whole history makes every partition equal the whole-history computation exactly
(tests/test_specialists.py). In a single-run backfill each symbol is computed once.
"""

import polars as pl
from dagster import AssetCheckResult, AssetCheckSpec, AssetExecutionContext, AssetIn, BackfillPolicy, Output, asset

from domain.observe import observe
from kernels.registry.specialists import SPECIALIST_COLUMNS
from config.partitions import split_key, symbol_year_partitions, year_halo_mapping
from resources.project import ProjectResource
from domain.specialists import ALL_HISTORY_YEARS, build_specialists


@asset(
    partitions_def=symbol_year_partitions,
    backfill_policy=BackfillPolicy.single_run(),
    ins={"raw_bars": AssetIn(partition_mapping=year_halo_mapping(ALL_HISTORY_YEARS))},
    group_name="specialists",
    kinds={"numba", "polars"},
    check_specs=[AssetCheckSpec("scores_in_range", asset="specialists",
                                description="every score is float32 in [-1, 1] (NaN only in warm-up)")],
)
def specialists(context: AssetExecutionContext, raw_bars: pl.DataFrame, project: ProjectResource):
    """Rule-based specialist scores in [-1, 1]: mean reversion, RSI, Adaptive Trend
    Classification and seller exhaustion, from one zero-copy panel per symbol."""
    settings = project.settings()
    keys = [split_key(k) for k in context.partition_keys]
    kw = {"workers": settings.build.worker_count(), "chunk_rows": settings.build.chunk_rows,
          "executor": settings.build.executor}
    with observe(context, settings.reports_dir, "specialists", args=kw) as obs:
        df = obs.record(build_specialists(raw_bars, keys, **kw))
    yield Output(df)
    # polars orders NaN above every number: warm-up NaN must not count as "> 1"
    bad = {c: int(df.select(((pl.col(c).abs() > 1.0) & pl.col(c).is_not_nan()).sum()).item()) for c in SPECIALIST_COLUMNS}
    yield AssetCheckResult(check_name="scores_in_range", passed=not any(bad.values()),
                           metadata={"out_of_range": bad, "nan": {c: int(df[c].is_nan().sum()) for c in SPECIALIST_COLUMNS}})
