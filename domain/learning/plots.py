"""The learning stages' figures as PNG (matplotlib Agg figures, no pyplot): arrays in, PNG
bytes out (the caller writes them where it wants; `calibration_png` writes one atomically).

- `reliability_png_bytes(y, p, title)`: reliability diagram and prediction histogram over
  finite rows (evaluation); `calibration_png_bytes` / `calibration_png`: the same for the
  meta model's out-of-sample year (meta_model).
- `equity_png_bytes(dates, equity, title, benchmark)`: equity curve and drawdown, the
  benchmark's beside them (backtest).
- `cumulative_ic_png_bytes`, `long_short_png_bytes`, `decile_bars_png_bytes`: the signal
  analysis plots (evaluation).
- `ic_by_year_png_bytes`, `importance_png_bytes`: an experiment's rank IC per year and
  horizon, and its meta models' column importance (domain.experiment_report).
Figures of one stage share fixed margins in inches (`_fixed_layout`), not tight_layout.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from domain.learning.calibration import binary_labels, fold_metrics, reliability_curve
from domain.learning.metrics import (
    annualization,
    as_vector,
    classification_metrics,
    finite_rows,
    ic_summary,
    sharpe_ratio,
)
from domain.learning.persistence import atomic_write


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
    yf = as_vector(y, "y")
    pf = as_vector(p, "p", yf.shape[0])
    ok = finite_rows(yf, pf)
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


def equity_png_bytes(dates, equity, title: str = "", benchmark=None, benchmark_label: str = "benchmark") -> bytes:
    """Equity curve (top, log scale) and drawdown from the running peak (bottom) as PNG.
    dates: datetime64 (or any 1-D x values, e.g. day numbers) or None for 0..T-1.
    benchmark: the benchmark's equity over the same days (drawn grey beside the book in both
    panels, with a legend naming it `benchmark_label`), or None."""
    eq = as_vector(equity, "equity")
    x = np.arange(eq.shape[0]) if dates is None else np.asarray(dates)
    if x.shape != eq.shape:
        raise ValueError(f"dates must have shape {eq.shape}, got {x.shape}")
    bm = None if benchmark is None else as_vector(benchmark, "benchmark", eq.shape[0])
    if x.dtype.kind == "M":
        x = x.astype("datetime64[D]")
    fig = _figure((8.0, 5.0))
    ax, dx = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot(x, eq, lw=1.2, color="tab:blue", label="strategy")
    if bm is not None:
        ax.plot(x, bm, lw=1.0, color="tab:gray", label=benchmark_label)
        ax.legend(loc="upper left")
    curves = eq if bm is None else np.concatenate([eq, bm])
    if eq.size and np.all(curves > 0):
        ax.set_yscale("log")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel("equity (start 1.0)")
    ax.set_title(title)
    if eq.size:
        peak = np.maximum(np.maximum.accumulate(eq), 1.0)
        dd = eq / peak - 1.0
        dx.fill_between(x, dd, 0.0, color="tab:red", alpha=0.4, lw=0)
        if bm is not None:
            dx.plot(x, bm / np.maximum(np.maximum.accumulate(bm), 1.0) - 1.0, color="tab:gray", lw=0.8)
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
    y = as_vector(ic, "ic")
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
    lo, sh = as_vector(long, "long"), as_vector(short, "short")
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
    r = as_vector(ret_mean, "ret_mean", b.shape[0])
    fig = _figure((7.0, 4.0))
    ax = fig.subplots()
    ax.bar(b, r, color=np.where(r >= 0, "tab:green", "tab:red"))
    if hit_rate is not None:
        for xi, yi, hr in zip(b, r, as_vector(hit_rate, "hit_rate", b.shape[0])):
            ax.annotate(f"{hr:.0%}", (xi, yi), ha="center", va="bottom" if yi >= 0 else "top", fontsize=7)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xticks(b)
    ax.set_xlabel("predicted-probability decile (0 = lowest)")
    ax.set_ylabel("mean forward return (hit rate)")
    ax.set_title(title)
    _fixed_layout(fig)
    return _png(fig)


def ic_by_year_png_bytes(years, ic_by_horizon: dict, title: str = "") -> bytes:
    """The daily cross-sectional rank IC's mean per year, one bar per horizon side by side
    (`ic_by_horizon`: {label: values aligned with `years`, NaN where a year has none})."""
    yrs = np.asarray(years)
    fig = _figure((8.0, 4.0))
    ax = fig.subplots()
    n = max(len(ic_by_horizon), 1)
    width = 0.8 / n
    for i, (label, values) in enumerate(ic_by_horizon.items()):
        v = as_vector(values, label, yrs.shape[0])
        ax.bar(np.arange(yrs.shape[0]) + (i - (n - 1) / 2) * width, np.nan_to_num(v), width, label=label)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xticks(np.arange(yrs.shape[0]), [str(y) for y in yrs], fontsize=8)
    ax.set_ylabel("mean daily rank IC")
    ax.set_title(title)
    if ic_by_horizon:
        ax.legend(loc="upper left", fontsize=8)
    _fixed_layout(fig)
    return _png(fig)


def importance_png_bytes(names, shares, title: str = "") -> bytes:
    """Horizontal bars of the columns' importance shares, the largest on top."""
    v = as_vector(shares, "shares")
    labels = list(names)
    if len(labels) != v.shape[0]:
        raise ValueError(f"names must have {v.shape[0]} entries, got {len(labels)}")
    fig = _figure((7.0, 0.6 + 0.28 * max(v.shape[0], 1) + 0.9))
    ax = fig.subplots()
    ax.barh(np.arange(v.shape[0])[::-1], v, color="tab:blue")
    ax.set_yticks(np.arange(v.shape[0])[::-1], labels, fontsize=8)
    ax.set_xlabel("share of the importance")
    ax.set_title(title, fontsize=9)
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=2.2 / w, right=1.0 - 0.25 / w, bottom=0.6 / h, top=1.0 - 0.45 / h)
    return _png(fig)


def calibration_png(y, p, path, title: str = "", bins: int = 10) -> Path:
    """Reliability diagram (top) and prediction histogram (bottom) written to `path` as a PNG."""
    data = calibration_png_bytes(y, p, title, bins)
    return atomic_write(path, lambda fh: fh.write(data))


def calibration_png_bytes(y, p, title: str = "", bins: int = 10) -> bytes:
    """Reliability diagram (top) and prediction histogram (bottom) as PNG bytes (Agg, no pyplot)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    curve = reliability_curve(y, p, bins)
    m = fold_metrics(y, p)
    fig = Figure(figsize=(6.0, 6.5), dpi=100)
    FigureCanvasAgg(fig)
    ax, hx = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect")
    ax.plot(curve["prob_pred"], curve["prob_true"], marker="o", label="model")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("observed positive rate")
    auc = "n/a" if m["auc"] is None else f"{m['auc']:.3f}"
    brier = "n/a" if m["brier"] is None else f"{m['brier']:.4f}"
    ax.legend(loc="upper left", title=f"n={m['n']}  AUC={auc}  Brier={brier}")
    ax.set_title(title)
    hx.hist(np.asarray(p, dtype=np.float64), bins=np.linspace(0, 1, bins + 1), color="tab:blue", alpha=0.7)
    hx.set_xlim(0, 1)
    hx.set_xlabel("predicted probability")
    hx.set_ylabel("rows")
    w, h = fig.get_size_inches()  # fixed margins: tight_layout would draw the figure twice
    fig.subplots_adjust(left=0.85 / w, right=1.0 - 0.25 / w, bottom=0.6 / h, top=1.0 - 0.45 / h, hspace=0.08)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def grid_heatmap_png_bytes(cells, xs, ys, xlabel: str, ylabel: str, label: str, title: str,
                           reverse: bool = False) -> bytes:
    """A heatmap of `cells` [len(ys), len(xs)] (NaN cells blank) with each value written in its
    cell, x ticks `xs`, y ticks `ys`, a colour bar named `label` (`reverse`: smaller is better)."""
    import math

    fig = _figure((max(6.0, 1.6 + 0.9 * len(xs)), 2.0 + 0.5 * len(ys)))
    ax = fig.subplots()
    im = ax.imshow(np.ma.masked_invalid(cells), cmap="viridis_r" if reverse else "viridis", aspect="auto", origin="lower")
    ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs])
    ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    for i in range(len(ys)):
        for j in range(len(xs)):
            if math.isfinite(cells[i, j]):
                ax.text(j, i, f"{cells[i, j]:.3g}", ha="center", va="center", fontsize=7, color="white")
    fig.colorbar(im, ax=ax, label=label)
    ax.set_title(title, fontsize=8)
    fig.tight_layout()
    return _png(fig)
