"""Out-of-sample evaluation of predictions: arrays in, dicts and arrays out (the figures:
domain.learning.plots).

Rows: one prediction p (P(label = 1)) per row with its realised outcome, either the binary
label y or the forward return ret of the same horizon. Rows where an input is not finite (a
missing prediction or a label not known yet) are DROPPED by every function here, and the dicts
say how many rows were scored (n) and dropped (n_dropped). (domain.learning.calibration, whose
metrics these reuse, refuses non-finite rows instead: there a silent drop would be a bug.)

- `classification_metrics(y, p)`: auc, pr_auc, brier, log_loss, n, positives, base_rate,
  n_dropped. auc/brier/log_loss come from calibration.fold_metrics; pr_auc is sklearn's
  average_precision_score. With one class only, auc and pr_auc are None (no ranking to judge);
  brier and log_loss are still defined. No rows: every score None.
- `information_coefficient(p, ret)`: Spearman rank correlation (average ranks for ties) =
  Pearson correlation of the ranks. None with fewer than 3 rows or when p or ret is constant.
- `decile_returns(p, ret, n_bins)`: rows binned by their predicted probability into quantile
  bins, ties deterministic: bin_i = floor(n_bins * #{j: p_j < p_i} / n). Without ties these are
  the n_bins rank bins (sizes differ by at most 1); tied predictions always share a bin (the bin
  of their lowest rank), so with fewer distinct values than bins, fewer bins come back (empty
  bins are left out; `bin` keeps the quantile index 0..n_bins-1, 0 = lowest p). Per bin: count,
  p_mean, p_min, p_max, ret_mean, hit_rate (fraction of rows with ret > 0).
- `decile_returns_by_group(p, ret, group, n_bins)`: the same within each group (e.g. regime):
  each group's rows get their own quantile bins. Rows with a NaN group are dropped.

Signal analysis (cross-sectional, as Qlib's analysis_model): rows are (day, symbol, p, ret).
- `cross_section(day, symbol, p, ret, min_symbols, n_bins)`: per day with at least
  `min_symbols` usable rows (p and ret finite), in day order:
    ic            the day's rank IC: Spearman of p with ret across the day's symbols
                  (information_coefficient; NaN when p or ret is constant that day)
    long, short   mean ret of the k = max(1, n // n_bins) highest-p / lowest-p symbols of the
                  day (n_bins=10: the top and bottom decile; ties broken by row order, as
                  pandas nlargest / nsmallest with keep="first")
    long_short    long - short (the top-minus-bottom decile return)
    top_turnover, bottom_turnover   1 - |S_t & S_prev| / |S_t| for the day's top (bottom)
                  set S_t and that of the previous day kept (NaN on the first day): the share
                  of the equal-weight portfolio's names replaced (Qlib's pred turnover)
  Days with fewer usable rows are left out and counted (n_days_excluded of n_days).
- `ic_summary(ic)`: mean, std (ddof=1), ICIR = mean / std, share of days with IC > 0, over
  the days where the IC is defined; the cumulative IC curve is np.nancumsum(ic).
- `sharpe_ratio(r, periods_per_year)`: mean / std (ddof=1) * sqrt(periods_per_year) of the
  finite values. For the long-short series of horizon H, each day's value is an H-day return
  (overlapping), so periods_per_year = 252 / H (`annualization(H)`).
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score

from domain.learning.calibration import average_ranks, binary_labels, fold_metrics  # noqa: F401 (average_ranks: re-exported)
from kernels.backtest.stats import sharpe

DECILE_COLUMNS = ("bin", "count", "p_mean", "p_min", "p_max", "ret_mean", "hit_rate")
CROSS_SECTION_COLUMNS = ("n", "ic", "long", "short", "long_short", "top_turnover", "bottom_turnover")
TRADING_DAYS = 252


def as_vector(x, name: str, n: int | None = None) -> np.ndarray:
    """`x` as a float64 1-D array (of `n` rows when given); a ValueError naming `name` else."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {x.shape}")
    if n is not None and x.shape[0] != n:
        raise ValueError(f"{name} has {x.shape[0]} rows, expected {n}")
    return x


def finite_rows(*arrays: np.ndarray) -> np.ndarray:
    """bool [n]: the rows where every array is finite."""
    ok = np.ones(arrays[0].shape[0], dtype=bool)
    for a in arrays:
        ok &= np.isfinite(a)
    return ok


def classification_metrics(y, p) -> dict:
    """{auc, pr_auc, brier, log_loss, n, positives, base_rate, n_dropped} over the rows where
    y and p are finite (y binary 0/1, p in [0, 1]); auc and pr_auc None with one class."""
    yf = as_vector(y, "y")
    pf = as_vector(p, "p", yf.shape[0])
    ok = finite_rows(yf, pf)
    y1 = binary_labels(yf[ok])
    p1 = pf[ok]
    m = fold_metrics(y1, p1)
    n, pos = m["n"], m["positives"]
    two_classes = 0 < pos < n
    return {
        "auc": m["auc"],
        "pr_auc": float(average_precision_score(y1, p1)) if two_classes else None,
        "brier": m["brier"],
        "log_loss": m["log_loss"],
        "n": n,
        "positives": pos,
        "base_rate": pos / n if n else None,
        "n_dropped": int((~ok).sum()),
    }


def information_coefficient(p, ret) -> float | None:
    """Spearman rank correlation of p and ret over rows where both are finite; None with fewer
    than 3 rows or a constant input."""
    pf = as_vector(p, "p")
    rf = as_vector(ret, "ret", pf.shape[0])
    ok = finite_rows(pf, rf)
    pf, rf = pf[ok], rf[ok]
    if pf.shape[0] < 3 or np.ptp(pf) == 0.0 or np.ptp(rf) == 0.0:
        return None
    rp = average_ranks(pf) - (pf.shape[0] + 1) / 2.0
    rr = average_ranks(rf) - (rf.shape[0] + 1) / 2.0
    return float(np.dot(rp, rr) / np.sqrt(np.dot(rp, rp) * np.dot(rr, rr)))


def quantile_bins(p, n_bins: int = 10) -> np.ndarray:
    """int64 bin per row: floor(n_bins * #{j: p_j < p_i} / n) (finite p only)."""
    p = as_vector(p, "p")
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    if not np.isfinite(p).all():
        raise ValueError("p has non-finite values: bin the rows that have a prediction")
    n = p.shape[0]
    below = np.searchsorted(np.sort(p, kind="stable"), p, side="left")  # #{j: p_j < p_i}
    return (below * n_bins) // max(n, 1)


def _deciles(p: np.ndarray, ret: np.ndarray, n_bins: int) -> dict[str, np.ndarray]:
    b = quantile_bins(p, n_bins)
    count = np.bincount(b, minlength=n_bins)
    keep = np.flatnonzero(count)
    safe = np.maximum(count, 1)
    p_min = np.full(n_bins, np.inf)
    p_max = np.full(n_bins, -np.inf)
    np.minimum.at(p_min, b, p)
    np.maximum.at(p_max, b, p)
    return {
        "bin": keep.astype(np.int64),
        "count": count[keep].astype(np.int64),
        "p_mean": (np.bincount(b, weights=p, minlength=n_bins) / safe)[keep],
        "p_min": p_min[keep],
        "p_max": p_max[keep],
        "ret_mean": (np.bincount(b, weights=ret, minlength=n_bins) / safe)[keep],
        "hit_rate": (np.bincount(b, weights=(ret > 0.0).astype(np.float64), minlength=n_bins) / safe)[keep],
    }


def decile_returns(p, ret, n_bins: int = 10) -> dict[str, np.ndarray]:
    """Per non-empty quantile bin of p (module docstring): bin, count, p_mean, p_min, p_max,
    ret_mean, hit_rate; rows where p or ret is not finite are dropped."""
    pf = as_vector(p, "p")
    rf = as_vector(ret, "ret", pf.shape[0])
    ok = finite_rows(pf, rf)
    return _deciles(pf[ok], rf[ok], n_bins)


def decile_returns_by_group(p, ret, group, n_bins: int = 10) -> dict:
    """{group value (Python scalar): decile_returns of that group's rows}, groups sorted; each
    group has its own quantile bins. Rows with a NaN group are dropped."""
    pf = as_vector(p, "p")
    rf = as_vector(ret, "ret", pf.shape[0])
    g = np.asarray(group)
    if g.shape != pf.shape:
        raise ValueError(f"group must have shape {pf.shape}, got {g.shape}")
    ok = finite_rows(pf, rf)
    if g.dtype.kind == "f":
        ok &= ~np.isnan(g)
    pf, rf, g = pf[ok], rf[ok], g[ok]
    return {k.item() if isinstance(k, np.generic) else k: _deciles(pf[g == k], rf[g == k], n_bins)
            for k in np.unique(g)}


# ---------------------------------------------------------------- signal analysis (cross-sectional)


def cross_section(day, symbol, p, ret, *, min_symbols: int = 5, n_bins: int = 10) -> dict:
    """Daily cross-sectional figures (module docstring): {"days": the kept days (day's dtype,
    sorted), n, ic, long, short, long_short, top_turnover, bottom_turnover (arrays, one per
    kept day), n_days (days with a usable row), n_days_excluded, min_symbols, n_bins}."""
    pf = as_vector(p, "p")
    n_rows = pf.shape[0]
    rf = as_vector(ret, "ret", n_rows)
    d = np.asarray(day)
    sym = np.asarray(symbol)
    if d.shape != (n_rows,) or sym.shape != (n_rows,):
        raise ValueError(f"day and symbol must have shape ({n_rows},), got {d.shape} and {sym.shape}")
    if min_symbols < 1 or n_bins < 1:
        raise ValueError(f"min_symbols and n_bins must be >= 1, got {min_symbols} and {n_bins}")
    ok = finite_rows(pf, rf)
    order = np.flatnonzero(ok)[np.argsort(d[ok], kind="stable")]  # by day, rows in their order within a day
    d, sym, pf, rf = d[order], sym[order], pf[order], rf[order]
    days, starts, counts = np.unique(d, return_index=True, return_counts=True)
    keep = counts >= min_symbols
    out: dict = {c: np.full(int(keep.sum()), np.nan) for c in CROSS_SECTION_COLUMNS}
    out["n"] = counts[keep].astype(np.int64)
    prev_top = prev_bottom = None
    for i, (a, m) in enumerate(zip(starts[keep], counts[keep])):
        pd_, rd, sd = pf[a:a + m], rf[a:a + m], sym[a:a + m]
        ic = information_coefficient(pd_, rd)
        out["ic"][i] = np.nan if ic is None else ic
        k = max(1, m // n_bins)
        top = np.argsort(-pd_, kind="stable")[:k]
        bottom = np.argsort(pd_, kind="stable")[:k]
        out["long"][i], out["short"][i] = rd[top].mean(), rd[bottom].mean()
        top_set, bottom_set = set(sd[top].tolist()), set(sd[bottom].tolist())
        if prev_top is not None:
            out["top_turnover"][i] = 1.0 - len(top_set & prev_top) / len(top_set)
            out["bottom_turnover"][i] = 1.0 - len(bottom_set & prev_bottom) / len(bottom_set)
        prev_top, prev_bottom = top_set, bottom_set
    out["long_short"] = out["long"] - out["short"]
    out.update(days=days[keep], n_days=int(days.shape[0]), n_days_excluded=int((~keep).sum()),
               min_symbols=int(min_symbols), n_bins=int(n_bins))
    return out


def ic_summary(ic) -> dict:
    """{rank_ic, rank_ic_std, icir, ic_positive, n}: mean, std (ddof=1), mean / std and the
    share of IC > 0 over the finite daily ICs; None where undefined (no day; std needs 2
    days and is not 0)."""
    x = as_vector(ic, "ic")
    x = x[np.isfinite(x)]
    n = int(x.shape[0])
    mean = float(x.mean()) if n else None
    std = float(x.std(ddof=1)) if n >= 2 else None
    return {"rank_ic": mean, "rank_ic_std": std, "icir": mean / std if std else None,
            "ic_positive": float((x > 0).mean()) if n else None, "n": n}


def annualization(horizon: int) -> float:
    """Periods per year of a daily series of overlapping `horizon`-day returns: 252 / H."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    return TRADING_DAYS / horizon


def sharpe_ratio(returns, periods_per_year: float = TRADING_DAYS) -> float | None:
    """mean / std (ddof=1) * sqrt(periods_per_year) of the finite returns; None with fewer
    than 2 of them or constant ones (kernels.backtest.stats.sharpe, the one Sharpe)."""
    x = as_vector(returns, "returns")
    return sharpe(x[np.isfinite(x)], periods_per_year)  # the backtest's Sharpe (kernels.backtest.stats)


def turnover_mean(turnover) -> float | None:
    """Mean of the finite daily turnovers (the first kept day has none); None without any."""
    x = as_vector(turnover, "turnover")
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.shape[0] else None
