"""Look-ahead check: does a feature's value at row t change when the rows after t are cut off?

A feature is causal when its value at t is a function of rows 0..t only. Purged K-fold and
the walk-forward split protect against labels that overlap between training and test rows;
they do NOT protect against a feature that reads the future (a feature built from day t+1's
return is as available on the test rows as on the training rows, and scores out of sample
as well as in sample). That needs a check on the feature itself:

    lookahead_check(fn, columns, cuts)
        full   = fn(columns)                        the feature over the whole series
        part_c = fn({k: v[:c + 1]})                 the feature over rows 0..c only
        causal when part_c[c] == full[c] for every cut c (NaN == NaN; within rtol/atol, for
        float32 kernels whose summation order may differ with the length)

The cuts default to `n_cuts` rows drawn (seeded) from the rows after `min_row` (the warm-up
is checked too: a NaN where the full series has a value, or the reverse, is a difference).
`assert_causal` raises LookaheadError naming the feature and the first row that differs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np


class LookaheadError(ValueError):
    """A feature whose value at t depends on rows after t."""


def default_cuts(n_rows: int, n_cuts: int = 16, min_row: int = 0, seed: int = 0) -> np.ndarray:
    """`n_cuts` distinct rows in [min_row, n_rows - 2] (the last row has no future to cut), sorted."""
    lo, hi = max(min_row, 0), n_rows - 1
    if hi <= lo:
        return np.empty(0, dtype=np.int64)
    rng = np.random.default_rng(seed)
    k = min(n_cuts, hi - lo)
    return np.sort(rng.choice(np.arange(lo, hi), size=k, replace=False))


def lookahead_check(fn: Callable[[dict[str, np.ndarray]], np.ndarray], columns: Mapping[str, np.ndarray],
                    cuts=None, *, n_cuts: int = 16, min_row: int = 0, seed: int = 0, rtol: float = 1e-5,
                    atol: float = 1e-7) -> dict:
    """{"causal", "rows_checked", "first_bad_row", "max_abs_diff"} of `fn` over `columns`."""
    cols = {k: np.asarray(v) for k, v in columns.items()}
    n = len(next(iter(cols.values())))
    full = np.asarray(fn(cols), dtype=np.float64)
    if full.shape[0] != n:
        raise ValueError(f"the feature has {full.shape[0]} rows for {n} input rows")
    cuts = default_cuts(n, n_cuts, min_row, seed) if cuts is None else np.asarray(cuts, dtype=np.int64)
    bad, worst = None, 0.0
    for c in cuts.tolist():
        part = np.asarray(fn({k: v[: c + 1] for k, v in cols.items()}), dtype=np.float64)
        a, b = part[c], full[c]
        same = bool(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
        if not same:
            worst = max(worst, float("inf") if np.isnan(a) != np.isnan(b) else abs(a - b))
            bad = c if bad is None else bad
    return {"causal": bad is None, "rows_checked": int(len(cuts)), "first_bad_row": bad, "max_abs_diff": worst}


def assert_causal(name: str, fn, columns, cuts=None, **kw) -> dict:
    """lookahead_check, raising LookaheadError when the feature reads rows after t."""
    out = lookahead_check(fn, columns, cuts, **kw)
    if not out["causal"]:
        raise LookaheadError(
            f"feature {name!r} looks ahead: its value at row {out['first_bad_row']} changes when the rows after it "
            f"are removed (max difference {out['max_abs_diff']:.3g} over {out['rows_checked']} cut rows); refused")
    return out
