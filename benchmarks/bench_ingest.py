"""Benchmark: generate and ingest 500 symbols x 26 years (about 3.3M rows) through Dagster.

Phases, each in a fresh process so peak RSS belongs to that phase alone:
  generator  the synthetic market alone, on one core (target: >= 1M rows/s)
  dagster    raw_bars for every partition in ONE run (single-run backfill) into a fresh
             DAGSTER_HOME and data root: generation, validation, one Delta commit (zstd files per year),
             metadata and sidecar
  baseline   the seed's approach (seed 000 section 1): a plain polars write_parquet per
             symbol/year, no validation, no table log, no Dagster, same rows

Usage: python benchmarks/bench_ingest.py [--symbols 500] [--years 2000-2025] [--record]
`--record` appends the figures to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import emit, machine, peak_rss_mb, run_phases, symbol_names, synthetic_instance  # noqa: E402


def names(n: int) -> list[str]:
    return symbol_names(n)


def phase_generator(args) -> dict:
    from domain.sources.synthetic import SyntheticMarket

    m = SyntheticMarket(7, dt.date(args.y0, 1, 1), dt.date(args.y1, 12, 31))
    m.generate(names(2))  # compile numba, build the calendar
    t0 = time.perf_counter()
    df = m.generate(names(args.symbols))
    sec = time.perf_counter() - t0
    return {"rows": df.height, "seconds": sec, "rows_per_s": df.height / sec, "peak_rss_mb": peak_rss_mb()}


def phase_dagster(args) -> dict:
    tmp = Path(args.tmp)
    instance = synthetic_instance(tmp, args.symbols, args.y0, args.y1)
    from dagster import AssetKey

    from pipeline.definitions import defs
    from pipeline.runs import run_rectangle

    job = defs.resolve_job_def("historical_build_and_train").get_subset(asset_selection={AssetKey("raw_bars")})
    t0 = time.perf_counter()
    summary = run_rectangle(job, instance, names(args.symbols), list(range(args.y0, args.y1 + 1)), log_level="WARNING")
    sec = time.perf_counter() - t0
    s = summary["raw_bars"]
    files = sum(1 for _ in (tmp / "data" / "raw_bars").glob("year=*/*.parquet"))  # the Delta table's data files
    return {"rows": s.rows, "partitions": s.partitions, "files": files, "seconds": sec, "step_seconds": s.seconds, "write_seconds": s.write_seconds,
            "rows_per_s": s.rows / sec, "peak_rss_mb": peak_rss_mb()}


def phase_baseline(args) -> dict:
    import polars as pl

    from domain.sources.synthetic import SyntheticMarket

    tmp = Path(args.tmp) / "baseline"
    m = SyntheticMarket(7, dt.date(args.y0, 1, 1), dt.date(args.y1, 12, 31))
    t0 = time.perf_counter()
    df = m.generate(names(args.symbols))
    parts = df.with_columns(pl.col("date").dt.year().alias("year")).partition_by(["symbol", "year"], as_dict=True)
    for (sym, year), g in parts.items():
        out = tmp / f"symbol={sym}" / f"year={year}"
        out.mkdir(parents=True, exist_ok=True)
        g.drop("year").write_parquet(out / "part.parquet")
    sec = time.perf_counter() - t0
    return {"rows": df.height, "files": len(parts), "seconds": sec, "rows_per_s": df.height / sec, "peak_rss_mb": peak_rss_mb()}


PHASES = {"generator": phase_generator, "dagster": phase_dagster, "baseline": phase_baseline}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--symbols", type=int, default=500)
    ap.add_argument("--years", default="2000-2025")
    ap.add_argument("--phase", choices=sorted(PHASES))
    ap.add_argument("--tmp")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    args.y0, args.y1 = (int(x) for x in args.years.split("-"))
    if args.phase:
        print(json.dumps(PHASES[args.phase](args)))
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        results = run_phases(__file__, ["generator", "dagster", "baseline"],
                             ["--tmp", tmp, "--symbols", str(args.symbols), "--years", args.years],
                             env={"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"})

    g, d, b = results["generator"], results["dagster"], results["baseline"]
    cmd = f"python benchmarks/bench_ingest.py --symbols {args.symbols} --years {args.years}"
    lines = [
        f"### Ingest: {args.symbols} symbols x {args.y1 - args.y0 + 1} years through Dagster ({dt.date.today()})",
        "",
        f"Machine: {machine()}. Command: `{cmd}`.",
        "",
        "| phase | rows | files | seconds | rows/s | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
        f"| synthetic generator alone (1 core) | {g['rows']:,} | - | {g['seconds']:.2f} | {g['rows_per_s']:,.0f} | {g['peak_rss_mb']:.0f} |",
        f"| raw_bars via Dagster, one run ({d['partitions']:,} partitions) | {d['rows']:,} | {d['files']:,} | {d['seconds']:.2f} | {d['rows_per_s']:,.0f} | {d['peak_rss_mb']:.0f} |",
        f"| seed baseline: generate + plain write per symbol/year | {b['rows']:,} | {b['files']:,} | {b['seconds']:.2f} | {b['rows_per_s']:,.0f} | {b['peak_rss_mb']:.0f} |",
        "",
        f"Ratio Dagster run / seed baseline (time): {d['seconds'] / b['seconds']:.2f}x. Inside the run: "
        f"generation + validation {d['step_seconds']:.1f} s, one Delta commit of {d['files']:,} zstd files {d['write_seconds']:.1f} s, "
        f"Dagster bookkeeping (run storage, one materialization event per partition in the SQLite "
        f"event log) {d['seconds'] - d['step_seconds'] - d['write_seconds']:.1f} s, "
        f"{1e3 * (d['seconds'] - d['step_seconds'] - d['write_seconds']) / d['partitions']:.1f} ms per partition.",
        "",
    ]
    emit(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
