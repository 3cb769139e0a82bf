"""The statistics table of a backtest, like vectorbt's `pf.stats()` and Qlib's `risk_analysis`
(arrays in, Python scalars or None out, JSON-ready; plain NumPy): the one place the arithmetic
of these figures lives. `kernels.backtest.portfolio.stats`, `kernels.backtest.benchmark` (the
benchmark's own figures and excess return) and `domain.learning.metrics.sharpe_ratio` (the
evaluation's long-short Sharpe) all call it.

Conventions. P = periods_per_year = 252 trading days a year; r_1..r_n the daily net returns of
the period (n = `n_days`, the days of the period: a day is a row, a session); the equity
e_0 = 1 (the capital before day 1), e_t = prod_{s <= t} (1 + r_s); the risk-free rate is 0.

`stats(r, turnover)`:
    n_days              n
    total_return        e_n - 1
    cagr                e_n ** (P / n) - 1; -1.0 once the equity hits 0; None when n == 0
    ann_vol             std(r, ddof=1) * sqrt(P); None when n < 2
    sharpe              mean(r) / std(r, ddof=1) * sqrt(P) (`sharpe`); None when n < 2 or r constant
    sortino             mean(r) / DD * sqrt(P), DD = sqrt(mean over ALL n days of min(r_t, 0)^2)
                        (downside deviation with a 0 target; the days above it count as 0);
                        None when n < 2 or no day lost (DD == 0)
    max_drawdown        min over t of e_t / max(e_0..e_t) - 1 (<= 0; the peak includes e_0 = 1)
    calmar              cagr / |max_drawdown|; None when max_drawdown == 0 or cagr is None
    max_drawdown_days   the duration of the deepest drawdown, in days (rows): from its peak day
                        (day 0 = the starting capital) to the first day back at or above that
                        peak, or to the last day (n) when it never recovered; 0 without a drawdown
    longest_drawdown_days  the same duration of the longest drawdown (vectorbt's "Max Drawdown
                        Duration")
    drawdown_recovered  whether the deepest drawdown recovered by the last day (None without one)
    win_rate            #(r_t > 0) / #(r_t != 0), over DAYS, flat days (r == 0: nothing held,
                        nothing moved) left out; None when every day is flat. Days, not closed
                        trades, because this book re-targets every weight at every close and pays
                        its costs on the whole book's turnover: a round trip of one name has no
                        single size or cost of its own, while the day is the unit its PnL is
                        realised and accounted on.
    avg_daily_turnover  mean(turnover); annual_turnover = avg_daily_turnover * P (None without it)

`backtest_stats(net, gross, cost, turnover, gross_exposure, trades)`: `stats(net, turnover)` and
    exposure            mean over the days of gross_exposure (sum |w| held; average gross)
    trades              sum of `trades` (positions opened, `trades_opened`)
    total_costs         sum_t cost_t * max(1 + gross_t, 0): the return given up to costs each day
                        (= gross_t - net_t, the book's cost_t being a fraction of the post-move NAV),
                        summed over the days, in fractions of the day's starting NAV, not compounded
    gross_profit        sum_t gross_t (the returns before costs, summed the same way)
    cost_share          total_costs / gross_profit; None when gross_profit <= 0 (no profit to share)

`trades_opened(weights)` [T, N] -> int64 [T]: the positions opened each day, a (day, symbol) with
w_t != 0 and w_{t-1} == 0 or of the other sign (w_{-1} = 0): a sign flip closes one and opens one.

The benchmark figures (excess return, information ratio, tracking error, beta) are
`kernels.backtest.benchmark.relative_stats`, built on the CAGR here.
Non-finite returns are refused.
"""

from __future__ import annotations

import math

import numpy as np

PERIODS_PER_YEAR = 252


def _returns(daily_returns, name: str = "daily_returns") -> np.ndarray:
    r = np.asarray(daily_returns, dtype=np.float64)
    if r.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {r.shape}")
    if not np.isfinite(r).all():
        raise ValueError(f"{name} has non-finite values")
    return r


def sharpe(r: np.ndarray, periods_per_year: float = PERIODS_PER_YEAR) -> float | None:
    """mean(r) / std(r, ddof=1) * sqrt(periods_per_year) of finite 1-D returns; None with fewer
    than 2 of them or constant ones (a constant series' float std is noise, not 0)."""
    r = np.asarray(r, dtype=np.float64)
    if r.shape[0] < 2 or np.ptp(r) == 0.0:
        return None
    sd = float(np.std(r, ddof=1))
    return None if sd == 0.0 else float(np.mean(r) / sd * math.sqrt(periods_per_year))


def _drawdowns(equity: np.ndarray) -> tuple[float, int, int, bool | None]:
    """(max_drawdown, max_drawdown_days, longest_drawdown_days, drawdown_recovered) of e_1..e_n
    with e_0 = 1 (module docstring)."""
    n = equity.shape[0]
    if n == 0:
        return 0.0, 0, 0, None
    e = np.concatenate(([1.0], equity))
    peak = np.maximum.accumulate(e)
    dd = e / peak - 1.0
    under = dd < 0.0
    if not under.any():
        return 0.0, 0, 0, None
    deepest = int(np.argmin(dd))
    edges = np.diff(np.concatenate(([0], under.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # under on [s, f)
    durations = np.where(ends <= n, ends, n) - (starts - 1)  # peak at s - 1; back at f, or the end
    k = int(np.searchsorted(starts, deepest, side="right") - 1)
    return float(dd[deepest]), int(durations[k]), int(durations.max()), bool(ends[k] <= n)


def stats(daily_returns, turnover=None, periods_per_year: int = PERIODS_PER_YEAR) -> dict:
    """The return figures of daily net returns r_1..r_n (module docstring)."""
    r = _returns(daily_returns)
    n = int(r.shape[0])
    P = periods_per_year
    out: dict = {"n_days": n}
    equity = np.cumprod(1.0 + r)
    end = float(equity[-1]) if n else 1.0
    out["total_return"] = end - 1.0
    out["cagr"] = None if n == 0 else (-1.0 if end <= 0.0 else float(end ** (P / n) - 1.0))
    out["ann_vol"] = float(np.std(r, ddof=1)) * math.sqrt(P) if n >= 2 else None
    out["sharpe"] = sharpe(r, P)
    down = math.sqrt(float(np.mean(np.minimum(r, 0.0) ** 2))) if n else 0.0
    out["sortino"] = float(np.mean(r) / down * math.sqrt(P)) if n >= 2 and down > 0.0 else None
    mdd, mdd_days, longest, recovered = _drawdowns(equity)
    out["max_drawdown"] = mdd
    out["calmar"] = float(out["cagr"] / abs(mdd)) if mdd < 0.0 and out["cagr"] is not None else None
    out["max_drawdown_days"] = mdd_days
    out["longest_drawdown_days"] = longest
    out["drawdown_recovered"] = recovered
    active = int(np.count_nonzero(r))
    out["win_rate"] = float(np.count_nonzero(r > 0.0) / active) if active else None
    out["hit_rate"] = out["win_rate"]  # its old name in reports (kernels.deprecations.RENAMED), kept for their readers
    if turnover is None:
        out["avg_daily_turnover"] = None
        out["annual_turnover"] = None
    else:
        tv = np.asarray(turnover, dtype=np.float64)
        if tv.shape != r.shape:
            raise ValueError(f"turnover must have shape {r.shape}, got {tv.shape}")
        avg = float(np.mean(tv)) if n else None
        out["avg_daily_turnover"] = avg
        out["annual_turnover"] = None if avg is None else avg * P
    return out


def trades_opened(weights) -> np.ndarray:
    """int64 [T]: the positions opened each day of the weights [T, N] held from each close
    (module docstring)."""
    w = np.asarray(weights)
    if w.ndim != 2:
        raise ValueError(f"weights must be [T, N], got shape {w.shape}")
    if w.shape[0] == 0:
        return np.zeros(0, np.int64)
    s = np.sign(w)
    prev = np.vstack([np.zeros((1, w.shape[1]), s.dtype), s[:-1]])
    return np.count_nonzero((s != 0) & (s != prev), axis=1).astype(np.int64)


def backtest_stats(net, gross, cost, turnover, gross_exposure, trades, periods_per_year: int = PERIODS_PER_YEAR) -> dict:
    """The stats table of one period of the book's daily series, all [n] (module docstring)."""
    r = _returns(net, "net")
    n = r.shape[0]
    cols = {}
    for name, x in (("gross", gross), ("cost", cost), ("gross_exposure", gross_exposure), ("trades", trades)):
        cols[name] = np.asarray(x, dtype=np.float64)
        if cols[name].shape != r.shape:
            raise ValueError(f"{name} must have shape {r.shape}, got {cols[name].shape}")
    out = stats(r, turnover, periods_per_year)
    g = cols["gross"]
    out["exposure"] = float(np.mean(cols["gross_exposure"])) if n else None
    out["trades"] = int(np.sum(cols["trades"]))
    total_costs = float(np.sum(cols["cost"] * np.maximum(1.0 + g, 0.0)))
    gross_profit = float(np.sum(g))
    out["total_costs"] = total_costs
    out["gross_profit"] = gross_profit
    out["cost_share"] = total_costs / gross_profit if gross_profit > 0.0 else None
    return out
