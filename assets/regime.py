"""Stage `regime` (year): the causal market-regime tag of every trading day.

The index is equal-weight (each day's mean simple return over the symbols that traded that
day and the day before, compounded) or, with `regime.index_symbol` set, that symbol's close.
Partition Y reads raw_bars of every symbol for years Y-2..Y (config.partitions.REGIME_HALO_YEARS:
the tagger's windows span about 272 days, kernels.regime) and stores the days of Y: 1 bull,
-1 bear, 0 consolidate, 2 oscillate, null during the warm-up of the first years. The check
reads every stored year: no class under 5% or over 80% (a tagger that is "not degenerate").
"""

import polars as pl
from dagster import AssetCheckResult, AssetCheckSpec, AssetExecutionContext, Output

from resources.partitions import yearly_asset
from resources.project import ProjectResource


@yearly_asset(
    reads=("raw_bars",),
    group_name="learning",
    kinds={"polars"},
    check_specs=[AssetCheckSpec("not_degenerate", asset="regime",
                                description="over every stored year: no class under 5% and none over 80%")],
)
def regime(context: AssetExecutionContext, raw_bars: pl.LazyFrame, project: ProjectResource):
    """Market regime per trading day (1 bull, -1 bear, 0 consolidate, 2 oscillate) from an
    equal-weight index of the universe, causal (trailing windows only)."""
    from resources.observe import observe
    from domain.regime import degeneracy_check, regime_years
    from kernels.regime import BEAR, BULL, CONSOLIDATE, OSCILLATE

    settings = project.settings()
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "regime") as obs:
        df = obs.record(regime_years(raw_bars, years, settings.regime.index_symbol))
    yield Output(df)
    ok, shares = degeneracy_check(settings.data_dir, years, df)
    names = {BULL: "bull", BEAR: "bear", CONSOLIDATE: "consolidate", OSCILLATE: "oscillate"}
    yield AssetCheckResult(check_name="not_degenerate", passed=ok,
                           metadata={"shares": {names.get(int(k), str(k)): round(v, 4) for k, v in shares.items()}})
