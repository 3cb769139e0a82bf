"""Stage `evaluation` (year, and overall): how good were the out-of-sample predictions?

Join: the prediction made at day t (`predictions`, p_h{H}) with the label realised at t + H
(`labels`: the row of day t holds label_bin_h{H} and label_ret_h{H}, the outcome H trading
rows later; null while t + H is not stored yet, and those rows are left out).

Per horizon (kernels.learn.evaluation): AUC, PR-AUC, Brier, log loss, IC (Spearman of p with
the realised forward return), decile returns overall and by market regime, and a reliability
diagram. Scopes: each requested year Y, and `overall` (every stored prediction year).
Reports under reports/eval/: `<Y>.json`, `overall.json`, `reliability_h{H}_<Y|overall>.png`.
The stored table (year partition): one row per horizon with the headline metrics.
"""

import numpy as np
import polars as pl

from domain.observe import write_bytes_atomic, write_json_atomic
from kernels.learn.evaluation import (
    classification_metrics,
    decile_returns,
    decile_returns_by_group,
    information_coefficient,
    reliability_png_bytes,
)
from kernels.regime import BEAR, BULL, CONSOLIDATE, OSCILLATE

REGIME_NAMES = {BEAR: "bear", CONSOLIDATE: "consolidate", BULL: "bull", OSCILLATE: "oscillate"}
HEADLINE = ("auc", "pr_auc", "brier", "log_loss", "ic", "n")


def outcomes(predictions: pl.LazyFrame, labels: pl.LazyFrame, horizons: list[int]) -> pl.DataFrame:
    """Predictions at t joined with the labels realised at t + H (per horizon columns)."""
    cols = [c for h in horizons for c in (f"label_bin_h{h}", f"label_ret_h{h}")]
    return predictions.join(labels.select("symbol", "date", *cols), on=["symbol", "date"], how="inner").sort(
        "date", "symbol").collect()


def _table(d: dict) -> list[dict]:
    """Column arrays -> JSON rows."""
    keys = list(d)
    return [{k: (d[k][i].item() if hasattr(d[k][i], "item") else d[k][i]) for k in keys} for i in range(len(d[keys[0]]))]


def evaluate_horizon(frame: pl.DataFrame, h: int) -> dict:
    """Metrics, IC and decile returns (overall and by regime) of one horizon over `frame`."""
    rows = frame.filter(pl.col(f"label_bin_h{h}").is_not_null() & pl.col(f"p_h{h}").is_not_nan())
    p = rows[f"p_h{h}"].cast(pl.Float64).to_numpy()
    y = rows[f"label_bin_h{h}"].cast(pl.Float64).to_numpy()
    ret = rows[f"label_ret_h{h}"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    regime = rows["regime"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    by_regime = decile_returns_by_group(p, ret, regime) if len(p) else {}
    return {
        **classification_metrics(y, p),
        "ic": information_coefficient(p, ret),
        "deciles": _table(decile_returns(p, ret)) if len(p) else [],
        "deciles_by_regime": {REGIME_NAMES.get(int(k), str(k)): _table(v) for k, v in by_regime.items()},
    }


def evaluate_scope(frame: pl.DataFrame, horizons: list[int], scope: str, out_dir) -> dict:
    """{h{H}: metrics} for the rows of `frame`; writes the JSON and the reliability PNGs."""
    report = {}
    for h in horizons:
        report[f"h{h}"] = evaluate_horizon(frame, h)
        rows = frame.filter(pl.col(f"label_bin_h{h}").is_not_null() & pl.col(f"p_h{h}").is_not_nan())
        if rows.height:
            png = reliability_png_bytes(rows[f"label_bin_h{h}"].cast(pl.Float64).to_numpy(),
                                        rows[f"p_h{h}"].cast(pl.Float64).to_numpy(), f"h{h}, out of sample, {scope}")
            write_bytes_atomic(out_dir / f"reliability_h{h}_{scope}.png", png)
    write_json_atomic(out_dir / f"{scope}.json", {"scope": scope, "rows": frame.height, **report})
    return report


def build_evaluation(predictions: pl.LazyFrame, labels: pl.LazyFrame, horizons: list[int], years: list[int],
                     out_dir) -> tuple[pl.DataFrame, dict]:
    """Every requested year and `overall` (every stored prediction year) evaluated, reports
    under `out_dir`. Returns the table (one row per year and horizon, headline metrics) and
    the headline metrics keyed by scope, then `h{H}`."""
    rows, preview = [], {}
    joined = outcomes(predictions, labels, horizons)
    for y in years:
        report = evaluate_scope(joined.filter(pl.col("date").dt.year() == y), horizons, str(y), out_dir)
        for h in horizons:
            rows.append({"year": y, "horizon": h, **{k: report[f"h{h}"][k] for k in HEADLINE}})
        preview[str(y)] = {f"h{h}": {k: report[f"h{h}"][k] for k in HEADLINE} for h in horizons}
    overall = evaluate_scope(joined, horizons, "overall", out_dir)
    preview["overall"] = {f"h{h}": {k: overall[f"h{h}"][k] for k in HEADLINE} for h in horizons}
    table = pl.DataFrame(rows, schema={"year": pl.Int32, "horizon": pl.Int32, "auc": pl.Float64, "pr_auc": pl.Float64,
                                       "brier": pl.Float64, "log_loss": pl.Float64, "ic": pl.Float64, "n": pl.Int64})
    return table, preview
