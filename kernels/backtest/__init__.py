"""Backtest kernels: daily signals and closes in, weights, costs and PnL out (no DataFrame,
no Dagster, no file I/O).

- `portfolio`: the numba daily loop (`run_portfolio`, chunked with a carried state),
  `PortfolioConfig` (weight rule, costs), `stats` (CAGR, Sharpe, drawdown, turnover).
- `reference`: the plain NumPy version of the same loop, for parity tests.
- `benchmark`: the equal-weight book (rebalanced daily)'s daily returns (`benchmark_returns`) and the
  figures of a book against it (`relative_stats`: excess return, tracking error, information
  ratio, beta).
"""

from kernels.backtest.benchmark import benchmark_returns, relative_stats
from kernels.backtest.portfolio import PortfolioConfig, PortfolioResult, run_portfolio, stats

__all__ = ["PortfolioConfig", "PortfolioResult", "benchmark_returns", "relative_stats", "run_portfolio", "stats"]
