"""Benchmark: generate and ingest 500 symbols x 26 years (about 3.3M rows) through Dagster.

Phases, each in a fresh process so peak RSS belongs to that phase alone:
  generator  the synthetic market alone, on one core (target: >= 1M rows/s)
  dagster    raw_bars for every partition in ONE run (single-run backfill) into a fresh
             DAGSTER_HOME and data root: generation, validation, one Delta commit (zstd files per year),
             metadata and sidecar
  baseline   the simplest ingest: a plain polars write_parquet per symbol/year, no
             validation, no table log, no Dagster, same rows

Usage: python benchmarks/bench_ingest.py [--symbols 500] [--years 2000-2025] [--record] [--json PATH]
`--record` appends the entry to benchmarks/LOG.md and prints the rows for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import json
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, parser, peak_rss_mb, run_phases, symbol_names, synthetic_instance  # noqa: E402


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
    ap = parser(__doc__)
    ap.add_argument("--symbols", type=int, default=500)
    ap.add_argument("--years", default="2000-2025")
    ap.add_argument("--phase", choices=sorted(PHASES), help="run one phase in this process (used internally)")
    ap.add_argument("--tmp", help="the phase's scratch folder (used internally)")
    args = ap.parse_args()
    args.y0, args.y1 = (int(x) for x in args.years.split("-"))
    if args.phase:
        print(json.dumps(PHASES[args.phase](args)))
        return 0

    report = Report(f"Ingest: {args.symbols} symbols x {args.y1 - args.y0 + 1} years through Dagster", args)
    with tempfile.TemporaryDirectory() as tmp:
        results = run_phases(__file__, ["generator", "dagster", "baseline"],
                             ["--tmp", tmp, "--symbols", str(args.symbols), "--years", args.years],
                             env={"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"})

    g, d, b = results["generator"], results["dagster"], results["baseline"]
    report.table(["phase", "rows", "files", "seconds", "rows/s", "peak RSS MB"], [
        ["synthetic generator alone (1 core)", f"{g['rows']:,}", "-", f"{g['seconds']:.2f}", f"{g['rows_per_s']:,.0f}", f"{g['peak_rss_mb']:.0f}"],
        [f"raw_bars via Dagster, one run ({d['partitions']:,} partitions)", f"{d['rows']:,}", f"{d['files']:,}", f"{d['seconds']:.2f}",
         f"{d['rows_per_s']:,.0f}", f"{d['peak_rss_mb']:.0f}"],
        ["baseline: generate + plain write per symbol/year", f"{b['rows']:,}", f"{b['files']:,}", f"{b['seconds']:.2f}",
         f"{b['rows_per_s']:,.0f}", f"{b['peak_rss_mb']:.0f}"],
    ])
    bookkeeping = d["seconds"] - d["step_seconds"] - d["write_seconds"]
    report.note(
        f"Ratio Dagster run / baseline (time): {d['seconds'] / b['seconds']:.2f}x. Inside the run: "
        f"generation + validation {d['step_seconds']:.1f} s, one Delta commit of {d['files']:,} zstd files {d['write_seconds']:.1f} s, "
        f"Dagster bookkeeping (run storage, one materialization event per partition in the SQLite "
        f"event log) {bookkeeping:.1f} s, {1e3 * bookkeeping / d['partitions']:.1f} ms per partition.")
    for key, res in results.items():
        report.figure(key, res)
    report.result("synthetic generator", ">= 1M rows/s on one core", f"{g['rows_per_s'] / 1e6:.2f}M rows/s",
                  "yes" if g["rows_per_s"] >= 1e6 else "no")
    report.result(f"ingest: raw_bars {args.symbols} x {args.y1 - args.y0 + 1} through Dagster, one run", "(measured)",
                  f"{d['seconds']:.1f} s, {d['seconds'] / b['seconds']:.2f}x a plain write per partition; bookkeeping "
                  f"{1e3 * bookkeeping / d['partitions']:.1f} ms per partition", "measured")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
