"""The partition fan-out of the feature rebuild through each Dagster executor.

One run of `historical_build_and_train`'s stages (raw_bars, features, labels, specialists)
over a symbols x years rectangle, from the shell (`dagster asset materialize
--partition-range`), with `executor.kind` in_process, multiprocess and dask (a 2-worker
LocalCluster started by the benchmark, shared DAGSTER_HOME and settings). Each executor
gets a fresh store and instance. Stages are single-run backfills, so one step per stage
carries every partition: what differs is how the four steps are launched and where they run
(the ratio to in_process is the executor's overhead on this machine).

With `--symbols-per-group N` (partitions.symbols_per_group) the dynamic keys are groups of N
symbols and the range names the first and last group; `--executors` picks which run. The
run is still one step per stage (single-run backfills): Dask places the steps on workers,
so only independent steps (features and labels) overlap; spreading groups over workers
takes one run per block of groups (pipeline.runs.selection_blocks), not the executor.

Usage: python benchmarks/bench_executors.py [--symbols 40] [--years 2000-2009] [--symbols-per-group N]
                                            [--executors in_process,multiprocess,dask] [--record] [--json PATH]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, parser, symbol_names  # noqa: E402

DAGSTER = str(Path(sys.executable).parent / "dagster")
SELECT = "raw_bars,features,labels,specialists"


def run_once(tmp: Path, kind: str, symbols: list[str], y0: int, y1: int, scheduler: str | None,
             per_group: int = 1) -> dict:
    cfg = tmp / f"settings_{kind}.yaml"
    executor = {"kind": kind, **({"dask": {"scheduler": scheduler}} if scheduler else {})}
    cfg.write_text(json.dumps({
        "paths": {"data": str(tmp / kind / "data"), "reports": str(tmp / kind / "reports"), "models": str(tmp / kind / "models")},
        "years": {"start": y0, "end": y1},
        "universe": {"source": "synthetic", "synthetic": {"symbols": symbols, "seed": 7, "end_date": f"{y1}-12-31"}},
        "executor": executor,
        "partitions": {"symbols_per_group": per_group},
    }))
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp / kind / "home")}
    sync = subprocess.run([sys.executable, "-m", "pipeline.cli", "symbols", "sync"], cwd=REPO, env=env, capture_output=True, text=True)
    if sync.returncode:
        raise RuntimeError(sync.stderr[-3000:])
    # grouped: G0000 .. the last group (registration order = the settings' order)
    first, last = (symbols[0], symbols[-1]) if per_group == 1 else ("G0000", f"G{(len(symbols) - 1) // per_group:04d}")
    t0 = time.perf_counter()
    out = subprocess.run([DAGSTER, "asset", "materialize", "-m", "pipeline.definitions", "--select", SELECT,
                          "--partition-range", f"{first}|{y0}...{last}|{y1}"], cwd=REPO, env=env,
                         capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"{kind}: {out.stderr[-3000:]}")
    return {"kind": kind, "seconds": seconds}


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--symbols", type=int, default=40)
    ap.add_argument("--years", default="2000-2009")
    ap.add_argument("--symbols-per-group", type=int, default=1, help="partitions.symbols_per_group")
    ap.add_argument("--executors", default="in_process,multiprocess,dask")
    args = ap.parse_args()
    kinds = args.executors.split(",")
    report = Report("Executors: the feature rebuild's fan-out through Dagster", args)
    y0, y1 = (int(x) for x in args.years.split("-"))
    symbols = symbol_names(args.symbols)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for kind in ("in_process", "multiprocess"):
            if kind in kinds:
                rows.append(run_once(tmp, kind, symbols, y0, y1, None, args.symbols_per_group))
        if "dask" in kinds:
            from distributed import LocalCluster

            # the workers need the run's settings and instance: they inherit this environment
            os.environ["PIPELINE_CONFIG"] = str(tmp / "settings_dask.yaml")
            os.environ["DAGSTER_HOME"] = str(tmp / "dask" / "home")
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
                rows.append(run_once(tmp, "dask", symbols, y0, y1, cluster.scheduler_address, args.symbols_per_group))
    partitions = len(symbols) * (y1 - y0 + 1)
    base = rows[0]["seconds"]
    grouped = f", grouped by {args.symbols_per_group}" if args.symbols_per_group > 1 else ""
    report.note(f"One run of {SELECT} over {len(symbols)} symbols x {y1 - y0 + 1} years ({partitions} symbol-years per "
                f"stage{grouped}) from the shell, fresh store and instance per executor; dask = a 2-worker LocalCluster (not "
                "counted in the time).")
    report.table(["executor", "seconds", "/ in_process"],
                 [[r["kind"], f"{r['seconds']:.1f}", f"{r['seconds'] / base:.2f}x"] for r in rows])
    report.figure("seconds", {r["kind"]: r["seconds"] for r in rows})
    report.result(f"executors: feature rebuild {len(symbols)} x {y1 - y0 + 1}{grouped} through Dagster", "(measured)",
                  ", ".join([f"in_process {base:.1f} s"] + [f"{r['kind']} {r['seconds'] / base:.2f}x" for r in rows[1:]]),
                  "measured")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
