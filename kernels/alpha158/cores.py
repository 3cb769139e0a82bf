"""Rolling cores of the Alpha158 family, written once as plain loops (compiled in `cpu`).

The helpers (`_pd`, `_lower_bound`, `_quantile_sorted`, `_div`, `_roll_extreme`) and the
cores other cores call (`roll_var_many`, `roll_max_idxmax`, `roll_min_idxmin`) are
`register_jitable`: plain Python functions that numba compiles inline.

Every core walks many symbols stored back to back (symbol k is rows offsets[k]:offsets[k+1])
and restarts its state at each symbol's first row, so no window crosses a symbol boundary.
Windows are Qlib's: the last `n` rows of the symbol with min_periods=1 (a window is shorter
at the start of a symbol), NaN rows skipped; the pandas-based cores (sum, mean, var, max,
min, quantile, rank, and apply for IdxMax/IdxMin) see +-inf as NaN, as pandas turns it into
NaN before aggregating; Qlib's Cython regression sees the raw values. Inputs are float64
arrays (float32 values widened, as pandas widens them); accumulators are float64.

Each core replays the arithmetic of the code Qlib runs for its operator, so that results
agree to the last bit in float64 (pandas 2.x `pandas/_libs/window/aggregations.pyx`, Qlib's
`qlib/data/_libs/rolling.pyx`):

    roll_sum       Sum       Kahan sum; a window of one repeated value gives value * count
    exact_prefix   Sum, Mean where the Kahan sum is exact (one power-of-two grid, <= 2**53):
                   int64 prefix sums; roll_sum_prefix / roll_mean_prefix / roll_count_prefix
                   give pandas' bits from their differences
    roll_mean      Mean      Kahan sum / count; repeated value -> that value; sign clamps
    roll_var       Var, Std  Welford + Kahan, ddof=1, NaN below 2 values, repeated value -> 0
                   (roll_var_many: several series side by side, one pass)
    roll_max/min   Max/Min   NaN-skipping extreme; NaN when the window holds no value
                   (roll_max_idxmax, roll_min_idxmin: with the index, one pass)
    roll_idxmax/min IdxMax/IdxMin  1-based np.argmax/argmin of the window (a NaN wins, as
                   np.argmax returns the first NaN); NaN when the window holds no value
    roll_qrank     Quantile(q_lo), Quantile(q_hi), Rank: one sorted window per pass;
                   linear interpolation at q*(count-1); rank = average rank of the last value
                   / count (NaN where the last value is NaN)
    roll_linreg    Slope, Rsquare, Resi: Qlib's Cython running sums (x = 1..n, newest = n),
                   shifted per step in Qlib's order
"""

from __future__ import annotations

import math

import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import register_jitable

NAN = float("nan")


def roll_sum(x, offsets, n, out):
    """out[t] = pandas `rolling(n, min_periods=1).sum()` of x within its symbol."""
    for k in range(offsets.shape[0] - 1):
        a = offsets[k]
        b = offsets[k + 1]
        nobs = 0
        sum_x = 0.0
        comp_add = 0.0
        comp_rem = 0.0
        same = 0.0
        prev = NAN
        if b > a:
            prev = _pd(x[a])
        for i in range(a, b):
            if i - n >= a:
                v = _pd(x[i - n])
                if not math.isnan(v):
                    nobs -= 1
                    y = -v - comp_rem
                    t = sum_x + y
                    comp_rem = t - sum_x - y
                    sum_x = t
            v = _pd(x[i])
            if not math.isnan(v):
                nobs += 1
                y = v - comp_add
                t = sum_x + y
                comp_add = t - sum_x - y
                sum_x = t
                # repeats of the last value: a multiply, not a branch (a series of many
                # zeros, like the up moves, would mispredict the branch)
                same = 1.0 + same * np.float64(v == prev)
                prev = v
            if nobs >= 1:
                out[i] = prev * nobs if same >= nobs else sum_x
            else:
                out[i] = NAN


def roll_mean(x, offsets, n, out):
    """out[t] = pandas `rolling(n, min_periods=1).mean()` of x within its symbol."""
    for k in range(offsets.shape[0] - 1):
        a = offsets[k]
        b = offsets[k + 1]
        nobs = 0
        neg = 0
        sum_x = 0.0
        comp_add = 0.0
        comp_rem = 0.0
        same = 0.0
        prev = NAN
        if b > a:
            prev = _pd(x[a])
        for i in range(a, b):
            if i - n >= a:
                v = _pd(x[i - n])
                if not math.isnan(v):
                    nobs -= 1
                    y = -v - comp_rem
                    t = sum_x + y
                    comp_rem = t - sum_x - y
                    sum_x = t
                    if v < 0:
                        neg -= 1
            v = _pd(x[i])
            if not math.isnan(v):
                nobs += 1
                y = v - comp_add
                t = sum_x + y
                comp_add = t - sum_x - y
                sum_x = t
                if v < 0:
                    neg += 1
                # repeats of the last value: a multiply, not a branch (a series of many
                # zeros, like the up moves, would mispredict the branch)
                same = 1.0 + same * np.float64(v == prev)
                prev = v
            if nobs >= 1:
                r = sum_x / nobs
                if same >= nobs:
                    r = prev
                elif neg == 0 and r < 0:
                    r = 0.0
                elif neg == nobs and r > 0:
                    r = 0.0
                out[i] = r
            else:
                out[i] = NAN


def exact_prefix(x, p_int, p_cnt):
    """Whether pandas' Kahan rolling sums of x are exact sums, and x's prefix sums as integers.

    When x's finite values are all multiples of one power of two 2**e (floats holding float32
    values and their products are) and a window's sum of |values| stays within 2**53, every
    partial sum pandas' Kahan sum forms is exactly representable: the compensations stay 0,
    the sum is the exact sum, a window of one repeated value (value * count) is that sum too,
    and the mean is the exact sum / count (pandas' sign clamps never apply). Then the rolling
    sum and mean of any such window are differences of integer prefix sums (`roll_sum_prefix`,
    `roll_mean_prefix`), a subtraction per row instead of a Kahan add and remove.

    x: float64 (+-inf counts as missing, as pandas sees it). Writes p_int[i + 1] = sum of
    x[:i+1] / 2**e as int64 (modular: a difference of two prefixes is exact when the true
    difference fits) and p_cnt[i + 1] = count of finite values; p_int[0] = p_cnt[0] = 0.
    Returns (e, n_max): the windows of n <= n_max rows are exact (n_max = 0: none, e.g. a -0.0,
    whose repeats pandas returns as -0.0, or a subnormal)."""
    rows = x.shape[0]
    bits = x.view(np.int64)
    e = 4096
    top = 0.0
    bad = 0
    for i in range(rows):  # branch-free: the compiler vectorises it
        ef = (bits[i] >> 52) & 0x7FF
        normal = (ef != 0) & (ef != 0x7FF)
        lsb = ef - 1075 + trailing_zeros((bits[i] & 0xFFFFFFFFFFFFF) | 0x10000000000000)
        e = min(e, lsb if normal else 4096)
        top = max(top, abs(x[i]) if normal else 0.0)
        bad |= (ef == 0) & (bits[i] != 0)  # -0.0 or a subnormal
    p_int[0] = 0
    p_cnt[0] = 0
    if e == 4096:  # no nonzero value: every sum is 0
        e = 0
    if bad or e < -1000 or e > 900:
        return 0, 0
    scale = 2.0 ** -e
    big = top * scale  # the largest |value| as an integer
    n_max = int(9007199254740992.0 / big) if big > 0 else rows + 1
    acc = np.int64(0)
    cnt = np.int64(0)
    for i in range(rows):
        v = x[i]
        fin = not (math.isnan(v) or math.isinf(v))
        acc += np.int64(v * scale) if fin else np.int64(0)
        cnt += np.int64(1) if fin else np.int64(0)
        p_int[i + 1] = acc
        p_cnt[i + 1] = cnt
    return e, n_max


def roll_sum_prefix(p_int, p_cnt, e, offsets, n, out):
    """roll_sum from exact_prefix's prefix sums (its n_max >= n): (p[i+1] - p[start]) * 2**e,
    NaN where the window holds no value."""
    _roll_prefix(p_int, p_cnt, e, offsets, n, out, False)


def roll_mean_prefix(p_int, p_cnt, e, offsets, n, out):
    """roll_mean from exact_prefix's prefix sums (its n_max >= n): the exact sum / count, NaN
    where the window holds no value."""
    _roll_prefix(p_int, p_cnt, e, offsets, n, out, True)


@register_jitable
def _roll_prefix(p_int, p_cnt, e, offsets, n, out, mean):
    scale = 2.0 ** e
    for k in range(offsets.shape[0] - 1):
        a = offsets[k]
        b = offsets[k + 1]
        cut = min(a + n - 1, b)  # rows a..cut-1: windows cut by the symbol's start
        for i in range(a, cut):
            c = p_cnt[i + 1] - p_cnt[a]
            r = np.float64(p_int[i + 1] - p_int[a]) * scale
            r = r / np.float64(c) if mean else r
            out[i] = r if c > 0 else NAN
        # full windows, through slices (indices from 0 up: loads the compiler can vectorise)
        hi, lo = p_int[cut + 1:b + 1], p_int[cut + 1 - n:b + 1 - n]
        c_hi, c_lo = p_cnt[cut + 1:b + 1], p_cnt[cut + 1 - n:b + 1 - n]
        o = out[cut:b]
        for j in range(o.shape[0]):
            c = c_hi[j] - c_lo[j]
            r = np.float64(hi[j] - lo[j]) * scale
            r = r / np.float64(c) if mean else r
            o[j] = r if c > 0 else NAN


def roll_count_prefix(p_cnt, offsets, n, out):
    """The number of values (not NaN, not +-inf) in each window, from exact_prefix's p_cnt."""
    for k in range(offsets.shape[0] - 1):
        a = offsets[k]
        b = offsets[k + 1]
        for i in range(a, b):
            out[i] = np.float64(p_cnt[i + 1] - p_cnt[max(a, i + 1 - n)])


def roll_var(x, offsets, n, out):
    """out[t] = pandas `rolling(n, min_periods=1).var()` (ddof=1) of x within its symbol
    (Std is its square root with negatives as 0, pandas' zsqrt). x, out: 1-D contiguous."""
    roll_var_many(x.reshape((x.shape[0], 1)), offsets, n, out.reshape((out.shape[0], 1)))


@register_jitable
def roll_var_many(xs, offsets, n, out):
    """roll_var of each column of xs (rows x columns, C order) into the same column of out.

    Welford's update divides by the count inside the loop-carried chain; stepping the
    columns side by side lets their divisions overlap instead of waiting on each other.
    Each column's step is branch-free (a value that is NaN or +-inf computes the update and
    keeps the old state), so the columns' steps do not wait on mispredicted branches;
    the kept state is exactly pandas' (the count is a float64 holding an integer)."""
    m = xs.shape[1]
    # per column: count, repeats of the last value, mean, sum of squares, compensations of
    # adds and removes, last value
    nobs = np.zeros(m)
    same = np.zeros(m)
    mean_x = np.zeros(m)
    ssq = np.zeros(m)
    comp_add = np.zeros(m)
    comp_rem = np.zeros(m)
    prev = np.zeros(m)
    for k in range(offsets.shape[0] - 1):
        a = offsets[k]
        b = offsets[k + 1]
        if b == a:
            continue
        for c in range(m):
            nobs[c] = 0.0
            same[c] = 0.0
            mean_x[c] = 0.0
            ssq[c] = 0.0
            comp_add[c] = 0.0
            comp_rem[c] = 0.0
            prev[c] = _pd(xs[a, c])
        for i in range(a, b):
            if i - n >= a:
                for c in range(m):  # remove_var
                    v = xs[i - n, c]
                    ok = not (math.isnan(v) or math.isinf(v))
                    mu = mean_x[c]
                    cr = comp_rem[c]
                    left = nobs[c] - 1.0
                    prev_mean = mu - cr
                    y = v - cr
                    t = y - mu
                    mu2 = mu - t / left
                    some = left > 0.0  # pandas zeroes mean and ssq when the window empties
                    if ok:
                        nobs[c] = left
                        comp_rem[c] = t + mu - y if some else cr
                        mean_x[c] = mu2 if some else 0.0
                        ssq[c] = ssq[c] - (v - prev_mean) * (v - mu2) if some else 0.0
            for c in range(m):  # add_var
                v = xs[i, c]
                ok = not (math.isnan(v) or math.isinf(v))
                mu = mean_x[c]
                ca = comp_add[c]
                cnt = nobs[c] + 1.0
                prev_mean = mu - ca
                y = v - ca
                t = y - mu
                mu2 = mu + t / cnt
                sq = ssq[c] + (v - prev_mean) * (v - mu2)
                sm = same[c] + 1.0 if v == prev[c] else 1.0
                cnt = cnt if ok else nobs[c]
                sm = sm if ok else same[c]
                sq = sq if ok else ssq[c]
                nobs[c] = cnt
                same[c] = sm
                ssq[c] = sq
                mean_x[c] = mu2 if ok else mu
                comp_add[c] = t + mu - y if ok else ca
                prev[c] = v if ok else prev[c]
                r = 0.0 if sm >= cnt else sq / (cnt - 1.0)
                out[i, c] = r if cnt > 1.0 else NAN


def roll_max(x, offsets, n, out):
    """out[t] = the largest non-NaN value of the window (NaN if it holds none)."""
    roll_max_idxmax(x, offsets, n, out, np.empty_like(out))


def roll_min(x, offsets, n, out):
    """out[t] = the smallest non-NaN value of the window (NaN if it holds none)."""
    roll_min_idxmin(x, offsets, n, out, np.empty_like(out))


def roll_idxmax(x, offsets, n, out):
    """out[t] = 1 + np.argmax(window): first maximum, or the first NaN if the window has one;
    NaN when the window holds no value (pandas' apply count; +-inf is NaN to pandas)."""
    roll_max_idxmax(x, offsets, n, np.empty_like(out), out)


def roll_idxmin(x, offsets, n, out):
    """out[t] = 1 + np.argmin(window): first minimum, or the first NaN if the window has one;
    NaN when the window holds no value (pandas' apply count; +-inf is NaN to pandas)."""
    roll_min_idxmin(x, offsets, n, np.empty_like(out), out)


@register_jitable
def roll_max_idxmax(x, offsets, n, out_max, out_idx):
    """roll_max and roll_idxmax of x in one pass (Max($high, d) and IdxMax($high, d))."""
    _roll_extreme(x, offsets, n, out_max, out_idx, True)


@register_jitable
def roll_min_idxmin(x, offsets, n, out_min, out_idx):
    """roll_min and roll_idxmin of x in one pass (Min($low, d) and IdxMin($low, d))."""
    _roll_extreme(x, offsets, n, out_min, out_idx, False)


@register_jitable
def _roll_extreme(x, offsets, n, out, out_idx, is_max):
    """Rolling max/min (NaN skipped) into out and 1-based argmax/argmin (np.argmax: the first
    extreme, a NaN wins) into out_idx, +-inf read as NaN (pandas' _prep_values). Keeps the position of the current extreme; rescans the window only when
    that position leaves it (or, for the index, while the window holds a NaN)."""
    for k in range(offsets.shape[0] - 1):
        a = offsets[k]
        b = offsets[k + 1]
        best = -1  # row of the window's first extreme among non-NaN values, -1 if none
        nans = 0
        count = 0  # values (not NaN, not +-inf) in the window
        for i in range(a, b):
            s = max(a, i - n + 1)
            if i - n >= a:
                if math.isnan(_pd(x[i - n])):
                    nans -= 1
                else:
                    count -= 1
            v = _pd(x[i])
            if math.isnan(v):
                nans += 1
            else:
                count += 1
                if best >= 0 and best < s:
                    best = -1
                    for j in range(s, i):
                        w = _pd(x[j])
                        if not math.isnan(w) and (best < 0 or (w > x[best] if is_max else w < x[best])):
                            best = j
                if best < 0 or (v > x[best] if is_max else v < x[best]):
                    best = i
            if best >= 0 and best < s:  # the extreme left and no value entered: rescan
                best = -1
                for j in range(s, i + 1):
                    w = _pd(x[j])
                    if not math.isnan(w) and (best < 0 or (w > x[best] if is_max else w < x[best])):
                        best = j
            out[i] = np.float64(x[best]) if best >= 0 else NAN
            if count == 0:
                out_idx[i] = NAN
            elif nans > 0:
                j = s
                while not math.isnan(_pd(x[j])):
                    j += 1
                out_idx[i] = j - s + 1.0
            else:
                out_idx[i] = best - s + 1.0


def roll_qrank(x, offsets, n, q_lo, q_hi, buf, out_lo, out_hi, out_rank):
    """Quantile(x, n, q_lo), Quantile(x, n, q_hi) and Rank(x, n) (pct) in one pass.

    `buf` (length >= n) holds the window's non-NaN values sorted ascending. Each step counts,
    in one branch-free (vectorised) sweep of buf, the values below the leaving value and
    those below / not above the entering one; that gives the leaving value's slot (its first
    copy), the entering value's slot and its rank, and only the values between the two
    slots move. The entering value goes where sliding it from the leaving value's slot would
    stop: after the values below it, before those above it, and among its equals as close
    to that slot as they allow."""
    for k in range(offsets.shape[0] - 1):
        a = offsets[k]
        b = offsets[k + 1]
        m = 0
        for i in range(a, b):
            v = _pd(x[i])
            old = _pd(x[i - n]) if i - n >= a else NAN
            has_old = not math.isnan(old)
            has_v = not math.isnan(v)
            below_old = 0  # values < old: old's first copy sits there
            below = 0  # values < v
            upto = 0  # values <= v
            for j in range(m):
                w = buf[j]
                below_old += w < old
                below += w < v
                upto += w <= v
            if has_old:  # take old out of the counts of the values other than old
                below -= old < v
                upto -= old <= v
            if has_old and has_v:
                p = below_old
                q = min(max(p, below), upto)  # where sliding v from p stops
                if q >= p:
                    for j in range(p, q):
                        buf[j] = buf[j + 1]
                else:
                    for j in range(p, q, -1):
                        buf[j] = buf[j - 1]
                buf[q] = v
            elif has_old:
                for j in range(below_old, m - 1):
                    buf[j] = buf[j + 1]
                m -= 1
            elif has_v:
                for j in range(m, upto, -1):
                    buf[j] = buf[j - 1]
                buf[upto] = v
                m += 1
            if m == 0:
                out_lo[i] = NAN
                out_hi[i] = NAN
                out_rank[i] = NAN
                continue
            out_lo[i] = _quantile_sorted(buf, m, q_lo)
            out_hi[i] = _quantile_sorted(buf, m, q_hi)
            if has_v:
                r_min = below + 1.0  # v's copies take ranks below + 1 .. upto + 1
                r_max = upto + 1.0
                rank = ((r_max * (r_max + 1) / 2) - ((r_min - 1) * r_min / 2)) / (r_max - r_min + 1)
                out_rank[i] = rank / m
            else:
                out_rank[i] = NAN


@register_jitable
def _pd(v):
    """A value as pandas' rolling aggregations see it: float64, +-inf as NaN (_prep_values)."""
    v = np.float64(v)
    return NAN if math.isinf(v) else v


@register_jitable
def _lower_bound(buf, m, v):
    """The first position p in the sorted buf[:m] with buf[p] >= v (m if none): a binary
    search whose step is a select, not a branch (the compiler emits a conditional move)."""
    if m == 0:
        return 0
    base = 0
    size = m
    while size > 1:
        half = size >> 1
        base = base + half if buf[base + half - 1] < v else base
        size -= half
    return base + 1 if buf[base] < v else base


@register_jitable
def _quantile_sorted(buf, m, q):
    """pandas' linear quantile of the m sorted values buf[:m]."""
    if m == 1:
        return buf[0]
    f = q * (m - 1)
    idx = int(f)
    if f == idx:
        return buf[idx]
    lo = buf[idx]
    return lo + (buf[idx + 1] - lo) * (f - idx)


def roll_linreg(x, offsets, n, out_slope, out_rsq, out_resi):
    """Qlib's rolling Slope, Rsquare and Resi of x against positions 1..n (newest = n).

    Replays Qlib's Cython `Rolling` classes: a window pre-filled with n NaN, sums of i, x, x^2,
    y, y^2, xy shifted by one position per step (x -> x - 1) before the leaving value is taken
    out and the entering one put in; N = non-NaN count. 0/0 (N = 1, or a constant window for
    Rsquare) gives NaN as in C."""
    for k in range(offsets.shape[0] - 1):
        a = offsets[k]
        b = offsets[k + 1]
        i_sum = 0.0
        x_sum = 0.0
        x2_sum = 0.0
        y_sum = 0.0
        y2_sum = 0.0
        xy_sum = 0.0
        na = n
        w = float(n)
        for i in range(a, b):
            val = np.float64(x[i])
            xy_sum = xy_sum - y_sum
            x2_sum = x2_sum + i_sum - 2 * x_sum
            x_sum = x_sum - i_sum
            front = np.float64(x[i - n]) if i - n >= a else NAN
            if not math.isnan(front):
                i_sum -= 1
                y_sum -= front
                y2_sum -= front * front
            else:
                na -= 1
            if math.isnan(val):
                na += 1
            else:
                i_sum += 1
                x_sum += w
                x2_sum += w * w
                y_sum += val
                y2_sum += val * val
                xy_sum += w * val
            cnt = n - na
            num = cnt * xy_sum - x_sum * y_sum
            den_x = cnt * x2_sum - x_sum * x_sum
            slope = _div(num, den_x)
            out_slope[i] = slope
            den = den_x * (cnt * y2_sum - y_sum * y_sum)
            r = _div(num, math.sqrt(den) if den >= 0 else NAN)
            out_rsq[i] = r * r
            x_mean = _div(x_sum, float(cnt))
            y_mean = _div(y_sum, float(cnt))
            interp = y_mean - slope * x_mean
            out_resi[i] = val - (slope * w + interp)


@register_jitable
def _div(p, q):
    """p / q with C's IEEE semantics (x/0 = +-inf, 0/0 = NaN) instead of Python's error."""
    if q == 0.0:
        if p == 0.0 or math.isnan(p):
            return NAN
        return math.copysign(math.inf, p) * math.copysign(1.0, q)
    return p / q
