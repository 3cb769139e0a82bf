"""Qlib's 158 Alpha158 features on the alpha158 cores.

Contract:
    ALPHA158_NAMES    Qlib's names in Qlib's order (`Alpha158DL.get_feature_config()` with its
                      default config: 9 kbar, OPEN0 HIGH0 LOW0 VWAP0, 29 rolling groups x
                      windows 5, 10, 20, 30, 60).
    ALPHA158_WARMUP   per name, the rows at the start of a symbol where Qlib returns NaN
                      (inputs without NaN).
    compute_alpha158(arrays, offsets, dtype=np.float32) -> {name: array of len(total)}

Qlib evaluates Alpha158 on float32 data (its bin files are float32): element-wise
operators (+ - * /, Greater, Less, Abs, Log, Ref) run in float32, rolling operators widen to
float64 (pandas) and the final column is cast to float32. compute_alpha158 follows that
dtype flow step by step: inputs are rounded to float32 first (float64 inputs holding float32
values give the same result), each element-wise step is the same NumPy float32 operation,
each rolling step replays pandas' / Qlib's float64 arithmetic (`cores`), and the float64
results are cast to `dtype` at the end (dtype=float64 keeps the digits Qlib's cast drops).

Where Qlib divides by zero the result is inf or NaN as in Qlib (e.g. ROC where a close is 0,
VMA on a zero-volume day); an inf fed to a rolling operator counts as missing, as in pandas
(Log($volume/Ref($volume, 1)+1) after a zero-volume day). A missing day is a NaN row (Qlib's
bin layout is dense over the calendar); rolling operators skip NaN rows as pandas does.
Work goes through ~CHUNK_ROWS rows of whole symbols at a time (the float64 temporaries stay
in cache); the cores are serial and release the GIL, so a caller may run chunks in threads.
"""

from __future__ import annotations

import numpy as np

WINDOWS = (5, 10, 20, 30, 60)
KBAR = ("KMID", "KLEN", "KMID2", "KUP", "KUP2", "KLOW", "KLOW2", "KSFT", "KSFT2")
PRICE = ("OPEN0", "HIGH0", "LOW0", "VWAP0")
ROLLING = ("ROC", "MA", "STD", "BETA", "RSQR", "RESI", "MAX", "MIN", "QTLU", "QTLD", "RANK", "RSV", "IMAX",
           "IMIN", "IMXD", "CORR", "CORD", "CNTP", "CNTN", "CNTD", "SUMP", "SUMN", "SUMD", "VMA", "VSTD", "WVMA",
           "VSUMP", "VSUMN", "VSUMD")
FIELDS = ("open", "high", "low", "close", "volume", "vwap")

ALPHA158_NAMES: tuple[str, ...] = KBAR + PRICE + tuple(f"{g}{d}" for g in ROLLING for d in WINDOWS)

# NaN rows at a symbol's start: a std needs 2 values, a regression 2 points, Ref($close, 1)
# makes the first change NaN (SUM*, CORD need 2 changes for a correlation), ROCd needs d rows.
_GROUP_WARMUP = {"STD": 1, "BETA": 1, "RSQR": 1, "RESI": 1, "CORR": 1, "CORD": 2, "SUMP": 1, "SUMN": 1,
                 "SUMD": 1, "VSTD": 1, "WVMA": 2, "VSUMP": 1, "VSUMN": 1, "VSUMD": 1}
ALPHA158_WARMUP: dict[str, int] = {
    **{name: 0 for name in KBAR + PRICE},
    **{f"{g}{d}": (d if g == "ROC" else _GROUP_WARMUP.get(g, 0)) for g in ROLLING for d in WINDOWS},
}

_EPS = 1e-12
VAR_KEYS = ("c", "v", "wv", "logv", "ret", "dlogv")  # the series whose rolling var Std/Corr need
CHUNK_ROWS = 16_384  # rows per chunk of whole symbols: the chunk's float64 temporaries stay in cache


def compute_alpha158(arrays: dict[str, np.ndarray], offsets: np.ndarray, dtype=np.float32,
                     out: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The 158 Alpha158 columns of many symbols stored back to back.

    arrays: 'open', 'high', 'low', 'close', 'volume', 'vwap', 1-D of one length (float32 or
    float64); offsets: int, symbol k is rows offsets[k]:offsets[k+1] (offsets[0] = 0,
    offsets[-1] = length). Returns Qlib name -> array of that length, dtype `dtype`; with
    `out` (name -> 1-D array of that length, e.g. views into a caller's column buffers) the
    columns are written there and `out` is returned."""
    total = _check(arrays, offsets)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if out is None:
        out = {name: np.empty(total, dtype=dtype) for name in ALPHA158_NAMES}
    else:
        bad = [name for name in ALPHA158_NAMES if name not in out or np.shape(out[name]) != (total,)]
        if bad:
            raise ValueError(f"compute_alpha158: out['{bad[0]}'] is missing or not of shape ({total},)")
    first = 0
    while first < offsets.shape[0] - 1:  # whole symbols, about CHUNK_ROWS rows at a time
        last = int(np.searchsorted(offsets, offsets[first] + CHUNK_ROWS, side="right")) - 1
        last = min(max(last, first + 1), offsets.shape[0] - 1)
        a, b = int(offsets[first]), int(offsets[last])
        if b > a:
            chunk = {f: np.asarray(arrays[f])[a:b] for f in FIELDS}
            _compute_chunk(chunk, offsets[first:last + 1] - a, {name: col[a:b] for name, col in out.items()})
        first = last
    return out


def _compute_chunk(arrays, offsets, out):
    """compute_alpha158 on a few whole symbols, written into the out views."""
    from kernels.alpha158 import cpu

    total = offsets[-1]
    f32 = {f: np.ascontiguousarray(arrays[f], dtype=np.float32) for f in FIELDS}
    o, h, l, c, v, vw = (f32[f] for f in FIELDS)
    pos = _position_in_symbol(offsets, total)

    def put(name, values):
        out[name][:] = values

    with np.errstate(all="ignore"):
        rng = h - l + np.float32(_EPS)
        top = np.maximum(o, c)
        bottom = np.minimum(o, c)
        put("KMID", (c - o) / o)
        put("KLEN", (h - l) / o)
        put("KMID2", (c - o) / rng)
        put("KUP", (h - top) / o)
        put("KUP2", (h - top) / rng)
        put("KLOW", (bottom - l) / o)
        put("KLOW2", (bottom - l) / rng)
        shift = np.float32(2) * c - h - l
        put("KSFT", shift / o)
        put("KSFT2", shift / rng)
        for name, x in (("OPEN0", o), ("HIGH0", h), ("LOW0", l), ("VWAP0", vw)):
            put(name, x / c)

        c1 = _ref(c, pos, 1)
        v1 = _ref(v, pos, 1)
        dc = c - c1
        dv = v - v1
        up = np.maximum(dc, np.float32(0))
        down = np.maximum(c1 - c, np.float32(0))
        vup = np.maximum(dv, np.float32(0))
        vdown = np.maximum(v1 - v, np.float32(0))
        ret = c / c1
        wv = np.abs(ret - np.float32(1)) * v
        # running counts of up / down closes: Mean of a 0/1 flag that is never NaN is its
        # window count / window rows (pandas' Kahan sum of 0/1 is that exact integer)
        ups = np.concatenate([[0], np.cumsum(c > c1, dtype=np.int64)])
        downs = np.concatenate([[0], np.cumsum(c < c1, dtype=np.int64)])
        logv = np.log(v + np.float32(1))
        dlogv = np.log(v / v1 + np.float32(1))
        c64, h64, l64 = (np.asarray(x, dtype=np.float64) for x in (c, h, l))
        wide = {"c": c64, "v": v.astype(np.float64), "ret": ret.astype(np.float64), "wv": wv.astype(np.float64),
                "up": up.astype(np.float64), "down": down.astype(np.float64), "absd": np.abs(dc).astype(np.float64),
                "vup": vup.astype(np.float64), "vdown": vdown.astype(np.float64),
                "vabsd": np.abs(dv).astype(np.float64), "logv": logv.astype(np.float64),
                "dlogv": dlogv.astype(np.float64)}

        corr_c = _Corr(cpu, offsets, c, logv, VAR_KEYS.index("c"), VAR_KEYS.index("logv"))
        corr_r = _Corr(cpu, offsets, ret, dlogv, VAR_KEYS.index("ret"), VAR_KEYS.index("dlogv"))
        var_in = np.stack([wide[k] for k in VAR_KEYS], axis=1)  # rows x 6: one var pass per window
        var_all = np.empty((len(VAR_KEYS), total))  # each series' rolling var contiguous
        buf = np.empty(max(WINDOWS), dtype=np.float64)
        cum = (ups, downs)

        def new():
            return np.empty(total, dtype=np.float64)

        # each window's rolling results, reused from window to window
        mean_c, mean_v, mean_wv = new(), new(), new()
        reg = (new(), new(), new())  # slope, rsquare, resi of close
        ext = (new(), new(), new(), new())  # max high, min low, idxmax high, idxmin low
        qrank = (new(), new(), new())  # quantile 0.2, quantile 0.8, rank of close
        sum_in = ("up", "down", "absd", "vup", "vdown", "vabsd")
        sums = tuple(new() for _ in sum_in)

        pre = {k: _Prefix(cpu, offsets, wide[k]) for k in ("c", "v", "wv", *sum_in)}
        for d in WINDOWS:
            pre["c"].mean(d, mean_c)
            pre["v"].mean(d, mean_v)
            pre["wv"].mean(d, mean_wv)
            for key, s_out in zip(sum_in, sums):
                pre[key].sum(d, s_out)
            cpu.roll_var_many(var_in, offsets, d, var_all.T)
            cpu.roll_linreg(c64, offsets, d, *reg)
            cpu.roll_max_idxmax(h64, offsets, d, ext[0], ext[2])
            cpu.roll_min_idxmin(l64, offsets, d, ext[1], ext[3])
            cpu.roll_qrank(c64, offsets, d, 0.2, 0.8, buf, *qrank)
            outs = tuple(out[f"{g}{d}"] for g in ROLLING)
            cpu.window_ratios(d, c, v, pos, *cum, var_all, mean_c, reg, ext, qrank, sums, mean_v, mean_wv,
                              corr_c.parts(d, var_all, mean_c), corr_r.parts(d, var_all),
                              outs)


class _Prefix:
    """The rolling sums and means of one series for every window: differences of exact integer
    prefix sums (cores.exact_prefix) for the windows where pandas' Kahan sums are exact, the
    Kahan cores beyond (same bits either way)."""

    def __init__(self, cpu, offsets, x):
        self.cpu, self.offsets, self.x = cpu, offsets, x
        self.p_int = np.empty(x.shape[0] + 1, dtype=np.int64)
        self.p_cnt = np.empty(x.shape[0] + 1, dtype=np.int64)
        self.e, self.n_max = cpu.exact_prefix(x, self.p_int, self.p_cnt)

    def sum(self, d, out):
        if d <= self.n_max:
            self.cpu.roll_sum_prefix(self.p_int, self.p_cnt, self.e, self.offsets, d, out)
        else:
            self.cpu.roll_sum(self.x, self.offsets, d, out)
        return out

    def mean(self, d, out):
        if d <= self.n_max:
            self.cpu.roll_mean_prefix(self.p_int, self.p_cnt, self.e, self.offsets, d, out)
        else:
            self.cpu.roll_mean(self.x, self.offsets, d, out)
        return out

    def count(self, d, out):
        """The number of values (not NaN, not +-inf) in each window."""
        self.cpu.roll_count_prefix(self.p_cnt, self.offsets, d, out)
        return out


class _Corr:
    """Qlib's Corr(x, y, d) for every window d: pandas' rolling corr on the pairwise-complete
    rows (X = x + 0*y, Y = y + 0*x in float32, then +-inf -> NaN as pandas prepares values),
    NaN where the rolling std of x or of y (each on its own rows) is close to 0 (that and
    the final arithmetic are in ratios.window_ratios). The pairwise inputs and their prefix
    sums are built once; per window only the rolling passes run."""

    def __init__(self, cpu, offsets, x32, y32, x_var_col, y_var_col):
        """x_var_col, y_var_col: the columns of x's and y's own rolling var in the window's var
        block (VAR_KEYS order)."""
        self.cpu, self.offsets = cpu, offsets
        self.xm = _finite_or_nan(x32 + np.float32(0) * y32)
        self.ym = _finite_or_nan(y32 + np.float32(0) * x32)
        xy = self.xm * self.ym
        nan_xy = np.isnan(self.xm + self.ym)
        self.any_nan = bool(nan_xy.any())
        # where the pairwise mask removes no row of x (of y), x's own rolling stats serve
        self.x_whole = np.array_equal(~np.isfinite(x32), nan_xy)
        self.y_whole = np.array_equal(~np.isfinite(y32), nan_xy)
        self.cols = (x_var_col, y_var_col)
        self.pre_xy, self.pre_y = _Prefix(cpu, offsets, xy), _Prefix(cpu, offsets, self.ym)
        self.pre_x = None if self.x_whole else _Prefix(cpu, offsets, self.xm)

    def parts(self, d, var_all, mean_x=None):
        """(mean xy, mean x, mean y, count, var x, var y) of the pairwise rows for window d,
        count empty where no row is masked (the window's rows serve); var_all: the window's
        var block (VAR_KEYS x rows); mean_x: x's own rolling mean if already computed."""
        total = self.xm.shape[0]

        def new():
            return np.empty(total, dtype=np.float64)

        def var(a):
            r = new()
            self.cpu.roll_var(a, self.offsets, d, r)
            return r

        mean_xy = self.pre_xy.mean(d, new())
        if mean_x is None or not self.x_whole:
            mean_x = (self.pre_x or _Prefix(self.cpu, self.offsets, self.xm)).mean(d, new())
        mean_y = self.pre_y.mean(d, new())
        count = self.pre_xy.count(d, new()) if self.any_nan else np.empty(0)  # xy is finite where both are
        var_xm = var_all[self.cols[0]] if self.x_whole else var(self.xm)
        var_ym = var_all[self.cols[1]] if self.y_whole else var(self.ym)
        return mean_xy, mean_x, mean_y, count, var_xm, var_ym


def _finite_or_nan(x):
    """x as float64 with +-inf replaced by NaN."""
    x = x.astype(np.float64)
    x[np.isinf(x)] = np.nan
    return x


def _ref(x, pos, d):
    """Qlib's Ref(x, d): x shifted d rows down within each symbol, NaN for its first d rows."""
    r = np.full_like(x, np.nan)
    r[d:] = x[:-d] if d else x
    r[pos < d] = np.nan
    return r


def _position_in_symbol(offsets, total):
    lengths = np.diff(offsets)
    starts = np.repeat(offsets[:-1], lengths)
    return np.arange(total, dtype=np.int64) - starts


def _check(arrays, offsets) -> int:
    """The arrays' common length; a ValueError naming the array or offset and what was expected."""
    missing = [f for f in FIELDS if f not in arrays]
    if missing:
        raise ValueError(f"compute_alpha158: missing input arrays {missing}; expected {list(FIELDS)}")
    total = np.asarray(arrays["close"]).shape[0] if np.ndim(arrays["close"]) else 0
    for f in FIELDS:
        a = np.asarray(arrays[f])
        if a.dtype.kind not in "fiu":
            raise ValueError(f"compute_alpha158: '{f}' has dtype {a.dtype}; expected numbers (float32 or float64)")
        if a.ndim != 1 or a.shape[0] != total:
            raise ValueError(f"compute_alpha158: '{f}' has shape {a.shape}; expected ({total},) like 'close'")
    off = np.asarray(offsets)
    if off.ndim != 1 or off.shape[0] < 1 or off.dtype.kind not in "iu":
        raise ValueError(f"compute_alpha158: offsets must be a 1-D integer array from 0 to {total}; "
                         f"got shape {off.shape}, dtype {off.dtype}")
    bad = np.flatnonzero(np.diff(off) < 0)
    if off[0] != 0 or off[-1] != total or bad.size:
        k = 0 if off[0] != 0 else (int(bad[0]) + 1 if bad.size else off.shape[0] - 1)
        raise ValueError(f"compute_alpha158: offsets[{k}] = {int(off[k])}; offsets must rise from 0 to {total} "
                         "(the arrays' length)")
    return total
