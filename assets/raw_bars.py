"""Stage `raw_bars` (symbol x year): OHLCV from the configured source, validated, stored.

`domain.raw_bars.build_raw_bars(source, keys)` is the stage logic; the @asset is a thin
wrapper. One run may cover many partitions (single-run backfill): each symbol's history is
read or generated once and split by year.

Checks (yielded with the output; computed by domain.checks): ohlc_consistent, unique_dates,
finite_positive_prices (errors), and exchange_sessions, plausible_moves,
inside_configured_years (warnings: the bars are stored, the check names what to look at).
"""


import polars as pl
from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetExecutionContext, Output

from resources.partitions import build_per_symbol, output_metadata, run_keys, symbol_year_asset
from resources.project import ProjectResource


@symbol_year_asset(
    group_name="ingest",
    kinds={"polars", "parquet"},
    check_specs=[
        AssetCheckSpec("ohlc_consistent", asset="raw_bars", description="every bar has low <= open, close <= high"),
        AssetCheckSpec("unique_dates", asset="raw_bars", description="no symbol has the same date twice"),
        AssetCheckSpec("finite_positive_prices", asset="raw_bars",
                       description="open, high, low, close finite and > 0; volume finite and >= 0 where present"),
        AssetCheckSpec("exchange_sessions", asset="raw_bars",
                       description="every date is a session of ingest.calendar (warning; refused with ingest.strict)"),
        AssetCheckSpec("plausible_moves", asset="raw_bars",
                       description="no close moves more than a factor ingest.max_move from the previous one (warning)"),
        AssetCheckSpec("inside_configured_years", asset="raw_bars",
                       description="the source holds no row outside the configured years, which would not be stored "
                                   "(warning)"),
    ],
)
def raw_bars(context: AssetExecutionContext, project: ProjectResource):
    """Daily OHLCV bars of one symbol and year from the configured source
    (synthetic market, the user's folder, or real prices shipped in packages)."""
    from domain import checks
    from resources.observe import observe
    from domain.raw_bars import build_raw_bars
    from domain.sources import make_source

    settings = project.settings()
    source = make_source(settings)
    keys = run_keys(context)
    years, outside = (settings.years.start, settings.years.last), []
    with observe(context, settings.reports_dir, "raw_bars", args={"source": source.name}) as obs:
        with obs.timed("build_s"):
            df, failed = build_per_symbol(keys, lambda ks: build_raw_bars(source, ks, years=years, outside=outside))
        obs.record(df)
    yield Output(df, metadata=output_metadata(failed))
    for name in ("ohlc_consistent", "unique_dates", "finite_positive_prices"):
        passed, meta = getattr(checks, name)(df)
        yield AssetCheckResult(check_name=name, passed=passed, metadata=meta)
    ingest = settings.ingest
    stray = pl.concat(outside) if outside else pl.DataFrame({"symbol": [], "date": []})
    warnings = {"exchange_sessions": checks.exchange_sessions(df, ingest.calendar),
                "plausible_moves": checks.plausible_moves(df, ingest.max_move),
                "inside_configured_years": checks.inside_configured_years(stray, *years)}
    for name, (passed, meta) in warnings.items():
        yield AssetCheckResult(check_name=name, passed=passed, metadata=meta, severity=AssetCheckSeverity.WARN)
