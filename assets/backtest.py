"""Stage `backtest` (year, and overall): the daily portfolio of the meta model's predictions.

Inputs: `predictions` of every stored year (out of sample by construction: the model of Y was
trained before Y) and the closes from `raw_bars`. The book: kernels.backtest.portfolio
(signal of day t -> target weights held from the close of t to the close of t+1 -> costs in
bps on the turnover -> PnL), driven by `p_h{backtest.horizon}`.

One run computes the whole stored span once (the weights carry from one year into the next),
then stores the daily rows of each requested year Y: date, net_return, gross_return,
turnover, cost, equity (equity of the whole span, 1.0 before its first day), positions.
Reports (reports/backtest/): `year_<Y>.json` (the year's statistics: CAGR, Sharpe, max drawdown,
turnover, ...), `overall.json` (the whole span), `equity.png`, and `daily.jsonl`, the day log
written by an asynchronous batched writer between numba chunks (never inside the loop).
"""


import polars as pl
from dagster import AllPartitionMapping, AssetExecutionContext, AssetIn, BackfillPolicy, MetadataValue, Output, asset

from domain.observe import observe, write_bytes_atomic, write_json_atomic
from kernels.learn.evaluation import equity_png_bytes
from config.partitions import years_partitions
from resources.io_manager import ALLOW_MISSING
from resources.project import ProjectResource
from domain.backtest import HEADLINE, backtest_panel, period_stats, run_backtest


@asset(
    partitions_def=years_partitions,
    backfill_policy=BackfillPolicy.single_run(),
    ins={"predictions": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True}),
         "raw_bars": AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True})},
    group_name="evaluation",
    kinds={"numba", "polars"},
)
def backtest(context: AssetExecutionContext, predictions: pl.LazyFrame, raw_bars: pl.LazyFrame,
             project: ProjectResource):
    """The daily portfolio of the out-of-sample predictions: per year and over the whole span,
    CAGR, Sharpe, max drawdown and turnover; the equity curve as a PNG."""
    settings = project.settings()
    bt = settings.backtest
    out_dir = settings.reports_dir / "backtest"
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "backtest", args=bt.model_dump()) as obs:
        dates, symbols, prices, probs = backtest_panel(predictions, raw_bars, bt.horizon)
        daily = run_backtest(dates, symbols, prices, probs, bt, log_path=out_dir / "daily.jsonl")
        per_year = {}
        for y in years:
            rows = daily.filter(pl.col("date").dt.year() == y)
            per_year[y] = {"year": y, "horizon": bt.horizon, "symbols": len(symbols), **period_stats(rows)}
            write_json_atomic(out_dir / f"year_{y}.json", per_year[y])
        overall = {"from": str(dates[0])[:10] if len(dates) else None, "to": str(dates[-1])[:10] if len(dates) else None,
                   "horizon": bt.horizon, "symbols": len(symbols), "settings": bt.model_dump(), **period_stats(daily)}
        write_json_atomic(out_dir / "overall.json", overall)
        png = out_dir / "equity.png"
        if daily.height:
            write_bytes_atomic(png, equity_png_bytes(dates, daily["equity"].to_numpy(),
                                                     f"meta h{bt.horizon} portfolio, out of sample"))
        else:
            context.log.warning("backtest: no stored predictions to trade: run the yearly stages (meta_model, predictions) first")
        table = daily.filter(pl.col("date").dt.year().is_in(years))
        obs.extra["overall"] = {k: overall[k] for k in HEADLINE}
        obs.record(table)
    yield Output(table, metadata={
        **{f"overall_{k}": MetadataValue.float(float(overall[k])) if overall[k] is not None else MetadataValue.text("n/a")
           for k in HEADLINE},
        "per_year": MetadataValue.json({str(y): {k: v[k] for k in HEADLINE} for y, v in per_year.items()}),
        **({"equity_png": MetadataValue.path(str(png))} if daily.height else {}),
    })
