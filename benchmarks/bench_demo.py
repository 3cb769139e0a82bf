"""Where `make demo`'s seconds go: every run and step of the last demo, from the Dagster instance.

    python benchmarks/bench_demo.py            run the demo twice (cold, then warm) in fresh
                                               processes; print the warm run's steps
    python benchmarks/bench_demo.py --runs 1   one demo process (warm when the store exists)
    python benchmarks/bench_demo.py --read     no demo: read the runs of the last demo
    ... --compare-data OTHER_ROOT              also: every Delta table under data/ and the grid-search
                                               report equal to those of another checkout's demo
                                               (same day: the same bars), e.g. one of the base commit

A step's seconds are its STEP_START..STEP_SUCCESS/FAILURE span (instance.get_run_step_stats);
a run's seconds its start..end (includes Dagster's run setup and event writes); "process"
is the demo command's wall time (imports, the summary and the headline included). The
instance is $DAGSTER_HOME (the demo's own), the settings those in force ($PIPELINE_CONFIG).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_demo_process() -> tuple[float, float]:
    """One `python -m pipeline.cli demo` in a fresh process: (started at, wall seconds)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    started = time.time()
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "demo"], cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit(f"the demo failed (exit {out.returncode}): {out.stderr.strip()[-2000:]}")
    return started, wall


def demo_runs(instance, since: float | None):
    """The runs created at or after `since` (default: those of the last demo, i.e. from the
    last run of historical_build_and_train tagged tradelab/origin=demo), oldest first."""
    from dagster import RunsFilter

    if since is None:
        last = instance.get_runs(RunsFilter(tags={"tradelab/origin": "demo"}), limit=1)
        if not last:
            sys.exit("no demo run in this instance: run the demo first (or drop --read)")
        since = instance.get_run_record_by_id(last[0].run_id).create_timestamp.timestamp()
    records = instance.get_run_records(limit=200)
    return sorted((r for r in records if r.create_timestamp.timestamp() >= since - 1e-3),
                  key=lambda r: r.create_timestamp)


def step_table(instance, records) -> list[tuple[str, str, float]]:
    """(run's job, step key, seconds) per step, then (job, '(run)', run seconds) per run."""
    rows = []
    for r in records:
        run = r.dagster_run
        for s in instance.get_run_step_stats(run.run_id):
            if s.start_time and s.end_time:
                rows.append((run.job_name, s.step_key, s.end_time - s.start_time))
        if r.start_time and r.end_time:
            rows.append((run.job_name, "(run)", r.end_time - r.start_time))
    return rows


def compare_data(mine: Path, other: Path) -> list[str]:
    """One line per Delta table under both data dirs (rows sorted on the non-float columns):
    EQUAL or DIFFERENT; then the grid-search report without its wall times."""
    import json

    import polars as pl

    def tables(root: Path) -> set[str]:
        return {str(p.parent.relative_to(root)) for p in root.rglob("_delta_log") if p.is_dir()}

    lines = []
    a, b = tables(mine / "data"), tables(other / "data")
    if a ^ b:
        lines.append(f"tables in one only: {sorted(a ^ b)}")
    for t in sorted(a & b):
        x, y = pl.read_delta(str(mine / "data" / t)), pl.read_delta(str(other / "data" / t))
        keys = [c for c in x.columns if x[c].dtype not in (pl.Float32, pl.Float64)]
        same = x.schema == y.schema and x.sort(keys).equals(y.sort(keys), null_equal=True)
        lines.append(f"{t:<40}{x.height:>9} rows  {'EQUAL' if same else 'DIFFERENT'}")
    reports = [json.loads((root / "reports" / "default" / "grid_search" / "top10.json").read_text()) for root in (mine, other)]
    for r in reports:
        r.pop("seconds", None), r.pop("timings", None)
    lines.append(f"{'grid_search/top10.json':<40}{'':>15}{'EQUAL' if reports[0] == reports[1] else 'DIFFERENT'}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=2, help="demo processes to run; the last one is reported")
    ap.add_argument("--read", action="store_true", help="run nothing: report the last demo in the instance")
    ap.add_argument("--compare-data", metavar="OTHER_ROOT", type=Path,
                    help="compare the stored tables and the grid-search report with another checkout's demo")
    args = ap.parse_args(argv)
    os.environ.setdefault("DAGSTER_HOME", str(REPO / ".dagster"))
    os.environ.setdefault("NUMBA_CACHE_DIR", str(REPO / ".numba_cache"))
    since, walls = None, []
    if not args.read:
        for i in range(args.runs):
            since, wall = run_demo_process()
            walls.append(wall)
            print(f"demo process {i + 1}/{args.runs}: {wall:.1f} s", file=sys.stderr)
    sys.path.insert(0, str(REPO))
    from pipeline.instance import get_instance

    instance = get_instance()
    rows = step_table(instance, demo_runs(instance, since))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{'job':<30}{'step':<34}{'seconds':>9}")
    for job, step, seconds in rows:
        print(f"{job:<30}{step:<34}{seconds:>9.2f}")
    if walls:
        print(f"{'process':<30}{'pipeline.cli demo':<34}{walls[-1]:>9.2f}")
    if args.compare_data:
        for line in compare_data(REPO, args.compare_data.resolve()):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
