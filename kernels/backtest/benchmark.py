"""The benchmark of a backtest and the figures relative to it (arrays in; plain NumPy).

`benchmark_returns(prices)`: the daily returns of the equal-weight book of the columns of
`prices` [T, K], rebalanced to 1/n at every close, without costs (K = 1: one symbol's
buy-and-hold). `relative_stats(strategy, benchmark)`: excess return, tracking error,
information ratio and beta of two daily return series over the same days.
"""

from __future__ import annotations

import math

import numpy as np

from kernels.backtest.stats import PERIODS_PER_YEAR, stats


def benchmark_returns(prices) -> np.ndarray:
    """Daily returns b [T] float64 of the equal-weight book of the K columns of `prices` [T, K]:

        b_t = mean over i in V_t of (close_{t,i} / last_{t,i} - 1)
        last_{t,i}  the latest valid close (finite and > 0) of column i before day t
        V_t         the columns with a valid close on day t and an earlier one
        b_t = 0     when V_t is empty (day 0 always: the book is bought at the first close)

    The book is rebalanced to equal weights over V_t at every close and pays no cost. A column
    without a bar on day t sits out that day's mean; when its bar comes back, the move since its
    last close lands on that day (as in the portfolio's own book, kernels.backtest.portfolio).
    With K = 1 the returns compound to close_last / close_first - 1 (buy-and-hold)."""
    px = np.asarray(prices)
    if px.ndim != 2:
        raise ValueError(f"prices must be [T, K], got shape {px.shape}")
    T, K = px.shape
    out = np.zeros(T, dtype=np.float64)
    last = np.full(K, np.nan, dtype=np.float64)  # O(K) state, a day at a time: no [T, K] temporaries
    for t in range(T):
        row = px[t].astype(np.float64)
        valid = np.isfinite(row) & (row > 0.0)
        ok = valid & np.isfinite(last)
        n = int(np.count_nonzero(ok))
        if n:
            out[t] = float(np.sum(row[ok] / last[ok] - 1.0)) / n
        last[valid] = row[valid]
    return out


def relative_stats(strategy, benchmark, periods_per_year: int = PERIODS_PER_YEAR) -> dict:
    """Figures of the daily returns s_1..s_n of a strategy against its benchmark b_1..b_n
    (the same days; Python scalars or None, JSON-ready; P = periods_per_year, d = s - b):

    excess_return      CAGR(s) - CAGR(b) (stats' CAGR); None when n == 0
    tracking_error     std(d, ddof=1) * sqrt(P); None when n < 2
    information_ratio  mean(d) * P / tracking_error; None when n < 2 or d is constant
    beta               cov(s, b, ddof=1) / var(b, ddof=1); None when n < 2 or b is constant
    """
    s = np.asarray(strategy, dtype=np.float64)
    b = np.asarray(benchmark, dtype=np.float64)
    if s.ndim != 1 or s.shape != b.shape:
        raise ValueError(f"strategy {s.shape} and benchmark {b.shape} must be 1-D of the same length")
    n = s.shape[0]
    cs, cb = stats(s, periods_per_year=periods_per_year)["cagr"], stats(b, periods_per_year=periods_per_year)["cagr"]
    out: dict = {"excess_return": None if cs is None or cb is None else float(cs - cb),
                 "information_ratio": None, "tracking_error": None, "beta": None}
    if n < 2:
        return out
    d = s - b
    te = float(np.std(d, ddof=1)) * math.sqrt(periods_per_year)
    out["tracking_error"] = te
    if np.ptp(d) > 0.0 and te > 0.0:
        out["information_ratio"] = float(np.mean(d) * periods_per_year / te)
    if np.ptp(b) > 0.0:
        var_b = float(np.var(b, ddof=1))
        if var_b > 0.0:
            out["beta"] = float(np.cov(s, b, ddof=1)[0, 1] / var_b)
    return out
