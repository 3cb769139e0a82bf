"""`backtest.sweep`: a grid of backtest parameters over the same predictions in one pass.

Every combination of `backtest.sweep.grid` (the other settings as `backtest.*`) is a lane of
kernels.backtest.portfolio.run_sweep: one pass of the numba loop over the days for every lane
(lanes that differ only in their costs share one book), each lane's daily series equal bit for
bit to the one backtest of its settings. The panel is the backtest's (`backtest_panel`) and the
figures stand on the headline span of `overall.json` (the first day with a prediction to the
day after the last), so the grid's row at the settings in force is the backtest's own headline.

Per lane: the stats table of kernels.backtest.stats (`backtest_stats`: Sharpe, CAGR, max
drawdown, turnover, costs, ...). The table is sorted by `sweep.sort_by`, best first.

The overfitting guard (domain.gridsearch.overfit, the grid search's own functions):
- PBO by CSCV (`cscv_lambdas`): the span cut into `sweep.blocks` contiguous blocks of days
  (in time order: days of a backtest are not exchangeable trades), M [lanes, blocks] = each
  lane's sum of daily net returns per block (the additive figure CSCV ranks, as the grid
  search's ROI), lanes with identical rows counted once; PBO = the share of the C(S, S/2)
  splits whose in-sample best ranks at or below the median out of sample.
- Deflated Sharpe (`deflated_sharpe_ratio`) of the table's best lane by Sharpe: its daily
  returns against N = the distinct lanes and the variance of their daily Sharpe ratios.
A sweep with one distinct lane has neither (a reason says so).

Writes under reports/<experiment>/backtest/: `sweep.json` (the grid, what the figures stand on
-- days, symbols, lanes, books --, every row, the guard, timings) and `sweep.png` (the heatmap of
`sort_by` over two grid parameters, each cell the best over the others).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from config.settings import SWEEP_SMALLER_FIRST, BacktestSettings
from domain.observe import write_bytes_atomic, write_json_atomic

ROW_FIGURES = ("sharpe", "cagr", "max_drawdown", "annual_turnover", "total_costs", "cost_share", "sortino", "calmar",
               "ann_vol", "total_return", "exposure", "trades", "win_rate")


def grid_point(point: BacktestSettings, grid: dict) -> dict:
    """The grid parameters' values of one point (ints for the integer settings)."""
    return {k: getattr(point, k) for k in grid}


def sort_rows(rows: list[dict], figure: str) -> list[dict]:
    """Best first by `figure` (larger first, smaller first for SWEEP_SMALLER_FIRST); rows
    without the figure last; ties keep the grid order."""
    sign = 1.0 if figure in SWEEP_SMALLER_FIRST else -1.0
    return sorted(rows, key=lambda r: (r[figure] is None, sign * r[figure] if r[figure] is not None else 0.0))


def day_blocks(n_days: int, blocks: int) -> list[np.ndarray]:
    """`blocks` contiguous blocks of the days 0..n_days-1 (as even as np.array_split makes
    them), fewer (an even number, >= 2) when there are fewer days; [] under 2 days."""
    s = min(blocks, n_days)
    s -= s % 2
    return [] if s < 2 else np.array_split(np.arange(n_days), s)


def overfitting_guard(net: np.ndarray, best: int, blocks: int) -> dict:
    """PBO by CSCV over the lanes' daily net returns `net` [L, n] (contiguous day blocks) and
    the deflated Sharpe of lane `best` (module docstring)."""
    from domain.gridsearch.overfit import cscv_lambdas, deflated_sharpe_ratio

    L, n = net.shape
    _, first = np.unique(net, axis=0, return_index=True)
    distinct = np.sort(first)
    parts = day_blocks(n, blocks)
    out: dict = {"lanes": int(L), "distinct_lanes": int(distinct.size), "days": int(n)}
    if distinct.size < 2 or not parts:
        reason = "fewer than 2 distinct lanes" if distinct.size < 2 else "fewer than 2 days"
        out["pbo"] = {"pbo": None, "reason": reason, "blocks": len(parts), "candidates": int(distinct.size)}
    else:
        m = np.stack([net[distinct][:, idx].sum(axis=1) for idx in parts], axis=1)
        lambdas, oos = cscv_lambdas(m)
        out["pbo"] = {"pbo": float(np.mean(lambdas <= 0)), "splits": int(lambdas.size),
                      "lambda_median": float(np.median(lambdas)), "prob_oos_loss": float(np.mean(oos < 0)),
                      "blocks": len(parts), "block_days": [int(len(p)) for p in parts], "candidates": int(distinct.size)}
    sd = net[distinct].std(axis=1, ddof=1) if n > 1 else np.zeros(distinct.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        trial_sr = np.where(sd > 0, net[distinct].mean(axis=1) / np.where(sd > 0, sd, 1.0), np.nan)
    dsr = deflated_sharpe_ratio(net[best], int(distinct.size), trial_sr)
    dsr["units"] = "daily returns (sharpe, sr0 per day, not annualised)"
    out["deflated_sharpe"] = dsr
    return out


def heatmap_axes(grid: dict, chosen: list[str] | None) -> list[str] | None:
    """The heatmap's two parameters: `chosen`, else the first two of the grid with more than one
    value; None when the grid has fewer than two such parameters."""
    if chosen:
        return list(chosen)
    varied = [k for k, v in grid.items() if len(v) > 1]
    return varied[:2] if len(varied) >= 2 else None


def heatmap_png_bytes(rows: list[dict], x: str, y: str, figure: str, grid: dict, title: str) -> bytes:
    """`figure` over the grid parameters x (columns) and y (rows), each cell the best value among
    the rows with those two values (best as sort_rows), as PNG (matplotlib Agg, no pyplot)."""
    from domain.learning.plots import grid_heatmap_png_bytes

    xs, ys = sorted(grid[x]), sorted(grid[y])
    cells = np.full((len(ys), len(xs)), np.nan)
    for r in sort_rows(rows, figure)[::-1]:  # worst first: the best of a cell is written last
        if r[figure] is not None:
            cells[ys.index(r[y]), xs.index(r[x])] = r[figure]
    return grid_heatmap_png_bytes(cells, xs, ys, x, y, figure, title, reverse=figure in SWEEP_SMALLER_FIRST)


def run_sweep_report(dates, symbols: list[str], prices: np.ndarray, probs: np.ndarray, span: tuple[int, int],
                     bt: BacktestSettings, out_dir: Path, portfolio_config) -> dict | None:
    """The sweep of `bt.sweep` over the backtest's panel, figures over the rows span [a, b);
    writes sweep.json and sweep.png under `out_dir`; None without a grid. `portfolio_config`:
    settings -> the kernel's PortfolioConfig (domain.backtest's, passed in: no import cycle)."""
    from kernels.backtest.portfolio import run_sweep

    sw = bt.sweep
    points = bt.sweep_points()
    if not points:
        return None
    a, b = span
    t0 = time.perf_counter()
    res = run_sweep(prices, probs, [portfolio_config(p) for p in points], chunk_days=bt.chunk_days)
    seconds = time.perf_counter() - t0
    from kernels.backtest.stats import backtest_stats

    rows = []
    for j, p in enumerate(points):
        st = backtest_stats(res.net[j, a:b], res.gross[j, a:b], res.cost[j, a:b], res.turnover[j, a:b],
                            res.exposure[j, a:b], res.trades[j, a:b])
        rows.append({"lane": j, **grid_point(p, sw.grid), **{k: st[k] for k in ROW_FIGURES}})
    ranked = sort_rows(rows, sw.sort_by)
    stands = {"from": str(dates[a])[:10] if b > a else None, "to": str(dates[b - 1])[:10] if b > a else None,
              "days": int(b - a), "symbols": len(symbols), "lanes": len(points), "books": int(res.books),
              "horizon": bt.horizon}
    by_sharpe = sort_rows(rows, "sharpe")[0]["lane"]
    guard = overfitting_guard(res.net[:, a:b], by_sharpe, sw.blocks) if b > a else {
        "pbo": {"pbo": None, "reason": "no day with a prediction"}, "deflated_sharpe": {"dsr": None,
                                                                                          "reason": "no day"}}
    guard["deflated_sharpe"]["lane"] = int(by_sharpe)
    report = {**stands, "grid": sw.grid, "sort_by": sw.sort_by, "strategy": bt.strategy,
              "settings": bt.model_dump(exclude={"sweep"}), "seconds": round(seconds, 4),
              "rows": ranked, **{k: guard[k] for k in ("pbo", "deflated_sharpe")},
              "distinct_lanes": guard.get("distinct_lanes")}
    axes = heatmap_axes(sw.grid, sw.heatmap)
    report["heatmap"] = None
    if axes and b > a:
        title = (f"{sw.sort_by}, best over the other parameters\n{stands['days']} days "
                 f"{stands['from']}..{stands['to']}, {stands['symbols']} symbols, {stands['lanes']} lanes")
        png = write_bytes_atomic(out_dir / "sweep.png", heatmap_png_bytes(rows, axes[0], axes[1], sw.sort_by,
                                                                           sw.grid, title))
        report["heatmap"] = {"x": axes[0], "y": axes[1], "path": str(png)}
    write_json_atomic(out_dir / "sweep.json", report)
    return report


def _fmt(v, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def sweep_lines(report: dict, top: int = 20) -> list[str]:
    """The sweep as text: what it stands on, the table's `top` rows sorted by its figure, the
    overfitting guard."""
    grid = report["grid"]
    head = (f"sweep             {report['lanes']} backtests ({report['books']} books) over {report['days']} days "
            f"{report['from']}..{report['to']}, {report['symbols']} symbols, p_h{report['horizon']}, "
            f"sorted by {report['sort_by']}, in {report['seconds']:.2f} s")
    cols = list(grid) + ["sharpe", "cagr", "max_drawdown", "annual_turnover", "total_costs"]
    if report["sort_by"] not in cols:
        cols.append(report["sort_by"])
    spec = {"sharpe": ".2f", "cagr": ".1%", "max_drawdown": ".1%", "annual_turnover": ".1f", "total_costs": ".1%",
            "cost_share": ".1%", "sortino": ".2f", "calmar": ".2f", "ann_vol": ".1%", "total_return": ".1%",
            "exposure": ".2f", "trades": ".0f", "win_rate": ".1%"}
    width = [max(len(c), 8) for c in cols]
    lines = [head, "  " + "  ".join(f"{c:>{w}}" for c, w in zip(cols, width))]
    for r in report["rows"][:top]:
        cells = [_fmt(r[c], spec.get(c, "g")) for c in cols]
        lines.append("  " + "  ".join(f"{v:>{w}}" for v, w in zip(cells, width)))
    if len(report["rows"]) > top:
        lines.append(f"  ... {len(report['rows']) - top} more rows in sweep.json")
    p, d = report["pbo"], report["deflated_sharpe"]
    pbo = (f"PBO {p['pbo']:.2f} ({p['splits']} CSCV splits of {p['blocks']} blocks of days, "
           f"{p['candidates']} distinct lanes)" if p.get("pbo") is not None else f"PBO n/a ({p.get('reason')})")
    dsr = (f"deflated Sharpe {d['dsr']:.2f} (lane {d['lane']}, best Sharpe, daily SR {d['sharpe']:.4f} against "
           f"SR0 {d['sr0']:.4f} of {d['n_trials']} trials over {report['days']} days)"
           if d.get("dsr") is not None else f"deflated Sharpe n/a ({d.get('reason')})")
    lines.append(f"sweep guard       {pbo}; {dsr}")
    if report.get("heatmap"):
        lines.append(f"sweep heatmap     {report['heatmap']['path']} ({report['sort_by']} over "
                     f"{report['heatmap']['x']} x {report['heatmap']['y']})")
    return lines
