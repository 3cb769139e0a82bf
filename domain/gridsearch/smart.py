"""Smart search (the option beyond the exhaustive grid): Optuna instead of the full grid.

The grid is O(n^d); this searches the same parameters, the five filter thresholds
(volatility, ratio, adx28, adx14, adx7: keep a trade when each entry metric >= its
threshold) and the exits (target, stop_loss), with a sampler that learns where the profit
is:

- space: each threshold a continuous float over `ranges` (default: the feature's observed
  min..max over the trades, the low end padded by 10% of the span so that "no filter",
  any threshold <= the min, can be sampled: see `feature_ranges`); target and stop_loss categorical over fine level lists
  (default 0.1..2.0 and -2.0..-0.1, step 0.05). The exits of every (target, stop_loss)
  level pair are resolved once with `resolve_exits` (one row of `results` per pair,
  p = target_index * n_stops + stop_index), so a trial costs one filtered sum.
- samplers: "tpe" (`TPESampler(multivariate=True)`), "nsga2" (`NSGAIISampler`, the
  genetic option: one batch is one generation), "random" (`RandomSampler`, the baseline).
  Objective: ROI in percent (sum of the kept trades' results), maximised. With
  `objectives="roi_trades"` (NSGA-II or TPE) the trade count is a second maximised
  objective: a Pareto front of ROI against support. The default is ROI alone: the goal is
  the top ROI, and a second objective spends most of the population on the low-ROI,
  many-trade end of the front; support is enforced by `min_trades` (a constraint:
  trials keeping fewer trades are infeasible) and overfitting is judged afterwards
  (domain.gridsearch.overfit).
- ask-and-tell in batches: `batch` trials are asked, scored together (one
  `kernels.gridsearch.evaluate.evaluate` call per step), and told.
- pruning over day blocks ("mix the days up"): the days are shuffled (seeded) into
  `blocks` blocks. For each block in turn, every live trial of the batch is scored on that
  block's trades (one evaluate call per block) and its running total, the ROI over the
  blocks seen so far, is reported at step = number of blocks seen (1..blocks); a trial
  the pruner stops is told PRUNED. After the last block the running total is the ROI over
  all trades: the trial's value. Pruners: "hyperband", "successive_halving", "none".
  Pruning is single-objective only (Optuna does not prune multi-objective studies) and
  is not used with NSGA-II (its selection already discards the weak).
- storage: None (in memory), an RDB URL (`sqlite:///study.db`, ...), a journal file
  (a path ending in .log/.journal/.jsonl, or "journal:PATH"), or an Optuna storage object;
  with `load_if_exists=True` several workers (processes or machines sharing the file or
  database) add trials to one study. Workers must use the same space (ranges and levels).
  The default study name is derived from the sampler and seed, so a study is resumable
  and Hyperband's bracket assignment (a hash of study name and trial number) is
  reproducible.

The final ranking scores every COMPLETE trial of the study on ALL trades (one evaluate
call), keeps those with >= `min_trades` trades, dedupes trials that keep the same trades
with the same exits, and reports the best `top` as rows shaped like
`GridSearchResult.top`. Each threshold is reported snapped up to the lowest observed
feature value it admits (the same kept trades, a readable number).
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from domain.gridsearch.inputs import TradeArrays
from kernels.gridsearch import RESULT_SCALE
from kernels.gridsearch.cores import kept_mask
from kernels.gridsearch.evaluate import evaluate
from kernels.gridsearch.exits import resolve_exits
from kernels.gridsearch.grid import FILTERS

SAMPLERS = ("tpe", "nsga2", "random")
PRUNERS = ("hyperband", "successive_halving", "none")
OBJECTIVES = ("roi", "roi_trades")
JOURNAL_SUFFIXES = (".log", ".journal", ".jsonl")


@dataclass
class SmartResult:
    top: list[dict]
    n_complete: int  # trials completed by this call
    n_pruned: int  # trials pruned by this call
    study_trials: int  # finished (complete + pruned) trials in the whole study, all workers
    seconds: float
    sampler: str
    pruner: str
    objectives: str
    study_name: str
    blocks: int
    levels: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"top": self.top, "n_complete": self.n_complete, "n_pruned": self.n_pruned,
                "study_trials": self.study_trials, "seconds": round(self.seconds, 4), "sampler": self.sampler,
                "pruner": self.pruner, "objectives": self.objectives, "study_name": self.study_name,
                "blocks": self.blocks, "levels": self.levels, "timings": self.timings}


# ----------------------------------------------------------------------------- space


def default_levels(lo: float = 0.1, hi: float = 2.0, step: float = 0.05) -> tuple[list[float], list[float]]:
    """(targets lo..hi, stops -hi..-lo) in percent, every `step`."""
    up = np.round(np.arange(lo, hi + step / 2, step), 6)
    return [float(v) for v in up], [float(-v) for v in up[::-1]]


def feature_ranges(features: np.ndarray, pad: float = 0.1) -> dict[str, tuple[float, float]]:
    """The default search range of each filter: its observed min..max, the low end moved
    down by `pad` of the span. Any threshold <= the min keeps every trade ("no filter"),
    so the pad gives that choice a share (pad / (1 + pad)) of the range; over min..max
    exactly it would have measure zero and a continuous sampler could never switch a
    filter off."""
    out = {}
    for d, name in enumerate(FILTERS):
        lo, hi = float(np.min(features[d])), float(np.max(features[d]))
        out[name] = (lo - pad * (hi - lo), hi)
    return out


def shuffled_day_blocks(day: np.ndarray, blocks: int, seed: int = 0) -> list[np.ndarray]:
    """The trades' days shuffled (seeded) and dealt into `blocks` groups of whole days;
    per block its trade indices (sorted int64). Fewer blocks when there are fewer days.
    The blocks partition the trades."""
    days = np.unique(day)
    if days.size == 0:
        raise ValueError("no trades: cannot form day blocks")
    n = max(1, min(int(blocks), days.size))
    order = np.random.default_rng(seed).permutation(days)
    block_of_day = np.empty(int(days.max()) + 1, dtype=np.int64)
    for b, group in enumerate(np.array_split(order, n)):
        block_of_day[group] = b
    of_trade = block_of_day[np.asarray(day, dtype=np.int64)]
    return [np.flatnonzero(of_trade == b).astype(np.int64) for b in range(n)]


# ----------------------------------------------------------------------------- study


def open_storage(storage):
    """None -> in memory; "journal:PATH" or a path ending in .log/.journal/.jsonl -> a
    journal file; any other string -> an RDB URL; an Optuna storage object -> itself."""
    if storage is None or not isinstance(storage, (str, os.PathLike)):
        return storage
    text = os.fspath(storage)
    if text.startswith("journal:") or (text.endswith(JOURNAL_SUFFIXES) and "://" not in text):
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

        path = text.removeprefix("journal:")
        # The default symlink lock needs privileges on Windows; the open lock works everywhere.
        lock = JournalFileOpenLock(path) if os.name == "nt" else None
        return JournalStorage(JournalFileBackend(path, lock_obj=lock))
    return text


def make_sampler(sampler: str, seed: int, batch: int):
    import optuna

    if sampler == "tpe":
        return optuna.samplers.TPESampler(multivariate=True, seed=seed)
    if sampler == "nsga2":
        return optuna.samplers.NSGAIISampler(population_size=max(2, batch), seed=seed)
    if sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")


def make_pruner(pruner: str, blocks: int):
    import optuna

    if pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=blocks, reduction_factor=3)
    if pruner == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    if pruner == "none":
        return optuna.pruners.NopPruner()
    raise ValueError(f"pruner must be one of {PRUNERS}, got {pruner!r}")


@contextlib.contextmanager
def quiet_optuna():
    """Optuna logs every told trial at INFO; keep it to warnings for the search."""
    import optuna

    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # e.g. multivariate TPE
            yield
    finally:
        optuna.logging.set_verbosity(level)


# ----------------------------------------------------------------------------- trials


@dataclass
class Space:
    ranges: dict[str, tuple[float, float]]
    targets: list[float]
    stops: list[float]

    def suggest(self, trial) -> tuple[np.ndarray, int]:
        """(thresholds float64 [5], pair row) of one trial."""
        th = np.array([trial.suggest_float(name, *self.ranges[name]) for name in FILTERS])
        t = trial.suggest_categorical("target", self.targets)
        s = trial.suggest_categorical("stop_loss", self.stops)
        return th, self.pair(t, s)

    def pair(self, target: float, stop: float) -> int:
        return self.targets.index(target) * len(self.stops) + self.stops.index(stop)

    def from_params(self, params: dict) -> tuple[np.ndarray, int] | None:
        """A stored trial's vector, or None when it lies outside this space's levels."""
        try:
            th = np.array([float(params[name]) for name in FILTERS])
            return th, self.pair(float(params["target"]), float(params["stop_loss"]))
        except (KeyError, ValueError):
            return None


def _to_percent(units) -> np.ndarray:
    return np.asarray(units, dtype=np.float64) / RESULT_SCALE


def _score_blocks(trials, thresholds, pairs, features, results, blocks, prune: bool):
    """Score the batch block by block; report running ROI and prune. Returns (running
    ROI units, running trades, alive mask): alive trials have been scored on every block."""
    n = len(trials)
    roi = np.zeros(n, dtype=np.int64)
    kept = np.zeros(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    for step, idx in enumerate(blocks, start=1):
        live = np.flatnonzero(alive)
        if live.size == 0:
            break
        s, k = evaluate(features, results, thresholds[live], pairs[live], idx if len(blocks) > 1 else None)
        roi[live] += s
        kept[live] += k
        if not prune or step == len(blocks):
            continue
        for i in live:
            trials[i].report(float(roi[i]) / RESULT_SCALE, step)
            if trials[i].should_prune():
                alive[i] = False
    return roi, kept, alive


def _run_batch(study, space: Space, size: int, features, results, blocks, *, prune: bool, two_objectives: bool,
               min_trades: int) -> tuple[int, int]:
    """Ask `size` trials, score them, tell them. Returns (completed, pruned)."""
    from optuna.trial import TrialState

    trials = [study.ask() for _ in range(size)]
    vectors = [space.suggest(t) for t in trials]
    thresholds = np.array([v[0] for v in vectors], dtype=np.float64).reshape(size, 5)
    pairs = np.array([v[1] for v in vectors], dtype=np.int64)
    roi, kept, alive = _score_blocks(trials, thresholds, pairs, features, results, blocks, prune)
    for i, trial in enumerate(trials):
        trial.set_user_attr("trades", int(kept[i]))  # of the blocks scored
        if not alive[i]:
            study.tell(trial, state=TrialState.PRUNED)
            continue
        trial.set_constraint("min_trades", float(min_trades - kept[i]))  # feasible when <= 0
        value = float(roi[i]) / RESULT_SCALE
        study.tell(trial, [value, float(kept[i])] if two_objectives else value)
    done = int(alive.sum())
    return done, size - done


# ----------------------------------------------------------------------------- ranking


def snap_thresholds(features: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Each threshold (compared as the features' dtype) raised to the lowest observed
    feature value it admits: the same kept trades. Left as is where none is admitted."""
    th = np.asarray(thresholds, dtype=features.dtype).copy()
    for d in range(5):
        values = np.unique(features[d])
        pos = np.searchsorted(values, th[:, d], side="left")
        ok = pos < values.size
        th[ok, d] = values[pos[ok]]
    return th


def _readable(x) -> float:
    """A float32 value as the shortest decimal that round-trips (0.3, not 0.30000001)."""
    return float(str(np.float32(x)))


def kept_figures(res_units: np.ndarray) -> dict:
    """compounded_return (%), win_rate and mean (%) of the kept trades' results."""
    res = _to_percent(res_units)
    return {"compounded_return": float(np.expm1(np.log1p(res / 100.0).sum()) * 100.0),
            "win_rate": float((res > 0).mean()) if res.size else 0.0,
            "mean": float(res.mean()) if res.size else 0.0}


def rank_trials(study, space: Space, features, results, *, top: int, min_trades: int) -> list[dict]:
    """The best `top` distinct COMPLETE trials by ROI on all trades (rows like
    GridSearchResult.top plus the trial number; ties to the lower trial number)."""
    from optuna.trial import TrialState

    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    found = [(t.number, space.from_params(t.params)) for t in complete]
    found = [(n, v) for n, v in found if v is not None]
    if not found:
        return []
    numbers = np.array([n for n, _ in found], dtype=np.int64)
    thresholds = snap_thresholds(features, np.array([v[0] for _, v in found]).reshape(len(found), 5))
    pairs = np.array([v[1] for _, v in found], dtype=np.int64)
    roi, kept = evaluate(features, results, thresholds, pairs)
    order = np.lexsort((numbers, -roi))
    rows, seen = [], set()
    for i in order:
        key = (thresholds[i].tobytes(), int(pairs[i]))
        if kept[i] < min_trades or key in seen:
            continue
        seen.add(key)
        rows.append(_row(len(rows) + 1, numbers[i], thresholds[i], pairs[i], roi[i], kept[i], space, features, results))
        if len(rows) == top:
            break
    return rows


def _row(rank, number, thresholds, pair, roi, kept, space: Space, features, results) -> dict:
    keep = kept_mask(features, thresholds)
    n_s = len(space.stops)
    return {"rank": rank, **{name: _readable(thresholds[d]) for d, name in enumerate(FILTERS)},
            "target": space.targets[pair // n_s], "stop_loss": space.stops[pair % n_s],
            "roi": round(int(roi) / RESULT_SCALE, 9), "trades": int(kept), **kept_figures(results[pair, keep]),
            "trial": int(number)}


# ----------------------------------------------------------------------------- search


def _check(sampler, pruner, objectives, n_trials, batch):
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if pruner not in PRUNERS:
        raise ValueError(f"pruner must be one of {PRUNERS}, got {pruner!r}")
    if objectives not in OBJECTIVES:
        raise ValueError(f"objectives must be one of {OBJECTIVES}, got {objectives!r}")
    if n_trials < 1 or batch < 1:
        raise ValueError(f"n_trials and batch must be >= 1, got {n_trials} and {batch}")


def smart_search(trades: TradeArrays, prices: np.ndarray, *, sampler: str = "tpe", n_trials: int = 1000, batch: int = 64,
                 ranges: dict | None = None, target_levels=None, stop_levels=None, blocks: int = 8, seed: int = 0,
                 storage=None, study_name: str | None = None, min_trades: int = 1, pruner: str = "hyperband",
                 objectives: str = "roi", top: int = 10, results: np.ndarray | None = None) -> SmartResult:
    """Search filters and exits with Optuna; the best `top` trials scored on all trades.

    trades: the engines' arrays; prices: the market price array the trades index into.
    ranges: {filter: (lo, hi)} (missing filters: `feature_ranges`). target_levels /
    stop_levels: the exit levels (default `default_levels()`: 39 x 39 pairs, so `results`
    holds 1,521 int32 per trade, about 0.6 GB per 100k trades). results: optional
    precomputed exits [n_targets * n_stops, trades] for exactly those levels (skips exit
    resolution). Pruning applies to single-objective TPE and random searches only.
    Adds `n_trials` trials (complete + pruned) to the study (new, or loaded from
    `storage` under `study_name`); the ranking covers every complete trial of the study.
    Trials keeping fewer than `min_trades` trades are infeasible (an Optuna constraint)
    and never ranked.
    """
    import optuna

    _check(sampler, pruner, objectives, n_trials, batch)
    if len(trades.start) == 0:
        raise ValueError("no trades left to search: every trade was filtered out or rejected")
    t0 = time.perf_counter()
    default_t, default_s = default_levels()
    space = Space({**feature_ranges(trades.features), **(ranges or {})},
                  [float(v) for v in (target_levels if target_levels is not None else default_t)],
                  [float(v) for v in (stop_levels if stop_levels is not None else default_s)])
    if results is None:
        results, _ = resolve_exits(trades.start, trades.end, trades.entry, prices, trades.pct_change, space.targets,
                                   space.stops, exit_rows=False)
    elif results.shape != (len(space.targets) * len(space.stops), len(trades.start)):
        expected = (len(space.targets) * len(space.stops), len(trades.start))
        raise ValueError(f"results must be [{expected[0]}, {expected[1]}] (level pairs, trades), got {results.shape}")
    features = np.ascontiguousarray(trades.features)
    t1 = time.perf_counter()

    two = objectives == "roi_trades"
    prune = pruner != "none" and sampler != "nsga2" and not two
    day_blocks = shuffled_day_blocks(trades.day, blocks, seed) if prune else [np.arange(len(trades.start))]
    name = study_name or f"smart-{sampler}-{objectives}-seed{seed}"
    done = pruned = 0
    with quiet_optuna():
        study = optuna.create_study(storage=open_storage(storage), sampler=make_sampler(sampler, seed, batch),
                                    pruner=make_pruner(pruner if prune else "none", len(day_blocks)), study_name=name,
                                    load_if_exists=True, directions=["maximize", "maximize"] if two else ["maximize"])
        while done + pruned < n_trials:
            d, p = _run_batch(study, space, min(batch, n_trials - done - pruned), features, results, day_blocks,
                              prune=prune, two_objectives=two, min_trades=min_trades)
            done, pruned = done + d, pruned + p
        t2 = time.perf_counter()
        rows = rank_trials(study, space, features, results, top=top, min_trades=min_trades)
        states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        finished = len(study.get_trials(deepcopy=False, states=states))
    t3 = time.perf_counter()
    timings = {"exit_resolution_s": round(t1 - t0, 4), "search_s": round(t2 - t1, 4), "ranking_s": round(t3 - t2, 4)}
    return SmartResult(rows, done, pruned, finished, t3 - t0, sampler, pruner if prune else "none", objectives, name,
                       len(day_blocks), {"targets": len(space.targets), "stops": len(space.stops)}, timings)
