"""Headline figures as people and Dagster read them.

- `rounded` / `rounded_tree`: a figure to SIGNIFICANT significant digits (None for a value
  that is missing, NaN or infinite): what the UI's JSON metadata and the CLI show.
- `evaluation_figures`, `backtest_figures`, `cv_figures`: the top-level numeric metadata of
  the evaluation, backtest and cv_report materializations, one float per figure and name
  (`h7_auc`, `h7_rank_ic`, ..., `sharpe`, `cagr`, ...), so the asset's Plots tab charts each
  across materializations. A figure without a value (a one-class horizon, a backtest with
  no trade) is left out: Dagster's float metadata has no "missing".
"""

from __future__ import annotations

import math

SIGNIFICANT = 4

# evaluation report key -> metadata suffix (h{H}_<suffix>)
EVALUATION_FIGURES = {"auc": "auc", "pr_auc": "pr_auc", "brier": "brier", "ic": "ic", "rank_ic": "rank_ic",
                      "icir": "icir", "long_short_sharpe": "ls_sharpe"}
# backtest report key -> metadata name
BACKTEST_FIGURES = {"sharpe": "sharpe", "cagr": "cagr", "max_drawdown": "max_drawdown",
                    "annual_turnover": "turnover", "total_return": "total_return",
                    "sortino": "sortino", "calmar": "calmar", "ann_vol": "ann_vol",
                    "max_drawdown_days": "max_drawdown_days", "exposure": "exposure", "trades": "trades",
                    "win_rate": "win_rate", "total_costs": "total_costs", "cost_share": "cost_share",
                    "benchmark_sharpe": "benchmark_sharpe", "benchmark_cagr": "benchmark_cagr",
                    "excess_return": "excess_return", "information_ratio": "information_ratio",
                    "tracking_error": "tracking_error", "beta": "beta"}


def rounded(value, digits: int = SIGNIFICANT) -> float | None:
    """`value` rounded to `digits` significant digits; None when it is None, not a number,
    NaN or infinite. 0.123456 -> 0.1235, -0.0012345 -> -0.001234 (3-4 digits: 0.5234 AUC)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(v):
        return None
    if v == 0.0:
        return 0.0
    return round(v, digits - 1 - math.floor(math.log10(abs(v))))


def rounded_tree(obj, digits: int = SIGNIFICANT):
    """Every float in a JSON-like tree rounded (`rounded`); ints, strings and None unchanged."""
    if isinstance(obj, float):
        return rounded(obj, digits)
    if isinstance(obj, dict):
        return {k: rounded_tree(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [rounded_tree(v, digits) for v in obj]
    return obj


def evaluation_figures(overall: dict, horizons: list[int]) -> dict[str, float]:
    """`h{H}_auc`, `h{H}_pr_auc`, `h{H}_brier`, `h{H}_ic`, `h{H}_rank_ic`, `h{H}_icir`,
    `h{H}_ls_sharpe` of one scope of the evaluation (`{h{H}: {metric: value}}`, rank IC,
    ICIR and long-short Sharpe also read from its `cross_section`), rounded."""
    out = {}
    for h in horizons:
        m = overall.get(f"h{h}") or {}
        cs = m.get("cross_section") or {}
        for key, name in EVALUATION_FIGURES.items():
            v = rounded(m.get(key, cs.get(key)))
            if v is not None:
                out[f"h{h}_{name}"] = v
    return out


COVERAGE_COUNTS = ("rows_used", "rows_available", "symbols_used", "symbols_available")


def coverage_figures(scope: dict, horizons: list[int]) -> dict[str, int]:
    """`h{H}_rows_used`, `h{H}_rows_available`, `h{H}_symbols_used`, `h{H}_symbols_available`
    of one scope (`{h{H}: {"coverage": {...}}}`): what the figures of each horizon stand on,
    as numbers Dagster plots."""
    out = {}
    for h in horizons:
        cov = (scope.get(f"h{h}") or {}).get("coverage") or {}
        for key in COVERAGE_COUNTS:
            if isinstance(cov.get(key), int):
                out[f"h{h}_{key}"] = cov[key]
    return out


def backtest_figures(headline: dict) -> dict[str, float | int]:
    """The stats table of the backtest's overall headline (domain.backtest.headline_figures;
    kernels.backtest.stats states each formula): `sharpe`, `cagr`, `max_drawdown`, `turnover`
    (a year's traded fraction of the book), `total_return`, `sortino`, `calmar`, `ann_vol`,
    `max_drawdown_days`, `exposure`, `trades`, `win_rate`, `total_costs`, `cost_share`, and
    against the benchmark `benchmark_sharpe`, `benchmark_cagr`, `excess_return`,
    `information_ratio`, `tracking_error`, `beta`; floats rounded, counts (`trades`,
    `max_drawdown_days`) kept as ints."""
    out: dict[str, float | int] = {}
    for key, name in BACKTEST_FIGURES.items():
        v = headline.get(key)
        v = v if isinstance(v, int) and not isinstance(v, bool) else rounded(v)
        if v is not None:
            out[name] = v
    return out


def cv_figures(summary: dict, horizons: list[int]) -> dict[str, float]:
    """Per horizon over the run's years (`summary` keyed `{Y}/h{H}`, then specialist, then
    calibration: mean fold `auc`, `brier`): `h{H}_best_auc` (the specialist and calibration
    with the highest AUC averaged over the years), `h{H}_best_brier` (its Brier) and
    `h{H}_mean_auc` (every specialist and calibration), rounded."""
    out = {}
    for h in horizons:
        aucs: dict[tuple, list[float]] = {}
        briers: dict[tuple, list[float]] = {}
        for key, specs in summary.items():
            if not key.endswith(f"/h{h}"):
                continue
            for spec, methods in specs.items():
                for method, m in methods.items():
                    if not isinstance(m, dict):
                        continue
                    if rounded(m.get("auc")) is not None:
                        aucs.setdefault((spec, method), []).append(float(m["auc"]))
                    if rounded(m.get("brier")) is not None:
                        briers.setdefault((spec, method), []).append(float(m["brier"]))
        if not aucs:
            continue
        means = {k: sum(v) / len(v) for k, v in aucs.items()}
        best = max(means, key=lambda k: (means[k], k))
        out[f"h{h}_best_auc"] = rounded(means[best])
        if best in briers:
            out[f"h{h}_best_brier"] = rounded(sum(briers[best]) / len(briers[best]))
        out[f"h{h}_mean_auc"] = rounded(sum(means.values()) / len(means))
    return out
