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
The stage logic: domain.live.paper_trade (resolve_now, trade_day).
Checks (domain.checks): gross_within_cap, orders_for_known_symbols.
"""

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    Config,
    MetadataValue,
    Output,
    asset,
)

from config.partitions import SYMBOLS
from resources.delta_store import DeltaStore
from resources.project import ProjectResource


class PaperTradeConfig(Config):
    now: str | None = None  # ISO date or date-time; default: the last stored bar


@asset(
    group_name="live",
    deps=["raw_bars", "meta_model", "regime"],
    kinds={"numba", "polars"},
    check_specs=[
        AssetCheckSpec("gross_within_cap", asset="paper_trades",
                       description="the paper book after the orders: sum |weight| <= backtest.max_gross, weights finite"),
        AssetCheckSpec("orders_for_known_symbols", asset="paper_trades",
                       description="no order for a symbol that is not registered"),
    ],
)
def paper_trades(context: AssetExecutionContext, config: PaperTradeConfig, project: ProjectResource):
    """Paper orders of the day from the live inference path; logged, and the paper book updated."""
    from domain import checks
    from domain.live.paper_trade import resolve_now, trade_day
    from domain.observe import observe

    settings = project.settings()
    symbols = list(context.instance.get_dynamic_partitions(SYMBOLS))
    if not symbols:
        raise ValueError("paper_trades: no symbols registered: run `python -m pipeline.cli symbols sync` and build first")
    now = resolve_now(DeltaStore(settings.data_dir), config.now)
    with observe(context, settings.reports_dir, "paper_trades", args={"now": str(now)}) as obs:
        orders, new_book = trade_day(settings, symbols, now, context.run_id)
        obs.record(orders)
    yield Output(orders, metadata={
        "now": MetadataValue.text(str(now)), "orders": orders.height,
        "gross_exposure": float(new_book["weight"].abs().sum()) if new_book.height else 0.0,
        "positions": new_book.height,
    })
    passed, meta = checks.gross_within_cap(new_book, settings.backtest.max_gross)
    yield AssetCheckResult(check_name="gross_within_cap", passed=passed, metadata=meta)
    passed, meta = checks.orders_for_known_symbols(orders, symbols)
    yield AssetCheckResult(check_name="orders_for_known_symbols", passed=passed, metadata=meta)
