"""Profile: peak RSS of writing a features frame (packs core + alpha158) to a Delta table,
by writer, to find where the features step's memory goes after its code returns.

One fresh process per `--mode` (each prints one line): the features of `--symbols` synthetic
symbols x 2000-2025 are built (domain.features.build_features), a `year` column added, the
peak RSS reset (VmHWM, `5` into /proc/self/clear_refs), then the frame is written once:

  delta       deltalake.write_deltalake, partition_by year (what resources.delta_store does)
  delta-flat  deltalake.write_deltalake, not partitioned
  pyarrow     pyarrow.parquet.write_to_dataset, partition_cols year (no Delta log)

Printed: the frame's size, RSS before the write, the peak during it and its growth over
the RSS before, in MB, and the seconds.

Usage: python benchmarks/profile_features_write.py [--symbols 100] [--modes delta,delta-flat,pyarrow] [--record] [--json PATH]
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, parser  # noqa: E402


def _status_mb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def one(symbols: int, mode: str) -> str:
    import polars as pl

    from benchmarks.common import symbol_names
    from config.partitions import SymbolYear
    from domain.features import build_features
    from domain.sources.synthetic import SyntheticMarket
    from kernels.registry.packs import select

    names = symbol_names(symbols)
    bars = SyntheticMarket(7, dt.date(2000, 1, 1), dt.date(2025, 12, 31)).generate(names)
    keys = [SymbolYear(s, y) for s in names for y in range(2000, 2026)]
    df = build_features(bars, keys, selection=select(("core", "alpha158")), workers=2)[0]
    df = df.with_columns(pl.col("date").dt.year().cast(pl.Int32).alias("year"))
    del bars
    table = df.to_arrow()
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_mb("VmRSS")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        if mode == "pyarrow":
            import pyarrow.parquet as pq

            pq.write_to_dataset(table, tmp, partition_cols=["year"], compression="zstd")
        else:
            from deltalake import WriterProperties, write_deltalake

            write_deltalake(tmp, table, mode="overwrite", partition_by=["year"] if mode == "delta" else None,
                            writer_properties=WriterProperties(compression="ZSTD"))
        seconds = time.perf_counter() - t0
    peak = _status_mb("VmHWM")
    return (f"{mode}: {df.height:,} rows x {df.width - 3} feature columns, frame {df.estimated_size() / 2**20:,.0f} MB; "
            f"RSS before the write {before:,.0f} MB, peak during it {peak:,.0f} MB (+{peak - before:,.0f} MB, "
            f"{(peak - before) / (df.estimated_size() / 2**20):.1f}x the frame); {seconds:.1f} s")


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--symbols", type=int, default=100)
    ap.add_argument("--modes", default="delta,delta-flat,pyarrow")
    ap.add_argument("--mode", choices=["delta", "delta-flat", "pyarrow"], help="run one writer in this process (used internally)")
    args = ap.parse_args()
    if args.mode:
        print(one(args.symbols, args.mode))
        return 0
    report = Report(f"Peak RSS of writing the features of {args.symbols} symbols, by writer", args)
    for mode in args.modes.split(","):
        out = subprocess.run([sys.executable, __file__, "--symbols", str(args.symbols), "--mode", mode],
                             capture_output=True, text=True, check=True)
        line = out.stdout.strip().splitlines()[-1]
        print(line, flush=True)
        report.note(f"- {line}")
        report.figure(mode, line)
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
