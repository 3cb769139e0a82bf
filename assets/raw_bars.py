"""Stage `raw_bars` (symbol x year): OHLCV from the configured source, validated, stored.

`domain.raw_bars.build_raw_bars(source, keys)` is the stage logic; the @asset is a thin
wrapper. One run may cover many partitions (single-run backfill): each symbol's history is
read or generated once and split by year.
"""


import polars as pl
from dagster import AssetExecutionContext

from config.partitions import split_key, symbol_year_asset
from resources.project import ProjectResource


@symbol_year_asset(group_name="ingest", kinds={"polars", "parquet"})
def raw_bars(context: AssetExecutionContext, project: ProjectResource) -> pl.DataFrame:
    """Daily OHLCV bars of one symbol and year from the configured source
    (synthetic market, the user's folder, or real prices shipped in packages)."""
    from domain.observe import observe
    from domain.raw_bars import build_raw_bars
    from domain.sources import make_source

    settings = project.settings()
    source = make_source(settings)
    keys = [split_key(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "raw_bars", args={"source": source.name}) as obs:
        with obs.timed("build_s"):
            df = build_raw_bars(source, keys)
        obs.record(df)
    return df
