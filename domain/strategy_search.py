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
0 drawdown) is always on the front. Costs (fee_bps, slippage_bps) are market facts, not
searched. The search space (`SPACE`) is for daily bars; ema_slow's range lies above
ema_fast's so the trend filter always compares a fast EMA with a slower one.

The result: the trials table (one row per trial: trial, generation, the twelve individual
fields, the summary metrics, feasible, pareto) and the Pareto front (its pareto rows,
feasible trials only, by total_return descending), as polars DataFrames, and the study.
Same inputs and seed, same tables.

The stage (`search_symbol`, behind the asset `strategy_search` and the CLI `strategy-search`):
one symbol's whole stored history, the `strategy_search` settings, the report
`reports/strategy_search/front_<symbol>.json`; `front_markdown` is the front shown in the UI.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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


def individual_from_params(params: dict, fee_bps: float, slippage_bps: float) -> Individual:
    """An Individual from a trial's parameters (stepped floats rounded to 6 decimals)."""
    flat = {k: (round(float(v), 6) if isinstance(v, float) else int(v)) for k, v in params.items()}
    return Individual.from_dict({**flat, "fee_bps": float(fee_bps), "slippage_bps": float(slippage_bps)})


def search(open_, high, low, close, volume, *, population: int = 64, generations: int = 10, seed: int = 0,
           fee_bps: float = 5.0, slippage_bps: float = 5.0, min_trades: int = 5, backend: str = "auto",
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
            inds = [individual_from_params(t.params, fee_bps, slippage_bps) for t in trials]
            res = backtest_population(open_, high, low, close, volume, inds, backend=backend)
            calls += 1
            for i, (trial, ind) in enumerate(zip(trials, inds)):
                m = {k: res.metrics[k][i].item() for k in METRICS}
                trial.set_user_attr("generation", gen)
                for k, v in m.items():
                    trial.set_user_attr(k, v)
                trial.set_constraint("min_trades", float(min_trades - m["n_trades"]))
                study.tell(trial, [m[k] for k in OBJECTIVES])
                rows.append({"trial": trial.number, "generation": gen, **ind.as_dict(), **m,
                             "feasible": m["n_trades"] >= min_trades, "backend": res.backend})
    finally:
        optuna.logging.set_verbosity(verbosity)
    on_front = {t.number for t in study.best_trials}
    table = pl.DataFrame(rows).with_columns(pl.col("trial").is_in(sorted(on_front)).alias("pareto"))
    table = table.select(["trial", "generation", *SELLER_FIELDS, *BACKTEST_FIELDS, *METRICS, "feasible", "pareto", "backend"])
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


# ---------------------------------------------------------------- the stage (asset `strategy_search`, CLI)

FRONT_COLUMNS = ("trial", "generation", *OBJECTIVES, "n_trades", "win_rate", "max_drawdown", *SELLER_FIELDS)


@dataclass
class SymbolSearch:
    symbol: str
    bars: int
    result: SearchResult
    report: dict  # what `path` holds
    path: Path


def symbol_arrays(bars: pl.DataFrame | pl.LazyFrame, symbol: str) -> tuple[pl.DataFrame, list[np.ndarray]]:
    """One symbol's bars by date (every stored year) and its OHLCV as float64 arrays."""
    frame = bars.lazy() if isinstance(bars, pl.DataFrame) else bars
    df = (frame.filter(pl.col("symbol") == symbol).select("date", "open", "high", "low", "close", "volume")
          .sort("date").collect())
    return df, [df[c].to_numpy().astype(np.float64) for c in ("open", "high", "low", "close", "volume")]


def search_symbol(bars: pl.DataFrame | pl.LazyFrame, symbol: str, cfg, out_dir: Path) -> SymbolSearch:
    """NSGA-II on one symbol's whole stored history with the `strategy_search` settings `cfg`;
    writes `out_dir/front_<symbol>.json` (settings, span, evaluations, trial counts and
    the front with its parameters) and returns it with the search result."""
    from domain.observe import write_json_atomic

    df, cols = symbol_arrays(bars, symbol)
    if df.is_empty():
        raise ValueError(f"strategy_search: no raw_bars of {symbol}: build raw_bars first (build-features)")
    res = search(*cols, population=cfg.population, generations=cfg.generations, seed=cfg.seed, fee_bps=cfg.fee_bps,
                 slippage_bps=cfg.slippage_bps, min_trades=cfg.min_trades, backend=cfg.backend)
    report = {"symbol": symbol, "bars": df.height, "from": str(df["date"][0])[:10], "to": str(df["date"][-1])[:10],
              "settings": cfg.model_dump(), "objectives": list(OBJECTIVES), "evaluations": res.evaluations,
              "trials": res.trials.height, "feasible": int(res.trials["feasible"].sum()),
              "backend": res.trials["backend"][0] if res.trials.height else None, "front": res.front.to_dicts()}
    path = write_json_atomic(out_dir / f"front_{symbol}.json", report)
    return SymbolSearch(symbol, df.height, res, report, path)


def front_markdown(front: pl.DataFrame, limit: int = 20) -> str:
    """The Pareto front as a markdown table (by total return), the first `limit` rows."""
    cols = [c for c in FRONT_COLUMNS if c in front.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]

    def fmt(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    for r in front.head(limit).iter_rows(named=True):
        lines.append("| " + " | ".join(fmt(r[c]) for c in cols) + " |")
    if front.height > limit:
        lines.append(f"\n{front.height - limit} more row(s) in the report JSON")
    if front.is_empty():
        lines.append("| " + " | ".join("" for _ in cols) + " |")
    return "\n".join(lines)
