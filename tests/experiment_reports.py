"""An experiment's reports written as its stages write them (the same file names and JSON
fields: reports/<name>/experiment.json, evaluation/overall.json and <Y>.json, the overall
decile PNG, backtest/overall.json and equity.png, meta_model/h{H}_{Y}.json with the model's
importance), with stated figures, so that the readers of reports (domain.experiment_report,
the experiment_summary asset, `pipeline.cli report`, the UI) are tested on known values
without training anything. The PNGs are drawn by the stages' own plotting functions."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

YEARS = (2011, 2012)
HORIZON = 7


def write_experiment(root: Path, name: str, *, auc: float, rank_ic: float, sharpe: float, cagr: float,
                     ic_by_year: tuple[float, float] = (0.02, 0.04),
                     importance: dict[str, float] | None = None, kind: str = "lightgbm split gain") -> Path:
    """The reports of experiment `name` under `root` (paths.reports); its folder."""
    from domain.learning.plots import decile_bars_png_bytes, equity_png_bytes

    folder = root / name
    for sub in ("evaluation", "backtest", "meta_model"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "experiment.json").write_text(json.dumps({
        "experiment": name, "settings_hash": hashlib.sha256(name.encode()).hexdigest()[:12], "created_at": "2026-11-28T10:00:00Z",
        "settings": {"meta": {"model": "lightgbm" if "lightgbm" in kind else "logistic"}}, "code_versions": {}}))
    h = f"h{HORIZON}"
    overall = {"scope": "overall", "rows": 1500, "symbols": 3, "years": list(YEARS),
               h: {"auc": auc, "pr_auc": 0.56, "brier": 0.245, "rank_ic": rank_ic, "icir": rank_ic * 1.5,
                   "long_short_sharpe": 0.3, "n": 1500, "coverage": {"rows_used": 1500, "rows_available": 1600,
                                                                    "symbols_used": 3, "symbols_available": 3}}}
    (folder / "evaluation" / "overall.json").write_text(json.dumps(overall))
    for year, ic in zip(YEARS, ic_by_year):
        (folder / "evaluation" / f"{year}.json").write_text(json.dumps(
            {"scope": str(year), "symbols": 3, h: {"auc": auc, "rank_ic": ic, "n": 750}}))
    (folder / "evaluation" / f"deciles_{h}_overall.png").write_bytes(
        decile_bars_png_bytes(np.arange(10), np.linspace(-0.002, 0.004, 10), title=f"{name} {h} deciles"))
    days = np.arange("2011-01-03", "2012-12-29", dtype="datetime64[D]")
    equity = np.exp(np.cumsum(np.full(days.shape[0], cagr / 252)))
    (folder / "backtest" / "equity.png").write_bytes(
        equity_png_bytes(days, equity, f"{name} equity", benchmark=np.exp(np.arange(days.shape[0]) * 0.0002),
                         benchmark_label="equal weight"))
    (folder / "backtest" / "overall.json").write_text(json.dumps(
        {"from": "2011-01-03", "to": "2012-12-28", "symbols": 3, "sharpe": sharpe, "cagr": cagr,
         "max_drawdown": -0.12, "annual_turnover": 12.0, "excess_return": cagr - 0.05, "information_ratio": 0.4,
         "verdict": f"beat the benchmark (equal weight of 3 symbols, rebalanced daily) by {cagr - 0.05:.1%}/yr"}))
    values = importance or {"spec_rsi_score": 0.5, "spec_atc_score": 0.3, "regime_bull": 0.2}
    for year in YEARS:
        (folder / "meta_model" / f"{h}_{year}.json").write_text(json.dumps(
            {"year": year, "horizon": HORIZON, "auc": auc, "importance": {"kind": kind, "values": values}}))
    return folder
