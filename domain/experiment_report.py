"""One experiment's headline figures, and its report as one self-contained HTML file.

Reads only the reports the experiment wrote under `paths.reports/<name>/` (as
domain.experiment_compare does), so any experiment can be reported whatever settings are in
force:

- `headline(root, name)`: {figure: value} of the `overall` scope, named as `experiments --by`
  names them (`h7_auc`, `h7_rank_ic`, ..., `backtest_sharpe`, `backtest_cagr`, ...), finite
  numbers only (a figure without a value is left out), plus the counts the figures stand on
  (`symbols`, `years`, `h{H}_rows`). The `experiment_summary` asset's numeric metadata.
- `importance(folder)`: per horizon, the meta models' column importance (the `importance` of
  each `meta_model/h{H}_{Y}.json`: LightGBM's gain, hist_gbm's permutation AUC drop or the
  logistic model's |coefficients|, as shares) averaged over the years that have one.
- `render_report(root, name)`: the HTML page: what the experiment is (settings hash, years,
  symbols, its frozen settings), the headline figures, the equity curve against the benchmark
  with its drawdown (`backtest/equity.png`) and the benchmark verdict, the rank IC by year and
  horizon (drawn from `evaluation/<Y>.json`), the decile bars (`evaluation/deciles_h{H}_overall.png`)
  and the importance (drawn). Self-contained: one file, every image a base64 PNG `data:`
  URI, the style inline, no script and no reference to anything outside the file.
- `write_report(root, name)`: that page at `reports/<name>/experiment_summary/report.html`
  (atomic), its path returned.
A part whose reports are missing (no backtest yet, a model kind without importance) is a
sentence saying so, not an error.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from pathlib import Path

from config.experiments import read_manifest
from domain.experiment_compare import DISPLAY, YEAR_FILE, coverage, summary
from domain.experiment_compare import experiment_figures as _figures
from domain.experiment_compare import read_report as _read
from domain.experiment_compare import yearly_reports as _yearly

REPORT_STAGE = "experiment_summary"  # reports/<name>/experiment_summary/report.html
REPORT_FILE = "report.html"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
IMPORTANCE_TOP = 15  # columns drawn per horizon
META_FILE = re.compile(r"^h(\d+)_(\d{4})\.json$")


def report_path(root: Path, name: str) -> Path:
    return root / name / REPORT_STAGE / REPORT_FILE


def _finite(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def headline(root: Path, name: str) -> dict[str, float]:
    """The overall figures of experiment `name` (see the module doc), finite values only."""
    folder = root / name
    overall, _ = _figures(folder)
    out = {key.replace(" ", "_", 1): f for key, v in overall.items() if (f := _finite(v)) is not None}
    info = summary(root, name)
    cov = coverage(folder)
    if isinstance(info["symbols"], int):
        out["symbols"] = info["symbols"]
    if info["years"]:
        out["years"] = len(info["years"])
    for key, facts in cov.items():
        if re.fullmatch(r"h\d+", key) and isinstance((facts or {}).get("rows"), int):
            out[f"{key}_rows"] = facts["rows"]
    return out


def importance(folder: Path) -> dict[str, dict]:
    """{"h{H}": {"kind", "years", "values": {column: mean share over those years}, "by_year":
    {year: {column: share}}}} from the meta model reports that carry an importance; the
    columns largest first."""
    out: dict[str, dict] = {}
    meta = folder / "meta_model"
    files = sorted((int(m.group(1)), int(m.group(2)), p) for p in (meta.iterdir() if meta.is_dir() else [])
                   if (m := META_FILE.fullmatch(p.name)))
    for h, year, path in files:
        imp = (_read(path) or {}).get("importance")
        if not isinstance(imp, dict) or not isinstance(imp.get("values"), dict) or not imp["values"]:
            continue
        entry = out.setdefault(f"h{h}", {"kind": imp.get("kind"), "years": [], "by_year": {}})
        entry["years"].append(year)
        entry["by_year"][year] = {c: float(v) for c, v in imp["values"].items() if _finite(v) is not None}
    for entry in out.values():
        cols = dict.fromkeys(c for shares in entry["by_year"].values() for c in shares)
        n = len(entry["by_year"])
        mean = {c: sum(s.get(c, 0.0) for s in entry["by_year"].values()) / n for c in cols}
        entry["values"] = dict(sorted(mean.items(), key=lambda kv: (-kv[1], kv[0])))
    return dict(sorted(out.items(), key=lambda kv: int(kv[0][1:])))


def _ic_by_year(folder: Path) -> tuple[list[int], dict[str, list[float]]]:
    """(years, {"h{H}": mean daily rank IC per year, NaN where missing}) from the evaluation."""
    reports = _yearly(folder / "evaluation", YEAR_FILE)
    years = sorted(reports)
    horizons = sorted({int(k[1:]) for rep in reports.values() for k in rep if re.fullmatch(r"h\d+", k)})
    series = {}
    for h in horizons:
        values = [_finite((reports[y].get(f"h{h}") or {}).get("rank_ic")) for y in years]
        if any(v is not None for v in values):
            series[f"h{h}"] = [math.nan if v is None else v for v in values]
    return years, series


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _png_file(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if data.startswith(PNG_MAGIC) else None


def _shown(figure: str, v: float) -> str:
    kind = figure.split("_", 1)[1] if figure.startswith(("h", "backtest_")) and "_" in figure else figure
    spec = DISPLAY.get(kind)
    return spec.format(v) if spec else (f"{v:,}" if isinstance(v, int) else f"{v:.4g}")


def _note(text: str) -> str:
    return f"<p class=note>{html.escape(text)}</p>"


STYLE = """
body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.note{color:#666;font-style:italic}
img{max-width:100%;display:block;margin:.5em 0}pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:.85em}
"""


def render_report(root: Path, name: str) -> str:
    """The experiment's report page (see the module doc); ValueError (one line) when `name`
    has no experiment manifest under `root`."""
    from domain.learning.plots import ic_by_year_png_bytes, importance_png_bytes

    folder = root / name
    manifest = read_manifest(folder)
    if manifest is None:
        raise ValueError(f"report: no experiment {name!r} under {root} (no {folder / 'experiment.json'}); expected "
                         "the name of a run's --experiment")
    info = summary(root, name)
    figs = headline(root, name)
    esc = html.escape
    years = f"{info['years'][0]}..{info['years'][-1]}" if info["years"] else "no evaluated year"
    parts = [f"<h1>Experiment {esc(name)}</h1>",
             f"<p>settings {esc(str(info['settings_hash']))}, created {esc(str(info['created_at']))}, "
             f"evaluated {esc(years)}, {esc(str(info['symbols'] if info['symbols'] is not None else 'n/a'))} symbols</p>"]

    parts.append("<h2>Headline figures (overall, out of sample)</h2>")
    if figs:
        rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(_shown(k, v))}</td></tr>" for k, v in figs.items())
        parts.append(f"<table><tr><th>figure</th><th>value</th></tr>{rows}</table>")
    else:
        parts.append(_note("no evaluation or backtest report yet (run evaluate and backtest)"))

    parts.append("<h2>Equity against the benchmark, and drawdown</h2>")
    bt = _read(folder / "backtest" / "overall.json") or {}
    if png := _png_file(folder / "backtest" / "equity.png"):
        parts.append(_img(png, "equity and drawdown"))
    else:
        parts.append(_note("no backtest equity curve yet (run backtest)"))
    if bt.get("verdict"):
        parts.append(f"<p>{esc(str(bt['verdict']))} ({esc(str(bt.get('from')))}..{esc(str(bt.get('to')))})</p>")

    parts.append("<h2>Rank IC by year</h2>")
    ic_years, ic = _ic_by_year(folder)
    if ic:
        parts.append(_img(ic_by_year_png_bytes(ic_years, ic, f"{name}: mean daily rank IC per year"), "rank IC by year"))
    else:
        parts.append(_note("no yearly evaluation report with a rank IC yet (run evaluate)"))

    parts.append("<h2>Deciles (overall)</h2>")
    deciles = sorted(((int(m.group(1)), p) for p in (folder / "evaluation").glob("deciles_h*_overall.png")
                      if (m := re.fullmatch(r"deciles_h(\d+)_overall\.png", p.name))), key=lambda t: t[0])
    shown = [_img(png, f"deciles h{h}") for h, p in deciles if (png := _png_file(p))]
    parts += shown or [_note("no decile plot yet (run evaluate)")]

    parts.append("<h2>Importance of the meta models' columns</h2>")
    imp = importance(folder)
    for h, entry in imp.items():
        top = list(entry["values"].items())[:IMPORTANCE_TOP]
        yrs = entry["years"]
        title = f"{name} {h}: {entry['kind']}, mean over {len(yrs)} year(s) {yrs[0]}..{yrs[-1]}"
        parts.append(_img(importance_png_bytes([c for c, _ in top], [v for _, v in top], title), f"importance {h}"))
    if not imp:
        parts.append(_note("no meta model report with an importance (run train-meta)"))

    parts.append("<h2>Settings (frozen with the experiment)</h2>")
    parts.append(f"<pre>{esc(json.dumps(manifest.get('settings') or {}, indent=2, sort_keys=True))}</pre>")
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<title>tradelab experiment {esc(name)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def write_report(root: Path, name: str) -> Path:
    """render_report written to report_path(root, name) atomically; the path."""
    from domain.observe import write_bytes_atomic

    return write_bytes_atomic(report_path(root, name), render_report(root, name).encode())
