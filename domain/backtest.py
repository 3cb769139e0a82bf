"""Stage `backtest` (year, and overall): the daily portfolio of the meta model's predictions.

Inputs: `predictions` of every stored year (out of sample by construction: the model of Y was
trained before Y) and the closes from `raw_bars`. The book: kernels.backtest.portfolio
(signal of day t -> target weights held from the close of t to the close of t+1 -> costs in
bps on the turnover -> PnL), driven by `p_h{backtest.horizon}`.

One run computes the whole stored span once (the weights carry from one year into the next),
then stores the daily rows of each requested year Y: date, net_return, gross_return,
turnover, cost, equity (equity of the whole span, 1.0 before its first day), positions,
gross_exposure (sum of |w| held) and max_abs_weight (largest |w| among the symbols traded that day).
Reports (reports/<experiment>/backtest/): `year_<Y>.json` (the year's statistics: CAGR, Sharpe, max drawdown,
turnover, ...), `overall.json` (the whole span), `equity.png`, and `daily.jsonl`, the day log
written by an asynchronous batched writer between numba chunks (never inside the loop).
"""

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from config.settings import BacktestSettings
from domain.async_writer import AsyncWriter
from domain.observe import write_bytes_atomic, write_json_atomic
from kernels.backtest.portfolio import PortfolioConfig, run_portfolio, stats

HEADLINE = ("cagr", "sharpe", "max_drawdown", "annual_turnover", "total_return", "n_days")


def portfolio_config(bt: BacktestSettings) -> PortfolioConfig:
    return PortfolioConfig(threshold=bt.threshold, max_gross=bt.max_gross, max_weight=bt.max_weight,
                           long_short=bt.long_short, fee_bps=bt.fee_bps, slippage_bps=bt.slippage_bps)


def backtest_panel(predictions: pl.LazyFrame, raw_bars: pl.LazyFrame, horizon: int):
    """(dates [T], symbols [N], prices [T, N] float64, probs [T, N] float32) over the dates
    that have predictions; NaN where a symbol has no bar or no prediction that day."""
    col = f"p_h{horizon}"
    pred = predictions.select("symbol", "date", col).collect()
    if pred.is_empty():
        return np.empty(0, "datetime64[us]"), [], np.empty((0, 0)), np.empty((0, 0), np.float32)
    d0, d1 = pred["date"].min(), pred["date"].max()
    bars = raw_bars.select("symbol", "date", "close").filter(pl.col("date").is_between(d0, d1)).collect()
    long = bars.join(pred, on=["symbol", "date"], how="full", coalesce=True)
    dates = long["date"].unique().sort()
    symbols = sorted(long["symbol"].unique().to_list())
    grid = pl.DataFrame({"date": dates}).join(pl.DataFrame({"symbol": symbols}), how="cross")
    full = grid.join(long, on=["date", "symbol"], how="left").sort("date", "symbol")
    T, N = dates.len(), len(symbols)
    prices = full["close"].cast(pl.Float64).fill_null(np.nan).to_numpy().reshape(T, N)
    probs = full[col].cast(pl.Float32).fill_null(np.nan).to_numpy().reshape(T, N)
    return dates.to_numpy(), symbols, prices, probs


def run_backtest(dates, symbols, prices, probs, bt: BacktestSettings, log_path: Path | None = None) -> pl.DataFrame:
    """The daily book over the panel; each chunk's days go to `log_path` (JSON lines) through
    the asynchronous writer. The log is written to a temp file and renamed when complete."""
    writer = tmp = None
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = log_path.with_name(f".tmp-{os.getpid()}-{log_path.name}")
        writer = AsyncWriter(tmp)

    def log_chunk(a: int, b: int, arrays: dict) -> None:
        w = arrays["weights"]
        writer.write_many({"date": str(dates[a + i])[:10], "net": float(arrays["net"][i]),
                           "turnover": float(arrays["turnover"][i]), "cost": float(arrays["cost"][i]),
                           "equity": float(arrays["equity"][i]), "positions": int(np.count_nonzero(w[i]))}
                          for i in range(b - a))

    try:
        try:
            res = run_portfolio(prices, probs, portfolio_config(bt), chunk_days=bt.chunk_days,
                                on_chunk=log_chunk if writer is not None else None)
        finally:
            if writer is not None:
                writer.close()
        if tmp is not None:
            if not tmp.exists():  # no day to log: an empty log, not a stale one
                tmp.write_text("")
            os.replace(tmp, log_path)
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise
    return pl.DataFrame({
        "date": pl.Series(dates).cast(pl.Datetime("us")),
        "net_return": res.net.astype(np.float32), "gross_return": res.gross.astype(np.float32),
        "turnover": res.turnover.astype(np.float32), "cost": res.cost.astype(np.float32),
        "equity": res.equity.astype(np.float32),
        "positions": np.count_nonzero(res.weights, axis=1).astype(np.int32),
        **exposure_columns(prices, res.weights),
    })


def exposure_columns(prices: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Per day: `gross_exposure` (sum of |w| held, frozen symbols included) and
    `max_abs_weight` (the largest |w| among the symbols with a bar that day, the ones traded;
    a frozen symbol's weight drifts and is not capped); what the weights_within_caps check reads."""
    T = weights.shape[0]
    if weights.size == 0:
        return {"gross_exposure": np.zeros(T, np.float32), "max_abs_weight": np.zeros(T, np.float32)}
    w = np.abs(weights.astype(np.float64))
    px = np.asarray(prices, dtype=np.float64)
    traded = np.isfinite(px) & (px > 0)
    return {"gross_exposure": w.sum(axis=1).astype(np.float32),
            "max_abs_weight": np.where(traded, w, 0.0).max(axis=1).astype(np.float32)}


def period_stats(daily: pl.DataFrame) -> dict:
    return stats(daily["net_return"].cast(pl.Float64).to_numpy(), daily["turnover"].cast(pl.Float64).to_numpy())


@dataclass
class BacktestReport:
    table: pl.DataFrame  # the daily rows of the requested years
    overall: dict  # the statistics of the whole span (overall.json)
    per_year: dict[int, dict]  # the statistics of each requested year (year_<Y>.json)
    equity_png: Path | None  # None when there was nothing to trade

    def headline(self) -> dict:
        return {k: self.overall[k] for k in HEADLINE}


def build_backtest(predictions: pl.LazyFrame, raw_bars: pl.LazyFrame, years: list[int], bt: BacktestSettings,
                   out_dir: Path, log=None) -> BacktestReport:
    """The book over the whole stored span (the weights carry from one year into the next);
    writes `year_<Y>.json` per requested year, `overall.json`, `equity.png` and the day log
    `daily.jsonl` under `out_dir`. `log.warning` is told when there is nothing to trade."""
    from domain.learning.plots import equity_png_bytes  # scipy, sklearn: loaded when a backtest runs

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
    png = None
    if daily.height:
        png = write_bytes_atomic(out_dir / "equity.png", equity_png_bytes(
            dates, daily["equity"].to_numpy(), f"meta h{bt.horizon} portfolio, out of sample"))
    elif log is not None:
        log.warning("backtest: no stored predictions to trade: run the yearly stages (meta_model, predictions) first")
    table = daily.filter(pl.col("date").dt.year().is_in(years))
    return BacktestReport(table, overall, per_year, png)
