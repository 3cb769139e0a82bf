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
- `cumulative_ic_png_bytes`, `long_short_png_bytes`, `decile_bars_png_bytes`: the plots.
"""

from __future__ import annotations

import io

import numpy as np
from scipy.stats import rankdata
from sklearn.metrics import average_precision_score

from kernels.learn.calibration import binary_labels, fold_metrics, reliability_curve

DECILE_COLUMNS = ("bin", "count", "p_mean", "p_min", "p_max", "ret_mean", "hit_rate")
CROSS_SECTION_COLUMNS = ("n", "ic", "long", "short", "long_short", "top_turnover", "bottom_turnover")
TRADING_DAYS = 252


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


# ---------------------------------------------------------------- signal analysis (cross-sectional)


def cross_section(day, symbol, p, ret, *, min_symbols: int = 5, n_bins: int = 10) -> dict:
    """Daily cross-sectional figures (module docstring): {"days": the kept days (day's dtype,
    sorted), n, ic, long, short, long_short, top_turnover, bottom_turnover (arrays, one per
    kept day), n_days (days with a usable row), n_days_excluded, min_symbols, n_bins}."""
    pf = _vector(p, "p")
    n_rows = pf.shape[0]
    rf = _vector(ret, "ret", n_rows)
    d = np.asarray(day)
    sym = np.asarray(symbol)
    if d.shape != (n_rows,) or sym.shape != (n_rows,):
        raise ValueError(f"day and symbol must have shape ({n_rows},), got {d.shape} and {sym.shape}")
    if min_symbols < 1 or n_bins < 1:
        raise ValueError(f"min_symbols and n_bins must be >= 1, got {min_symbols} and {n_bins}")
    ok = _finite_rows(pf, rf)
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
    x = _vector(ic, "ic")
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
    than 2 of them or a zero std."""
    x = _vector(returns, "returns")
    x = x[np.isfinite(x)]
    if x.shape[0] < 2:
        return None
    std = x.std(ddof=1)
    return float(x.mean() / std * np.sqrt(periods_per_year)) if std > 0 else None


def turnover_mean(turnover) -> float | None:
    """Mean of the finite daily turnovers (the first kept day has none); None without any."""
    x = _vector(turnover, "turnover")
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.shape[0] else None


# ---------------------------------------------------------------- figures


def _figure(figsize):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _fixed_layout(fig, *, right: float = 0.25, hspace: float = 0.08) -> None:
    """Margins in inches (room for the tick labels, axis labels and the title) instead of
    fig.tight_layout(), which draws the figure once more only to measure its text: half of
    a figure's cost, and a stage draws dozens. `right`: wider for a twin y axis."""
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=0.85 / w, right=1.0 - right / w, bottom=0.6 / h, top=1.0 - 0.45 / h, hspace=hspace)


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
    _fixed_layout(fig)
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


def _x(dates, n: int) -> np.ndarray:
    x = np.arange(n) if dates is None else np.asarray(dates)
    if x.shape != (n,):
        raise ValueError(f"dates must have shape ({n},), got {x.shape}")
    return x.astype("datetime64[D]") if x.dtype.kind == "M" else x


def cumulative_ic_png_bytes(dates, ic, title: str = "") -> bytes:
    """Daily rank IC (bars) and the cumulative IC (np.nancumsum, line) as PNG."""
    y = _vector(ic, "ic")
    x = _x(dates, y.shape[0])
    s = ic_summary(y)
    fig = _figure((8.0, 4.0))
    ax = fig.subplots()
    # one LineCollection, not a Rectangle per day (thousands of patches took a second per figure)
    ax.vlines(x, 0.0, np.nan_to_num(y), color="tab:grey", alpha=0.4, lw=0.8, label="daily rank IC")
    ax.set_ylabel("daily rank IC")
    cx = ax.twinx()
    cx.plot(x, np.nancumsum(y), color="tab:blue", lw=1.4, label="cumulative IC")
    cx.set_ylabel("cumulative IC")

    def fmt(v):
        return "n/a" if v is None else f"{v:.3f}"

    ax.set_title(f"{title}  (rank IC {fmt(s['rank_ic'])}, ICIR {fmt(s['icir'])}, {s['n']} days)")
    _fixed_layout(fig, right=0.85)
    return _png(fig)


def long_short_png_bytes(dates, long, short, horizon: int, title: str = "") -> bytes:
    """Cumulative top decile, bottom decile and top-minus-bottom returns as PNG. Each day's
    value is an H-day return, so the curves are cumsum(r) / H: H staggered tranches, one
    opened each day, each 1/H of the capital."""
    lo, sh = _vector(long, "long"), _vector(short, "short")
    x = _x(dates, lo.shape[0])
    ls = lo - sh
    fig = _figure((8.0, 4.0))
    ax = fig.subplots()
    for series, label, color in ((ls, "long-short", "tab:blue"), (lo, "top decile", "tab:green"),
                                 (sh, "bottom decile", "tab:red")):
        ax.plot(x, np.nancumsum(series) / horizon, lw=1.4 if label == "long-short" else 0.9, color=color, label=label)
    ax.axhline(0.0, color="grey", lw=0.8, ls="--")
    sr = sharpe_ratio(ls, annualization(horizon))
    ax.set_ylabel(f"cumulative return (sum of {horizon}-day returns / {horizon})")
    ax.set_title(f"{title}  (long-short Sharpe {'n/a' if sr is None else f'{sr:.2f}'})")
    ax.legend(loc="upper left")
    _fixed_layout(fig)
    return _png(fig)


def decile_bars_png_bytes(bins, ret_mean, hit_rate=None, title: str = "") -> bytes:
    """Mean forward return per probability bin (bars; 0 = lowest p), hit rate annotated."""
    b = np.asarray(bins)
    r = _vector(ret_mean, "ret_mean", b.shape[0])
    fig = _figure((7.0, 4.0))
    ax = fig.subplots()
    ax.bar(b, r, color=np.where(r >= 0, "tab:green", "tab:red"))
    if hit_rate is not None:
        for xi, yi, hr in zip(b, r, _vector(hit_rate, "hit_rate", b.shape[0])):
            ax.annotate(f"{hr:.0%}", (xi, yi), ha="center", va="bottom" if yi >= 0 else "top", fontsize=7)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xticks(b)
    ax.set_xlabel("predicted-probability decile (0 = lowest)")
    ax.set_ylabel("mean forward return (hit rate)")
    ax.set_title(title)
    _fixed_layout(fig)
    return _png(fig)
