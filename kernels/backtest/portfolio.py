"""Daily portfolio backtest: probabilities -> target weights -> costs -> PnL (arrays in, arrays out).

Inputs
    prices  [T, N] float32 (or float64) closes; NaN (or <= 0) where the symbol has no bar that day.
    probs   [T, N] meta probabilities p in [0, 1]; NaN = no prediction for that symbol and day.

Timing (no look-ahead)
    The signal of day t sets the weights w_t traded at the close of t and held until the close of
    t+1: w_t earns day t+1's return r_{t+1,i} = close_{t+1,i} / close_{t,i} - 1.

Weight rule (`PortfolioConfig`), for the symbols that have a bar on day t ("tradable")
    long-only (default)  s_i = max(p_i - threshold, 0)          (threshold default 0.5)
    long_short=True      s_i = 2 * (p_i - 0.5)  in [-1, 1]      (the seed's map; threshold unused)
    NaN p -> s_i = 0 (the symbol is sold / not bought).
    target_i = clip(s_i * budget / sum_j |s_j|, -max_weight, +max_weight), 0 when sum_j |s_j| = 0.
    So weights are proportional to conviction, the book is sized to `budget` before the per-name
    cap, and the capped excess stays in cash (no redistribution): gross = sum |w_i| <= max_gross,
    |w_i| <= max_weight.
    budget = max(max_gross - sum of |frozen weights|, 0), where a symbol WITHOUT a bar on day t
    cannot be traded: its weight is kept at its drifted value ("frozen"), it earns 0 while it has
    no bar, and when its bar comes back it earns the move since its last close (the move over the
    gap is not lost). A symbol never gets a weight on a day it has no price.

Drift, turnover, costs (exact daily accounting; rebalance to the targets every close)
    gross_t    = sum_i w_{t-1,i} * r_{t,i}                          (0 on day 0: nothing held)
    drifted    = w_{t-1,i} * (1 + r_{t,i}) / (1 + gross_t)           (the book after the move)
    turnover_t = sum_i |w_t,i - drifted_i|                          (day 0: sum_i |w_0,i|)
    cost_t     = turnover_t * (fee_bps + slippage_bps) / 1e4        (fraction of the NAV traded on)
    net_t      = (1 + gross_t) * (1 - cost_t) - 1
    equity_t   = prod_{s <= t} (1 + net_s)                          (capital 1.0 before day 0)
    Turnover is measured on the post-move NAV and the cost is charged on it; the cost's own
    second-order effect on the traded amounts is ignored. A day with 1 + gross_t <= 0 wipes the
    book out: net_t = -1, the equity stays 0 and the drifted weights are 0.

Outputs (`PortfolioResult`): net, gross, turnover, cost, equity float64 [T]; weights float32 [T, N]
(w_t, the weights held from the close of t). Accumulators and the carried state are float64.
The loop is compiled with fastmath reassoc/nsz/arcp/contract but NOT nnan/ninf (NaN tests stay
exact): per-day sums are vectorised, so results match the NumPy reference to ~1e-15 (not bit
for bit) and are reproducible on one machine.

Chunks: `run_portfolio` runs the numba loop over days [a, b) with the carried state (held weights,
last valid close, equity) and calls `on_chunk(a, b, arrays)` between chunks: the caller can log
without a DataFrame in the loop. The state never leaves float64, so results do not depend on
`chunk_days`.

`stats(daily_returns, turnover)` (re-exported from kernels.backtest.stats, where every figure's
formula is stated): CAGR, annualised Sharpe, Sortino, Calmar, max drawdown, turnover, win rate.
The plain NumPy reference of the loop is `kernels.backtest.reference.run_portfolio_reference`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

from kernels.backtest.stats import PERIODS_PER_YEAR, stats  # noqa: F401 (re-exported: the figures live there)


@dataclass(frozen=True)
class PortfolioConfig:
    """The weight rule and the cost model (see the module docstring)."""

    threshold: float = 0.5  # long-only: only p > threshold gets a weight
    max_gross: float = 1.0  # sum |w_i| <= max_gross (1.0: no leverage)
    max_weight: float = 0.10  # |w_i| <= max_weight per symbol
    long_short: bool = False  # True: s = 2 * (p - 0.5) (the seed's map)
    fee_bps: float = 1.0  # per unit of turnover, in basis points
    slippage_bps: float = 1.0

    def __post_init__(self):
        if not 0.0 <= self.threshold < 1.0:
            raise ValueError(f"threshold must lie in [0, 1), got {self.threshold}")
        if not self.max_gross > 0.0 or not math.isfinite(self.max_gross):
            raise ValueError(f"max_gross must be a positive number, got {self.max_gross}")
        if not self.max_weight > 0.0 or not math.isfinite(self.max_weight):
            raise ValueError(f"max_weight must be a positive number, got {self.max_weight}")
        if not (self.fee_bps >= 0.0 and self.slippage_bps >= 0.0):
            raise ValueError(f"fee_bps and slippage_bps must be >= 0, got {self.fee_bps}, {self.slippage_bps}")

    @property
    def cost_rate(self) -> float:
        """Cost per unit of turnover: (fee_bps + slippage_bps) / 1e4."""
        return (self.fee_bps + self.slippage_bps) / 1e4


@dataclass
class PortfolioResult:
    net: np.ndarray  # float64 [T]
    gross: np.ndarray  # float64 [T]
    turnover: np.ndarray  # float64 [T]
    cost: np.ndarray  # float64 [T]
    equity: np.ndarray  # float64 [T]
    weights: np.ndarray  # float32 [T, N], held from the close of t to the close of t+1

    def stats(self, periods_per_year: int = PERIODS_PER_YEAR) -> dict:
        return stats(self.net, self.turnover, periods_per_year)


# ---------------------------------------------------------------- numba core


# fastmath without nnan/ninf: the NaN and inf tests below stay exact; sums may be reassociated
# (vectorised), so the kernel matches the NumPy reference to ~1e-15, not bit for bit. Each day
# runs the same code whatever the chunk, so results never depend on chunk_days.
FASTMATH = {"reassoc", "nsz", "arcp", "contract"}


@njit(cache=True, nogil=True, error_model="numpy", fastmath=FASTMATH)
def portfolio_days(prices, probs, a, b, threshold, max_gross, max_weight, long_short, cost_rate,
                   w, last, equity, net, gross, turnover, cost, equity_out, weights):
    """Days [a, b) of the loop. State, updated in place: w float64 [N] (weights held from the
    close of a-1), last float64 [N] (last valid close, NaN before the first), equity float64 [1].
    Outputs are written at rows a..b-1. Branch-free inner loops (selects), so LLVM vectorises."""
    n = prices.shape[1]
    drifted = np.empty(n, dtype=np.float64)
    target = np.empty(n, dtype=np.float64)
    tradable = np.empty(n, dtype=np.bool_)
    for t in range(a, b):
        # 1) the move from the previous close: held weights earn it
        g = 0.0
        for i in range(n):
            px = np.float64(prices[t, i])
            ok = px > 0.0 and px < np.inf  # False for NaN
            li = last[i]
            r = px / li - 1.0
            r = r if ok and li < np.inf else 0.0  # no bar today or none before: earns 0
            tradable[i] = ok
            last[i] = px if ok else li
            drifted[i] = w[i] * (1.0 + r)
            g += w[i] * r
        growth = 1.0 + g
        wiped = growth <= 0.0
        inv = 0.0 if wiped else 1.0 / growth
        # 2) drift; day t's signals for the symbols with a bar today; frozen weights
        frozen = 0.0
        s_sum = 0.0
        for i in range(n):
            d = drifted[i] * inv
            drifted[i] = d
            ok = tradable[i]
            p = np.float64(probs[t, i])
            if long_short:
                s = 2.0 * (p - 0.5)
            else:
                s = p - threshold
                s = s if s > 0.0 else 0.0
            s = s if ok and not math.isnan(p) else 0.0  # NaN p: no position
            target[i] = s
            s_sum += abs(s)
            frozen += 0.0 if ok else abs(d)
        budget = max_gross - frozen
        budget = budget if budget > 0.0 else 0.0
        scale = budget / s_sum if s_sum > 0.0 else 0.0
        # 3) targets, turnover against the drifted book
        tv = 0.0
        for i in range(n):
            x = target[i] * scale
            x = x if x < max_weight else max_weight
            x = x if x > -max_weight else -max_weight
            d = drifted[i]
            x = x if tradable[i] else d
            tv += abs(x - d)
            w[i] = x
            weights[t, i] = x
        # 4) costs and the day's result
        c = tv * cost_rate
        nt = -1.0 if wiped else g - c * growth  # == (1 + g) * (1 - c) - 1, exact when c == 0
        equity[0] = equity[0] * (1.0 + nt)
        net[t] = nt
        gross[t] = g
        turnover[t] = tv
        cost[t] = c
        equity_out[t] = equity[0]


# ---------------------------------------------------------------- Python API


def _panel(x, name: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{name} must be [T, N], got shape {x.shape}")
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    return np.ascontiguousarray(x)


def validate_inputs(prices, probs) -> tuple[np.ndarray, np.ndarray]:
    """C-contiguous float32/float64 [T, N] panels of equal shape; p within [0, 1] or NaN."""
    prices = _panel(prices, "prices")
    probs = _panel(probs, "probs")
    if prices.shape != probs.shape:
        raise ValueError(f"prices {prices.shape} and probs {probs.shape} must have the same shape")
    if np.isinf(probs).any():
        raise ValueError("probs has infinite values (NaN means no prediction)")
    if probs.size and not np.isnan(probs).all():
        lo, hi = float(np.nanmin(probs)), float(np.nanmax(probs))
        if lo < 0.0 or hi > 1.0:
            raise ValueError(f"probs must lie in [0, 1] (or be NaN), got [{lo}, {hi}]")
    return prices, probs


def run_portfolio(prices, probs, config: PortfolioConfig | None = None, *, chunk_days: int = 256,
                  on_chunk: Callable[[int, int, dict], None] | None = None) -> PortfolioResult:
    """Backtest the daily book (module docstring). `on_chunk(a, b, arrays)` is called after each
    chunk of days [a, b); `arrays` holds views net, gross, turnover, cost, equity [b - a] and
    weights [b - a, N] of the rows just computed (copy them to keep them past the call)."""
    cfg = PortfolioConfig() if config is None else config
    if chunk_days < 1:
        raise ValueError(f"chunk_days must be >= 1, got {chunk_days}")
    prices, probs = validate_inputs(prices, probs)
    T, N = prices.shape
    net, gross, turnover, cost, equity_out = (np.zeros(T, dtype=np.float64) for _ in range(5))
    weights = np.zeros((T, N), dtype=np.float32)
    w = np.zeros(N, dtype=np.float64)
    last = np.full(N, np.nan, dtype=np.float64)
    equity = np.ones(1, dtype=np.float64)
    for a in range(0, T, chunk_days):
        b = min(a + chunk_days, T)
        portfolio_days(prices, probs, a, b, float(cfg.threshold), float(cfg.max_gross), float(cfg.max_weight),
                       bool(cfg.long_short), float(cfg.cost_rate), w, last, equity,
                       net, gross, turnover, cost, equity_out, weights)
        if on_chunk is not None:
            on_chunk(a, b, {"net": net[a:b], "gross": gross[a:b], "turnover": turnover[a:b], "cost": cost[a:b],
                            "equity": equity_out[a:b], "weights": weights[a:b]})
    return PortfolioResult(net, gross, turnover, cost, equity_out, weights)
