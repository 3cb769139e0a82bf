"""The exact grid search on arrays: one engine's top-k (`engine_top`), a whole search
(`run_grid_search`: exits resolved once, then brute force or dominance sums), and the
reported figures of ranked combinations (`describe`). Shared by the single-process stage
(domain.gridsearch.stage) and the Dask shards (domain.gridsearch.dask_grid).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from domain.gridsearch.inputs import TradeArrays
from kernels import backends
from kernels.gridsearch import BRUTE, EXITS, RESULT_SCALE
from kernels.gridsearch.brute import brute_force
from kernels.gridsearch.cores import kept_mask
from kernels.gridsearch.cube import cube_top
from kernels.gridsearch.exits import resolve_exits
from kernels.gridsearch.grid import PARAMS, Grid

ENGINES = ("auto", "brute", "cube")


@dataclass
class GridSearchResult:
    top: list[dict]
    combinations: int
    trades: int
    engine: str
    backend: str
    seconds: float
    timings: dict = field(default_factory=dict)
    rejected: dict = field(default_factory=dict)
    overfitting: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"top": self.top, "combinations": self.combinations, "trades": self.trades, "engine": self.engine,
                "backend": self.backend, "seconds": round(self.seconds, 4), "timings": self.timings,
                "rejected": self.rejected, "overfitting": self.overfitting, **self.extra}


def describe(index: np.ndarray, roi_units: np.ndarray, grid: Grid, trades: TradeArrays, results: np.ndarray) -> list[dict]:
    """The reported figures of ranked combinations: parameters, ROI (sum of kept trades'
    results, percent), trades, compounded return (percent), win rate and mean result."""
    params = grid.decode(index)
    rows = []
    for rank, (c, roi) in enumerate(zip(index, roi_units), start=1):
        p = {name: float(params[name][rank - 1]) for name in PARAMS}
        keep = kept_mask(trades.features, [p[n] for n in PARAMS[:5]])
        pair = grid.target.index(p["target"]) * len(grid.stop_loss) + grid.stop_loss.index(p["stop_loss"])
        res = results[pair, keep].astype(np.float64) / RESULT_SCALE
        rows.append({
            "rank": rank, **p, "roi": round(int(roi) / RESULT_SCALE, 9), "trades": int(keep.sum()),
            "compounded_return": float(np.expm1(np.log1p(res / 100.0).sum()) * 100.0),
            "win_rate": float((res > 0).mean()) if res.size else 0.0,
            "mean": float(res.mean()) if res.size else 0.0, "combination": int(c),
        })
    return rows


def engine_top(features, results, grid: Grid, engine: str, backend: str, k: int, min_trades: int, progress=None):
    """The exact top-k (kernels.gridsearch.ranking.TopK) of one grid with one engine: brute
    (numba on cpu or cuda) or cube (NumPy, CuPy or torch). Used whole here and per shard by
    domain.gridsearch.dask_grid."""
    if engine == "brute":
        return brute_force(features, results, grid, k=k, min_trades=min_trades,
                           backend=family_backend(BRUTE, backend), progress=progress)
    return cube_top(features, results, grid, k=k, min_trades=min_trades, backend=backend)


def family_backend(family: str, backend: str) -> str:
    """`backend` where `family` registers it, else cpu (brute force has no torch backend: on a
    ROCm machine it runs on the CPU, as the exits of an unregistered backend do)."""
    return backend if backend in backends.backends(family) else "cpu"


def run_grid_search(prices: np.ndarray, trades: TradeArrays, grid: Grid, *, engine: str = "auto", backend: str = "cpu",
                    top: int = 10, min_trades: int = 1, progress=None) -> tuple[GridSearchResult, np.ndarray]:
    """The exact top-`top` combinations; also returns the resolved results [pairs, trades]."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    engine = "cube" if engine == "auto" else engine
    if len(trades.start) == 0:
        raise ValueError("no trades left to search: every trade was filtered out or rejected")
    t0 = time.perf_counter()
    exit_backend = family_backend(EXITS, backend)
    results, _ = resolve_exits(trades.start, trades.end, trades.entry, prices, trades.pct_change, grid.target,
                               grid.stop_loss, backend=exit_backend, exit_rows=False)
    t1 = time.perf_counter()
    best = engine_top(trades.features, results, grid, engine, backend, top, min_trades, progress=progress)
    if progress and engine != "brute":
        progress(grid.n_combinations)
    t2 = time.perf_counter()
    rows = describe(best.index, best.roi_units, grid, trades, results)
    result = GridSearchResult(rows, grid.n_combinations, len(trades.start), engine, backend, t2 - t0,
                              {"exit_resolution_s": round(t1 - t0, 4), "search_s": round(t2 - t1, 4)})
    return result, results
