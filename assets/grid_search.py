"""Stage `grid_search` (and its inputs `market_data`, `trade_log`): the seed-001 grid search.

`run_grid_search` is the stage logic (also behind `python -m pipeline.cli grid-search`):
exit resolution once, then an engine over every combination:
  brute  one thread per combination over all trades (cpu numba or cuda)
  cube   dominance sums: every combination at once (NumPy/CuPy, or torch)
  auto   cube (the fastest exact engine at every size measured)
Every engine returns the same exact top-k (see kernels.gridsearch); `optuna` searches
beyond the grid (domain.gridsearch.smart). The overfitting guard (domain.gridsearch.overfit) adds
in/out-of-sample ROI, PBO and the deflated Sharpe ratio. `write_reports` writes `top10.json`
(the CLI's JSON too), a markdown table and a heatmap PNG.
"""

import base64

import polars as pl
from dagster import AssetExecutionContext, AssetIn, MetadataValue, Output, asset

from domain.gridsearch.inputs import TradeArrays, market_files, read_market_data, read_trade_log
from domain.gridsearch.overfit import overfitting_report
from domain.observe import observe
from resources.compute import GPU_POOL, ComputeResource, gpu_step_tags
from resources.project import ProjectResource
from domain.gridsearch.stage import grid_from_settings, markdown_table, run_grid_search, run_smart_search, search_backend, write_reports


@asset(group_name="grid_search", kinds={"polars", "parquet"})
def market_data(context: AssetExecutionContext, project: ProjectResource) -> pl.DataFrame:
    """Second-by-second market data of the configured tickers, from the seed-001 CSV folder,
    sorted by ticker then datetime (one contiguous price array with per-ticker offsets)."""
    settings = project.settings()
    gs = settings.grid_search
    folder = settings.resolve(gs.market_data)
    with observe(context, settings.reports_dir, "market_data", args={"folder": str(folder)}) as obs:
        files, other = market_files(folder)
        df = obs.record(read_market_data(folder, gs.tickers))
        obs.extra.update({"days": len(files), "tickers": gs.tickers, "ignored_files": [p.name for p in other][:20]})
    if other:
        context.log.warning(f"market_data: ignored {len(other)} file(s) not named Raw_Market_data_MM-DD-YYYY.csv")
    return df


@asset(group_name="grid_search", kinds={"polars", "parquet"},
       ins={"market_data": AssetIn()})
def trade_log(context: AssetExecutionContext, market_data: pl.DataFrame, project: ProjectResource) -> pl.DataFrame:
    """The trade log's trades of the configured tickers, with MarketDataStartIndex and
    MarketDataEndIndex into market_data; rejected trades are counted and named here."""
    settings = project.settings()
    gs = settings.grid_search
    path = settings.resolve(gs.trade_log)
    with observe(context, settings.reports_dir, "trade_log", args={"file": str(path)}) as obs:
        trades, rejected = read_trade_log(path, gs.tickers, market_data)
        obs.record(trades)
        obs.extra.update(rejected.summary())
    if rejected.total:
        context.log.warning(f"trade_log: left out {rejected.total} trade(s): {rejected.by_reason}; first ids {rejected.first_ids}")
    return trades


@asset(group_name="grid_search", kinds={"numba", "polars"},
       ins={"market_data": AssetIn(), "trade_log": AssetIn()}, pool=GPU_POOL, op_tags=gpu_step_tags())
def grid_search(context: AssetExecutionContext, market_data: pl.DataFrame, trade_log: pl.DataFrame,
                project: ProjectResource, compute: ComputeResource):
    """The exact top combinations of entry filters and exits by ROI over the trade history
    (reports/grid_search/top10.json, a markdown table and a heatmap)."""
    settings = project.settings()
    gs = settings.grid_search
    grid = grid_from_settings(settings)
    backend = search_backend(compute)
    trades = TradeArrays.from_frame(trade_log)
    prices = market_data["price"].to_numpy()
    with observe(context, settings.reports_dir, "grid_search", args={"engine": gs.engine, "backend": backend}) as obs:
        if gs.engine == "optuna":
            result, results = run_smart_search(prices, trades, gs, backend)
        elif gs.dask.enabled:
            from domain.gridsearch.dask_grid import cluster_client, run_grid_search_dask

            with cluster_client(gs.dask) as client:
                result, results = run_grid_search_dask(prices, trades, grid, client=client, engine=gs.engine,
                                                       backend=backend, top=gs.top, min_trades=gs.min_trades,
                                                       shards=gs.dask.shards, scatter=gs.dask.scatter)
        else:
            result, results = run_grid_search(prices, trades, grid, engine=gs.engine, backend=backend, top=gs.top,
                                              min_trades=gs.min_trades)
        if gs.overfitting and gs.engine != "optuna":
            with obs.timed("overfitting_s"):
                result.overfitting = overfitting_report(trades, results, grid, result.top, min_trades=gs.min_trades)
            obs.extra.update({"pbo": result.overfitting["pbo"]["pbo"], "dsr": result.overfitting["deflated_sharpe"]["dsr"]})
        paths = write_reports(result, settings.reports_dir / "grid_search", grid, trades, results)
        table = pl.DataFrame(result.top) if result.top else pl.DataFrame()
        obs.record(table)
        obs.extra.update({"combinations": result.combinations, "trades_searched": result.trades, "engine": result.engine,
                          **result.timings})
    meta = {"top": MetadataValue.md(markdown_table(result)), "report": MetadataValue.path(str(paths["json"]))}
    if "heatmap" in paths:
        encoded = base64.b64encode(paths["heatmap"].read_bytes()).decode()
        meta["heatmap"] = MetadataValue.md(f"![heatmap](data:image/png;base64,{encoded})")
    yield Output(table, metadata=meta)
