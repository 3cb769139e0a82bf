"""Stage `paper_trades` (job `live_paper_trade`): latest bars -> incremental features ->

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.live.paper_trade`, whose docstring states them.
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
    from resources.observe import observe

    settings = project.settings()
    symbols = list(context.instance.get_dynamic_partitions(SYMBOLS))
    if not symbols:
        raise ValueError("paper_trades: no symbols registered: run `python -m pipeline.cli symbols sync` and build first")
    now = resolve_now(DeltaStore(settings.data_dir), config.now)
    with observe(context, settings.reports_dir, "paper_trades", args={"now": str(now)}) as obs:
        orders, new_book, refused = trade_day(settings, symbols, now, context.run_id)
        obs.record(orders)
    if refused:
        context.log.warning(refused)
    yield Output(orders, metadata={
        "now": MetadataValue.text(str(now)), "orders": orders.height,
        **({"refused": MetadataValue.text(refused)} if refused else {}),
        "gross_exposure": float(new_book["weight"].abs().sum()) if new_book.height else 0.0,
        "positions": new_book.height,
    })
    passed, meta = checks.gross_within_cap(new_book, settings.backtest.max_gross)
    yield AssetCheckResult(check_name="gross_within_cap", passed=passed, metadata=meta)
    passed, meta = checks.orders_for_known_symbols(orders, symbols)
    yield AssetCheckResult(check_name="orders_for_known_symbols", passed=passed, metadata=meta)
