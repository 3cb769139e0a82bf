"""Benchmark: the grid search sharded over a 2-worker Dask LocalCluster against one process.

Data: benchmarks/bench_grid.py's generator (`build_data`: the synthetic second-by-second
market, `--days` days x 3 tickers, and `--trades` trades on it), so the big case is the
same as bench_grid's `scale` phase.

Cases, each run once as `run_grid_search` (one process: numba over every core, NumPy) and
once as `domain.gridsearch.dask_grid.run_grid_search_dask` (LocalCluster, `--workers` processes x 1
thread, pair shards); the same exact top-10 is checked:
  cube-big       the big grid, 10M combinations (bench_grid.BIG), dominance sums
  brute-default  the default grid, 11,340 combinations, brute force (compute-bound)

Each mode runs in a fresh process (peak RSS is its own). Both modes warm up first (numba
compilation, and on Dask the workers' imports) on the first 1,000 trades; the Dask
cluster's start-up is timed separately and not counted in the ratio. The ratio is Dask
seconds / one-process seconds (> 1: the distribution overhead: scatter of the inputs to
every worker, task round trips, per-shard binning).

Each Dask case runs with both scatter modes of run_grid_search_dask: "broadcast" (every
worker gets all inputs) and "rows" (features broadcast, each shard's result rows sent once).

The fastest of `--repeat` runs of each is reported. "ratio without exits" leaves out the
exit resolution, the same driver-side code in both (its time varies run to run).

Usage: python benchmarks/bench_grid_dask.py [--days 100] [--trades 1000000] [--workers 2]
       [--scatter broadcast,rows] [--repeat 2] [--record] [--json PATH]
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

from benchmarks.bench_grid import BIG, DEFAULT, build_data  # noqa: E402
from benchmarks.common import Report, parser, peak_rss_mb, run_phases  # noqa: E402

CASES = {"cube-big": (BIG, "cube"), "brute-default": (DEFAULT, "brute")}


def _inputs(path: str, n: int | None = None):
    from domain.gridsearch.inputs import TradeArrays

    d = np.load(path)
    sl = slice(None) if n is None else slice(0, n)
    trades = TradeArrays(start=d["start"][sl], end=d["end"][sl], entry=d["entry"][sl], pct_change=d["pct"][sl],
                         features=np.ascontiguousarray(d["features"][:, sl]), day=d["day"][sl])
    return d["prices"], trades


def _grid(spec):
    from kernels.gridsearch.grid import Grid

    return Grid.from_mapping(spec)


def _worker_peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _case_row(result) -> dict:
    return {"seconds": result.seconds, "timings": result.timings, "combinations": result.combinations,
            "top": [r["combination"] for r in result.top], "roi": [r["roi"] for r in result.top],
            "trades": [r["trades"] for r in result.top]}


def phase_single(args) -> dict:
    from domain.gridsearch.search import run_grid_search

    out = {}
    for name in args.cases.split(","):
        spec, engine = CASES[name]
        run_grid_search(*_inputs(args.data, 1000), _grid(spec), engine=engine)  # warm-up: compile
        prices, trades = _inputs(args.data)
        runs = [run_grid_search(prices, trades, _grid(spec), engine=engine)[0] for _ in range(args.repeat)]
        out[name] = _case_row(min(runs, key=lambda r: r.seconds))
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def phase_dask(args) -> dict:
    from domain.gridsearch.dask_grid import DaskSettings, cluster_client, run_grid_search_dask

    out = {}
    t0 = time.perf_counter()
    with cluster_client(DaskSettings(workers=args.workers)) as client:
        out["cluster_start_s"] = time.perf_counter() - t0
        for name in args.cases.split(","):
            spec, engine = CASES[name]
            run_grid_search_dask(*_inputs(args.data, 1000), _grid(spec), client=client, engine=engine)  # warm-up
            prices, trades = _inputs(args.data)
            for mode in args.scatter.split(","):
                runs = [run_grid_search_dask(prices, trades, _grid(spec), client=client, engine=engine,
                                             shards=args.shards, scatter=mode)[0] for _ in range(args.repeat)]
                result = min(runs, key=lambda r: r.seconds)
                out[f"{name}/{mode}"] = {**_case_row(result), "shards": result.extra["dask"]["shards"]}
        out["worker_peak_rss_mb"] = sorted(client.run(_worker_peak_rss_mb).values())
        out["workers"] = len(client.nthreads())
    out["peak_rss_mb"] = peak_rss_mb()
    return out


PHASES = {"single": phase_single, "dask": phase_dask}


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--days", type=int, default=100)
    ap.add_argument("--trades", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shards", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=2, help="runs per case and mode; the fastest is reported")
    ap.add_argument("--cases", default="cube-big,brute-default")
    ap.add_argument("--scatter", default="broadcast,rows", help="Dask scatter modes to run (run_grid_search_dask)")
    ap.add_argument("--phase", choices=sorted(PHASES), help="run one mode in this process (used internally)")
    ap.add_argument("--data", help="the phase's data (used internally)")
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](args)))
        return 0
    report = Report("Grid search on a Dask LocalCluster vs one process", args)
    extra = ["--cases", args.cases, "--workers", str(args.workers), "--scatter", args.scatter,
             "--repeat", str(args.repeat)]
    extra += ["--shards", str(args.shards)] if args.shards else []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.npz"
        t0 = time.perf_counter()
        info = build_data(args.days, args.trades, 2, data)  # random seed 2: bench_grid's scale data
        print("data", info, f"built in {time.perf_counter() - t0:.1f} s", flush=True)
        res = run_phases(__file__, ["single", "dask"], ["--data", str(data), *extra])
    one, dd = res["single"], res["dask"]
    report.note(f"Data: {info['market_rows']:,} market rows, {info['trades']:,} trades, mean path {info['mean_path']:.0f} rows. "
                f"Dask: LocalCluster, {dd['workers']} worker processes x 1 thread (cluster start {dd['cluster_start_s']:.2f} s, "
                "not counted); one process: numba on every core.")
    rows = []
    for name in args.cases.split(","):
        for mode in args.scatter.split(","):
            a, b = one[name], dd[f"{name}/{mode}"]
            ta, tb = a["timings"], b["timings"]
            same = (a["top"], a["roi"], a["trades"]) == (b["top"], b["roi"], b["trades"])
            # exit resolution is the same driver code in both modes: the rest is the distribution's cost
            rest = (b["seconds"] - tb["exit_resolution_s"]) / (a["seconds"] - ta["exit_resolution_s"])
            rows.append([name, f"{a['combinations']:,}", f"{a['seconds']:.2f} ({ta['exit_resolution_s']:.2f} / {ta['search_s']:.2f})",
                         mode, f"{b['seconds']:.2f} ({tb['exit_resolution_s']:.2f} / {tb['scatter_s']:.2f} / {tb['search_s']:.2f})",
                         b["shards"], f"{b['seconds'] / a['seconds']:.2f}x", f"{rest:.2f}x", same])
            report.figure(f"{name}/{mode}", {"one_s": a["seconds"], "dask_s": b["seconds"], "same_top": same})
    report.table(["case", "combinations", "one process s (exits / search)", "Dask scatter mode",
                  "Dask s (exits / scatter / search)", "shards", "ratio Dask / one", "ratio without exits", "same top-10"], rows)
    workers_rss = ", ".join(f"{m:.0f}" for m in dd["worker_peak_rss_mb"])
    report.note(f"Peak RSS MB: one process {one['peak_rss_mb']:.0f}; Dask driver {dd['peak_rss_mb']:.0f}, workers {workers_rss}.")
    report.result(f"grid search on a {dd['workers']}-worker Dask LocalCluster vs one process", "(measured)",
                  "; ".join(f"{r[0]} {r[3]}: {r[6]}" for r in rows), "measured")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
