"""What a meta model's figures stand on: the rows and symbols it used against those available,
and why the rest were left out.

`row_coverage(X, names, labelled, symbols, missing)` over the rows of one split (training or
out of sample) of one (year, horizon):

    rows              every row of the split (the specialists' rows of those days)
    rows_labelled     the rows with a realised label (the rest: `no label`, the last days)
    warm_up           labelled rows without any input value outside the regime one-hot
                      (domain.learning.matrix.valued_rows: a warm-up, left out whatever the rule)
    rows_available    rows_labelled - warm_up: the rows a model could use
    rows_used         the rows the missing-value rule uses (usable_rows); rows_available -
                      rows_used were left out for a missing input (only under `drop`)
    coverage          rows_used / rows_available (None when nothing is available)
    symbols_available, symbols_used   symbols with an available / a used row
    missing_values    {column: available rows where it has no value}, the 10 largest
    empty_columns     {column: symbols whose available rows all lack it}, the 10 largest
    symbols_lacking   symbols with at least one such column

`check_floor` raises CoverageError (one line: the year, horizon, counts, the columns that
emptied the rows and the settings that would help) when coverage < settings meta.min_coverage.
`coverage_note` is the short text every printed figure carries, e.g.
`3 of 23 symbols, 1,509 of 25,300 rows; 20 symbols left out, lacking a158_VMA5, a158_VSTD5, ...`.
"""

from __future__ import annotations

import numpy as np

from config.settings import SettingsError
from domain.learning.matrix import usable_rows, valued_rows

TOP = 10  # columns listed per record


class CoverageError(SettingsError):
    """A meta model would use fewer rows than settings meta.min_coverage asks (the user's
    settings and data: exit 2 from the CLI, pipeline.run_report.USER_ERRORS)."""


def _top(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: (-kv[1], kv[0]))[:TOP])


def row_coverage(X: np.ndarray, names: list[str], labelled: np.ndarray, symbols: np.ndarray, missing: str) -> dict:
    """The record above for the rows of X (all rows of the split; `labelled` marks those
    with a realised label, `symbols` names each row's symbol)."""
    X = np.asarray(X)
    labelled = np.asarray(labelled, dtype=bool)
    symbols = np.asarray(symbols)
    valued = valued_rows(X, names) & labelled
    used = usable_rows(X, names, missing) & valued
    avail_syms = np.unique(symbols[valued])
    finite = np.isfinite(X[valued])
    missing_values = {n: int((~finite[:, j]).sum()) for j, n in enumerate(names)}
    empty: dict[str, int] = {}
    lacking = 0
    sym_valued = symbols[valued]
    for s in avail_syms:
        rows = finite[sym_valued == s]
        gone = [n for j, n in enumerate(names) if not rows[:, j].any()]
        lacking += bool(gone)
        for n in gone:
            empty[n] = empty.get(n, 0) + 1
    available = int(valued.sum())
    return {
        "rows": int(X.shape[0]),
        "rows_labelled": int(labelled.sum()),
        "warm_up": int((labelled & ~valued_rows(X, names)).sum()),
        "rows_available": available,
        "rows_used": int(used.sum()),
        "coverage": (float(used.sum()) / available) if available else None,
        "symbols_available": int(len(avail_syms)),
        "symbols_used": int(len(np.unique(symbols[used]))),
        "missing_values": _top(missing_values),
        "empty_columns": _top(empty),
        "symbols_lacking": int(lacking),
        "missing": missing,
    }


def _columns(cov: dict, limit: int = 3) -> str:
    cols = list(cov.get("empty_columns") or cov.get("missing_values") or {})
    if not cols:
        return ""
    more = len(cols) - limit
    return ", ".join(cols[:limit]) + (f", ... ({more} more)" if more > 0 else "")


def left_out_reason(cov: dict | None) -> str:
    """Why rows of `cov` were left out or filled, in words: `n symbols left out, lacking c1,
    c2, ...` (whole columns empty for some symbols; `filled, lacking` under fill, `lacking`
    under native) or `left out for a missing c1, ...`; '' when nothing is to say."""
    if not cov:
        return ""
    if cov.get("symbols_lacking") and cov.get("empty_columns"):
        verb = {"drop": "left out, lacking", "fill": "filled, lacking", "native": "lacking"}
        n = cov["symbols_lacking"]
        return f"{n} symbol{'s' if n != 1 else ''} {verb.get(cov.get('missing'), 'lacking')} {_columns(cov)}"
    if cov["rows_used"] < cov["rows_available"]:
        return f"left out for a missing {_columns(cov)}"
    return ""


def coverage_note(cov: dict | None) -> str:
    """`U of A symbols, u of a rows` (+ `; ` left_out_reason when there is one); '' when
    there is no record."""
    if not cov:
        return ""
    text = (f"{cov['symbols_used']} of {cov['symbols_available']} symbols, "
            f"{cov['rows_used']:,} of {cov['rows_available']:,} rows")
    reason = left_out_reason(cov)
    return f"{text}; {reason}" if reason else text


def merge(records: list[dict]) -> dict | None:
    """One record for several splits or years: counts summed, symbols the largest of the
    parts (a symbol counts once per part), columns summed; None without records."""
    records = [r for r in records if r]
    if not records:
        return None
    out = {k: sum(r[k] for r in records) for k in ("rows", "rows_labelled", "warm_up", "rows_available", "rows_used")}
    out["coverage"] = out["rows_used"] / out["rows_available"] if out["rows_available"] else None
    for k in ("symbols_available", "symbols_used", "symbols_lacking"):
        out[k] = max(r[k] for r in records)
    for k in ("missing_values", "empty_columns"):
        acc: dict[str, int] = {}
        for r in records:
            for c, v in (r.get(k) or {}).items():
                acc[c] = acc.get(c, 0) + v if k == "missing_values" else max(acc.get(c, 0), v)
        out[k] = _top(acc)
    out["missing"] = records[0].get("missing")
    return out


def check_floor(cov: dict, floor: float, what: str) -> None:
    """CoverageError (one line) when `cov`'s coverage is below `floor`; `what` names the
    split, e.g. `meta_model 2011 h7 training rows`."""
    if cov["coverage"] is None or cov["coverage"] >= floor:
        return
    cols = _columns(cov, limit=5) or "(none)"
    raise CoverageError(
        f"{what}: {cov['rows_used']:,} of {cov['rows_available']:,} rows usable ({cov['coverage']:.0%}, "
        f"{cov['symbols_used']} of {cov['symbols_available']} symbols) under meta.min_coverage {floor:g} with "
        f"meta.missing {cov['missing']}; the rows were emptied by {cols}; expected meta.missing: fill or native "
        "(a tree model), meta.inputs without those columns' pack, or a lower meta.min_coverage")
