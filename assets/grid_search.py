"""Stage `grid_search` (and its inputs `market_data`, `trade_log`): the trade-log grid search.

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.gridsearch.stage`, whose docstring states them.
"""

import base64

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

from resources.compute import GPU_POOL, ComputeResource, gpu_step_tags
from resources.project import ProjectResource


@asset(group_name="search", kinds={"polars", "parquet"},
       check_specs=[AssetCheckSpec("sorted_by_ticker_time", asset="market_data",
                                   description="rows sorted by ticker, then strictly by time within a ticker "
                                               "(the offsets and trade indices rely on it)")])
def market_data(context: AssetExecutionContext, project: ProjectResource):
    """Second-by-second market data of the configured tickers, from the folder of `Raw_Market_data_MM-DD-YYYY.csv` files,
    sorted by ticker then datetime (one contiguous price array with per-ticker offsets)."""
    from domain.checks import sorted_by_ticker_time
    from domain.gridsearch.inputs import market_files, read_market_data
    from resources.observe import observe

    settings = project.settings()
    gs = settings.grid_search
    folder = settings.resolve(gs.market_data)
    with observe(context, settings.reports_dir, "market_data", args={"folder": str(folder)}) as obs:
        files, other = market_files(folder)
        df = obs.record(read_market_data(folder, gs.tickers))
        obs.extra.update({"days": len(files), "tickers": gs.tickers, "ignored_files": [p.name for p in other][:20]})
    if other:
        context.log.warning(f"market_data: ignored {len(other)} file(s) not named Raw_Market_data_MM-DD-YYYY.csv")
    yield Output(df)
    passed, meta = sorted_by_ticker_time(df)
    yield AssetCheckResult(check_name="sorted_by_ticker_time", passed=passed, metadata=meta)


@asset(group_name="search", kinds={"polars", "parquet"},
       ins={"market_data": AssetIn()},
       check_specs=[AssetCheckSpec("indices_inside_market_data", asset="trade_log",
                                   description="0 <= MarketDataStartIndex <= MarketDataEndIndex < rows of market_data")])
def trade_log(context: AssetExecutionContext, market_data: pl.DataFrame, project: ProjectResource):
    """The trade log's trades of the configured tickers, with MarketDataStartIndex and
    MarketDataEndIndex into market_data; rejected trades are counted and named here."""
    from domain.checks import indices_inside_market_data
    from domain.gridsearch.inputs import read_trade_log
    from resources.observe import observe

    settings = project.settings()
    gs = settings.grid_search
    path = settings.resolve(gs.trade_log)
    with observe(context, settings.reports_dir, "trade_log", args={"file": str(path)}) as obs:
        trades, rejected = read_trade_log(path, gs.tickers, market_data)
        obs.record(trades)
        obs.extra.update(rejected.summary())
    if rejected.total:
        context.log.warning(f"trade_log: left out {rejected.total} trade(s): {rejected.by_reason}; first ids {rejected.first_ids}")
    yield Output(trades)
    passed, meta = indices_inside_market_data(trades, market_data.height)
    yield AssetCheckResult(check_name="indices_inside_market_data", passed=passed, metadata=meta)


@asset(group_name="search", kinds={"numba", "polars"},
       ins={"market_data": AssetIn(), "trade_log": AssetIn()}, pool=GPU_POOL, op_tags=gpu_step_tags(),
       check_specs=[AssetCheckSpec("top_sorted_unique", asset="grid_search",
                                   description="the top-k by ROI descending, ranks 1..k in order, each combination once")])
def grid_search(context: AssetExecutionContext, market_data: pl.DataFrame, trade_log: pl.DataFrame,
                project: ProjectResource, compute: ComputeResource):
    """The exact top combinations of entry filters and exits by ROI over the trade history
    (reports/grid_search/top10.json, a markdown table and a heatmap)."""
    from domain.checks import top_sorted_unique
    from domain.gridsearch.stage import (
        grid_search_stage,
        markdown_table,
    )
    from resources.observe import observe

    settings = project.settings()
    backend = compute.backend
    with observe(context, settings.reports_dir, "grid_search",
                 args={"engine": settings.grid_search.engine, "backend": backend}) as obs:
        stage = grid_search_stage(market_data, trade_log, settings, backend, obs=obs)
        result = stage.result
        obs.record(stage.table)
        obs.extra.update({"combinations": result.combinations, "trades_searched": result.trades, "engine": result.engine,
                          **result.timings})
    meta = {"top": MetadataValue.md(markdown_table(result)), "report": MetadataValue.path(str(stage.paths["json"]))}
    if "heatmap" in stage.paths:
        encoded = base64.b64encode(stage.paths["heatmap"].read_bytes()).decode()
        meta["heatmap"] = MetadataValue.md(f"![heatmap](data:image/png;base64,{encoded})")
    yield Output(stage.table, metadata=meta)
    passed, check_meta = top_sorted_unique(stage.table)
    yield AssetCheckResult(check_name="top_sorted_unique", passed=passed, metadata=check_meta)
