"""Plain NumPy reference of `kernels.backtest.portfolio.run_portfolio` (no numba).

The same rules as the numba loops (see kernels/backtest/portfolio.py), written day by day with
whole-row NumPy operations and, for topk_dropout and long_short, Python lists sorted by
(-p, column): the parity tests hold the two to float64 rounding.
"""

from __future__ import annotations

import math

import numpy as np

from kernels.backtest.portfolio import QUANTILE_EPS, PortfolioConfig, PortfolioResult, validate_inputs


def _ranked(p: np.ndarray, ok: np.ndarray) -> list[int]:
    """The tradable columns with a p, best first (higher p; equal p: lower column)."""
    return sorted((i for i in range(len(p)) if ok[i] and math.isfinite(p[i])), key=lambda i: (-p[i], i))


def _topk_dropout(p, tradable, drifted, held_days, cfg: PortfolioConfig) -> np.ndarray:
    ranked = _ranked(p, tradable)
    place = {i: j for j, i in enumerate(ranked)}
    held = [i for i in range(len(p)) if drifted[i] != 0.0]
    target = drifted.copy()
    candidates = [i for i in ranked if drifted[i] == 0.0]
    buy = candidates[:max(cfg.topk - len(held), 0)]
    rest = candidates[len(buy):]
    # held symbols, worst first: those without a p today below every scored one
    worst_first = sorted(held, key=lambda i: (0, -i) if i not in place else (1, -place[i]))
    sellable = [i for i in worst_first if tradable[i] and held_days[i] >= cfg.hold_thresh]
    for s, c in zip(sellable[:cfg.n_drop], rest):
        if s in place and place[c] > place[s]:
            break
        target[s] = 0.0
        buy.append(c)
    if buy:
        cash = cfg.max_gross - float(np.sum(np.abs(target)))
        target[buy] = min(cash / len(buy) if cash > 0.0 else 0.0, cfg.max_weight)
    return target


def _long_short(p, tradable, drifted, budget, cfg: PortfolioConfig) -> np.ndarray:
    target = np.where(tradable, 0.0, drifted)
    ranked = _ranked(p, tradable)
    k = math.floor(cfg.quantile * len(ranked) + QUANTILE_EPS)
    if k >= 1:
        each = min(budget / (2.0 * k), cfg.max_weight)
        target[ranked[:k]] = each
        target[ranked[-k:]] = -each
    return target


def run_portfolio_reference(prices, probs, config: PortfolioConfig | None = None,
                            initial_weights=None) -> PortfolioResult:
    cfg = PortfolioConfig() if config is None else config
    prices, probs = validate_inputs(prices, probs)
    T, N = prices.shape
    px_all = prices.astype(np.float64)
    p_all = probs.astype(np.float64)
    out = {k: np.zeros(T) for k in ("net", "gross", "turnover", "cost", "equity")}
    weights = np.zeros((T, N), dtype=np.float32)
    w = np.zeros(N) if initial_weights is None else np.asarray(initial_weights, dtype=np.float64).copy()
    held_days = np.where(w != 0.0, cfg.hold_thresh, 0)
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
        if cfg.strategy == "threshold":
            has_p = tradable & np.isfinite(p)
            s = np.zeros(N)
            if cfg.long_short:
                s[has_p] = 2.0 * (p[has_p] - 0.5)
            else:
                s[has_p] = np.maximum(p[has_p] - cfg.threshold, 0.0)
            s_sum = float(np.sum(np.abs(s)))
            scale = budget / s_sum if s_sum > 0.0 else 0.0
            target = np.where(tradable, np.clip(s * scale, -cfg.max_weight, cfg.max_weight), drifted)
        elif cfg.strategy == "topk_dropout":
            if tradable.any():  # a session: every held symbol has been held one more session
                held_days = np.where(drifted != 0.0, held_days + 1, held_days)
            target = _topk_dropout(p, tradable, drifted, held_days, cfg)
            held_days = np.where((target != 0.0) & (drifted == 0.0), 0, held_days)
        else:
            target = _long_short(p, tradable, drifted, budget, cfg)
        tv = float(np.sum(np.abs(target - drifted)))
        if cfg.max_turnover is not None and tv > cfg.max_turnover:
            target = drifted + (target - drifted) * (cfg.max_turnover / tv)
            tv = float(np.sum(np.abs(target - drifted)))
        c = tv * cfg.cost_rate
        if (cfg.open_cost > 0.0 or cfg.close_cost > 0.0 or cfg.min_cost > 0.0) and not wiped:
            m = cfg.min_cost / cfg.account / (equity * growth)
            trade = target - drifted
            c += float(np.sum(np.maximum(cfg.open_cost * trade[trade > 0.0], m)))
            c += float(np.sum(np.maximum(cfg.close_cost * -trade[trade < 0.0], m)))
        held_days = np.where(target != 0.0, held_days, 0)
        nt = -1.0 if wiped else g - c * growth
        equity *= 1.0 + nt
        out["net"][t], out["gross"][t], out["turnover"][t], out["cost"][t], out["equity"][t] = nt, g, tv, c, equity
        weights[t] = target
        w = target
    return PortfolioResult(out["net"], out["gross"], out["turnover"], out["cost"], out["equity"], weights)
