"""Benchmark: the trade-log grid search engines against a plain CPU brute force (the baseline).

Data: the generator's second-by-second market data (`--days` days, 3 tickers) and
`--trades` trades drawn on it (random entry second and holding time, entry metrics read
from the market rows at entry; overlapping trades allowed, as in a multi-strategy log).

Phases (each in a fresh process, so peak RSS is the phase's own):
  seed      the baseline: brute force written plainly in numba (per combination: loop over
            trades, filter, walk each path), on a subset of combinations
  exits     exit resolution for every (target, stop_loss) pair, once
  brute     our brute force (numba, parallel, branch-free) over the whole default grid
  cube      dominance sums (NumPy) over the whole default grid
  torch     dominance sums with torch on CPU
  scale     the big grid (>= 10M combinations) over `--scale-trades` trades: exits + cube

Usage: python benchmarks/bench_grid.py [--days 100] [--trades 200000] [--scale-trades 1000000] [--record] [--json PATH]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, parser, peak_rss_mb, run_phases  # noqa: E402

DEFAULT = dict(volatility=[0.0, 0.3, 0.4, 0.5, 0.6], ratio=[0.0, 0.2, 0.5, 0.7, 0.8, 0.9, 1.0], adx28=[0, 20, 30],
               adx14=[0, 20, 30], adx7=[0, 20, 30], target=[0.2, 0.3, 0.4, 0.5], stop_loss=[-0.5, -0.4, -0.3])
BIG = dict(volatility=list(np.round(np.linspace(0, 0.9, 10), 3)), ratio=list(np.round(np.linspace(0, 1.35, 10), 3)),
           adx28=list(range(0, 50, 5)), adx14=list(range(0, 50, 5)), adx7=list(range(0, 50, 5)),
           target=list(np.round(np.linspace(0.1, 1.0, 10), 2)), stop_loss=list(np.round(np.linspace(-1.0, -0.1, 10), 2)))


def build_data(days: int, n_trades: int, seed: int, path: Path) -> dict:
    """Market prices (ticker-major) and trades on them, saved as one .npz."""
    import polars as pl

    from domain.gridsearch.synthetic import generate_arrays

    arrays = generate_arrays(days=days, tickers=("SOXL", "IONQ", "MARA"), seed=seed, trades_per_day=0)
    market = arrays.market.with_columns(pl.col("Ticker").replace_strict({"SOXL": 0, "IONQ": 1, "MARA": 2}).alias("code"))
    market = market.with_row_index("__i").sort("code", "__i")
    prices = market["Price"].cast(pl.Float32).to_numpy()
    feats = np.stack([market[c].cast(pl.Float32).fill_null(0).to_numpy() for c in
                      ("Volatility Percent", "Volatility Ratio", "Adx28", "Adx14", "Adx7")])
    per_day = 23_401
    rng = np.random.default_rng(seed)
    day_start = rng.integers(0, 3 * days, n_trades) * per_day  # ticker-day segment starts
    offset = rng.integers(0, per_day - 31, n_trades)
    start = day_start + offset
    hold = rng.integers(30, 2700, n_trades)
    end = np.minimum(start + hold, day_start + per_day - 1)
    entry = prices[start].astype(np.float64)
    pct = np.round((prices[end] / entry - 1.0) * 100.0, 4)
    np.savez(path, prices=prices, start=start, end=end, entry=entry, pct=pct, features=feats[:, start],
             day=(day_start // per_day).astype(np.int32))
    return {"market_rows": int(len(prices)), "trades": int(n_trades), "mean_path": float(np.mean(end - start + 1))}


def _load(path: str):
    d = np.load(path)
    return d["prices"], d["start"], d["end"], d["entry"], d["pct"], np.ascontiguousarray(d["features"])


def _grid(spec):
    from kernels.gridsearch.grid import Grid

    return Grid.from_mapping(spec)


def phase_seed(args) -> dict:
    """The baseline: per combination, loop over trades, filter, walk the path."""
    from numba import njit, prange

    @njit(parallel=True, cache=True)
    def seed_brute(prices, start, end, entry, pct, feats, combos, out):
        for c in prange(combos.shape[0]):
            total = 0.0
            for j in range(start.shape[0]):
                if (feats[0, j] >= combos[c, 0] and feats[1, j] >= combos[c, 1] and feats[2, j] >= combos[c, 2]
                        and feats[3, j] >= combos[c, 3] and feats[4, j] >= combos[c, 4]):
                    res = pct[j]
                    for i in range(start[j], end[j] + 1):
                        r = (prices[i] / entry[j] - 1.0) * 100.0
                        if r <= combos[c, 6]:
                            res = combos[c, 6]
                            break
                        if r >= combos[c, 5]:
                            res = combos[c, 5]
                            break
                    total += res
            out[c] = total

    prices, start, end, entry, pct, feats = _load(args.data)
    grid = _grid(DEFAULT)
    idx = np.linspace(0, grid.n_combinations - 1, args.seed_combos).astype(np.int64)
    p = grid.decode(idx)
    combos = np.stack([p[k] for k in ("volatility", "ratio", "adx28", "adx14", "adx7", "target", "stop_loss")], axis=1).astype(np.float64)
    out = np.empty(len(combos))
    seed_brute(prices, start, end, entry, pct, feats, combos[:2], out[:2])  # compile
    t0 = time.perf_counter()
    seed_brute(prices, start, end, entry, pct, feats, combos, out)
    sec = time.perf_counter() - t0
    checks = len(combos) * len(start)
    return {"combinations": len(combos), "seconds": sec, "checks_per_s": checks / sec, "peak_rss_mb": peak_rss_mb()}


def _exits(spec, data):
    from kernels.gridsearch.exits import resolve_exits

    prices, start, end, entry, pct, feats = data
    grid = _grid(spec)
    t0 = time.perf_counter()
    results, _ = resolve_exits(start, end, entry, prices, pct, grid.target, grid.stop_loss)
    return grid, feats, results, time.perf_counter() - t0


def phase_exits(args) -> dict:
    data = _load(args.data)
    _exits(DEFAULT, (data[0], data[1][:100], data[2][:100], data[3][:100], data[4][:100], data[5]))  # compile
    grid, _, results, sec = _exits(DEFAULT, data)
    return {"pairs": grid.n_pairs, "seconds": sec, "trade_pairs_per_s": results.size / sec, "peak_rss_mb": peak_rss_mb()}


def phase_brute(args) -> dict:
    from kernels.gridsearch.brute import brute_force

    grid, feats, results, _ = _exits(DEFAULT, _load(args.data))
    brute_force(feats[:, :100], results[:, :100], grid)  # compile
    t0 = time.perf_counter()
    top = brute_force(feats, results, grid)
    sec = time.perf_counter() - t0
    checks = grid.n_combinations * feats.shape[1]
    return {"combinations": grid.n_combinations, "seconds": sec, "checks_per_s": checks / sec,
            "top": top.index[:10].tolist(), "peak_rss_mb": peak_rss_mb()}


def _cube_phase(args, use_torch: bool) -> dict:
    from kernels.gridsearch.cube import cube_roi, cube_roi_torch
    from kernels.gridsearch.ranking import top_k_full

    grid, feats, results, _ = _exits(DEFAULT, _load(args.data))
    fn = cube_roi_torch if use_torch else cube_roi
    t0 = time.perf_counter()
    roi, counts = fn(feats, results, grid)
    top = top_k_full(roi, counts, 10, 1)
    sec = time.perf_counter() - t0
    checks = grid.n_combinations * feats.shape[1]
    return {"combinations": grid.n_combinations, "seconds": sec, "checks_per_s": checks / sec,
            "top": top.index[:10].tolist(), "peak_rss_mb": peak_rss_mb()}


def phase_cube(args) -> dict:
    return _cube_phase(args, use_torch=False)


def phase_torch(args) -> dict:
    return _cube_phase(args, use_torch=True)


def phase_scale(args) -> dict:
    from kernels.gridsearch.cube import cube_roi
    from kernels.gridsearch.ranking import top_k_full

    data = _load(args.scale_data)
    _exits(BIG, (data[0], data[1][:100], data[2][:100], data[3][:100], data[4][:100], data[5]))  # compile
    t0 = time.perf_counter()
    grid, feats, results, exit_s = _exits(BIG, data)
    roi, counts = cube_roi(feats, results, grid)
    top = top_k_full(roi, counts, 10, 1)
    sec = time.perf_counter() - t0
    return {"combinations": grid.n_combinations, "trades": int(feats.shape[1]), "seconds": sec, "exit_s": exit_s,
            "checks_per_s": grid.n_combinations * feats.shape[1] / sec, "top": top.index[:3].tolist(),
            "peak_rss_mb": peak_rss_mb()}


PHASES = {"seed": phase_seed, "exits": phase_exits, "brute": phase_brute, "cube": phase_cube, "torch": phase_torch,
          "scale": phase_scale}


def ap_default_phases() -> str:
    return "seed,exits,brute,cube,torch,scale"


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--days", type=int, default=100)
    ap.add_argument("--trades", type=int, default=200_000)
    ap.add_argument("--scale-trades", type=int, default=1_000_000)
    ap.add_argument("--seed-combos", type=int, default=24)
    ap.add_argument("--phases", default=ap_default_phases(), help="comma-separated phases to run")
    ap.add_argument("--phase", choices=sorted(PHASES), help="run one phase in this process (used internally)")
    ap.add_argument("--data", help="the phase's data (used internally)")
    ap.add_argument("--scale-data", help="the scale phase's data (used internally)")
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](args)))
        return 0
    report = Report("Grid search engines", args)
    with tempfile.TemporaryDirectory() as tmp:
        data, scale = Path(tmp) / "data.npz", Path(tmp) / "scale.npz"
        info = build_data(args.days, args.trades, 1, data)
        scale_info = build_data(args.days, args.scale_trades, 2, scale) if "scale" in args.phases else {}
        print("data", info, scale_info, flush=True)
        results = run_phases(__file__, args.phases.split(","),
                             ["--data", str(data), "--scale-data", str(scale), "--seed-combos", str(args.seed_combos)])
    base = results.get("seed", {}).get("checks_per_s")
    compared = [p for p in ("brute", "cube", "torch") if p in results]
    same_top = (len({tuple(results[p]["top"]) for p in compared}) == 1) if len(compared) > 1 else "not compared (one engine or none run)"
    report.note(f"Data: {info['market_rows']:,} market rows ({args.days} days x 3 tickers x 23,401 s), {info['trades']:,} "
                f"trades, mean path {info['mean_path']:.0f} rows. Checks = combinations x trades.")
    names = {"seed": "baseline: per combination, walk every path (numba parallel)", "brute": "brute force (numba parallel, branch-free)",
             "cube": "dominance sums (NumPy)", "torch": "dominance sums (torch, CPU)"}
    rows = []
    for p in ("seed", "brute", "cube", "torch"):
        if p in results:
            r = results[p]
            ratio = f"{r['checks_per_s'] / base:,.0f}x" if base else "-"
            rows.append([names[p], f"{r['combinations']:,}", f"{r['seconds']:.3f}", f"{r['checks_per_s']:.3g}", ratio, f"{r['peak_rss_mb']:.0f}"])
    if "exits" in results:
        e = results["exits"]
        rows.append([f"exit resolution, {e['pairs']} pairs x {info['trades']:,} trades (done once)", "-", f"{e['seconds']:.3f}", "-", "-",
                     f"{e['peak_rss_mb']:.0f}"])
    if "scale" in results:
        s = results["scale"]
        rows.append([f"scale: exits + dominance sums, {s['combinations']:,} x {s['trades']:,} trades", f"{s['combinations']:,}",
                     f"{s['seconds']:.2f} (exits {s['exit_s']:.2f})", f"{s['checks_per_s']:.3g}",
                     f"{s['checks_per_s'] / base:,.0f}x" if base else "-", f"{s['peak_rss_mb']:.0f}"])
        report.result(f"grid search, {s['combinations']:,} combinations x {s['trades']:,} trades, CPU, exits included", "< 3 s",
                      f"{s['seconds']:.2f} s (exits {s['exit_s']:.2f} s)", "yes" if s["seconds"] < 3 else "no")
    if "brute" in results:
        r = results["brute"]
        report.result("grid search brute force, CPU", ">= 1e9 checks/s", f"{r['checks_per_s']:.3g} checks/s",
                      "yes" if r["checks_per_s"] >= 1e9 else "no")
    report.table(["engine", "combinations", "seconds", "checks/s", "ratio to the baseline", "peak RSS MB"], rows)
    report.note(f"Same top-10 from brute force, dominance sums and torch: {same_top}.")
    for key, res in results.items():
        report.figure(key, {k: v for k, v in res.items() if k != "top"})
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
