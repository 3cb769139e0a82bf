"""Stage `paper_trades` (job `live_paper_trade`): latest bars -> incremental features ->
specialists -> meta -> paper orders -> log.

One run, for the day `now` (config; default: the last stored bar):
1. `domain.live.inference.infer_batch` gives each symbol's probabilities from the incremental
   updaters (the same path as `infer_one`), with the meta models of year(now).
2. Target weights: the backtest's rule (kernels.backtest.portfolio.run_portfolio on that one
   day, settings `backtest.*`), so the paper book is the book the backtest would hold
   (`topk_dropout` starts that day from the drifted paper book, each held symbol counted as
   held for `hold_thresh` sessions: the paper book keeps no holding days).
3. The current paper book (the Delta table data/paper_positions: symbol, weight, price, date)
   drifts with prices to today: w_i * (p_now / p_then) / (1 + sum_j w_j (p_now_j / p_then_j - 1)).
4. Orders: target - drifted, for |delta| >= MIN_TRADE, for the symbols with a bar that day
   (a held symbol without one stays frozen, as in the backtest); the new book is written
   (one Delta commit), then the run record (with the `session` traded) and every order go
   to reports/<experiment>/paper_trades/orders.jsonl through the asynchronous writer.
The stored value (the Delta table data/paper_trades) is the run's order table.

Once per session (idempotent by date). The session of a run is the date of the newest bar at
or before `now` (an exchange session: a Saturday `now` trades Friday's bars). Steps 3-4 (read
the book and the log, decide, write both) hold an exclusive fcntl.flock on
`<data>/paper_positions.lock`, so two runs at once are serialised. A run whose session is
already traded (the log's newest run record has that session), or is older than the last
traded one, is REFUSED: nothing is ordered, logged or written, the book stays as it is, and the
run answers with one line (`PaperDay.refused`) and an empty order table. So two runs for one
day, at once or one after the other, log each order once and the book agrees with the log.
A run killed between the book's commit and the log's append leaves the book traded and the
session unlogged; the next run of that session then finds the book at its targets and logs
its record with no orders (nothing doubled, nothing blocked).
"""

import datetime as dt
import fcntl
import json
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

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
ORDER_SCHEMA = {"symbol": pl.String, "date": pl.Datetime("us"), "p": pl.Float64, "price": pl.Float64,
                "previous_weight": pl.Float64, "target_weight": pl.Float64, "delta": pl.Float64, "side": pl.String}


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
        # topk_dropout decides from the book it holds (which names to keep, which to replace)
        book_now = None if cfg.strategy == "threshold" else [held.get(s, 0.0) for s in symbols]
        target = run_portfolio(prices, p, cfg, initial_weights=book_now).weights[0].astype(np.float64)
    else:
        target = np.zeros(len(symbols))
    rows = []
    for i, s in enumerate(symbols):
        delta = float(target[i]) - held.get(s, 0.0)
        if abs(delta) >= MIN_TRADE:
            rows.append({"symbol": s, "date": tradable["date"][i], "p": float(p[0, i]), "price": float(prices[0, i]),
                         "previous_weight": held.get(s, 0.0), "target_weight": float(target[i]), "delta": delta,
                         "side": "buy" if delta > 0 else "sell"})
    orders = pl.DataFrame(rows, schema=ORDER_SCHEMA)
    book_schema = {"symbol": pl.String, "weight": pl.Float64, "price": pl.Float64, "date": pl.Datetime("us")}
    traded = pl.DataFrame({"symbol": symbols, "weight": target, "price": prices[0],
                           "date": tradable["date"].cast(pl.Datetime("us"))}, schema=book_schema).filter(pl.col("weight") != 0.0)
    kept = book.filter(pl.col("symbol").is_in(list(frozen))).select("symbol", "price", pl.col("date").cast(pl.Datetime("us")))
    kept = kept.with_columns(pl.col("symbol").replace_strict(frozen, return_dtype=pl.Float64).alias("weight")).select(
        list(book_schema))
    return orders, pl.concat([traded, kept.cast(book_schema)])


class PaperDay(NamedTuple):
    """A run's result: its orders, the book after it, and the one-line refusal (None when it traded)."""

    orders: pl.DataFrame
    book: pl.DataFrame
    refused: str | None = None


@contextmanager
def book_lock(data_dir: Path):
    """An exclusive flock on `<data>/paper_positions.lock` (beside the book's table, not in
    it): the book and the order log change together under it. Released when the process
    dies, so a killed run blocks nothing."""
    path = Path(data_dir) / f"{BOOK}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def last_run_record(log: Path, block: int = 1 << 16) -> dict | None:
    """The newest run record (a line with `session` and `orders`) of the order log, read
    backwards from its end (past the last run's order lines); None when there is none."""
    if not log.is_file():
        return None
    with log.open("rb") as fh:
        end = fh.seek(0, 2)
        carry = b""
        while end > 0:
            start = max(0, end - block)
            fh.seek(start)
            lines = (fh.read(end - start) + carry).split(b"\n")
            carry, end = (lines.pop(0) if start > 0 else b""), start
            for line in reversed(lines):
                if b'"session"' not in line:
                    continue
                try:
                    record = json.loads(line)
                except ValueError:  # a line cut by a killed writer
                    continue
                if isinstance(record, dict) and "orders" in record and record.get("session"):
                    return record
    return None


def _refusal(session: str, last: dict, log: Path) -> str:
    when = "is already traded" if session == last["session"] else f"is before the last traded one ({last['session']})"
    return (f"paper_trades: the session of {session} {when} (run {last['run']}, {log}); nothing ordered, "
            "the paper book is unchanged")


def trade_day(settings, symbols: list[str], now: dt.datetime, run_id: str) -> PaperDay:
    """One paper-trading run for the day `now` (module docstring, steps 1-4): the live
    inference of `symbols`, the orders against the stored book; under `book_lock` the new
    book is written, then the orders and the run record are logged to
    reports/<experiment>/paper_trades/orders.jsonl. A session already traded (or older than the last traded
    one) is refused: PaperDay(no orders, the stored book, the one-line reason), nothing written."""
    store = DeltaStore(settings.data_dir)
    h = settings.backtest.horizon
    log_path = settings.stage_reports_dir("paper_trades") / "orders.jsonl"
    closes = last_closes(store, symbols, now)
    session = f"{closes['date'].max():%Y-%m-%d}" if closes.height else None

    def refused() -> PaperDay | None:
        last = last_run_record(log_path)
        if session is None or last is None or session > last["session"]:
            return None
        book = store.read(BOOK) if store.exists(BOOK) else pl.DataFrame(schema=BOOK_SCHEMA)
        return PaperDay(pl.DataFrame(schema=ORDER_SCHEMA), book, _refusal(session, last, log_path))

    if (early := refused()) is not None:  # no inference for a session already traded
        return early
    preds = infer_batch(closes["symbol"].to_list(), now, settings=settings)
    probs = {r["symbol"]: (np.nan if r[f"p_h{h}"] is None else float(r[f"p_h{h}"])) for r in preds.iter_rows(named=True)}
    with book_lock(settings.data_dir):
        if (late := refused()) is not None:  # traded by a run that held the lock meanwhile
            return late
        book = store.read(BOOK) if store.exists(BOOK) else pl.DataFrame(schema=BOOK_SCHEMA)
        orders, new_book = paper_orders(probs, closes, book, settings)
        store.write_unpartitioned(BOOK, new_book)
        stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with AsyncWriter(log_path) as log:
            log.write({"run": run_id, "at": stamp, "now": str(now), "session": session, "symbols": len(closes),
                       "orders": orders.height, "horizon": h})
            log.write_many({"run": run_id, **r} for r in orders.iter_rows(named=True))
    return PaperDay(orders, new_book)
