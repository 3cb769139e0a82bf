"""Backtest kernels: daily signals and closes in, weights, costs and PnL out (no DataFrame,
no Dagster, no file I/O).

- `portfolio`: the numba daily loop (`run_portfolio`, chunked with a carried state),
  `PortfolioConfig` (weight rule, costs), `stats` (CAGR, Sharpe, drawdown, turnover).
- `reference`: the plain NumPy version of the same loop, for parity tests.
"""

from kernels.backtest.portfolio import PortfolioConfig, PortfolioResult, run_portfolio, stats

__all__ = ["PortfolioConfig", "PortfolioResult", "run_portfolio", "stats"]
