"""Out-of-sample evaluation of predictions: arrays in, dicts / arrays / PNG bytes out.

Rows: one prediction p (P(label = 1)) per row with its realised outcome, either the binary
label y or the forward return ret of the same horizon. Rows where an input is not finite (a
missing prediction or a label not known yet) are DROPPED by every function here, and the dicts
say how many rows were scored (n) and dropped (n_dropped). (kernels.learn.calibration, whose
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
- `reliability_png_bytes(y, p, title)`, `equity_png_bytes(dates, equity, title)`: PNG bytes
  (matplotlib Agg figure, no pyplot, no file): the caller writes them where it wants.
"""

from __future__ import annotations

import io

import numpy as np
from scipy.stats import rankdata
from sklearn.metrics import average_precision_score

from kernels.learn.calibration import binary_labels, fold_metrics, reliability_curve

DECILE_COLUMNS = ("bin", "count", "p_mean", "p_min", "p_max", "ret_mean", "hit_rate")


def _vector(x, name: str, n: int | None = None) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {x.shape}")
    if n is not None and x.shape[0] != n:
        raise ValueError(f"{name} has {x.shape[0]} rows, expected {n}")
    return x


def _finite_rows(*arrays: np.ndarray) -> np.ndarray:
    ok = np.ones(arrays[0].shape[0], dtype=bool)
    for a in arrays:
        ok &= np.isfinite(a)
    return ok


def classification_metrics(y, p) -> dict:
    """{auc, pr_auc, brier, log_loss, n, positives, base_rate, n_dropped} over the rows where
    y and p are finite (y binary 0/1, p in [0, 1]); auc and pr_auc None with one class."""
    yf = _vector(y, "y")
    pf = _vector(p, "p", yf.shape[0])
    ok = _finite_rows(yf, pf)
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
    pf = _vector(p, "p")
    rf = _vector(ret, "ret", pf.shape[0])
    ok = _finite_rows(pf, rf)
    pf, rf = pf[ok], rf[ok]
    if pf.shape[0] < 3 or np.ptp(pf) == 0.0 or np.ptp(rf) == 0.0:
        return None
    rp = rankdata(pf) - (pf.shape[0] + 1) / 2.0
    rr = rankdata(rf) - (rf.shape[0] + 1) / 2.0
    return float(np.dot(rp, rr) / np.sqrt(np.dot(rp, rp) * np.dot(rr, rr)))


def quantile_bins(p, n_bins: int = 10) -> np.ndarray:
    """int64 bin per row: floor(n_bins * #{j: p_j < p_i} / n) (finite p only)."""
    p = _vector(p, "p")
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
    pf = _vector(p, "p")
    rf = _vector(ret, "ret", pf.shape[0])
    ok = _finite_rows(pf, rf)
    return _deciles(pf[ok], rf[ok], n_bins)


def decile_returns_by_group(p, ret, group, n_bins: int = 10) -> dict:
    """{group value (Python scalar): decile_returns of that group's rows}, groups sorted; each
    group has its own quantile bins. Rows with a NaN group are dropped."""
    pf = _vector(p, "p")
    rf = _vector(ret, "ret", pf.shape[0])
    g = np.asarray(group)
    if g.shape != pf.shape:
        raise ValueError(f"group must have shape {pf.shape}, got {g.shape}")
    ok = _finite_rows(pf, rf)
    if g.dtype.kind == "f":
        ok &= ~np.isnan(g)
    pf, rf, g = pf[ok], rf[ok], g[ok]
    return {k.item() if isinstance(k, np.generic) else k: _deciles(pf[g == k], rf[g == k], n_bins)
            for k in np.unique(g)}


# ---------------------------------------------------------------- figures


def _figure(figsize):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # no version stamp: same bytes
    return buf.getvalue()


def reliability_png_bytes(y, p, title: str = "", bins: int = 10) -> bytes:
    """Reliability diagram (top) and the prediction histogram (bottom) over finite rows, as PNG."""
    yf = _vector(y, "y")
    pf = _vector(p, "p", yf.shape[0])
    ok = _finite_rows(yf, pf)
    y1, p1 = binary_labels(yf[ok]), pf[ok]
    m = classification_metrics(y1, p1)
    fig = _figure((6.0, 6.5))
    ax, hx = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect")
    if y1.size:
        curve = reliability_curve(y1, p1, bins)
        ax.plot(curve["prob_pred"], curve["prob_true"], marker="o", label="model")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("observed positive rate")

    def fmt(v, spec):
        return "n/a" if v is None else format(v, spec)

    ax.legend(loc="upper left", title=f"n={m['n']}  AUC={fmt(m['auc'], '.3f')}  PR-AUC={fmt(m['pr_auc'], '.3f')}"
                                      f"  Brier={fmt(m['brier'], '.4f')}")
    ax.set_title(title)
    hx.hist(p1, bins=np.linspace(0, 1, bins + 1), color="tab:blue", alpha=0.7)
    hx.set_xlim(0, 1)
    hx.set_xlabel("predicted probability")
    hx.set_ylabel("rows")
    fig.tight_layout()
    return _png(fig)


def equity_png_bytes(dates, equity, title: str = "") -> bytes:
    """Equity curve (top, log scale) and drawdown from the running peak (bottom) as PNG.
    dates: datetime64 (or any 1-D x values, e.g. day numbers) or None for 0..T-1."""
    eq = _vector(equity, "equity")
    x = np.arange(eq.shape[0]) if dates is None else np.asarray(dates)
    if x.shape != eq.shape:
        raise ValueError(f"dates must have shape {eq.shape}, got {x.shape}")
    if x.dtype.kind == "M":
        x = x.astype("datetime64[D]")
    fig = _figure((8.0, 5.0))
    ax, dx = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot(x, eq, lw=1.2, color="tab:blue")
    if eq.size and np.all(eq > 0):
        ax.set_yscale("log")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel("equity (start 1.0)")
    ax.set_title(title)
    if eq.size:
        peak = np.maximum(np.maximum.accumulate(eq), 1.0)
        dd = eq / peak - 1.0
        dx.fill_between(x, dd, 0.0, color="tab:red", alpha=0.4, lw=0)
        dx.set_ylabel(f"drawdown (max {dd.min():.1%})")
    fig.tight_layout()
    return _png(fig)
