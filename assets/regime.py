"""Stage `regime` (year): the causal market-regime tag of every trading day.

The index is equal-weight (each day's mean simple return over the symbols that traded that
day and the day before, compounded) or, with `regime.index_symbol` set, that symbol's close.
Partition Y reads raw_bars of every symbol for years Y-2..Y (the tagger's windows span
about 272 days: kernels.regime) and stores the days of Y: 1 bull, -1 bear, 0 consolidate,
2 oscillate, null during the warm-up of the first years. The check reads every stored year:
no class under 5% or over 80% (the seed's "not degenerate").
"""

import polars as pl
from dagster import (
    AllPartitionMapping,
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    BackfillPolicy,
    Output,
    asset,
)

from domain.observe import observe
from config.partitions import years_partitions
from resources.io_manager import ALLOW_MISSING
from resources.parquet_store import ParquetStore
from resources.project import ProjectResource
from domain.regime import CLASS_BOUNDS, HALO_YEARS, build_regime, class_shares


@asset(
    partitions_def=years_partitions,
    backfill_policy=BackfillPolicy.single_run(),
    ins={"raw_bars": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True})},
    group_name="regime",
    kinds={"polars"},
    check_specs=[AssetCheckSpec("not_degenerate", asset="regime",
                                description="over every stored year: no class under 5% and none over 80%")],
)
def regime(context: AssetExecutionContext, raw_bars: pl.LazyFrame, project: ProjectResource):
    """Market regime per trading day (1 bull, -1 bear, 0 consolidate, 2 oscillate) from an
    equal-weight index of the universe, causal (trailing windows only)."""
    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    lo, hi = min(years) - HALO_YEARS, max(years)
    with observe(context, settings.reports_dir, "regime") as obs:
        bars = raw_bars.filter(pl.col("year").is_between(lo, hi)).select("date", "symbol", "close").collect()
        df = obs.record(build_regime(bars, years, settings.regime.index_symbol))
    yield Output(df)
    store = ParquetStore(settings.data_dir)
    stored = [pl.read_parquet(p) for p in sorted(store.asset_dir("regime").glob("year=*/part.parquet"))
              if int(p.parent.name.split("=")[1]) not in years] if store.asset_dir("regime").is_dir() else []
    shares = class_shares(pl.concat([*(s.select("regime") for s in stored), df.select("regime")])["regime"])
    ok = all(CLASS_BOUNDS[0] <= v <= CLASS_BOUNDS[1] for v in shares.values())
    yield AssetCheckResult(check_name="not_degenerate", passed=ok, metadata={"shares": {str(k): round(v, 4) for k, v in shares.items()}})
