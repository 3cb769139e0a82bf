"""Stage `paper_trades` (job `live_paper_trade`): latest bars -> incremental features ->
specialists -> meta -> paper orders -> log.

One run, for the day `now` (config; default: the last stored bar):
1. `domain.live.inference.infer_batch` gives each symbol's probabilities from the incremental
   updaters (the same path as `infer_one`), with the meta models of year(now).
2. Target weights: the backtest's rule (kernels.backtest.portfolio.run_portfolio on that one
   day, settings `backtest.*`), so the paper book is the book the backtest would hold.
3. The current paper book (the Delta table data/paper_positions: symbol, weight, price, date)
   drifts with prices to today: w_i * (p_now / p_then) / (1 + sum_j w_j (p_now_j / p_then_j - 1)).
4. Orders: target - drifted, for |delta| >= MIN_TRADE, for the symbols with a bar that day
   (a held symbol without one stays frozen, as in the backtest); every order (and a run record) goes
   to reports/paper/orders.jsonl through the asynchronous writer; the new book is written
   atomically. A second run for the same day finds the book at its targets: no orders.
The stored value (the Delta table data/paper_trades) is the run's order table.
"""

import datetime as dt

import numpy as np
import polars as pl

from domain.async_writer import AsyncWriter
from domain.backtest import portfolio_config
from domain.live.inference import infer_batch
from kernels.backtest.portfolio import run_portfolio
from resources.delta_store import DeltaStore

MIN_TRADE = 1e-4  # weight changes smaller than this are not traded
BOOK = "paper_positions"
BOOK_SCHEMA = {"symbol": pl.String, "weight": pl.Float64, "price": pl.Float64, "date": pl.Datetime("us")}


def resolve_now(store: DeltaStore, now: str | None) -> dt.datetime:
    """The day of the run: `now` (ISO date or date-time), else the last stored bar."""
    if now:
        return dt.datetime.fromisoformat(now)
    last = store.scan("raw_bars").select(pl.col("date").max()).collect().item()
    if last is None:
        raise ValueError(f"paper_trades: no raw_bars stored under {store.asset_dir('raw_bars')}: build first")
    return last


def last_closes(store: DeltaStore, symbols: list[str], now: dt.datetime) -> pl.DataFrame:
    """symbol, date, close of each symbol's last stored bar at or before `now`."""
    return (store.scan("raw_bars").filter(pl.col("symbol").is_in(symbols) & (pl.col("date") <= now))
            .sort("date").group_by("symbol").agg(pl.col("date").last(), pl.col("close").last().cast(pl.Float64))
            .sort("symbol").collect())


def drifted_book(book: pl.DataFrame, closes: pl.DataFrame) -> dict[str, float]:
    """The stored weights moved with prices to today's closes (module docstring, step 3)."""
    if book.is_empty():
        return {}
    j = book.join(closes.select("symbol", pl.col("close").alias("now")), on="symbol", how="left")
    ratio = (j["now"].fill_null(j["price"]) / j["price"]).to_numpy()
    w = j["weight"].to_numpy().astype(np.float64)
    growth = 1.0 + float(np.sum(w * (ratio - 1.0)))
    moved = w * ratio / growth if growth > 0 else np.zeros_like(w)
    return dict(zip(j["symbol"].to_list(), moved.tolist()))


def paper_orders(probs: dict[str, float], closes: pl.DataFrame, book: pl.DataFrame, settings) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(orders, new book) for one day: targets by the backtest's rule, minus the drifted book.

    As in the backtest, a symbol without a bar on the day (no close at all, or its last bar
    older than the day's) cannot trade: a held position in it is kept frozen at its drifted
    weight, no order is made, and its weight is taken out of the day's gross budget."""
    today = closes["date"].max() if closes.height else None
    tradable = closes.filter(pl.col("date") == today) if today is not None else closes
    symbols = tradable["symbol"].to_list()
    held = drifted_book(book, closes)
    frozen = {s: w for s, w in held.items() if s not in set(symbols) and w != 0.0}
    budget = settings.backtest.max_gross - sum(abs(w) for w in frozen.values())
    prices = tradable["close"].to_numpy().reshape(1, -1)
    p = np.array([[probs.get(s, np.nan) for s in symbols]], dtype=np.float32)
    if budget > 1e-12 and symbols:
        cfg = portfolio_config(settings.backtest.model_copy(update={"max_gross": budget}))
        target = run_portfolio(prices, p, cfg).weights[0].astype(np.float64)
    else:
        target = np.zeros(len(symbols))
    rows = []
    for i, s in enumerate(symbols):
        delta = float(target[i]) - held.get(s, 0.0)
        if abs(delta) >= MIN_TRADE:
            rows.append({"symbol": s, "date": tradable["date"][i], "p": float(p[0, i]), "price": float(prices[0, i]),
                         "previous_weight": held.get(s, 0.0), "target_weight": float(target[i]), "delta": delta,
                         "side": "buy" if delta > 0 else "sell"})
    schema = {"symbol": pl.String, "date": pl.Datetime("us"), "p": pl.Float64, "price": pl.Float64,
              "previous_weight": pl.Float64, "target_weight": pl.Float64, "delta": pl.Float64, "side": pl.String}
    orders = pl.DataFrame(rows, schema=schema)
    book_schema = {"symbol": pl.String, "weight": pl.Float64, "price": pl.Float64, "date": pl.Datetime("us")}
    traded = pl.DataFrame({"symbol": symbols, "weight": target, "price": prices[0],
                           "date": tradable["date"].cast(pl.Datetime("us"))}, schema=book_schema).filter(pl.col("weight") != 0.0)
    kept = book.filter(pl.col("symbol").is_in(list(frozen))).select("symbol", "price", pl.col("date").cast(pl.Datetime("us")))
    kept = kept.with_columns(pl.col("symbol").replace_strict(frozen, return_dtype=pl.Float64).alias("weight")).select(
        list(book_schema))
    return orders, pl.concat([traded, kept.cast(book_schema)])


def trade_day(settings, symbols: list[str], now: dt.datetime, run_id: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One paper-trading run for the day `now` (module docstring, steps 1-4): the live
    inference of `symbols`, the orders against the stored book, logged with the run record
    to reports/paper/orders.jsonl; the new book is written. Returns (orders, new book)."""
    store = DeltaStore(settings.data_dir)
    h = settings.backtest.horizon
    closes = last_closes(store, symbols, now)
    preds = infer_batch(closes["symbol"].to_list(), now, settings=settings)
    probs = {r["symbol"]: (np.nan if r[f"p_h{h}"] is None else float(r[f"p_h{h}"])) for r in preds.iter_rows(named=True)}
    book = store.read(BOOK) if store.exists(BOOK) else pl.DataFrame(schema=BOOK_SCHEMA)
    orders, new_book = paper_orders(probs, closes, book, settings)
    stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    with AsyncWriter(settings.reports_dir / "paper" / "orders.jsonl") as log:
        log.write({"run": run_id, "at": stamp, "now": str(now), "symbols": len(closes), "orders": orders.height,
                   "horizon": h})
        log.write_many({"run": run_id, **r} for r in orders.iter_rows(named=True))
    store.write_unpartitioned(BOOK, new_book)
    return orders, new_book
