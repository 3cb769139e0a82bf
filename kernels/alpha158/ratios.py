"""The 29 per-window Alpha158 columns from the window's rolling results, in one loop over the
rows (compiled in `cpu`): no float64 temporaries, one pass instead of ~60 NumPy passes.

Each column repeats the NumPy expression Qlib's engine evaluates, with NumPy's dtypes: a
float32 input meeting a float64 rolling result is widened to float64 (c, v below), the
float32-only steps stay float32 (Ref($close, d) / $close, $volume + 1e-12), and the float64
result is rounded to the output dtype when stored. No fused multiply-add (numba does not
contract without fastmath), so every operation rounds as NumPy's does.
"""

from __future__ import annotations


import numpy as np
from numba.extending import register_jitable

NAN = float("nan")
EPS = 1e-12
STD_ZERO = 2e-05  # Qlib: Rsquare and Corr are NaN where a std is np.isclose to 0 (atol=2e-05)


def window_ratios(d, c, v, pos, ups, downs, var6, mean_c, reg, ext, qrank, sums, mean_v, mean_wv,
                  corr_c, corr_r, outs):
    """Write the window-d columns ROC..VSUMD (features.ROLLING order) into outs[0..28].

    c, v: float32 close and volume; pos: row's position in its symbol; ups, downs: running
    counts of up / down closes (length rows + 1, ups[0] = 0); var6: rolling var of the
    features.VAR_KEYS series (6 x rows: c, v, wv, logv, ret, dlogv); mean_c: rolling mean of
    close; reg: (slope, rsquare, resi) of close; ext: (max high, min low, idxmax high, idxmin
    low); qrank: (quantile 0.2, quantile 0.8, rank) of close; sums: rolling sums of (up, down,
    |change|, vup, vdown, |vchange|); mean_v, mean_wv: rolling means of volume and wv;
    corr_c, corr_r: (mean xy, mean x, mean y, count (empty: the window's rows), var x,
    var y) of the pairwise-complete rows of (close, log volume) and (return, dlog volume)."""
    slope, rsq, resi = reg
    mx, mn, imax, imin = ext
    q_lo, q_hi, rank = qrank
    s_up, s_down, s_abs, s_vup, s_vdown, s_vabs = sums
    fd = float(d)
    rows = c.shape[0]
    # one short branch-free loop per column (the compiler vectorises each; a single loop
    # writing 29 arrays would not be, and scalar divisions are several times slower)
    o = outs[0]
    for i in range(rows):  # ROC: float32 / float32
        o[i] = np.float32(c[max(i - d, 0)] / c[i]) if pos[i] >= d else NAN
    _over_c(mean_c, c, outs[1])
    o = outs[2]
    for i in range(rows):
        o[i] = _sqrt0(var6[0, i]) / np.float64(c[i])
    _over_c(slope, c, outs[3])
    o = outs[4]
    for i in range(rows):
        o[i] = NAN if _close0(_sqrt0(var6[0, i])) else rsq[i]
    _over_c(resi, c, outs[5])
    _over_c(mx, c, outs[6])
    _over_c(mn, c, outs[7])
    _over_c(q_hi, c, outs[8])
    _over_c(q_lo, c, outs[9])
    o = outs[10]
    for i in range(rows):
        o[i] = rank[i]
    o = outs[11]
    for i in range(rows):
        o[i] = (np.float64(c[i]) - mn[i]) / (mx[i] - mn[i] + EPS)
    o = outs[12]
    for i in range(rows):
        o[i] = imax[i] / fd
    o = outs[13]
    for i in range(rows):
        o[i] = imin[i] / fd
    o = outs[14]
    for i in range(rows):
        o[i] = (imax[i] - imin[i]) / fd
    _corr(corr_c, var6, 0, 3, pos, d, outs[15])
    _corr(corr_r, var6, 4, 5, pos, d, outs[16])
    o = outs[17]
    for i in range(rows):
        n_rows = min(pos[i] + 1, d)
        o[i] = (ups[i + 1] - ups[i + 1 - n_rows]) / float(n_rows)
    o = outs[18]
    for i in range(rows):
        n_rows = min(pos[i] + 1, d)
        o[i] = (downs[i + 1] - downs[i + 1 - n_rows]) / float(n_rows)
    o = outs[19]
    for i in range(rows):
        n_rows = min(pos[i] + 1, d)
        span = float(n_rows)
        o[i] = (ups[i + 1] - ups[i + 1 - n_rows]) / span - (downs[i + 1] - downs[i + 1 - n_rows]) / span
    _sum_ratios(s_up, s_down, s_abs, outs[20], outs[21], outs[22])
    o = outs[23]
    for i in range(rows):
        o[i] = mean_v[i] / _v_eps(v[i])
    o = outs[24]
    for i in range(rows):
        o[i] = _sqrt0(var6[1, i]) / _v_eps(v[i])
    o = outs[25]
    for i in range(rows):
        o[i] = _sqrt0(var6[2, i]) / (mean_wv[i] + EPS)
    _sum_ratios(s_vup, s_vdown, s_vabs, outs[26], outs[27], outs[28])


@register_jitable
def _over_c(x, c, o):
    """o = x / close (close widened to float64)."""
    for i in range(c.shape[0]):
        o[i] = x[i] / np.float64(c[i])


@register_jitable
def _v_eps(v32):
    """$volume + 1e-12 in float32 (Qlib's float32 step), widened to float64."""
    return np.float64(np.float32(v32 + np.float32(EPS)))


@register_jitable
def _sum_ratios(s_up, s_down, s_abs, o_p, o_n, o_d):
    """SUMP/SUMN/SUMD (or VSUM*): Sum(up)/(Sum(|d|)+1e-12), Sum(down)/..., (Sum(up)-Sum(down))/..."""
    for i in range(s_up.shape[0]):
        o_p[i] = s_up[i] / (s_abs[i] + EPS)
    for i in range(s_up.shape[0]):
        o_n[i] = s_down[i] / (s_abs[i] + EPS)
    for i in range(s_up.shape[0]):
        o_d[i] = (s_up[i] - s_down[i]) / (s_abs[i] + EPS)


@register_jitable
def _corr(parts, var6, col_x, col_y, pos, d, o):
    """pandas' rolling corr from the pairwise rows' means, count and variances; NaN where x's
    or y's own rolling std (var6 columns col_x, col_y) is close to 0."""
    mean_xy, mean_x, mean_y, count, var_x, var_y = parts
    counted = count.shape[0] > 0
    for i in range(o.shape[0]):
        n = count[i] if counted else float(min(pos[i] + 1, d))
        num = (mean_xy[i] - mean_x[i] * mean_y[i]) * (n / (n - 1))
        r = num / np.sqrt(var_x[i] * var_y[i])
        masked = _close0(_sqrt0(var6[col_x, i])) | _close0(_sqrt0(var6[col_y, i]))
        o[i] = NAN if masked else r


@register_jitable
def _sqrt0(var):
    """The std from a rolling var as the NumPy steps before computed it, sqrt(np.maximum(var,
    0)): NaN stays NaN, a negative var (and -0.0) gives 0.0. A select, so the loops vectorise."""
    return np.sqrt(var if (var > 0.0) | (var != var) else 0.0)


@register_jitable
def _close0(std):
    """np.isclose(std, 0, atol=2e-05) (NaN is not close)."""
    return abs(std) <= STD_ZERO
