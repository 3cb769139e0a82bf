"""Plain references for the alpha158 cores: pandas' rolling operators (the code Qlib calls)
and a per-window NumPy least-squares fit, one symbol at a time. Slow; for tests only.

Same arguments as the cores (x, offsets, n) but returning new float64 arrays."""

from __future__ import annotations

import numpy as np


def _per_symbol(x, offsets, fn):
    out = np.full(len(x), np.nan)
    for a, b in zip(offsets[:-1], offsets[1:]):
        if b > a:
            out[a:b] = fn(np.asarray(x[a:b], dtype=np.float64))
    return out


def _rolling(x, offsets, n, method, *args, **kwargs):
    import pandas as pd

    return _per_symbol(x, offsets, lambda s: getattr(pd.Series(s).rolling(n, min_periods=1), method)(*args, **kwargs)
                       .to_numpy(dtype=np.float64))


def roll_sum(x, offsets, n):
    return _rolling(x, offsets, n, "sum")


def roll_mean(x, offsets, n):
    return _rolling(x, offsets, n, "mean")


def roll_var(x, offsets, n):
    return _rolling(x, offsets, n, "var")


def roll_max(x, offsets, n):
    return _rolling(x, offsets, n, "max")


def roll_min(x, offsets, n):
    return _rolling(x, offsets, n, "min")


def roll_idxmax(x, offsets, n):
    return _rolling(x, offsets, n, "apply", lambda w: w.argmax() + 1, raw=True)


def roll_idxmin(x, offsets, n):
    return _rolling(x, offsets, n, "apply", lambda w: w.argmin() + 1, raw=True)


def roll_quantile(x, offsets, n, q):
    return _rolling(x, offsets, n, "quantile", q)


def roll_rank(x, offsets, n):
    return _rolling(x, offsets, n, "rank", pct=True)


def roll_linreg(x, offsets, n):
    """Slope, R^2 and residual of the newest value for the least-squares line through the
    window's non-NaN values at positions n - age (newest at n), by np.polyfit-free formulas
    on centred data (a different route from the cores' running sums)."""

    def fit(y):
        slope, rsq, resi = (np.full(len(y), np.nan) for _ in range(3))
        for i in range(len(y)):
            w = y[max(0, i - n + 1): i + 1]
            pos = n - (len(w) - 1 - np.arange(len(w)))
            keep = ~np.isnan(w)
            xs, ys = pos[keep].astype(np.float64), w[keep]
            if len(ys) < 2:
                continue
            dx, dy = xs - xs.mean(), ys - ys.mean()
            sxx, sxy, syy = dx @ dx, dx @ dy, dy @ dy
            slope[i] = sxy / sxx
            rsq[i] = sxy * sxy / (sxx * syy) if syy > 0 else np.nan
            resi[i] = y[i] - (ys.mean() + slope[i] * (n - xs.mean()))
        return np.stack([slope, rsq, resi])

    out = np.full((3, len(x)), np.nan)
    for a, b in zip(offsets[:-1], offsets[1:]):
        if b > a:
            out[:, a:b] = fit(np.asarray(x[a:b], dtype=np.float64))
    return out[0], out[1], out[2]
