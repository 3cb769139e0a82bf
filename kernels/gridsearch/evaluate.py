"""Score arbitrary parameter vectors (not grid indices): the kernel behind the smart search.

A candidate c is five filter thresholds `thresholds[c]` (keep trade j when
`features[d, j] >= thresholds[c, d]` for every d, compared in the features' dtype, float32)
and a row `pairs[c]` of `results` (the (target, stop_loss) pair, see `exits`). Its ROI is
the sum of the kept trades' results in units of 1e-6 percent (exact int64, as every engine
here), its count the number of kept trades. `trade_index` (int64, optional) restricts the
trades to a subset, e.g. the trades of some day blocks; sorting it keeps memory access
ascending.

numba on the CPU, parallel over candidates (prange); the inner loops are those of `cores`
(`kept_sum`, `kept_sum_at`, `kept_moments_at`: the keep predicate `cores.passes`,
branch-free, as in the brute force's `cores.combo_core`), so one call scores a whole batch
of Optuna trials. `evaluate_moments` also returns the sum of squared results (float64,
units^2) for per-candidate mean and standard deviation (Sharpe ratios); it is not on the
hot path.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from kernels.gridsearch.cores import kept_moments_at, kept_sum, kept_sum_at


@njit(cache=True, nogil=True)
def _score_all(c, f0, f1, f2, f3, f4, results, thresholds, pairs, out_sum, out_n):
    out_sum[c], out_n[c] = kept_sum(f0, f1, f2, f3, f4, thresholds[c, 0], thresholds[c, 1], thresholds[c, 2],
                                    thresholds[c, 3], thresholds[c, 4], results[pairs[c]])


@njit(cache=True, nogil=True)
def _score_subset(c, f0, f1, f2, f3, f4, results, thresholds, pairs, idx, out_sum, out_n):
    out_sum[c], out_n[c] = kept_sum_at(idx, f0, f1, f2, f3, f4, thresholds[c, 0], thresholds[c, 1], thresholds[c, 2],
                                       thresholds[c, 3], thresholds[c, 4], results[pairs[c]])


@njit(cache=True, nogil=True)
def _moments_subset(c, f0, f1, f2, f3, f4, results, thresholds, pairs, idx, out_sum, out_sq, out_n):
    out_sum[c], out_sq[c], out_n[c] = kept_moments_at(idx, f0, f1, f2, f3, f4, thresholds[c, 0], thresholds[c, 1],
                                                      thresholds[c, 2], thresholds[c, 3], thresholds[c, 4],
                                                      results[pairs[c]])


@njit(cache=True, parallel=True)
def _launch_all(f0, f1, f2, f3, f4, results, thresholds, pairs, out_sum, out_n):
    for c in prange(pairs.shape[0]):
        _score_all(c, f0, f1, f2, f3, f4, results, thresholds, pairs, out_sum, out_n)


@njit(cache=True, parallel=True)
def _launch_subset(f0, f1, f2, f3, f4, results, thresholds, pairs, idx, out_sum, out_n):
    for c in prange(pairs.shape[0]):
        _score_subset(c, f0, f1, f2, f3, f4, results, thresholds, pairs, idx, out_sum, out_n)


@njit(cache=True, parallel=True)
def _launch_moments(f0, f1, f2, f3, f4, results, thresholds, pairs, idx, out_sum, out_sq, out_n):
    for c in prange(pairs.shape[0]):
        _moments_subset(c, f0, f1, f2, f3, f4, results, thresholds, pairs, idx, out_sum, out_sq, out_n)


def _prepare(features, results, thresholds, pairs, trade_index):
    features = np.asarray(features)
    results = np.ascontiguousarray(results)
    if features.ndim != 2 or features.shape[0] != 5:
        raise ValueError(f"features must be [5, trades], got shape {features.shape}")
    if results.ndim != 2 or results.shape[1] != features.shape[1]:
        raise ValueError(f"results must be [pairs, {features.shape[1]}], got shape {results.shape}")
    thresholds = np.ascontiguousarray(thresholds, dtype=features.dtype)
    pairs = np.ascontiguousarray(pairs, dtype=np.int64)
    if thresholds.ndim != 2 or thresholds.shape != (pairs.shape[0], 5):
        raise ValueError(f"thresholds must be [{pairs.shape[0]}, 5] (one row per pair), got {thresholds.shape}")
    if pairs.size and (pairs.min() < 0 or pairs.max() >= results.shape[0]):
        raise ValueError(f"pairs must be rows of results (0..{results.shape[0] - 1})")
    f = [np.ascontiguousarray(features[d]) for d in range(5)]
    if trade_index is not None:
        trade_index = np.ascontiguousarray(trade_index, dtype=np.int64)
        if trade_index.size and (trade_index.min() < 0 or trade_index.max() >= features.shape[1]):
            raise ValueError(f"trade_index must hold trade indices 0..{features.shape[1] - 1}")
    return f, results, thresholds, pairs, trade_index


def evaluate(features, results, thresholds, pairs, trade_index=None) -> tuple[np.ndarray, np.ndarray]:
    """(roi_units int64 [C], trades int64 [C]) of C candidates.

    features float32 [5, trades] (volatility, ratio, adx28, adx14, adx7); results int32
    [pairs, trades]; thresholds [C, 5] (cast to the features' dtype); pairs int64 [C];
    trade_index: optional int64 trade indices to score on (default: every trade).
    """
    f, results, thresholds, pairs, idx = _prepare(features, results, thresholds, pairs, trade_index)
    out_sum = np.empty(pairs.shape[0], dtype=np.int64)
    out_n = np.empty(pairs.shape[0], dtype=np.int64)
    if idx is None:
        _launch_all(*f, results, thresholds, pairs, out_sum, out_n)
    else:
        _launch_subset(*f, results, thresholds, pairs, idx, out_sum, out_n)
    return out_sum, out_n


def evaluate_moments(features, results, thresholds, pairs, trade_index=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sum int64, sum of squares float64, trades int64) per candidate, in result units."""
    f, results, thresholds, pairs, idx = _prepare(features, results, thresholds, pairs, trade_index)
    if idx is None:
        idx = np.arange(f[0].shape[0], dtype=np.int64)
    out_sum = np.empty(pairs.shape[0], dtype=np.int64)
    out_sq = np.empty(pairs.shape[0], dtype=np.float64)
    out_n = np.empty(pairs.shape[0], dtype=np.int64)
    _launch_moments(*f, results, thresholds, pairs, idx, out_sum, out_sq, out_n)
    return out_sum, out_sq, out_n


def sharpe_ratios(features, results, thresholds, pairs, trade_index=None, min_trades: int = 2) -> np.ndarray:
    """Per-trade Sharpe ratio (mean / sample std of the kept trades' results) per candidate;
    NaN where fewer than `min_trades` (at least 2) trades are kept or the std is 0."""
    total, sq, n = evaluate_moments(features, results, thresholds, pairs, trade_index)
    n_f = n.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = total / n_f
        var = (sq - n_f * mean * mean) / (n_f - 1.0)
        sr = mean / np.sqrt(var)
    bad = (n < max(2, min_trades)) | ~(var > 0)
    sr[bad] = np.nan
    return sr
