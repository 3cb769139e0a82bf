"""Stage `backtest` (year, and overall): the daily portfolio of the meta model's predictions.

Inputs: `predictions` of every stored year (out of sample by construction: the model of Y was
trained before Y) and the closes from `raw_bars`. The book: kernels.backtest.portfolio
(signal of day t -> target weights held from the close of t to the close of t+1 -> costs in
bps on the turnover -> PnL), driven by `p_h{backtest.horizon}`.

One run computes the whole stored span once (the weights carry from one year into the next),
then stores the daily rows of each requested year Y: date, net_return, gross_return,
turnover, cost, equity (equity of the whole span, 1.0 before its first day), positions,
trades (positions opened that day), gross_exposure (sum of |w| held) and max_abs_weight
(largest |w| among the symbols traded that day).
Reports (reports/<experiment>/backtest/): `year_<Y>.json` (the year's stats table, `period_stats`:
from, to, days, total return, CAGR, annual volatility, Sharpe, Sortino, Calmar, max drawdown and
its duration, exposure, turnover, trades, win rate, total costs and their share of the gross
profit, as kernels.backtest.stats states them; and the benchmark figures below),
`overall.json` (the headline span), `equity.png` (the book and its benchmark over
the headline span), with `backtest.sweep.grid` set `sweep.json` and `sweep.png`
(domain.backtest_sweep: the grid in one pass over the same span), and `daily.jsonl`, the day log written by an asynchronous batched writer
between numba chunks (never inside the loop).

The headline (`overall.json`) spans the days from the first one with a prediction (a finite
`p_h{H}` for some symbol) to the day after the last one (the book sells on it): a year without
a meta model has NaN predictions and sits in cash, so its days are left out and counted
(`in_cash_days`, `in_cash_reason`); days without a prediction inside the span stay in and are
counted too (`no_prediction_days_in_span`). `from`/`to` are the span's first and last days.

Every period is measured against a benchmark (`backtest.benchmark`, `benchmark_of`): the
equal-weight portfolio of the panel's symbols by default, or one symbol's buy-and-hold
(kernels.backtest.benchmark states the arithmetic), over the same days; the headline's benchmark
is bought at the close of the span's first day, as the book is. A report carries a `benchmark`
object (name, Sharpe, CAGR, ...) and the relative figures `excess_return` (CAGR - benchmark CAGR),
`information_ratio`, `tracking_error`, `beta`, with `verdict`, the words
("beat the benchmark (...) by 2.1%/yr", "lost to the benchmark (...) by 5.6%/yr").
"""

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from config.settings import BacktestSettings, SettingsError
from domain.async_writer import AsyncWriter
from domain.observe import write_bytes_atomic, write_json_atomic
from kernels.backtest.benchmark import benchmark_returns, relative_stats
from kernels.backtest.portfolio import PortfolioConfig, run_portfolio
from kernels.backtest.stats import backtest_stats, stats, trades_opened

# the stats table (kernels.backtest.stats states each formula) that the metadata and the results block carry
HEADLINE = ("cagr", "sharpe", "sortino", "calmar", "ann_vol", "max_drawdown", "max_drawdown_days", "annual_turnover",
            "exposure", "trades", "win_rate", "total_costs", "cost_share", "total_return", "n_days")
RELATIVE = ("excess_return", "information_ratio", "tracking_error", "beta")
BENCHMARK_STATS = ("sharpe", "cagr", "total_return", "max_drawdown", "ann_vol", "n_days")
SHOWN_SYMBOLS = 20  # symbols an error names before it says how many there are


def portfolio_config(bt: BacktestSettings) -> PortfolioConfig:
    """The kernel's PortfolioConfig of the `backtest.*` settings (strategy, its parameters, costs)."""
    return PortfolioConfig(threshold=bt.threshold, max_gross=bt.max_gross, max_weight=bt.max_weight,
                           long_short=bt.long_short, fee_bps=bt.fee_bps, slippage_bps=bt.slippage_bps,
                           strategy=bt.strategy, topk=bt.topk, n_drop=bt.n_drop, hold_thresh=bt.hold_thresh,
                           quantile=bt.quantile, open_cost=bt.open_cost, close_cost=bt.close_cost,
                           min_cost=bt.min_cost, account=bt.account, max_turnover=bt.max_turnover)


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
        "trades": trades_opened(res.weights).astype(np.int32),
        **exposure_columns(prices, res.weights, bought_only=bt.strategy == "topk_dropout"),
    })


def exposure_columns(prices: np.ndarray, weights: np.ndarray, bought_only: bool = False) -> dict[str, np.ndarray]:
    """Per day: `gross_exposure` (sum of |w| held, frozen symbols included) and
    `max_abs_weight` (the largest |w| among the symbols with a bar that day, the ones traded;
    a frozen symbol's weight drifts and is not capped; `bought_only`, topk_dropout's book, whose
    held symbols drift and are not re-targeted: among the symbols bought that day); what the
    weights_within_caps check reads."""
    T = weights.shape[0]
    if weights.size == 0:
        return {"gross_exposure": np.zeros(T, np.float32), "max_abs_weight": np.zeros(T, np.float32)}
    w = np.abs(weights.astype(np.float64))
    px = np.asarray(prices, dtype=np.float64)
    traded = np.isfinite(px) & (px > 0)
    if bought_only:
        before = np.vstack([np.zeros((1, w.shape[1])), w[:-1]])
        traded &= (before == 0) & (w != 0)
    return {"gross_exposure": w.sum(axis=1).astype(np.float32),
            "max_abs_weight": np.where(traded, w, 0.0).max(axis=1).astype(np.float32)}


def period_stats(daily: pl.DataFrame) -> dict:
    """The stats table of the daily rows of one period (kernels.backtest.stats.backtest_stats,
    where each formula is stated), with `from` and `to`, its first and last days (None without one)."""
    def col(name):
        return daily[name].cast(pl.Float64).to_numpy()
    span = {"from": str(daily["date"].min())[:10] if daily.height else None,
            "to": str(daily["date"].max())[:10] if daily.height else None}
    return {**span, **backtest_stats(col("net_return"), col("gross_return"), col("cost"), col("turnover"),
                                     col("gross_exposure"), col("trades"))}


@dataclass(frozen=True)
class Benchmark:
    """What a backtest is measured against: `name` in words, `symbol` (None: the equal-weight
    book of the panel), `symbols` it holds, `returns` [T] over the panel's days."""
    name: str
    symbol: str | None
    symbols: int
    returns: np.ndarray


def _named(symbols: list[str]) -> str:
    shown = ", ".join(symbols[:SHOWN_SYMBOLS])
    return shown if len(symbols) <= SHOWN_SYMBOLS else f"{shown}, ... ({len(symbols)} in all)"


def benchmark_of(symbols: list[str], prices: np.ndarray, bt: BacktestSettings, raw_bars: pl.LazyFrame) -> Benchmark:
    """The benchmark of `backtest.benchmark` over the panel (`symbols`, `prices` [T, N]):
    None -> the equal-weight portfolio of the N symbols; a symbol -> its buy-and-hold (its
    closes in the panel come from raw_bars). A symbol that raw_bars lacks, or has no bar in the
    panel's days, is a SettingsError of one line naming the setting, the symbol and the symbols there."""
    if bt.benchmark is None:
        return Benchmark(f"equal weight of {len(symbols)} symbols, rebalanced daily", None, len(symbols),
                         benchmark_returns(prices))
    sym = bt.benchmark
    if sym not in symbols:
        there = sorted(raw_bars.select(pl.col("symbol").cast(pl.String)).unique().collect()["symbol"].to_list())
        if sym in there and not symbols:  # no panel (no prediction stored): nothing to compare, no error
            return Benchmark(f"{sym} buy-and-hold", sym, 1, np.zeros(len(prices), np.float64))
        if sym in there:
            raise SettingsError(f"backtest.benchmark: {sym!r} has no bar in the backtest's days; "
                                f"the symbols with bars then: {_named(symbols) or 'none'}")
        raise SettingsError(f"backtest.benchmark: {sym!r} is not a symbol of raw_bars; "
                            f"the symbols there: {_named(there) or 'none'}")
    col = symbols.index(sym)
    return Benchmark(f"{sym} buy-and-hold", sym, 1, benchmark_returns(prices[:, col:col + 1]))


def headline_span(probs: np.ndarray) -> tuple[int, int]:
    """Rows [a, b) of the headline: a = the first day with a prediction (a finite p for some
    symbol), b - 1 = the day after the last one (the book sells on it; b = last + 2, at most T).
    (0, 0) when no day has a prediction."""
    has = np.isfinite(probs).any(axis=1) if probs.size else np.zeros(probs.shape[0], bool)
    days = np.flatnonzero(has)
    if days.size == 0:
        return 0, 0
    return int(days[0]), min(int(days[-1]) + 2, probs.shape[0])


def in_cash_reason(dates, a: int, b: int) -> str | None:
    """Why the days outside the headline rows [a, b) of `dates` were left out; None when none was."""
    T = len(dates)
    if a == b:
        return f"no prediction (no meta model) on any of the {T} days" if T else None
    why = []
    if a > 0:
        why.append(f"before {str(dates[a])[:10]}")
    if b < T:
        why.append(f"after {str(dates[b - 2])[:10]}")
    return f"no prediction (no meta model) {' or '.join(why)}" if why else None


def verdict(excess_return: float | None, name: str) -> str:
    """The words of the comparison, `excess_return` (a CAGR difference) rounded to 0.1%/yr:
    "beat the benchmark (<name>) by 2.1%/yr", "lost to the benchmark (<name>) by 5.6%/yr",
    "matched the benchmark (<name>) within 0.05%/yr", or no verdict when there is no figure."""
    if excess_return is None:
        return f"no verdict against the benchmark ({name}): no day to compare"
    by = f"{abs(excess_return):.1%}"
    if by == "0.0%":
        return f"matched the benchmark ({name}) within 0.05%/yr"
    return f"{'beat' if excess_return > 0 else 'lost to'} the benchmark ({name}) by {by}/yr"


def relative_report(net: np.ndarray, bench: np.ndarray, benchmark: Benchmark) -> dict:
    """The benchmark block and the relative figures of the book's daily returns `net` against
    the benchmark's `bench` over the same days (kernels.backtest.benchmark.relative_stats)."""
    b = stats(bench)
    rel = relative_stats(net, bench)
    return {"benchmark": {"name": benchmark.name, "symbol": benchmark.symbol, "symbols": benchmark.symbols,
                          **{k: b[k] for k in BENCHMARK_STATS}},
            **rel, "verdict": verdict(rel["excess_return"], benchmark.name)}


def headline_figures(report: dict) -> dict:
    """The figures of a period report (overall.json or year_<Y>.json) that the asset's metadata
    carries: HEADLINE, `benchmark_sharpe`, `benchmark_cagr` and RELATIVE (None where missing)."""
    b = report.get("benchmark") or {}
    return {**{k: report.get(k) for k in HEADLINE}, "benchmark_sharpe": b.get("sharpe"),
            "benchmark_cagr": b.get("cagr"), **{k: report.get(k) for k in RELATIVE}}


@dataclass
class BacktestReport:
    table: pl.DataFrame  # the daily rows of the requested years
    overall: dict  # the statistics of the headline span (overall.json)
    per_year: dict[int, dict]  # the statistics of each requested year (year_<Y>.json)
    equity_png: Path | None  # None when there was nothing to trade
    sweep: dict | None = None  # sweep.json of `backtest.sweep` (domain.backtest_sweep); None without a grid

    def headline(self) -> dict:
        return headline_figures(self.overall)


def build_backtest(predictions: pl.LazyFrame, raw_bars: pl.LazyFrame, years: list[int], bt: BacktestSettings,
                   out_dir: Path, log=None) -> BacktestReport:
    """The book over the whole stored span (the weights carry from one year into the next);
    writes `year_<Y>.json` per requested year (all its days, against the benchmark held over
    the whole panel), `overall.json` (the headline span, against the benchmark bought on its
    first day), `equity.png` and the day log `daily.jsonl` under `out_dir`. `log.warning` is
    told when there is nothing to trade."""
    from domain.learning.plots import equity_png_bytes  # scipy, sklearn: loaded when a backtest runs

    dates, symbols, prices, probs = backtest_panel(predictions, raw_bars, bt.horizon)
    benchmark = benchmark_of(symbols, prices, bt, raw_bars)  # before the book: a wrong symbol fails at once
    daily = run_backtest(dates, symbols, prices, probs, bt, log_path=out_dir / "daily.jsonl")
    a, b = headline_span(probs)
    net = daily["net_return"].cast(pl.Float64).to_numpy()
    in_span = np.zeros(len(dates), bool)
    in_span[a:b] = True
    day_years = daily["date"].dt.year().to_numpy()
    per_year = {}
    for y in years:
        mask = day_years == y
        per_year[y] = {"year": y, "horizon": bt.horizon, "symbols": len(symbols),
                       "in_cash_days": int(np.count_nonzero(mask & ~in_span)), **period_stats(daily.filter(pl.Series(mask))),
                       **relative_report(net[mask], benchmark.returns[mask], benchmark)}
        write_json_atomic(out_dir / f"year_{y}.json", per_year[y])
    bench = benchmark.returns[a:b].copy()
    if bench.size:
        bench[0] = 0.0  # bought at the close of the span's first day, as the book is
    predicted = np.isfinite(probs).any(axis=1) if probs.size else np.zeros(len(dates), bool)
    overall = {"from": str(dates[a])[:10] if b > a else None, "to": str(dates[b - 1])[:10] if b > a else None,
               "horizon": bt.horizon, "symbols": len(symbols),
               "in_cash_days": int(len(dates) - (b - a)), "in_cash_reason": in_cash_reason(dates, a, b),
               "no_prediction_days_in_span": int(np.count_nonzero(~predicted[a:b])),
               "settings": bt.model_dump(), **period_stats(daily.slice(a, b - a)),
               **relative_report(net[a:b], bench, benchmark)}
    write_json_atomic(out_dir / "overall.json", overall)
    png = None
    if b > a:
        png = write_bytes_atomic(out_dir / "equity.png", equity_png_bytes(
            dates[a:b], np.cumprod(1.0 + net[a:b]), f"meta h{bt.horizon} portfolio, out of sample",
            benchmark=np.cumprod(1.0 + bench), benchmark_label=benchmark.name))
    elif log is not None:
        log.warning("backtest: no stored predictions to trade: run the yearly stages (meta_model, predictions) first"
                    if not daily.height else
                    f"backtest: the stored predictions hold no p_h{bt.horizon} on any day (no meta model): nothing to trade")
    sweep = None
    if bt.sweep.grid:
        from domain.backtest_sweep import run_sweep_report

        sweep = run_sweep_report(dates, symbols, prices, probs, (a, b), bt, out_dir, portfolio_config)
    table = daily.filter(pl.col("date").dt.year().is_in(years))
    return BacktestReport(table, overall, per_year, png, sweep)
