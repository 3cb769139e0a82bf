"""Plain NumPy reference of `kernels.backtest.portfolio.run_portfolio` (no numba).

The same rules as the numba loop (see kernels/backtest/portfolio.py), written day by day with
whole-row NumPy operations: the parity tests hold the two to float64 rounding.
"""

from __future__ import annotations

import numpy as np

from kernels.backtest.portfolio import PortfolioConfig, PortfolioResult, validate_inputs


def run_portfolio_reference(prices, probs, config: PortfolioConfig | None = None) -> PortfolioResult:
    cfg = PortfolioConfig() if config is None else config
    prices, probs = validate_inputs(prices, probs)
    T, N = prices.shape
    px_all = prices.astype(np.float64)
    p_all = probs.astype(np.float64)
    out = {k: np.zeros(T) for k in ("net", "gross", "turnover", "cost", "equity")}
    weights = np.zeros((T, N), dtype=np.float32)
    w = np.zeros(N)
    last = np.full(N, np.nan)
    equity = 1.0
    for t in range(T):
        px = px_all[t]
        with np.errstate(invalid="ignore"):
            tradable = np.isfinite(px) & (px > 0.0)
        r = np.zeros(N)
        has_last = tradable & np.isfinite(last)
        r[has_last] = px[has_last] / last[has_last] - 1.0
        last = np.where(tradable, px, last)
        g = float(np.sum(w * r))
        growth = 1.0 + g
        wiped = growth <= 0.0
        drifted = np.zeros(N) if wiped else w * (1.0 + r) / growth
        budget = max(cfg.max_gross - float(np.sum(np.abs(drifted[~tradable]))), 0.0)
        p = p_all[t]
        has_p = tradable & np.isfinite(p)
        s = np.zeros(N)
        if cfg.long_short:
            s[has_p] = 2.0 * (p[has_p] - 0.5)
        else:
            s[has_p] = np.maximum(p[has_p] - cfg.threshold, 0.0)
        s_sum = float(np.sum(np.abs(s)))
        scale = budget / s_sum if s_sum > 0.0 else 0.0
        target = np.where(tradable, np.clip(s * scale, -cfg.max_weight, cfg.max_weight), drifted)
        tv = float(np.sum(np.abs(target - drifted)))
        c = tv * cfg.cost_rate
        nt = -1.0 if wiped else g - c * growth
        equity *= 1.0 + nt
        out["net"][t], out["gross"][t], out["turnover"][t], out["cost"][t], out["equity"][t] = nt, g, tv, c, equity
        weights[t] = target
        w = target
    return PortfolioResult(out["net"], out["gross"], out["turnover"], out["cost"], out["equity"], weights)
