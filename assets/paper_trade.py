"""Stage `paper_trades` (job `live_paper_trade`): latest bars -> incremental features ->
specialists -> meta -> paper orders -> log.

One run, for the day `now` (config; default: the last stored bar):
1. `domain.live.inference.infer_batch` gives each symbol's probabilities from the incremental
   updaters (the same path as `infer_one`), with the meta models of year(now).
2. Target weights: the backtest's rule (kernels.backtest.portfolio.run_portfolio on that one
   day, settings `backtest.*`), so the paper book is the book the backtest would hold.
3. The current paper book (data/paper_positions/part.parquet: symbol, weight, price, date)
   drifts with prices to today: w_i * (p_now / p_then) / (1 + sum_j w_j (p_now_j / p_then_j - 1)).
4. Orders: target - drifted, for |delta| >= MIN_TRADE, for the symbols with a bar that day
   (a held symbol without one stays frozen, as in the backtest); every order (and a run record) goes
   to reports/paper/orders.jsonl through the asynchronous writer; the new book is written
   atomically. A second run for the same day finds the book at its targets: no orders.
The stored value (data/paper_trades/part.parquet) is the run's order table.
"""

import datetime as dt

import numpy as np
import polars as pl
from dagster import AssetExecutionContext, Config, MetadataValue, Output, asset

from domain.async_writer import AsyncWriter
from domain.observe import observe
from config.partitions import SYMBOLS
from resources.parquet_store import ParquetStore
from resources.project import ProjectResource
from domain.live.paper_trade import BOOK, last_closes, paper_orders


class PaperTradeConfig(Config):
    now: str | None = None  # ISO date or date-time; default: the last stored bar


@asset(
    group_name="live",
    deps=["raw_bars", "meta_model", "regime"],
    kinds={"numba", "polars"},
)
def paper_trades(context: AssetExecutionContext, config: PaperTradeConfig, project: ProjectResource):
    """Paper orders of the day from the live inference path; logged, and the paper book updated."""
    from domain.live.inference import infer_batch

    settings = project.settings()
    store = ParquetStore(settings.data_dir)
    symbols = list(context.instance.get_dynamic_partitions(SYMBOLS))
    if not symbols:
        raise ValueError("paper_trades: no symbols registered: run `python -m pipeline.cli symbols sync` and build first")
    if config.now:
        now = dt.datetime.fromisoformat(config.now)
    else:
        now = store.scan("raw_bars").select(pl.col("date").max()).collect().item()
        if now is None:
            raise ValueError(f"paper_trades: no raw_bars stored under {store.asset_dir('raw_bars')}: build first")
    h = settings.backtest.horizon
    with observe(context, settings.reports_dir, "paper_trades", args={"now": str(now)}) as obs:
        closes = last_closes(store, symbols, now)
        preds = infer_batch(closes["symbol"].to_list(), now, settings=settings)
        probs = {r["symbol"]: (np.nan if r[f"p_h{h}"] is None else float(r[f"p_h{h}"])) for r in preds.iter_rows(named=True)}
        book_path = store.unpartitioned_path(BOOK)
        book = pl.read_parquet(book_path) if book_path.exists() else pl.DataFrame(
            schema={"symbol": pl.String, "weight": pl.Float64, "price": pl.Float64, "date": pl.Datetime("us")})
        orders, new_book = paper_orders(probs, closes, book, settings)
        stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with AsyncWriter(settings.reports_dir / "paper" / "orders.jsonl") as log:
            log.write({"run": context.run_id, "at": stamp, "now": str(now), "symbols": len(closes), "orders": orders.height,
                       "horizon": h})
            log.write_many({"run": context.run_id, **r} for r in orders.iter_rows(named=True))
        store.write_unpartitioned(BOOK, new_book)
        obs.record(orders)
    yield Output(orders, metadata={
        "now": MetadataValue.text(str(now)), "orders": orders.height,
        "gross_exposure": float(new_book["weight"].abs().sum()) if new_book.height else 0.0,
        "positions": new_book.height,
    })
