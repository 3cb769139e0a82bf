"""The overfitting guard of the grid search: is the winner skill, or the best of many tries?

Searching millions of combinations on one trade history will find one that looks good by
chance. Three checks, all on the exact integer ROIs (1e-6 percent units) the engines use,
with the days shuffled (seeded) into blocks of whole days (`shuffled_day_blocks`: a
combination can be bad one month and good another, so blocks mix the calendar):

- `in_out_of_sample`: half the blocks in-sample, half out-of-sample. The grid is ranked
  on the in-sample trades with the exact cube engine; each in-sample top-k combination is
  shown with its out-of-sample ROI, and so is each full-sample winner passed in.
- `pbo_cscv`: the Probability of Backtest Overfitting by Combinatorially Symmetric
  Cross-Validation (Bailey, Borwein, Lopez de Prado, Zhu, 2017). With S blocks (S even)
  and a performance matrix M [N candidates, S] (each candidate's ROI per block), for every
  one of the C(S, S/2) ways to choose S/2 blocks as in-sample: the candidate with the best
  in-sample ROI is taken, its out-of-sample ROI ranked among all candidates (1 = worst,
  ties averaged), w = rank / (N + 1), lambda = log(w / (1 - w)). PBO = the fraction of
  splits with lambda <= 0: how often the in-sample winner is at best median out of sample.
  About 0.5 for no skill, near 0 for a genuinely dominant combination. The N candidates
  are a seeded random sample of the grid (see `select_candidates` for why not its top N).
- `deflated_sharpe`: the Deflated Sharpe Ratio (Bailey & Lopez de Prado, 2014) of the
  winner's per-trade returns: the probability that its true Sharpe ratio exceeds the
  expected maximum Sharpe ratio of N trials with no skill.

`overfitting_report` combines the three into one JSON-serialisable dict.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from domain.gridsearch.inputs import TradeArrays
from domain.gridsearch.smart import shuffled_day_blocks
from kernels.gridsearch import RESULT_SCALE
from kernels.gridsearch.brute import filter_table
from kernels.gridsearch.cores import kept_mask
from kernels.gridsearch.cube import cube_roi
from kernels.gridsearch.evaluate import evaluate, sharpe_ratios
from kernels.gridsearch.grid import FILTERS, Grid
from kernels.gridsearch.ranking import top_k_full

EULER_GAMMA = 0.5772156649015329


def _pct(units) -> float:
    return round(int(units) / RESULT_SCALE, 9)


def _subset(trades: TradeArrays, results: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.ascontiguousarray(trades.features[:, idx]), np.ascontiguousarray(results[:, idx])


def combination_vectors(grid: Grid, index, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(thresholds [C, 5] in the features' dtype, pairs int64 [C]) of grid combinations."""
    idx = np.unravel_index(np.asarray(index, dtype=np.int64).ravel(), grid.sizes)
    table = filter_table(grid, dtype)
    thresholds = np.stack([table[d, idx[d]] for d in range(5)], axis=1)
    pairs = idx[5] * len(grid.stop_loss) + idx[6]
    return thresholds, pairs.astype(np.int64)


def row_vectors(grid: Grid, rows: list[dict], dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(thresholds [R, 5], pairs [R]) of result rows (GridSearchResult.top or
    SmartResult.top); their target and stop_loss must be levels of `grid` (rows of results)."""
    thresholds = np.array([[row[name] for name in FILTERS] for row in rows], dtype=dtype).reshape(len(rows), 5)
    pairs = []
    for row in rows:
        try:
            pairs.append(grid.target.index(float(row["target"])) * len(grid.stop_loss)
                         + grid.stop_loss.index(float(row["stop_loss"])))
        except ValueError:
            raise ValueError(f"row {row.get('rank')}: target {row['target']} / stop_loss {row['stop_loss']} are not "
                             f"levels of the grid whose exits `results` holds") from None
    return thresholds, np.asarray(pairs, dtype=np.int64)


def _params(thresholds: np.ndarray, pair: int, grid: Grid) -> dict:
    n_s = len(grid.stop_loss)
    out = {name: float(str(np.float32(thresholds[d]))) for d, name in enumerate(FILTERS)}
    return {**out, "target": grid.target[pair // n_s], "stop_loss": grid.stop_loss[pair % n_s]}


def split_halves(trades: TradeArrays, blocks: int, seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(in-sample trade indices, out-of-sample trade indices, blocks used): the shuffled
    day blocks, first half in-sample, second half out-of-sample; a partition of the trades."""
    day_blocks = shuffled_day_blocks(trades.day, blocks, seed)
    if len(day_blocks) < 2:
        raise ValueError("in/out-of-sample needs trades on at least 2 days")
    half = len(day_blocks) // 2
    return np.sort(np.concatenate(day_blocks[:half])), np.sort(np.concatenate(day_blocks[half:])), len(day_blocks)


# ----------------------------------------------------------------------------- in / out of sample


def in_out_of_sample(trades: TradeArrays, results: np.ndarray, grid: Grid, top_rows: list[dict], *, blocks: int = 8,
                     seed: int = 0, k: int = 10, min_trades: int = 1) -> list[dict]:
    """Rows for the in-sample top-k (source "in_sample_top": ranked by the cube engine on
    the in-sample trades) and for `top_rows` (source "full_sample_top"), each with
    roi_in / trades_in and roi_out / trades_out (percent, counts). The halves partition
    the trades, so roi_in + roi_out is the combination's full-sample ROI."""
    ins, outs, _ = split_halves(trades, blocks, seed)
    f_in, r_in = _subset(trades, results, ins)
    roi, counts = cube_roi(f_in, r_in, grid)
    best = top_k_full(roi, counts, k, min_trades)
    th_top, pairs_top = combination_vectors(grid, best.index, trades.features.dtype)
    th_rows, pairs_rows = row_vectors(grid, top_rows, trades.features.dtype)
    thresholds = np.concatenate([th_top, th_rows])
    pairs = np.concatenate([pairs_top, pairs_rows])
    s_in, n_in = evaluate(trades.features, results, thresholds, pairs, ins)
    s_out, n_out = evaluate(trades.features, results, thresholds, pairs, outs)
    out = []
    for i in range(len(pairs)):
        from_grid = i < len(pairs_top)
        row = {"source": "in_sample_top" if from_grid else "full_sample_top",
               "rank": i + 1 if from_grid else int(top_rows[i - len(pairs_top)].get("rank", i - len(pairs_top) + 1)),
               **_params(thresholds[i], int(pairs[i]), grid),
               "roi_in": _pct(s_in[i]), "trades_in": int(n_in[i]), "roi_out": _pct(s_out[i]), "trades_out": int(n_out[i])}
        if from_grid:
            row["combination"] = int(best.index[i])
        else:
            row["roi_full"] = float(top_rows[i - len(pairs_top)]["roi"])
        out.append(row)
    return out


# ----------------------------------------------------------------------------- PBO by CSCV


def even_blocks(trades: TradeArrays, blocks: int, seed: int) -> list[np.ndarray]:
    """Shuffled day blocks, as many as asked if the days allow, made even (CSCV's S)."""
    n_days = np.unique(trades.day).size
    s = min(int(blocks), n_days)
    s -= s % 2
    if s < 2:
        raise ValueError(f"CSCV needs an even number >= 2 of day blocks; the trades cover {n_days} day(s)")
    return shuffled_day_blocks(trades.day, s, seed)


def select_candidates(roi: np.ndarray, counts: np.ndarray, n: int, min_trades: int, selection: str,
                      seed: int = 0) -> np.ndarray:
    """Grid indices of (at most) n candidates among combinations with >= min_trades trades.

    "random" (default): a seeded uniform sample (every valid combination when there are at
    most n): the N trials of CSCV, chosen independently of how they did. "top": the n best
    by full-sample ROI. "spread": n evenly spaced over the full-sample ranking, the best
    included. The last two condition on the full-sample ROI (= in-sample + out-of-sample),
    which biases PBO: on pure-noise results (40 seeds, the default grid of `grid_search.params`, 8 blocks) the mean PBO
    was 0.50 for "random", 0.61 for "top" (in-sample and out-of-sample ROI are negatively
    related among combinations of near-equal total) and 0.32 for "spread".
    """
    roi, counts = roi.ravel(), counts.ravel()
    valid = np.flatnonzero(counts >= min_trades)
    if selection == "top":
        return top_k_full(roi, counts, n, min_trades).index
    if selection == "random":
        return valid if valid.size <= n else np.sort(np.random.default_rng(seed).choice(valid, n, replace=False))
    if selection != "spread":
        raise ValueError(f"selection must be 'spread', 'random' or 'top', got {selection!r}")
    ranked = valid[np.lexsort((valid, -roi[valid]))]
    if ranked.size <= n:
        return ranked
    return ranked[np.unique(np.linspace(0, ranked.size - 1, n).round().astype(np.int64))]


def performance_matrix(trades: TradeArrays, results: np.ndarray, grid: Grid, candidates: np.ndarray,
                       day_blocks: list[np.ndarray]) -> np.ndarray:
    """int64 [N, S]: each candidate's ROI (units) on each block, by the cube engine per block."""
    m = np.empty((len(candidates), len(day_blocks)), dtype=np.int64)
    for s, idx in enumerate(day_blocks):
        roi, _ = cube_roi(*_subset(trades, results, idx), grid)
        m[:, s] = roi.ravel()[candidates]
    return m


def cscv_lambdas(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lambda per split, out-of-sample ROI of the in-sample best per split) of a
    performance matrix [N, S]; splits in itertools.combinations order."""
    n, s = m.shape
    splits = np.array([[b in c for b in range(s)] for c in itertools.combinations(range(s), s // 2)], dtype=np.int64)
    perf_in = m @ splits.T  # [N, splits]
    perf_out = m @ (1 - splits).T
    best = np.argmax(perf_in, axis=0)  # ties: the earlier candidate
    cols = np.arange(splits.shape[0])
    chosen = perf_out[best, cols]
    below = (perf_out < chosen).sum(axis=0)
    equal = (perf_out == chosen).sum(axis=0)
    rank = below + (equal + 1) / 2.0  # 1 = worst, ties averaged
    w = rank / (n + 1.0)
    return np.log(w / (1.0 - w)), chosen


def pbo_cscv(trades: TradeArrays, results: np.ndarray, grid: Grid, *, blocks: int = 8, candidates: int = 1000,
             seed: int = 0, min_trades: int = 1, selection: str = "random", full=None) -> dict:
    """PBO by CSCV over `candidates` grid combinations (see `select_candidates`; the
    performance of a candidate on a block is its ROI there, the search's own measure);
    candidates with the same ROI on every block are one strategy (deduplicated). `full`: the full-sample
    (roi, counts) cube if already computed. Returns pbo in [0, 1], splits = C(S, S/2),
    lambda_median, prob_oos_loss (share of splits whose in-sample best loses out of sample),
    the blocks S and the candidates N used."""
    day_blocks = even_blocks(trades, blocks, seed)
    roi, counts = full if full is not None else cube_roi(trades.features, results, grid)
    chosen = select_candidates(roi, counts, candidates, min_trades, selection, seed)
    m = performance_matrix(trades, results, grid, chosen, day_blocks)
    _, first = np.unique(m, axis=0, return_index=True)
    m = m[np.sort(first)]
    if m.shape[0] < 2:
        return {"pbo": None, "reason": "fewer than 2 distinct candidates", "splits": 0, "blocks": len(day_blocks),
                "candidates": int(m.shape[0])}
    lambdas, oos = cscv_lambdas(m)
    return {"pbo": float(np.mean(lambdas <= 0)), "splits": int(lambdas.size), "lambda_median": float(np.median(lambdas)),
            "prob_oos_loss": float(np.mean(oos < 0)), "blocks": len(day_blocks), "candidates": int(m.shape[0]),
            "selection": selection}


# ----------------------------------------------------------------------------- deflated Sharpe


def expected_max_sharpe(n_trials: int, sr_variance: float) -> float:
    """E[max SR] of n_trials unskilled trials with Sharpe-ratio variance `sr_variance`
    (Bailey & Lopez de Prado: sqrt(V) * ((1 - g) Z(1 - 1/N) + g Z(1 - 1/(N e)))), 0 for N <= 1."""
    from scipy.stats import norm

    if n_trials <= 1 or not sr_variance > 0:
        return 0.0
    n = float(n_trials)
    z = (1 - EULER_GAMMA) * norm.ppf(1 - 1 / n) + EULER_GAMMA * norm.ppf(1 - 1 / (n * math.e))
    return float(math.sqrt(sr_variance) * z)


def deflated_sharpe_ratio(returns: np.ndarray, n_trials: int, sharpes_of_trials) -> dict:
    """DSR of per-trade `returns` (percent) after `n_trials` trials whose Sharpe ratios (same
    per-trade units) are `sharpes_of_trials` (their sample variance V gives SR0 = E[max SR]):
    Phi((SR - SR0) sqrt(T - 1) / sqrt(1 - skew SR + (kurt - 1) / 4 SR^2)), SR = mean / sample
    std, skew and kurt (Pearson's, normal = 3) of the returns, T their count. dsr is None
    (with a reason) when it is undefined.

    Also `dsr_sampling`: the same with V = 1 / (T - 1), the variance of an estimated SR of T
    trades when there is no skill. The trials' spread V mixes luck with real differences
    between trials (a genuine edge shared by many combinations widens it and can push SR0
    above even a strong winner), so `dsr` is the conservative figure and `dsr_sampling`
    the one that isolates luck."""
    from scipy.stats import kurtosis, norm, skew

    r = np.asarray(returns, dtype=np.float64)
    trials = np.asarray(sharpes_of_trials, dtype=np.float64)
    trials = trials[np.isfinite(trials)]
    out = {"dsr": None, "trades": int(r.size), "n_trials": int(n_trials), "trial_sharpes": int(trials.size)}
    if r.size < 3 or not np.std(r) > 0:
        return {**out, "reason": "fewer than 3 trades or constant returns"}
    sr = float(np.mean(r) / np.std(r, ddof=1))
    g3, g4 = float(skew(r)), float(kurtosis(r, fisher=False))
    var_trials = float(np.var(trials, ddof=1)) if trials.size > 1 else 0.0
    sr0 = expected_max_sharpe(n_trials, var_trials)
    sr0_sampling = expected_max_sharpe(n_trials, 1.0 / (r.size - 1))
    out.update({"sharpe": sr, "skewness": g3, "kurtosis": g4, "trials_sr_std": math.sqrt(var_trials), "sr0": sr0,
                "sr0_sampling": sr0_sampling})
    denom = 1 - g3 * sr + (g4 - 1) / 4 * sr * sr
    if not denom > 0:
        return {**out, "reason": "non-positive variance term 1 - skew*SR + (kurt-1)/4*SR^2"}
    scale = math.sqrt(r.size - 1) / math.sqrt(denom)
    z = (sr - sr0) * scale
    dsr_sampling = float(norm.cdf((sr - sr0_sampling) * scale))
    return {**out, "z": float(z), "dsr": float(norm.cdf(z)), "dsr_sampling": dsr_sampling}


def winner_returns(trades: TradeArrays, results: np.ndarray, grid: Grid, row: dict) -> np.ndarray:
    """Per-trade results (percent) of the trades a result row keeps, with its exits."""
    th, pairs = row_vectors(grid, [row], trades.features.dtype)
    keep = kept_mask(trades.features, th[0])
    return results[pairs[0], keep].astype(np.float64) / RESULT_SCALE


def deflated_sharpe(trades: TradeArrays, results: np.ndarray, grid: Grid, winner_row: dict, n_trials: int,
                    sharpes_of_trials) -> dict:
    """Deflated Sharpe Ratio of the winner (a result row) after `n_trials` trials with
    per-trade Sharpe ratios `sharpes_of_trials` (e.g. from `trial_sharpes`)."""
    return deflated_sharpe_ratio(winner_returns(trades, results, grid, winner_row), n_trials, sharpes_of_trials)


def distinct_trials(roi: np.ndarray, counts: np.ndarray, min_trades: int = 1) -> np.ndarray:
    """Grid indices of one representative (the first in grid order) per distinct (ROI,
    trades) outcome among combinations with >= min_trades trades: combinations keeping the
    same trades with the same exits are one trial, not many."""
    roi, counts = roi.ravel(), counts.ravel()
    valid = np.flatnonzero(counts >= min_trades)
    keys = np.stack([roi[valid], counts[valid]], axis=1)
    _, first = np.unique(keys, axis=0, return_index=True)
    return valid[np.sort(first)]


def trial_sharpes(trades: TradeArrays, results: np.ndarray, grid: Grid, index, *, sample: int = 2000, seed: int = 0,
                  min_trades: int = 2) -> np.ndarray:
    """Per-trade Sharpe ratios of grid combinations `index` (a seeded sample of at most
    `sample` of them); combinations with fewer than `min_trades` trades are left out."""
    index = np.asarray(index, dtype=np.int64)
    if index.size > sample:
        index = np.sort(np.random.default_rng(seed).choice(index, sample, replace=False))
    th, pairs = combination_vectors(grid, index, trades.features.dtype)
    sr = sharpe_ratios(trades.features, results, th, pairs, min_trades=min_trades)
    return sr[np.isfinite(sr)]


# ----------------------------------------------------------------------------- report


def overfitting_report(trades: TradeArrays, results: np.ndarray, grid: Grid, top_rows: list[dict], *, blocks: int = 8,
                       seed: int = 0, candidates: int = 1000, min_trades: int = 1, k: int = 10) -> dict:
    """In/out-of-sample table, PBO by CSCV and the winner's (top_rows[0]) Deflated Sharpe
    Ratio, as one JSON-serialisable dict. For the DSR, N = the grid's distinct (ROI, trades)
    outcomes and the trials' Sharpe variance comes from a sample of those keeping at least
    half the winner's trades. `results`: exits [pairs, trades] for the grid's target and
    stop_loss levels (as run_grid_search returns); `top_rows`: rows like
    GridSearchResult.top whose exits are levels of `grid`."""
    full = cube_roi(trades.features, results, grid)
    trials = distinct_trials(*full, min_trades)
    report = {"blocks": blocks, "seed": seed, "combinations": grid.n_combinations, "distinct_trials": int(trials.size),
              "in_out_of_sample": in_out_of_sample(trades, results, grid, top_rows, blocks=blocks, seed=seed, k=k,
                                                   min_trades=min_trades),
              "pbo": pbo_cscv(trades, results, grid, blocks=blocks, candidates=candidates, seed=seed,
                              min_trades=min_trades, full=full)}
    if top_rows:
        # The DSR assumes trials of one length: SRs of combinations keeping far fewer trades
        # than the winner are mostly the noise of their small T and would inflate V.
        floor = max(2, int(top_rows[0]["trades"]) // 2)
        comparable = trials[full[1].ravel()[trials] >= floor]
        srs = trial_sharpes(trades, results, grid, comparable, seed=seed)
        report["deflated_sharpe"] = deflated_sharpe(trades, results, grid, top_rows[0], int(trials.size), srs)
    else:
        report["deflated_sharpe"] = {"dsr": None, "reason": "no winner"}
    return report


__all__ = ["in_out_of_sample", "pbo_cscv", "deflated_sharpe", "deflated_sharpe_ratio", "overfitting_report",
           "trial_sharpes", "distinct_trials", "expected_max_sharpe"]
