"""Stage `grid_search` (and its inputs `market_data`, `trade_log`): the trade-log grid search.

`grid_search_stage` is the stage logic (the asset's, and `python -m pipeline.cli grid-search`'s
direct run): exit resolution once, then an engine over every combination:
  brute  one thread per combination over all trades (cpu numba or cuda)
  cube   dominance sums: every combination at once (NumPy/CuPy, or torch)
  auto   cube (the fastest exact engine at every size measured)
Every engine returns the same exact top-k (see kernels.gridsearch); `optuna` searches
beyond the grid (domain.gridsearch.smart). The overfitting guard (domain.gridsearch.overfit) adds
in/out-of-sample ROI, PBO and the deflated Sharpe ratio. `write_reports` writes `top10.json`
(the CLI's JSON too), a markdown table and a heatmap PNG.
"""

import io
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from domain.gridsearch.inputs import TradeArrays
from domain.gridsearch.search import GridSearchResult, run_grid_search
from domain.observe import write_json_atomic
from kernels.gridsearch import RESULT_SCALE
from kernels.gridsearch.cores import kept_mask
from kernels.gridsearch.grid import PARAMS, Grid


def run_smart_search(prices: np.ndarray, trades: TradeArrays, gs, backend: str) -> tuple[GridSearchResult, np.ndarray | None]:
    """`engine: optuna`: seed option 3 beyond the grid (see domain.gridsearch.smart)."""
    from domain.gridsearch.smart import smart_search

    sm = gs.smart
    res = smart_search(trades, prices, sampler=sm.sampler, n_trials=sm.trials, batch=sm.batch, blocks=sm.blocks,
                       seed=sm.seed, storage=sm.storage, study_name=sm.study_name, min_trades=gs.min_trades,
                       pruner=sm.pruner, top=gs.top)
    out = res.to_json()
    result = GridSearchResult(res.top, res.study_trials, len(trades.start), "optuna", backend, res.seconds,
                              res.timings, extra={k: v for k, v in out.items() if k not in ("top", "seconds", "timings")})
    return result, None


def markdown_table(result: GridSearchResult) -> str:
    head = "| rank | volatility | ratio | adx28 | adx14 | adx7 | target | stop_loss | roi % (sum of kept trades' returns) | trades | win rate | compounded % |"
    lines = [head, "|" + "---|" * 12]
    for r in result.top:
        lines.append(f"| {r['rank']} | {r['volatility']:g} | {r['ratio']:g} | {r['adx28']:g} | {r['adx14']:g} | {r['adx7']:g} | "
                     f"{r['target']:g} | {r['stop_loss']:g} | {r['roi']:.4f} | {r['trades']} | {r['win_rate']:.2%} | "
                     f"{r['compounded_return']:.4f} |")
    return "\n".join(lines)


def heatmap_png(grid: Grid, trades: TradeArrays, results: np.ndarray, best: dict) -> bytes:
    """ROI (the sum of the kept trades' returns, %) of the winner's filters over every
    (target, stop_loss) pair."""
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
    ax.set_title("sum of kept trades' returns % (ROI), winning filters", fontsize=9)
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


@dataclass
class GridSearchStage:
    result: GridSearchResult
    table: pl.DataFrame  # the top rows
    paths: dict[str, Path]  # the reports written (json, markdown, heatmap when drawn)


def grid_search_stage(market_data, trade_log, settings, backend: str, obs=None, *, json_path: Path | None = None,
                      rejected: dict | None = None, progress=None) -> GridSearchStage:
    """The configured search (settings `grid_search`) over the market data and trade log: the
    engine (`optuna`, the Dask cluster when `dask.enabled`, else one process), the
    overfitting guard when asked for, and the reports under reports/grid_search/. The asset
    and the CLI's direct run (`grid-search --market-data .. --trade-log .. --out FILE`) both
    call this: the direct run names the JSON report (`json_path`, the other reports beside
    it), the trades its reader left out (`rejected`, into the report) and a progress callback
    (combinations done; the one-process engines). `obs` (domain.observe.Observation) gets the
    guard's time and headline figures."""
    from domain.gridsearch.overfit import overfitting_report

    gs = settings.grid_search
    grid = grid_from_settings(settings)
    trades = TradeArrays.from_frame(trade_log)
    prices = market_data["price"].to_numpy()
    if gs.engine == "optuna":
        result, results = run_smart_search(prices, trades, gs, backend)
    elif gs.dask.enabled:
        from domain.gridsearch.dask_grid import cluster_client, run_grid_search_dask

        with cluster_client(gs.dask) as client:
            result, results = run_grid_search_dask(prices, trades, grid, client=client, engine=gs.engine,
                                                   backend=backend, top=gs.top, min_trades=gs.min_trades,
                                                   shards=gs.dask.shards, scatter=gs.dask.scatter)
    else:
        result, results = run_grid_search(prices, trades, grid, engine=gs.engine, backend=backend, top=gs.top,
                                          min_trades=gs.min_trades, progress=progress)
    if gs.overfitting and gs.engine != "optuna":
        with obs.timed("overfitting_s") if obs is not None else nullcontext():
            result.overfitting = overfitting_report(trades, results, grid, result.top, min_trades=gs.min_trades)
        if obs is not None:
            obs.extra.update({"pbo": result.overfitting["pbo"]["pbo"], "dsr": result.overfitting["deflated_sharpe"]["dsr"]})
    if rejected is not None:
        result.rejected = rejected
    out_dir = json_path.parent if json_path is not None else settings.stage_reports_dir("grid_search")
    paths = write_reports(result, out_dir, grid, trades, results, json_path=json_path)
    table = pl.DataFrame(result.top) if result.top else pl.DataFrame()
    return GridSearchStage(result, table, paths)
