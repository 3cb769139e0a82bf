"""Multi-objective search over seller-exhaustion parameter sets: Optuna NSGA-II, ask and tell.

Orchestration, not a kernel: each generation asks `population` trials from an
`optuna.samplers.NSGAIISampler` (population_size = population, fixed seed), turns them into
`Individual`s, evaluates the whole generation in ONE `backtest_population` call (so the
engine shares the unique indicator series and, on a GPU, runs one thread per individual),
and tells every trial its objectives:

    objectives   maximize total_return (compounded net trade returns) and
                 maximize sharpe (mean / std of the net trade returns, per trade)
    constraint   n_trades >= min_trades (`trial.set_constraint("min_trades",
                 min_trades - n_trades)`, feasible when <= 0): a parameter set that
                 barely trades does not reach the front on the luck of one or two trades

Return and Sharpe rather than return and drawdown: with drawdown, "never trade" (0 return,
0 drawdown) is always on the front. Costs (fee_bp, slippage_bp) are market facts, not
searched. The search space (`SPACE`) is for daily bars; ema_slow's range lies above
ema_fast's so the trend filter always compares a fast EMA with a slower one.

The result: the trials table (one row per trial: trial, generation, the twelve individual
fields, the summary metrics, feasible, pareto) and the Pareto front (its pareto rows,
feasible trials only, by total_return descending), as polars DataFrames, and the study.
Same inputs and seed, same tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import optuna
import polars as pl
from optuna.distributions import FloatDistribution, IntDistribution

from kernels.strategy import METRICS, Individual, backtest_population
from kernels.strategy.params import BACKTEST_FIELDS, SELLER_FIELDS

OBJECTIVES = ("total_return", "sharpe")  # both maximized

SPACE: dict[str, optuna.distributions.BaseDistribution] = {
    "ema_fast": IntDistribution(5, 30),
    "ema_slow": IntDistribution(35, 150, step=5),
    "z_window": IntDistribution(20, 120, step=5),
    "atr_window": IntDistribution(5, 30),
    "vol_z_min": FloatDistribution(0.5, 3.0, step=0.1),
    "tr_z_min": FloatDistribution(0.0, 2.5, step=0.1),
    "cloc_min": FloatDistribution(0.2, 0.9, step=0.05),
    "atr_stop_mult": FloatDistribution(0.25, 3.0, step=0.25),
    "reward_r": FloatDistribution(0.5, 4.0, step=0.25),
    "max_hold": IntDistribution(3, 60),
}


@dataclass
class SearchResult:
    front: pl.DataFrame
    trials: pl.DataFrame
    study: optuna.Study
    evaluations: int  # backtest_population calls, one per generation


def individual_from_params(params: dict, fee_bp: float, slippage_bp: float) -> Individual:
    """An Individual from a trial's parameters (stepped floats rounded to 6 decimals)."""
    flat = {k: (round(float(v), 6) if isinstance(v, float) else int(v)) for k, v in params.items()}
    return Individual.from_dict({**flat, "fee_bp": float(fee_bp), "slippage_bp": float(slippage_bp)})


def search(open_, high, low, close, volume, *, population: int = 64, generations: int = 10, seed: int = 0,
           fee_bp: float = 5.0, slippage_bp: float = 5.0, min_trades: int = 5, engine: str = "auto",
           space: dict | None = None) -> SearchResult:
    """Run `generations` generations of NSGA-II with `population` trials each (see the module
    docstring); OHLCV are one symbol's bars (1-D arrays of one length)."""
    if population < 2:
        raise ValueError(f"NSGA-II needs a population of at least 2, got {population}")
    if generations < 1:
        raise ValueError(f"generations must be >= 1, got {generations}")
    space = dict(SPACE if space is None else space)
    sampler = optuna.samplers.NSGAIISampler(population_size=population, seed=seed)
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(directions=["maximize"] * len(OBJECTIVES), sampler=sampler)
        rows = []
        calls = 0
        for gen in range(generations):
            trials = [study.ask(space) for _ in range(population)]
            inds = [individual_from_params(t.params, fee_bp, slippage_bp) for t in trials]
            res = backtest_population(open_, high, low, close, volume, inds, engine=engine)
            calls += 1
            for i, (trial, ind) in enumerate(zip(trials, inds)):
                m = {k: res.metrics[k][i].item() for k in METRICS}
                trial.set_user_attr("generation", gen)
                for k, v in m.items():
                    trial.set_user_attr(k, v)
                trial.set_constraint("min_trades", float(min_trades - m["n_trades"]))
                study.tell(trial, [m[k] for k in OBJECTIVES])
                rows.append({"trial": trial.number, "generation": gen, **ind.as_dict(), **m,
                             "feasible": m["n_trades"] >= min_trades, "engine": res.engine})
    finally:
        optuna.logging.set_verbosity(verbosity)
    on_front = {t.number for t in study.best_trials}
    table = pl.DataFrame(rows).with_columns(pl.col("trial").is_in(sorted(on_front)).alias("pareto"))
    table = table.select(["trial", "generation", *SELLER_FIELDS, *BACKTEST_FIELDS, *METRICS, "feasible", "pareto", "engine"])
    front = table.filter(pl.col("pareto")).sort(["total_return", "trial"], descending=[True, False])
    return SearchResult(front=front, trials=table, study=study, evaluations=calls)


def pareto_mask(values: np.ndarray) -> np.ndarray:
    """Non-dominated rows of `values` [n, k] (all maximized): a plain check for the tests."""
    v = np.asarray(values, dtype=np.float64)
    keep = np.ones(v.shape[0], dtype=bool)
    for i in range(v.shape[0]):
        dominated = np.all(v >= v[i], axis=1) & np.any(v > v[i], axis=1)
        keep[i] = not dominated.any()
    return keep
