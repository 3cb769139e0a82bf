"""The experiments under paths.reports, and their headline figures side by side.

Reads only the reports an experiment wrote (reports/<name>/evaluation/overall.json and
<Y>.json, reports/<name>/backtest/overall.json and year_<Y>.json, reports/<name>/experiment.json);
the JSON field names are the stages' own.

`compare(root, names)`: one row per figure: per horizon AUC, PR-AUC, Brier, rank IC, ICIR,
long-short Sharpe (the `overall` scope: every stored prediction year), then the backtest's
Sharpe, CAGR, max drawdown and turnover. For each experiment after the first: the difference
to the first and, where both have the figure for two or more common years, the paired
t-statistic of the yearly differences (mean / (sd / sqrt(n)), n years).

Before the figures, `differences`: everything that can move a figure and differs from the
baseline: coverage (evaluated symbols and years, the backtest's span and symbols, rows per
horizon: the evaluation's per-horizon `coverage.rows_used` where the report has it, else its
`n`), the frozen settings (the manifests' `settings`, and the backtest reports' own
`settings` for experiments frozen before the backtest entered the hash) and the code
versions (the manifests' `code_versions`: feature packs and plugin entries). Where the rows
of a horizon (or the backtest's symbols or days) differ by more than ROWS_TOLERANCE of the
larger, that horizon's figure lines carry a warning (`row["warning"]`): the figures stand on
different rows; `compare --common` (domain.experiment_common) recomputes them on the rows
every experiment shares.

`rank(root, figure, horizons)` (`experiments --by h7_rank_ic`): the experiments best first on
one overall figure (SMALLER_IS_BETTER names the figures ranked smallest first), those without
it last.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from config.experiments import MANIFEST, differences, read_manifest

EVAL_FIGURES = ("auc", "pr_auc", "brier", "rank_ic", "icir", "long_short_sharpe")
# the backtest's figures, then its figures against its benchmark (domain.backtest)
BACKTEST_FIGURES = ("sharpe", "cagr", "max_drawdown", "annual_turnover", "excess_return", "information_ratio")
# digits a person reads: rounded on display (the JSON keeps full precision)
DISPLAY = {"auc": "{:.3f}", "pr_auc": "{:.3f}", "brier": "{:.4f}", "rank_ic": "{:.4f}", "icir": "{:.3f}",
           "long_short_sharpe": "{:.2f}", "sharpe": "{:.2f}", "cagr": "{:.1%}", "max_drawdown": "{:.1%}",
           "annual_turnover": "{:.1f}", "excess_return": "{:.1%}", "information_ratio": "{:.2f}"}
ROWS_TOLERANCE = 0.05  # rows differing by more than this share of the larger: a warning on the figure's line
# backtest settings that change no figure (config.experiments.NO_FIGURE)
BACKTEST_NO_FIGURE = ("chunk_days",)
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
        m = pattern.fullmatch(p.name)
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
    years = sorted(_yearly(folder / "evaluation", YEAR_FILE)) or sorted(_yearly(folder / "backtest", BACKTEST_YEAR_FILE)) \
        or [y for y in overall.get("years") or [] if isinstance(y, int)]
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


def coverage(folder: Path) -> dict:
    """What the figures of one experiment stand on, from its reports: evaluated `symbols`,
    `years` and `rows`, the backtest's `backtest` {from, to, symbols}, and per horizon
    `h{H}` {rows, and where the report has its `coverage`: rows_available, symbols,
    symbols_available, left_out}. Absent facts are None."""
    ev = _read(folder / "evaluation" / "overall.json") or {}
    bt = _read(folder / "backtest" / "overall.json") or {}
    out = {"symbols": ev.get("symbols"), "years": ev.get("years"), "rows": ev.get("rows"),
           "backtest": {"from": bt.get("from"), "to": bt.get("to"), "symbols": bt.get("symbols")}}
    for key in sorted((k for k in ev if re.fullmatch(r"h\d+", k)), key=lambda k: int(k[1:])):
        rep = ev.get(key) or {}
        cov = rep.get("coverage") if isinstance(rep.get("coverage"), dict) else None
        if cov is None:
            out[key] = {"rows": rep.get("n")}
        else:
            out[key] = {"rows": cov.get("rows_used", rep.get("n")), "rows_available": cov.get("rows_available"),
                        "symbols": cov.get("symbols_used"), "symbols_available": cov.get("symbols_available"),
                        "left_out": cov.get("left_out")}
    return out


def _much_apart(a, b) -> bool:
    """Whether two counts differ by more than ROWS_TOLERANCE of the larger (False when one is missing)."""
    a, b = _num(a), _num(b)
    return a is not None and b is not None and abs(a - b) > ROWS_TOLERANCE * max(abs(a), abs(b))


def _days(span: dict) -> int | None:
    import datetime as dt

    try:
        return (dt.date.fromisoformat(span["to"]) - dt.date.fromisoformat(span["from"])).days + 1
    except (TypeError, ValueError, KeyError):
        return None


def _coverage_items(covs: dict[str, dict]) -> list[dict]:
    """[{item, values: {name: value}, warn}] for every coverage fact that is not the same in
    every experiment; `warn`: counts more than ROWS_TOLERANCE apart."""
    names = list(covs)
    items: list[tuple[str, dict, bool]] = []

    def add(item: str, values: dict, counts: dict | None = None) -> None:
        if len({json.dumps(v, sort_keys=True) for v in values.values()}) > 1:
            counts = values if counts is None else counts
            warn = any(_much_apart(counts[names[0]], counts[n]) for n in names[1:])
            items.append((item, values, warn))

    add("evaluation symbols", {n: covs[n]["symbols"] for n in names})
    add("evaluation years", {n: covs[n]["years"] for n in names}, {n: None for n in names})
    add("backtest span", {n: [covs[n]["backtest"]["from"], covs[n]["backtest"]["to"]] for n in names},
        {n: _days(covs[n]["backtest"]) for n in names})
    add("backtest symbols", {n: covs[n]["backtest"]["symbols"] for n in names})
    horizons = dict.fromkeys(k for n in names for k in covs[n] if re.fullmatch(r"h\d+", k))
    for h in horizons:
        for fact in ("rows", "rows_available", "symbols", "symbols_available", "left_out"):
            values = {n: (covs[n].get(h) or {}).get(fact) for n in names}
            if fact == "rows" or any(v is not None for v in values.values()):
                add(f"{h} {fact.replace('_', ' ')}", values,
                    None if fact in ("rows", "symbols") else {n: None for n in names})
    return [{"item": i, "values": v, "warn": w} for i, v, w in items]


def _settings_lines(root: Path, base: str, other: str) -> list[str]:
    """The frozen settings that differ (config.experiments.differences of the manifests'
    `settings`, plugin entries left to the code versions), then the backtest reports' own
    settings for keys the manifests do not name (experiments frozen before the backtest
    entered the hash)."""
    a, b = (dict((read_manifest(root / n) or {}).get("settings") or {}) for n in (base, other))
    for m in (a, b):
        m.pop("plugins", None)
    lines = differences(a, b)
    named = {line.split(" ", 1)[0] for line in lines}
    ra, rb = ((_read(root / n / "backtest" / "overall.json") or {}).get("settings") for n in (base, other))
    if isinstance(ra, dict) and isinstance(rb, dict):
        for key in BACKTEST_NO_FIGURE:
            ra.pop(key, None)
            rb.pop(key, None)
        lines += [f"backtest.{line} (backtest report)" for line in differences(ra, rb)
                  if f"backtest.{line.split(' ', 1)[0]}" not in named]
    return lines


def _code_lines(root: Path, base: str, other: str) -> list[str]:
    """The code versions that differ (the manifests' `code_versions`: packs, plugin entries);
    one line saying so where a manifest records none (frozen before they were recorded)."""
    a, b = ((read_manifest(root / n) or {}).get("code_versions") for n in (base, other))
    if a is None or b is None:
        missing = [n for n, v in ((base, a), (other, b)) if v is None]
        return [f"not recorded for {', '.join(missing)} (frozen before code versions were recorded)"]
    return differences(a, b)


def experiment_differences(root: Path, names: list[str]) -> dict:
    """{coverage: [{item, values, warn}], settings: {name: [line]}, code_versions: {name:
    [line]}}: what differs between the baseline names[0] and each other experiment."""
    covs = {n: coverage(root / n) for n in names}
    return {"coverage": _coverage_items(covs),
            "settings": {n: _settings_lines(root, names[0], n) for n in names[1:]},
            "code_versions": {n: _code_lines(root, names[0], n) for n in names[1:]}}


def _warnings(names: list[str], covs: dict[str, dict]) -> dict[str, str]:
    """{figure group ("h7", "backtest"): the warning of its lines} where the baseline's rows
    (backtest: symbols or days) and another experiment's are more than ROWS_TOLERANCE apart."""
    out = {}
    base = names[0]
    horizons = dict.fromkeys(k for n in names for k in covs[n] if re.fullmatch(r"h\d+", k))
    for h in horizons:
        rows = {n: (covs[n].get(h) or {}).get("rows") for n in names}
        apart = [n for n in names[1:] if _much_apart(rows[base], rows[n])]
        if apart:
            out[h] = "! rows differ " + " vs ".join(f"{rows[n]:,}" for n in (base, *apart))
    bt = {n: covs[n]["backtest"] for n in names}
    for fact, count in (("symbols", lambda b: b["symbols"]), ("days", _days)):
        values = {n: count(bt[n]) for n in names}
        apart = [n for n in names[1:] if _much_apart(values[base], values[n])]
        if apart and "backtest" not in out:
            out["backtest"] = f"! {fact} differ " + " vs ".join(f"{values[n]:,}" for n in (base, *apart))
    return out


# Figures where a smaller value is better when ranking (`experiments --by`): the Brier score,
# the drawdown's magnitude (max_drawdown is <= 0: ranked by its absolute value) and the
# turnover (it costs fees); every other figure ranks the larger first.
SMALLER_IS_BETTER = ("brier", "max_drawdown", "annual_turnover")


def figure_names(root: Path, horizons: list[int]) -> list[str]:
    """The names `experiments --by` takes: h{H}_<figure> for `horizons` and every horizon an
    experiment's evaluation reports, then backtest_<figure>."""
    found = {int(k.split(" ", 1)[0][1:]) for n in experiment_names(root) for k in _figures(root / n)[0]
             if k.startswith("h")}
    return [f"h{h}_{f}" for h in sorted(set(horizons) | found) for f in EVAL_FIGURES] + \
        [f"backtest_{f}" for f in BACKTEST_FIGURES]


def _rank_value(figure: str, v: float) -> float:
    """The value sorted ascending: best first (SMALLER_IS_BETTER, max_drawdown by magnitude)."""
    kind = figure.split("_", 1)[1]
    if kind == "max_drawdown":
        return abs(v)
    return v if kind in SMALLER_IS_BETTER else -v


def rank(root: Path, figure: str, horizons: list[int]) -> list[dict]:
    """The experiments' summaries with `value` (the overall figure `figure`, e.g. h7_rank_ic,
    backtest_sharpe) and `rank` (1 = best, see SMALLER_IS_BETTER), best first; experiments
    without the figure last (value and rank None), by name. ValueError (one line, the valid
    names) for an unknown figure."""
    valid = figure_names(root, horizons)
    if figure not in valid:
        raise ValueError(f"experiments --by {figure}: not a figure; expected one of {', '.join(valid)}")
    key = figure.replace("_", " ", 1)
    rows = [{**summary(root, n), "figure": figure, "value": _figures(root / n)[0].get(key)}
            for n in experiment_names(root)]
    have = sorted((r for r in rows if r["value"] is not None), key=lambda r: (_rank_value(figure, r["value"]),
                                                                              r["experiment"]))
    for i, r in enumerate(have, 1):
        r["rank"] = i
    lacking = [{**r, "rank": None} for r in rows if r["value"] is None]
    return have + lacking


def format_figure(figure: str, v: float | None) -> str:
    """A figure named as `experiments --by` names it (h7_auc, backtest_sharpe), as displayed."""
    return _fmt(figure.replace("_", " ", 1), v)


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


def check_names(root: Path, names: list[str], command: str = "compare") -> None:
    """ValueError (one line, naming `command`) for a name with no experiment under `root`, or a
    name given twice."""
    known = experiment_names(root)
    for name in names:
        if name not in known:
            raise ValueError(f"{command}: no experiment {name!r} under {root} (known: {', '.join(known) or 'none'}); "
                             "expected the name of a run's --experiment")
    if len(set(names)) != len(names):
        raise ValueError(f"{command}: an experiment is named twice in {' '.join(names)}; expected distinct names")


def _on_common_rows(figs: dict, common: dict) -> dict:
    """`figs` ({name: (overall, yearly)}) with every evaluation figure replaced by its value on
    the shared rows (domain.experiment_common.common_figures; None for a horizon not shared)."""
    out = {}
    for n, (overall, yearly) in figs.items():
        overall, yearly = dict(overall), dict(yearly)
        for key in [k for k in overall if not k.startswith("backtest ")] + list(common["overall"][n]):
            overall[key] = _num(common["overall"][n].get(key))
            yearly[key] = {y: v for y, x in common["yearly"][n].get(key, {}).items() if (v := _num(x)) is not None}
        out[n] = (overall, yearly)
    return out


def compare(root: Path, names: list[str], common: dict | None = None) -> dict:
    """The figures of `names` side by side (the first is the baseline); ValueError (one
    line) for a name with no experiment under `root`. `common`: the evaluation figures on
    the rows every experiment shares (domain.experiment_common.common_figures), which then
    replace the stored ones (`result["common"]`: the shared rows per horizon); the rows no
    longer differ, so only the backtest's lines keep a warning."""
    check_names(root, names)
    figs = {n: _figures(root / n) for n in names}
    if common is not None:
        figs = _on_common_rows(figs, common)
    keys = list(dict.fromkeys(k for n in names for k in figs[n][0]))
    base = names[0]
    warnings = _warnings(names, {n: coverage(root / n) for n in names})
    if common is not None:
        warnings = {k: v for k, v in warnings.items() if k == "backtest"}
    rows = []
    for key in keys:
        values = {n: figs[n][0].get(key) for n in names}
        row = {"figure": key, "values": values, "diff": {}, "t": {}, "years": {},
               "warning": warnings.get(key.split(" ", 1)[0])}
        for n in names[1:]:
            a, b = values[base], values[n]
            row["diff"][n] = None if a is None or b is None else b - a
            row["t"][n], row["years"][n] = paired_t(figs[base][1].get(key, {}), figs[n][1].get(key, {}))
        rows.append(row)
    return {"baseline": base, "experiments": [summary(root, n) for n in names],
            "coverage": {n: coverage(root / n) for n in names},
            "differences": experiment_differences(root, names), "rows": rows,
            "common": None if common is None else {"horizons": common["horizons"]}}


def _fmt(figure: str, v: float | None, signed: bool = False) -> str:
    if v is None:
        return "n/a"
    spec = DISPLAY[figure.split(" ", 1)[1]]
    text = spec.format(v)
    return ("+" + text) if signed and v >= 0 else text


def _shown(v) -> str:
    """A coverage value as read: counts with thousands separators, a year list as its span."""
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, list) and v and all(isinstance(y, int) for y in v):
        return f"{v[0]}..{v[-1]} ({len(v)})" if len(v) > 1 else str(v[0])
    if isinstance(v, list) and len(v) == 2 and all(isinstance(d, (str, type(None))) for d in v):
        return f"{v[0] or '?'}..{v[1] or '?'}"
    return json.dumps(v, sort_keys=True)


def format_differences(result: dict) -> list[str]:
    """The `differences` section: one line per coverage fact, settings key and code version
    that differs from the baseline (`!`: counts more than ROWS_TOLERANCE apart)."""
    d, base = result["differences"], result["baseline"]
    lines = [f"differences from {base} (anything that can move a figure):"]
    for item in d["coverage"]:
        values = ", ".join(f"{n} {_shown(v)}" for n, v in item["values"].items())
        lines.append(f"  coverage  {item['item']}: {values}" + ("  !" if item["warn"] else ""))
    for kind, label in (("settings", "settings"), ("code_versions", "code    ")):
        for name, changes in d[kind].items():
            lines += [f"  {label}  {name}: {c}" for c in changes]
    if len(lines) == 1:
        lines.append("  none: the same coverage, settings and code versions")
    return lines + [""]


# the evaluation's AUC is pooled (one AUC over every out-of-sample row), not a mean of
# yearly AUCs: its printed name says so (the JSON key and `--by` keep `auc`)
SHOWN = {"auc": "pooled auc"}


def shown_figure(key: str) -> str:
    """The printed name of a figure row key (`h7 auc` -> `h7 pooled auc`)."""
    scope, _, figure = key.partition(" ")
    return f"{scope} {SHOWN.get(figure, figure)}" if scope.startswith("h") else key


def format_table(result: dict) -> str:
    """The differences, then the comparison as a fixed-width table, figures rounded to the
    digits worth reading; a line whose experiments stand on rows more than ROWS_TOLERANCE
    apart ends with its warning, explained below the table."""
    names = [e["experiment"] for e in result["experiments"]]
    base, others = result["baseline"], names[1:]
    lines = format_differences(result)
    if result.get("common"):
        shared = ", ".join(f"{h} {c['rows']:,}" for h, c in result["common"]["horizons"].items())
        lines += [f"evaluation figures on the shared rows (--common: a finite prediction in every experiment): "
                  f"{shared} shared rows; backtest figures as stored", ""]
    head = f"{'figure':<26}" + "".join(f"{n[:12]:>13}" for n in names)
    head += "".join(f"{(n[:8] + '-' + base[:8])[:17]:>18}{'t (years)':>12}" for n in others)
    lines += [head, "-" * len(head)]
    for row in result["rows"]:
        f = row["figure"]
        line = f"{shown_figure(f):<26}" + "".join(f"{_fmt(f, row['values'][n]):>13}" for n in names)
        for n in others:
            t, yrs = row["t"][n], row["years"][n]
            line += f"{_fmt(f, row['diff'][n], signed=True):>18}{(f'{t:.2f} ({yrs})' if t is not None else '-'):>12}"
        if row.get("warning"):
            line += f"  {row['warning']}"
        lines.append(line)
    lines.append("")
    if any(row.get("warning") for row in result["rows"]):
        lines += [f"! the experiments' rows (backtest: symbols or days) differ by more than {ROWS_TOLERANCE:.0%}: those "
                  "figures stand on different rows; `compare --common` recomputes the evaluation figures on the "
                  "rows both have", ""]
    for e in result["experiments"]:
        years = f"{e['years'][0]}..{e['years'][-1]}" if e["years"] else "no years"
        lines.append(f"{e['experiment']}: settings {e['settings_hash']}, {years}, {e['symbols'] or 'n/a'} symbols")
    return "\n".join(lines)


# the readers other modules share (domain.experiment_report)
read_report = _read
yearly_reports = _yearly
experiment_figures = _figures
