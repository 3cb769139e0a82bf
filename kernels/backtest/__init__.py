"""Backtest kernels: daily signals and closes in, weights, costs and PnL out (no DataFrame,
no Dagster, no file I/O).

- `portfolio`: the numba daily loop (`run_portfolio`, chunked with a carried state),
  `PortfolioConfig` (weight rule, costs).
- `stats`: the stats table, every figure's formula in one place (`stats`: CAGR, Sharpe, Sortino,
  Calmar, drawdown and its duration, win rate, turnover; `backtest_stats`: with exposure, trades,
  costs; `trades_opened`; `sharpe`).
- `reference`: the plain NumPy version of the same loop, for parity tests.
- `benchmark`: the equal-weight book (rebalanced daily)'s daily returns (`benchmark_returns`) and the
  figures of a book against it (`relative_stats`: excess return, tracking error, information
  ratio, beta).
"""

from kernels.backtest.benchmark import benchmark_returns, relative_stats
from kernels.backtest.portfolio import PortfolioConfig, PortfolioResult, run_portfolio
from kernels.backtest.stats import backtest_stats, stats, trades_opened

__all__ = ["PortfolioConfig", "PortfolioResult", "backtest_stats", "benchmark_returns", "relative_stats", "run_portfolio",
           "stats", "trades_opened"]
