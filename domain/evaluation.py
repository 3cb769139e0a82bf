"""Stage `evaluation` (year, and overall): how good were the out-of-sample predictions?

Join: the prediction made at day t (`predictions`, p_h{H}) with the label realised at t + H
(`labels`: the row of day t holds label_bin_h{H} and label_ret_h{H}, the outcome H trading
rows later; null while t + H is not stored yet, and those rows are left out).

Per horizon (domain.learning.metrics), over the rows with a prediction and a realised label
(`coverage`: those rows and symbols against the labelled ones, and why the rest were left
out): AUC (pooled: one AUC over every row of the scope), PR-AUC, Brier, log loss, IC (Spearman of p with
the realised forward return over all rows pooled), decile returns overall and by market
regime, and a reliability diagram. Signal analysis as Qlib's (`cross_section` in the JSON):
the daily cross-sectional rank IC (Spearman across the day's symbols), its mean (`rank_ic`),
std and ICIR (mean / std), the cumulative IC curve, the top-minus-bottom decile return series
(`long_short`) with its Sharpe (annualized with 252 / H periods a year: each day's value is an
H-day return), and the turnover of the top and bottom decile portfolios. Only days with at
least `evaluation.min_symbols_per_day` symbols having a prediction and a realised return
count; the report says how many days were left out, and when all were, says so (`note`)
and gives null figures. Scopes: each requested year Y, and `overall` (every stored
prediction year). Reports under reports/<experiment>/evaluation/: `<Y>.json`, `overall.json` (with the daily
series), PNGs `reliability_h{H}_<scope>.png`, `ic_h{H}_<scope>.png` (cumulative IC),
`long_short_h{H}_<scope>.png`, `deciles_h{H}_<scope>.png`: the `overall` scope's always, each
year's only with settings `evaluation.year_figures` (a year's JSON holds its deciles and daily series).
The stored table (year partition): one row per horizon with the headline metrics.
"""

import numpy as np
import polars as pl

from domain.observe import write_bytes_atomic, write_json_atomic
from domain.learning.metrics import (
    annualization,
    classification_metrics,
    cross_section,
    decile_returns,
    decile_returns_by_group,
    ic_summary,
    information_coefficient,
    sharpe_ratio,
    turnover_mean,
)
from domain.learning.plots import (
    cumulative_ic_png_bytes,
    decile_bars_png_bytes,
    long_short_png_bytes,
    reliability_png_bytes,
)
from kernels.regime import BEAR, BULL, CONSOLIDATE, OSCILLATE

REGIME_NAMES = {BEAR: "bear", CONSOLIDATE: "consolidate", BULL: "bull", OSCILLATE: "oscillate"}
HEADLINE = ("auc", "pr_auc", "brier", "log_loss", "ic", "n", "rank_ic", "icir", "long_short_sharpe")
TABLE_SCHEMA = {"year": pl.Int32, "horizon": pl.Int32, "auc": pl.Float64, "pr_auc": pl.Float64, "brier": pl.Float64,
                "log_loss": pl.Float64, "ic": pl.Float64, "n": pl.Int64, "rank_ic": pl.Float64, "icir": pl.Float64,
                "long_short_sharpe": pl.Float64, "days_used": pl.Int64}
PLOTS = ("reliability", "ic", "long_short", "deciles")  # PNG names: {plot}_h{H}_{scope}.png


def outcomes(predictions: pl.LazyFrame, labels: pl.LazyFrame, horizons: list[int]) -> pl.DataFrame:
    """Predictions at t joined with the labels realised at t + H (per horizon columns)."""
    cols = [c for h in horizons for c in (f"label_bin_h{h}", f"label_ret_h{h}")]
    return predictions.join(labels.select("symbol", "date", *cols), on=["symbol", "date"], how="inner").sort(
        "date", "symbol").collect()


def _table(d: dict) -> list[dict]:
    """Column arrays -> JSON rows."""
    keys = list(d)
    return [{k: (d[k][i].item() if hasattr(d[k][i], "item") else d[k][i]) for k in keys} for i in range(len(d[keys[0]]))]


def _num(v) -> float | None:
    """JSON-safe float: NaN and inf become None."""
    return float(v) if v is not None and np.isfinite(v) else None


def signal_analysis(rows: pl.DataFrame, h: int, min_symbols: int) -> tuple[dict, dict]:
    """(the `cross_section` report of horizon h, its daily arrays) over `rows` (usable rows:
    a prediction and a realised return)."""
    cs = cross_section(rows["date"].to_numpy(), rows["symbol"].to_numpy(),
                       rows[f"p_h{h}"].cast(pl.Float64).to_numpy(),
                       rows[f"label_ret_h{h}"].cast(pl.Float64).fill_null(np.nan).to_numpy(), min_symbols=min_symbols)
    used = len(cs["days"])
    ics = ic_summary(cs["ic"])
    report = {
        "min_symbols_per_day": min_symbols,
        "days": cs["n_days"],
        "days_used": used,
        "days_excluded": cs["n_days_excluded"],
        "symbols_per_day_mean": _num(cs["n"].mean()) if used else None,
        **{k: ics[k] for k in ("rank_ic", "rank_ic_std", "icir", "ic_positive")},
        "ic_days": ics["n"],
        "long_short_mean": _num(np.nanmean(cs["long_short"])) if used else None,
        "long_short_sharpe": sharpe_ratio(cs["long_short"], annualization(h)),
        "long_short_annualization": annualization(h),
        "long_mean": _num(np.nanmean(cs["long"])) if used else None,
        "short_mean": _num(np.nanmean(cs["short"])) if used else None,
        "top_turnover": turnover_mean(cs["top_turnover"]),
        "bottom_turnover": turnover_mean(cs["bottom_turnover"]),
    }
    if cs["n_days"] and not used:
        report["note"] = (f"all {cs['n_days']} days have fewer than {min_symbols} symbols with a prediction and a "
                          "realised return: no cross-sectional figures (evaluation.min_symbols_per_day)")
    elif not cs["n_days"]:
        report["note"] = "no day has a prediction with a realised return: no cross-sectional figures"
    elif cs["n_days_excluded"]:
        report["note"] = (f"{cs['n_days_excluded']} of {cs['n_days']} days left out: fewer than {min_symbols} "
                          "symbols with a prediction and a realised return (evaluation.min_symbols_per_day)")
    cum = np.nancumsum(cs["ic"])
    report["daily"] = [
        {"date": str(np.datetime64(d, "D")), "n": int(n), "ic": _num(ic), "cum_ic": _num(c), "long": _num(lo),
         "short": _num(sh), "long_short": _num(ls), "top_turnover": _num(tt), "bottom_turnover": _num(bt)}
        for d, n, ic, c, lo, sh, ls, tt, bt in zip(cs["days"], cs["n"], cs["ic"], cum, cs["long"], cs["short"],
                                                   cs["long_short"], cs["top_turnover"], cs["bottom_turnover"])
    ]
    return report, cs


def _usable(frame: pl.DataFrame, h: int) -> pl.DataFrame:
    return frame.filter(pl.col(f"label_bin_h{h}").is_not_null() & pl.col(f"p_h{h}").is_not_nan())


def evaluate_horizon(frame: pl.DataFrame, h: int, min_symbols: int = 5) -> dict:
    """Metrics, IC, decile returns (overall and by regime) and the cross-sectional signal
    analysis of one horizon over `frame`."""
    report, _ = _evaluate(frame, h, min_symbols)
    return report


def scope_coverage(frame: pl.DataFrame, h: int) -> dict:
    """What the figures of horizon h stand on: `rows_used` (a prediction and a realised label)
    of `rows_available` (a realised label), the symbols of each, `coverage` (used / available,
    None without a label) and `left_out`: `no prediction` (labelled rows without p: no model
    of the year, or an input the model's missing-value rule leaves out) and `no label yet`
    (predicted rows whose label is not realised yet: the last days)."""
    if frame.is_empty():
        return {"rows_used": 0, "rows_available": 0, "symbols_used": 0, "symbols_available": 0, "coverage": None,
                "left_out": {"no prediction": 0, "no label yet": 0}}
    labelled = frame[f"label_bin_h{h}"].is_not_null()
    predicted = frame[f"p_h{h}"].is_not_nan().fill_null(False)
    used = labelled & predicted
    sym = frame["symbol"]
    available = int(labelled.sum())
    return {"rows_used": int(used.sum()), "rows_available": available,
            "symbols_used": sym.filter(used).n_unique(), "symbols_available": sym.filter(labelled).n_unique(),
            "coverage": int(used.sum()) / available if available else None,
            "left_out": {"no prediction": int((labelled & ~predicted).sum()),
                         "no label yet": int((predicted & ~labelled).sum())}}


def _evaluate(frame: pl.DataFrame, h: int, min_symbols: int) -> tuple[dict, dict]:
    rows = _usable(frame, h)
    p = rows[f"p_h{h}"].cast(pl.Float64).to_numpy()
    y = rows[f"label_bin_h{h}"].cast(pl.Float64).to_numpy()
    ret = rows[f"label_ret_h{h}"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    regime = rows["regime"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    by_regime = decile_returns_by_group(p, ret, regime) if len(p) else {}
    signal, cs = signal_analysis(rows, h, min_symbols)
    report = {
        **classification_metrics(y, p),
        "ic": information_coefficient(p, ret),
        "rank_ic": signal["rank_ic"],
        "icir": signal["icir"],
        "long_short_sharpe": signal["long_short_sharpe"],
        "deciles": _table(decile_returns(p, ret)) if len(p) else [],
        "deciles_by_regime": {REGIME_NAMES.get(int(k), str(k)): _table(v) for k, v in by_regime.items()},
        "cross_section": signal,
        "coverage": scope_coverage(frame, h),
    }
    return report, cs


def scope_plots(frame: pl.DataFrame, report: dict, cs: dict, h: int, scope: str) -> dict[str, bytes]:
    """The PNGs of one horizon and scope: reliability, cumulative IC, long-short, decile bars
    (those with something to draw)."""
    rows = _usable(frame, h)
    out = {}
    if rows.height:
        out["reliability"] = reliability_png_bytes(rows[f"label_bin_h{h}"].cast(pl.Float64).to_numpy(),
                                                   rows[f"p_h{h}"].cast(pl.Float64).to_numpy(),
                                                   f"h{h}, out of sample, {scope}")
    if len(cs["days"]):
        out["ic"] = cumulative_ic_png_bytes(cs["days"], cs["ic"], f"h{h} {scope}")
        out["long_short"] = long_short_png_bytes(cs["days"], cs["long"], cs["short"], h, f"h{h} {scope}")
    if report["deciles"]:
        d = report["deciles"]
        out["deciles"] = decile_bars_png_bytes([r["bin"] for r in d], [r["ret_mean"] for r in d],
                                               [r["hit_rate"] for r in d], f"h{h} {scope}: forward return by decile of p")
    return out


def evaluate_scope(frame: pl.DataFrame, horizons: list[int], scope: str, out_dir,
                   min_symbols: int = 5, figures: bool = True) -> tuple[dict, dict]:
    """({h{H}: metrics}, {h{H}: {plot name: PNG bytes}}) for the rows of `frame`; writes the
    JSON and, with `figures`, the PNGs ({plot}_h{H}_{scope}.png; else no PNG and {} images)."""
    report, images = {}, {}
    for h in horizons:
        report[f"h{h}"], cs = _evaluate(frame, h, min_symbols)
        images[f"h{h}"] = scope_plots(frame, report[f"h{h}"], cs, h, scope) if figures else {}
        for name, png in images[f"h{h}"].items():
            write_bytes_atomic(out_dir / f"{name}_h{h}_{scope}.png", png)
    # what the scope stands on (every results line names it): the symbols and years with a
    # prediction, of those stored (a year without a meta model has NaN predictions only)
    predicted = frame.filter(pl.any_horizontal([pl.col(f"p_h{h}").is_not_nan() for h in horizons])) \
        if horizons and frame.height else frame.head(0)
    symbols = predicted["symbol"].n_unique() if "symbol" in frame.columns else 0
    years = sorted(predicted["date"].dt.year().unique().to_list()) if "date" in frame.columns else []
    stored = sorted(frame["date"].dt.year().unique().to_list()) if "date" in frame.columns else []
    write_json_atomic(out_dir / f"{scope}.json", {
        "scope": scope, "rows": frame.height, "symbols": symbols,
        "symbols_available": frame["symbol"].n_unique() if "symbol" in frame.columns else 0, "years": years,
        **({"years_without_predictions": [y for y in stored if y not in years]} if set(stored) - set(years) else {}),
        **report})
    return report, images


def _headline(r: dict) -> dict:
    """A table row's figures (the stored table keeps its schema: coverage is in the reports
    and the asset's metadata)."""
    return {**{k: r[k] for k in HEADLINE}, "days_used": r["cross_section"]["days_used"]}


def _preview(r: dict) -> dict:
    return {**{k: r[k] for k in HEADLINE}, "coverage": r["coverage"], "cross_section": _signal_preview(r)}


def _signal_preview(r: dict) -> dict:
    cs = r["cross_section"]
    keys = ("days", "days_used", "days_excluded", "rank_ic", "icir", "long_short_sharpe", "top_turnover",
            "bottom_turnover", "note")
    return {k: cs[k] for k in keys if k in cs}


def build_evaluation(predictions: pl.LazyFrame, labels: pl.LazyFrame, horizons: list[int], years: list[int],
                     out_dir, min_symbols_per_day: int = 5, year_figures: bool = False) -> tuple[pl.DataFrame, dict, dict]:
    """Every requested year and `overall` (every stored prediction year) evaluated, reports
    under `out_dir`; the PNGs of the `overall` scope always, those of each year only with
    `year_figures` (settings evaluation.year_figures: drawing costs ~0.1 s a figure, four
    plots per horizon and scope, and the metadata shows only `overall`'s). Returns the table (one row per year and horizon, headline metrics), the
    headline metrics keyed by scope, then `h{H}` (with `cross_section`: days used / left out,
    rank IC, ICIR, long-short Sharpe, turnovers, the note), and the PNG bytes of the
    `overall` scope keyed `h{H}`, then the plot name."""
    rows, preview = [], {}
    joined = outcomes(predictions, labels, horizons)
    for y in years:
        report, _ = evaluate_scope(joined.filter(pl.col("date").dt.year() == y), horizons, str(y), out_dir,
                                   min_symbols_per_day, figures=year_figures)
        for h in horizons:
            rows.append({"year": y, "horizon": h, **_headline(report[f"h{h}"])})
        preview[str(y)] = {f"h{h}": _preview(report[f"h{h}"]) for h in horizons}
    overall, images = evaluate_scope(joined, horizons, "overall", out_dir, min_symbols_per_day)
    preview["overall"] = {f"h{h}": _preview(overall[f"h{h}"]) for h in horizons}
    table = pl.DataFrame(rows, schema=TABLE_SCHEMA)
    return table, preview, images
