"""Stage `grid_search` (and its inputs `market_data`, `trade_log`): the seed-001 grid search.

`run_grid_search` is the stage logic (also behind `python -m pipeline.cli grid-search`):
exit resolution once, then an engine over every combination:
  brute  one thread per combination over all trades (cpu numba or cuda)
  cube   dominance sums: every combination at once (NumPy/CuPy, or torch)
  auto   cube (the fastest exact engine at every size measured)
Every engine returns the same exact top-k (see kernels.gridsearch); `optuna` searches
beyond the grid (assets.grid_smart). The overfitting guard (assets.grid_overfit) adds
in/out-of-sample ROI, PBO and the deflated Sharpe ratio. `write_reports` writes `top10.json`
(the CLI's JSON too), a markdown table and a heatmap PNG.
"""

import base64
import io
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from dagster import AssetExecutionContext, AssetIn, MetadataValue, Output, asset

from assets.grid_inputs import TradeArrays, market_files, read_market_data, read_trade_log
from assets.grid_overfit import overfitting_report
from assets.observe import observe, write_json_atomic
from kernels.gridsearch import RESULT_SCALE
from kernels.gridsearch.brute import brute_force
from kernels.gridsearch.cores import kept_mask
from kernels.gridsearch.cube import cube_roi, cube_roi_torch
from kernels.gridsearch.exits import resolve_exits
from kernels.gridsearch.grid import PARAMS, Grid
from kernels.gridsearch.ranking import top_k_full
from resources.compute import GPU_POOL, ComputeResource, gpu_step_tags
from resources.project import ProjectResource

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
    assets.grid_dask."""
    if engine == "brute":
        return brute_force(features, results, grid, k=k, min_trades=min_trades,
                           backend="cuda" if backend == "cuda" else "cpu", progress=progress)
    if backend == "torch":
        roi, counts = cube_roi_torch(features, results, grid)
        return top_k_full(roi, counts, k, min_trades)
    if backend == "cuda":
        import cupy as cp

        roi, counts = cube_roi(cp.asarray(features), cp.asarray(results), grid, xp=cp)
        return top_k_full(roi, counts, k, min_trades, xp=cp)
    roi, counts = cube_roi(features, results, grid)
    return top_k_full(roi, counts, k, min_trades)


def run_grid_search(prices: np.ndarray, trades: TradeArrays, grid: Grid, *, engine: str = "auto", backend: str = "cpu",
                    top: int = 10, min_trades: int = 1, progress=None) -> tuple[GridSearchResult, np.ndarray]:
    """The exact top-`top` combinations; also returns the resolved results [pairs, trades]."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    engine = "cube" if engine == "auto" else engine
    if len(trades.start) == 0:
        raise ValueError("no trades left to search: every trade was filtered out or rejected")
    t0 = time.perf_counter()
    exit_backend = backend if backend in ("cpu", "cuda", "torch") else "cpu"
    results, _ = resolve_exits(trades.start, trades.end, trades.entry, prices, trades.pct_change, grid.target,
                               grid.stop_loss, backend=exit_backend)
    t1 = time.perf_counter()
    best = engine_top(trades.features, results, grid, engine, backend, top, min_trades, progress=progress)
    if progress and engine != "brute":
        progress(grid.n_combinations)
    t2 = time.perf_counter()
    rows = describe(best.index, best.roi_units, grid, trades, results)
    result = GridSearchResult(rows, grid.n_combinations, len(trades.start), engine, backend, t2 - t0,
                              {"exit_resolution_s": round(t1 - t0, 4), "search_s": round(t2 - t1, 4)})
    return result, results


def run_smart_search(prices: np.ndarray, trades: TradeArrays, gs, backend: str) -> tuple[GridSearchResult, np.ndarray | None]:
    """`engine: optuna`: seed option 3 beyond the grid (see assets.grid_smart)."""
    from assets.grid_smart import smart_search

    sm = gs.smart
    res = smart_search(trades, prices, sampler=sm.sampler, n_trials=sm.trials, batch=sm.batch, blocks=sm.blocks,
                       seed=sm.seed, storage=sm.storage, study_name=sm.study_name, min_trades=gs.min_trades,
                       pruner=sm.pruner, top=gs.top)
    out = res.to_json()
    result = GridSearchResult(res.top, res.study_trials, len(trades.start), "optuna", backend, res.seconds,
                              res.timings, extra={k: v for k, v in out.items() if k not in ("top", "seconds", "timings")})
    return result, None


def markdown_table(result: GridSearchResult) -> str:
    head = "| rank | volatility | ratio | adx28 | adx14 | adx7 | target | stop_loss | roi % | trades | win rate | compounded % |"
    lines = [head, "|" + "---|" * 12]
    for r in result.top:
        lines.append(f"| {r['rank']} | {r['volatility']:g} | {r['ratio']:g} | {r['adx28']:g} | {r['adx14']:g} | {r['adx7']:g} | "
                     f"{r['target']:g} | {r['stop_loss']:g} | {r['roi']:.4f} | {r['trades']} | {r['win_rate']:.2%} | "
                     f"{r['compounded_return']:.4f} |")
    return "\n".join(lines)


def heatmap_png(grid: Grid, trades: TradeArrays, results: np.ndarray, best: dict) -> bytes:
    """ROI of the winner's filters over every (target, stop_loss) pair."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keep = kept_mask(trades.features, [best[n] for n in PARAMS[:5]])
    roi = results[:, keep].sum(axis=1).reshape(len(grid.target), len(grid.stop_loss)) / RESULT_SCALE
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(grid.stop_loss), 1.2 + 0.6 * len(grid.target)))
    im = ax.imshow(roi, cmap="RdYlGn", aspect="auto")
    ax.set_xticks(range(len(grid.stop_loss)), [f"{s:g}" for s in grid.stop_loss])
    ax.set_yticks(range(len(grid.target)), [f"{t:g}" for t in grid.target])
    ax.set_xlabel("stop_loss %")
    ax.set_ylabel("target %")
    for (i, j), v in np.ndenumerate(roi):
        ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=8)
    ax.set_title("ROI % of the winning filters", fontsize=9)
    fig.colorbar(im, ax=ax)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def write_reports(result: GridSearchResult, out_dir: Path, grid: Grid, trades: TradeArrays, results: np.ndarray,
                  json_path: Path | None = None) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": write_json_atomic(json_path or out_dir / "top10.json", result.to_json())}
    paths["markdown"] = out_dir / "top10.md"
    paths["markdown"].write_text(markdown_table(result) + "\n")
    if result.top and results is not None:
        paths["heatmap"] = out_dir / "heatmap.png"
        paths["heatmap"].write_bytes(heatmap_png(grid, trades, results, result.top[0]))
    return paths


def grid_from_settings(settings) -> Grid:
    return Grid.from_mapping(settings.grid_search.params.model_dump())


def search_backend(compute: ComputeResource) -> str:
    return {"cuda": "cuda", "torch": "torch"}.get(compute.backend, "cpu")


@asset(io_manager_key="parquet_io_manager", group_name="grid_search", kinds={"polars", "parquet"})
def market_data(context: AssetExecutionContext, project: ProjectResource) -> pl.DataFrame:
    """Second-by-second market data of the configured tickers, from the seed-001 CSV folder,
    sorted by ticker then datetime (one contiguous price array with per-ticker offsets)."""
    settings = project.settings()
    gs = settings.grid_search
    folder = settings.resolve(gs.market_data)
    with observe(context, settings.reports_dir, "market_data", args={"folder": str(folder)}) as obs:
        files, other = market_files(folder)
        df = obs.record(read_market_data(folder, gs.tickers))
        obs.extra.update({"days": len(files), "tickers": gs.tickers, "ignored_files": [p.name for p in other][:20]})
    if other:
        context.log.warning(f"market_data: ignored {len(other)} file(s) not named Raw_Market_data_MM-DD-YYYY.csv")
    return df


@asset(io_manager_key="parquet_io_manager", group_name="grid_search", kinds={"polars", "parquet"},
       ins={"market_data": AssetIn()})
def trade_log(context: AssetExecutionContext, market_data: pl.DataFrame, project: ProjectResource) -> pl.DataFrame:
    """The trade log's trades of the configured tickers, with MarketDataStartIndex and
    MarketDataEndIndex into market_data; rejected trades are counted and named here."""
    settings = project.settings()
    gs = settings.grid_search
    path = settings.resolve(gs.trade_log)
    with observe(context, settings.reports_dir, "trade_log", args={"file": str(path)}) as obs:
        trades, rejected = read_trade_log(path, gs.tickers, market_data)
        obs.record(trades)
        obs.extra.update(rejected.summary())
    if rejected.total:
        context.log.warning(f"trade_log: left out {rejected.total} trade(s): {rejected.by_reason}; first ids {rejected.first_ids}")
    return trades


@asset(io_manager_key="parquet_io_manager", group_name="grid_search", kinds={"numba", "polars"},
       ins={"market_data": AssetIn(), "trade_log": AssetIn()}, pool=GPU_POOL, op_tags=gpu_step_tags())
def grid_search(context: AssetExecutionContext, market_data: pl.DataFrame, trade_log: pl.DataFrame,
                project: ProjectResource, compute: ComputeResource):
    """The exact top combinations of entry filters and exits by ROI over the trade history
    (reports/grid_search/top10.json, a markdown table and a heatmap)."""
    settings = project.settings()
    gs = settings.grid_search
    grid = grid_from_settings(settings)
    backend = search_backend(compute)
    trades = TradeArrays.from_frame(trade_log)
    prices = market_data["price"].to_numpy()
    with observe(context, settings.reports_dir, "grid_search", args={"engine": gs.engine, "backend": backend}) as obs:
        if gs.engine == "optuna":
            result, results = run_smart_search(prices, trades, gs, backend)
        elif gs.dask.enabled:
            from assets.grid_dask import cluster_client, run_grid_search_dask

            with cluster_client(gs.dask) as client:
                result, results = run_grid_search_dask(prices, trades, grid, client=client, engine=gs.engine,
                                                       backend=backend, top=gs.top, min_trades=gs.min_trades,
                                                       shards=gs.dask.shards, scatter=gs.dask.scatter)
        else:
            result, results = run_grid_search(prices, trades, grid, engine=gs.engine, backend=backend, top=gs.top,
                                              min_trades=gs.min_trades)
        if gs.overfitting and gs.engine != "optuna":
            with obs.timed("overfitting_s"):
                result.overfitting = overfitting_report(trades, results, grid, result.top, min_trades=gs.min_trades)
            obs.extra.update({"pbo": result.overfitting["pbo"]["pbo"], "dsr": result.overfitting["deflated_sharpe"]["dsr"]})
        paths = write_reports(result, settings.reports_dir / "grid_search", grid, trades, results)
        table = pl.DataFrame(result.top) if result.top else pl.DataFrame()
        obs.record(table)
        obs.extra.update({"combinations": result.combinations, "trades_searched": result.trades, "engine": result.engine,
                          **result.timings})
    meta = {"top": MetadataValue.md(markdown_table(result)), "report": MetadataValue.path(str(paths["json"]))}
    if "heatmap" in paths:
        encoded = base64.b64encode(paths["heatmap"].read_bytes()).decode()
        meta["heatmap"] = MetadataValue.md(f"![heatmap](data:image/png;base64,{encoded})")
    yield Output(table, metadata=meta)
