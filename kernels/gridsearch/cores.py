"""The grid search's per-element cores, written once and compiled for every target.

Plain Python loops over arrays that write into preallocated outputs (no allocation), like
`kernels.indicators.cores`: the CPU engines compile them with `numba.njit` (`brute`, `exits`,
`evaluate`), the CUDA module (`kernels.gridsearch.cuda`) with
`numba.cuda.jit(device=True)`, and numba's CUDA simulator (CI) runs them as they are.
This module imports no engine and no CUDA module; the engines and the CUDA module import
it (and the package constants), so the modules of the family form no cycle.

The cores that other cores call (`passes`, `kept_sum`, ...) are `register_jitable`: plain
Python functions under the interpreter and the simulator, compiled into whichever target
(cpu or cuda) calls them.

The keep predicate. A trade passes the filters of a combination (or of a candidate of the
smart search) when each of its five features (volatility, ratio, adx28, adx14, adx7) is
>= the combination's threshold for it, compared in the features' dtype (float32; the
engines cast their thresholds to it). `passes` is that test, the only place it is
written: on scalars inside the compiled loops and, elementwise, on NumPy arrays
(`kept_mask`). The dominance-sums engine (`cube`) states the same test as a binning (a
trade's bin along a dimension = the number of sorted thresholds <= its feature) and the
reference (`reference`) restates it on purpose, as an independent oracle.

Results are int32 units of 1e-6 percent (RESULT_SCALE); sums are int64, so every engine's
ROI is exact and equal whatever the summation order.
"""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

from kernels.gridsearch import NO_CROSS


@register_jitable
def passes(v0, v1, v2, v3, v4, t0, t1, t2, t3, t4):
    """The keep predicate: v_d >= t_d for every filter d (branch-free, `&` of the five
    comparisons). Scalars in compiled code, or NumPy arrays (elementwise boolean mask)."""
    return (v0 >= t0) & (v1 >= t1) & (v2 >= t2) & (v3 >= t3) & (v4 >= t4)


def kept_mask(features: np.ndarray, thresholds) -> np.ndarray:
    """Host side: bool [trades], the trades of features [5, trades] that pass the five
    thresholds (cast to the features' dtype, as the engines compare)."""
    features = np.asarray(features)
    t = np.asarray(thresholds, dtype=features.dtype).reshape(5)
    return np.asarray(passes(features[0], features[1], features[2], features[3], features[4], t[0], t[1], t[2], t[3], t[4]))


@register_jitable
def kept_sum(f0, f1, f2, f3, f4, t0, t1, t2, t3, t4, row):
    """(sum of row[j], count) over every trade j that passes the thresholds (int64)."""
    total = 0
    kept = 0
    for j in range(f0.shape[0]):
        k = np.int64(passes(f0[j], f1[j], f2[j], f3[j], f4[j], t0, t1, t2, t3, t4))
        total += k * np.int64(row[j])
        kept += k
    return total, kept


@register_jitable
def kept_sum_at(idx, f0, f1, f2, f3, f4, t0, t1, t2, t3, t4, row):
    """`kept_sum` over the trades idx[i] only."""
    total = 0
    kept = 0
    for i in range(idx.shape[0]):
        j = idx[i]
        k = np.int64(passes(f0[j], f1[j], f2[j], f3[j], f4[j], t0, t1, t2, t3, t4))
        total += k * np.int64(row[j])
        kept += k
    return total, kept


@register_jitable
def kept_moments_at(idx, f0, f1, f2, f3, f4, t0, t1, t2, t3, t4, row):
    """(sum int64, sum of squares float64, count) of row[j] over the kept trades idx[i]."""
    total = 0
    sq = 0.0
    kept = 0
    for i in range(idx.shape[0]):
        j = idx[i]
        k = np.int64(passes(f0[j], f1[j], f2[j], f3[j], f4[j], t0, t1, t2, t3, t4))
        r = np.int64(row[j])
        total += k * r
        sq += np.float64(k * r) * np.float64(r)
        kept += k
    return total, sq, kept


def combo_core(c, lo, sizes, table, f0, f1, f2, f3, f4, results, out_sum, out_n):
    """Combination c (grid order, int64 index arithmetic): decode its seven parameter
    indices from `sizes`, read its thresholds from `table` ([7, max_len], the features'
    dtype) and write the ROI units and kept-trade count of its pair's row of `results`
    into out_sum[c - lo], out_n[c - lo]."""
    rest = c
    i6 = rest % sizes[6]
    rest //= sizes[6]
    i5 = rest % sizes[5]
    rest //= sizes[5]
    i4 = rest % sizes[4]
    rest //= sizes[4]
    i3 = rest % sizes[3]
    rest //= sizes[3]
    i2 = rest % sizes[2]
    rest //= sizes[2]
    i1 = rest % sizes[1]
    i0 = rest // sizes[1]
    pair = i5 * sizes[6] + i6
    total, kept = kept_sum(f0, f1, f2, f3, f4, table[0, i0], table[1, i1], table[2, i2], table[3, i3], table[4, i4],
                           results[pair])
    out_sum[c - lo] = total
    out_n[c - lo] = kept


def crossings_core(j, start, end, entry, prices, targets, stops, first_t, first_s):
    """Trade j: the first path row (start[j]..end[j]) where r >= targets[k] (first_t[k, j])
    and where r <= stops[k] (first_s[k, j]), NO_CROSS where never; r = (price / entry - 1)
    * 100 in float64. Targets sorted ascending, stops descending (each level is crossed no
    earlier than the previous one), so one pass serves every level."""
    e = np.float64(entry[j])
    n_t = targets.shape[0]
    n_s = stops.shape[0]
    kt = 0
    ks = 0
    for i in range(start[j], end[j] + 1):
        r = (np.float64(prices[i]) / e - 1.0) * 100.0
        while kt < n_t and r >= targets[kt]:
            first_t[kt, j] = i
            kt += 1
        while ks < n_s and r <= stops[ks]:
            first_s[ks, j] = i
            ks += 1
        if kt == n_t and ks == n_s:
            break
    for k in range(kt, n_t):
        first_t[k, j] = NO_CROSS
    for k in range(ks, n_s):
        first_s[k, j] = NO_CROSS


def pair_core(p, j0, j1, first_t, first_s, order_t, order_s, t_units, s_units, pct_units, results, exit_rows, rows):
    """Pair p = target_i * n_stops + stop_i, trades j0..j1-1: the exit that comes first.
    results[p, j] (int32 units of 1e-6 %): the stop's units where the stop is crossed before
    the target, else the target's where the target is crossed at all (first_t < NO_CROSS),
    else the trade's own pct_units[j]; and, when `rows`, exit_rows[p, j] = min(first_t,
    first_s) (NO_CROSS where the trade ran to its end). `order_t[i]` is grid target i's row
    in first_t (sorted levels), likewise order_s. The CPU runs it over every trade of a pair
    (`exits._resolve_pairs_kernel`), CUDA over one trade per thread (`cuda.pairs_kernel`)."""
    n_s = s_units.shape[0]
    ti = p // n_s
    si = p - ti * n_s
    rt = order_t[ti]
    rs = order_s[si]
    tu = t_units[ti]
    su = s_units[si]
    for j in range(j0, j1):
        ft = first_t[rt, j]
        fs = first_s[rs, j]
        results[p, j] = su if fs < ft else (tu if ft < NO_CROSS else pct_units[j])
        if rows:
            exit_rows[p, j] = min(ft, fs)
