"""The fused Alpha158 steps give NumPy's and pandas' bits.

- `ratios.window_ratios` (the 29 per-window columns in one compiled pass) equals the NumPy
  expressions it replaced, bit for bit, CORR/CORD included (the Qlib fixture checks those
  only to rtol 1e-5), on inputs holding NaN, +-inf, zero volumes, negative and -0.0
  variances and stds under Qlib's 2e-05 mask.
- The branch-free sum / mean cores equal pandas exactly, the var core to 1e-12 (as in
  test_alpha158), on series made of zero runs (the up / down moves, where a branch on "same
  value as before" mispredicts), ties, NaN and +-inf; the var core's columns stepped side by
  side each equal that column alone.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernels.alpha158 import cpu, reference
from kernels.alpha158.features import ROLLING, VAR_KEYS, _position_in_symbol

OFFSETS = np.array([0, 3, 3, 90, 200])  # a 3-row symbol (shorter than every window), an empty one


def _inputs(seed=7):
    rng = np.random.default_rng(seed)
    rows = OFFSETS[-1]
    c = (50 * np.exp(np.cumsum(rng.normal(0, 0.02, rows)))).astype(np.float32)
    c[[5, 6, 150]] = np.nan
    v = np.round(rng.lognormal(8, 1, rows)).astype(np.float32)
    v[[10, 11, 120]] = 0
    v[130] = np.nan

    def f64(scale=1.0):
        x = rng.normal(0, scale, rows)
        x[rng.choice(rows, 6, replace=False)] = np.nan
        return x

    var6 = np.abs(rng.normal(0, 1e-3, (len(VAR_KEYS), rows)))
    var6[:, 20:30] = 1e-11  # std ~3e-6: Qlib's isclose-to-0 mask
    var6[:, 40] = -1e-17  # a rounding-negative var: std 0
    var6[:, 41] = -0.0
    var6[:, 42] = np.nan
    var6[:, 43] = np.inf
    up = rng.random(rows) < 0.5
    ups = np.concatenate([[0], np.cumsum(up)])
    downs = np.concatenate([[0], np.cumsum(~up & (rng.random(rows) < 0.7))])
    parts = lambda counted: (f64(), f64(), f64(), np.abs(f64(5)) + 1 if counted else np.empty(0),  # noqa: E731
                             np.abs(f64()), np.abs(f64()))
    return dict(c=c, v=v, pos=_position_in_symbol(OFFSETS, rows), ups=ups, downs=downs, var6=var6,
                mean_c=f64(), reg=(f64(), f64(), f64()), ext=(f64(), f64(), np.abs(f64(9)), np.abs(f64(9))),
                qrank=(f64(), f64(), np.abs(f64())), sums=tuple(np.abs(f64()) for _ in range(6)),
                mean_v=np.abs(f64(1e4)), mean_wv=f64(), corr_c=parts(False), corr_r=parts(True))


def _numpy_columns(d, a):
    """The NumPy expressions the previous compute_alpha158 evaluated, column by column."""
    c, v, pos = a["c"], a["v"], a["pos"]
    sqrt0 = lambda var: np.sqrt(np.maximum(var, 0.0))  # noqa: E731
    close0 = lambda std: np.abs(std) <= 2e-05  # noqa: E731
    std = {k: sqrt0(a["var6"][j]) for j, k in enumerate(VAR_KEYS)}
    ref = np.full_like(c, np.nan)
    ref[d:] = c[:-d]
    ref[pos < d] = np.nan
    slope, rsq, resi = a["reg"]
    mx, mn, imax, imin = a["ext"]
    q_lo, q_hi, rank = a["qrank"]
    span = np.minimum(pos + 1, d).astype(np.float64)
    row = np.arange(1, c.shape[0] + 1)
    first = row - np.minimum(pos + 1, d)
    cntp = (a["ups"][row] - a["ups"][first]) / span
    cntn = (a["downs"][row] - a["downs"][first]) / span
    v_eps = v + np.float32(1e-12)

    def corr(parts, sx, sy):
        mean_xy, mean_x, mean_y, count, var_x, var_y = parts
        count = count if count.shape[0] else span
        res = (mean_xy - mean_x * mean_y) * (count / (count - 1)) / np.sqrt(var_x * var_y)
        res[close0(sx) | close0(sy)] = np.nan
        return res

    def sums(s_up, s_down, s_abs):
        den = s_abs + 1e-12
        return [s_up / den, s_down / den, (s_up - s_down) / den]

    cols = [ref / c, a["mean_c"] / c, std["c"] / c, slope / c, np.where(close0(std["c"]), np.nan, rsq), resi / c,
            mx / c, mn / c, q_hi / c, q_lo / c, rank, (c - mn) / (mx - mn + 1e-12), imax / d, imin / d,
            (imax - imin) / d, corr(a["corr_c"], std["c"], std["logv"]), corr(a["corr_r"], std["ret"], std["dlogv"]),
            cntp, cntn, cntp - cntn, *sums(*a["sums"][:3]), a["mean_v"] / v_eps, std["v"] / v_eps,
            std["wv"] / (a["mean_wv"] + 1e-12), *sums(*a["sums"][3:])]
    return [np.asarray(col).astype(np.float32) for col in cols]


@pytest.mark.parametrize("d", [5, 60])
def test_window_ratios_equal_numpy_expressions_bit_for_bit_with_nan_inf_zero_volume_and_masked_std(d):
    a = _inputs()
    outs = tuple(np.full(OFFSETS[-1], -7.0, dtype=np.float32) for _ in ROLLING)
    with np.errstate(all="ignore"):
        want = _numpy_columns(d, a)
    cpu.window_ratios(d, a["c"], a["v"], a["pos"], a["ups"], a["downs"], a["var6"], a["mean_c"], a["reg"],
                      a["ext"], a["qrank"], a["sums"], a["mean_v"], a["mean_wv"], a["corr_c"], a["corr_r"], outs)
    for name, got, exp in zip(ROLLING, outs, want):
        nan = np.isnan(exp)
        assert np.array_equal(np.isnan(got), nan), f"{name}{d}: NaN positions"
        assert np.array_equal(got[~nan].view(np.uint32), exp[~nan].view(np.uint32)), f"{name}{d}: bits"
    assert np.isnan(want[ROLLING.index("RSQR")][20:30]).all()  # the inputs reach the std mask
    assert (want[ROLLING.index("VMA")][[10, 11]] > 1e6).all()  # and the zero-volume epsilon


def _zero_runs():
    """Two symbols of up-move-like values: runs of zeros between moves, a negative stretch
    (mean's sign clamp), ties, NaN and +-inf."""
    rng = np.random.default_rng(3)
    moves = np.where(rng.random(120) < 0.5, 0.0, np.round(rng.random(120), 2))
    moves[30:45] = 0.0
    moves[50:56] = -np.round(rng.random(6), 2)
    moves[[60, 61, 90]] = np.nan
    moves[[70, 100]] = [np.inf, -np.inf]
    return moves.astype(np.float32).astype(np.float64), np.array([0, 80, 120])


@pytest.mark.parametrize("n", [1, 2, 5, 60])
@pytest.mark.parametrize("core", ["roll_sum", "roll_mean", "roll_var"])
def test_sum_mean_var_of_zero_runs_with_nan_and_inf_equal_pandas(core, n):
    x, offsets = _zero_runs()
    got = np.full(len(x), -7.0)
    getattr(cpu, core)(x, offsets, n, got)
    want = getattr(reference, core)(x, offsets, n)
    if core == "roll_var":  # one ulp from this environment's pandas here, before and after the fusing
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def test_var_many_columns_are_each_their_own_var():
    """Several columns stepped side by side give each column's roll_var alone."""
    x, offsets = _zero_runs()
    xs = np.stack([x, np.roll(x, 7), x * 3.5, np.full_like(x, 2.0)], axis=1)
    out = np.empty((4, len(x)))
    cpu.roll_var_many(xs, offsets, 5, out.T)  # a column-major view, as compute_alpha158 passes it
    for j in range(4):
        alone = np.empty(len(x))
        cpu.roll_var(np.ascontiguousarray(xs[:, j]), offsets, 5, alone)
        np.testing.assert_array_equal(out[j], alone)
    assert (out[3][1:80] == 0).all() and np.isnan(out[3][0])  # a constant column: 0 from its second row
