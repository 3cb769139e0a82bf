"""The experiments under paths.reports, and their headline figures side by side.

Reads only the reports an experiment wrote (reports/<name>/evaluation/overall.json and
<Y>.json, reports/<name>/backtest/overall.json and year_<Y>.json, reports/<name>/experiment.json);
the JSON field names are the stages' own.

`compare(root, names)`: one row per figure: per horizon AUC, PR-AUC, Brier, rank IC, ICIR,
long-short Sharpe (the `overall` scope: every stored prediction year), then the backtest's
Sharpe, CAGR, max drawdown and turnover. For each experiment after the first: the difference
to the first and, where both have the figure for two or more common years, the paired
t-statistic of the yearly differences (mean / (sd / sqrt(n)), n years).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from config.experiments import MANIFEST, read_manifest

EVAL_FIGURES = ("auc", "pr_auc", "brier", "rank_ic", "icir", "long_short_sharpe")
BACKTEST_FIGURES = ("sharpe", "cagr", "max_drawdown", "annual_turnover")
# digits a person reads: rounded on display (the JSON keeps full precision)
DISPLAY = {"auc": "{:.3f}", "pr_auc": "{:.3f}", "brier": "{:.4f}", "rank_ic": "{:.4f}", "icir": "{:.3f}",
           "long_short_sharpe": "{:.2f}", "sharpe": "{:.2f}", "cagr": "{:.1%}", "max_drawdown": "{:.1%}",
           "annual_turnover": "{:.1f}"}
YEAR_FILE = re.compile(r"^(\d{4})\.json$")
BACKTEST_YEAR_FILE = re.compile(r"^year_(\d{4})\.json$")


def _read(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _yearly(folder: Path, pattern: re.Pattern) -> dict[int, dict]:
    if not folder.is_dir():
        return {}
    out = {}
    for p in folder.iterdir():
        m = pattern.match(p.name)
        if m and (data := _read(p)) is not None:
            out[int(m.group(1))] = data
    return dict(sorted(out.items()))


def experiment_names(root: Path) -> list[str]:
    """The experiments under paths.reports: folders holding a manifest."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / MANIFEST).is_file())


def summary(root: Path, name: str) -> dict:
    """Name, settings hash, created, evaluated years and symbols of one experiment."""
    folder = root / name
    manifest = read_manifest(folder) or {}
    overall = _read(folder / "evaluation" / "overall.json") or {}
    years = sorted(_yearly(folder / "evaluation", YEAR_FILE)) or sorted(_yearly(folder / "backtest", BACKTEST_YEAR_FILE))
    return {"experiment": name, "settings_hash": manifest.get("settings_hash"), "created_at": manifest.get("created_at"),
            "years": years, "symbols": overall.get("symbols")}


def list_experiments(root: Path) -> list[dict]:
    return [summary(root, n) for n in experiment_names(root)]


def _figures(folder: Path) -> tuple[dict[str, float | None], dict[str, dict[int, float]]]:
    """({row key: overall figure}, {row key: {year: figure}}) of one experiment."""
    overall, yearly = {}, {}
    ev = _read(folder / "evaluation" / "overall.json") or {}
    ev_years = _yearly(folder / "evaluation", YEAR_FILE)
    horizons = sorted(int(k[1:]) for k in ev if re.fullmatch(r"h\d+", k))
    for h in horizons:
        for f in EVAL_FIGURES:
            key = f"h{h} {f}"
            overall[key] = _num((ev.get(f"h{h}") or {}).get(f))
            yearly[key] = {y: v for y, rep in ev_years.items() if (v := _num((rep.get(f"h{h}") or {}).get(f))) is not None}
    bt = _read(folder / "backtest" / "overall.json") or {}
    bt_years = _yearly(folder / "backtest", BACKTEST_YEAR_FILE)
    for f in BACKTEST_FIGURES:
        key = f"backtest {f}"
        overall[key] = _num(bt.get(f))
        yearly[key] = {y: v for y, rep in bt_years.items() if (v := _num(rep.get(f))) is not None}
    return overall, yearly


def paired_t(a: dict[int, float], b: dict[int, float]) -> tuple[float | None, int]:
    """(t of the yearly differences b - a over their common years, years); t is None under
    two years or when the differences do not vary."""
    common = sorted(set(a) & set(b))
    d = [b[y] - a[y] for y in common]
    n = len(d)
    if n < 2:
        return None, n
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    return (None if sd == 0 else mean / (sd / math.sqrt(n))), n


def compare(root: Path, names: list[str]) -> dict:
    """The figures of `names` side by side (the first is the baseline); ValueError (one
    line) for a name with no experiment under `root`."""
    known = experiment_names(root)
    for name in names:
        if name not in known:
            raise ValueError(f"compare: no experiment {name!r} under {root} (known: {', '.join(known) or 'none'}); "
                             "expected the name of a run's --experiment")
    if len(set(names)) != len(names):
        raise ValueError(f"compare: an experiment is named twice in {' '.join(names)}; expected distinct names")
    figs = {n: _figures(root / n) for n in names}
    keys = list(dict.fromkeys(k for n in names for k in figs[n][0]))
    base = names[0]
    rows = []
    for key in keys:
        values = {n: figs[n][0].get(key) for n in names}
        row = {"figure": key, "values": values, "diff": {}, "t": {}, "years": {}}
        for n in names[1:]:
            a, b = values[base], values[n]
            row["diff"][n] = None if a is None or b is None else b - a
            row["t"][n], row["years"][n] = paired_t(figs[base][1].get(key, {}), figs[n][1].get(key, {}))
        rows.append(row)
    return {"baseline": base, "experiments": [summary(root, n) for n in names], "rows": rows}


def _fmt(figure: str, v: float | None, signed: bool = False) -> str:
    if v is None:
        return "n/a"
    spec = DISPLAY[figure.split(" ", 1)[1]]
    text = spec.format(v)
    return ("+" + text) if signed and v >= 0 else text


def format_table(result: dict) -> str:
    """The comparison as a fixed-width table, figures rounded to the digits worth reading."""
    names = [e["experiment"] for e in result["experiments"]]
    base, others = result["baseline"], names[1:]
    head = f"{'figure':<26}" + "".join(f"{n[:12]:>13}" for n in names)
    head += "".join(f"{(n[:8] + '-' + base[:8])[:17]:>18}{'t (years)':>12}" for n in others)
    lines = [head, "-" * len(head)]
    for row in result["rows"]:
        f = row["figure"]
        line = f"{f:<26}" + "".join(f"{_fmt(f, row['values'][n]):>13}" for n in names)
        for n in others:
            t, yrs = row["t"][n], row["years"][n]
            line += f"{_fmt(f, row['diff'][n], signed=True):>18}{(f'{t:.2f} ({yrs})' if t is not None else '-'):>12}"
        lines.append(line)
    lines.append("")
    for e in result["experiments"]:
        years = f"{e['years'][0]}..{e['years'][-1]}" if e["years"] else "no years"
        lines.append(f"{e['experiment']}: settings {e['settings_hash']}, {years}, {e['symbols'] or 'n/a'} symbols")
    return "\n".join(lines)
