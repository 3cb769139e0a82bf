"""Benchmark: one long CSV of many symbols in the user folder. Goal: one partition in < 2 s
and < 500 MB; one appended bar -> one run of one symbol.

Generates `--rows` rows of `--symbols` symbols (one `symbol` column, daily bars; about 60
bytes a row, so 10M rows is about 600 MB) into a temporary folder, then measures, each in a
fresh process so its peak RSS is its own:
  partition    FolderSource.history([one symbol]): what one raw_bars partition reads (a
               lazy scan filtered on the symbol)
  symbols      FolderSource.symbols(): what `symbols sync` reads (one streaming group-by)
  fingerprints FolderSource.fingerprints() after one bar was appended to one symbol: what
               new_symbol_sensor computes per tick (how many symbols changed: 1)
  eager        the old way, for comparison: the whole file read into memory (pl.read_csv)

Usage: python benchmarks/bench_long_file.py [--rows 2000000] [--symbols 400] [--record] [--json PATH]
Prints one JSON line per phase and a table (wall and CPU seconds: on a shared machine the
CPU figure is the steadier one).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, parser, peak_rss_mb, run_phases, symbol_names  # noqa: E402


def generate(folder: Path, rows: int, symbols: int) -> Path:
    """`rows` bars over `symbols` symbols, symbol-major, in one CSV."""
    import numpy as np
    import polars as pl

    days = rows // symbols
    start = dt.date(1990, 1, 1)
    dates = pl.date_range(start, start + dt.timedelta(days=days - 1), eager=True).dt.strftime("%Y-%m-%d")
    rng = np.random.default_rng(0)
    close = np.round(100 * np.exp(np.cumsum(rng.normal(0, 0.01, days * symbols))), 4)
    frame = pl.DataFrame({
        "symbol": np.repeat(np.array(symbol_names(symbols)), days),
        "date": pl.concat([dates] * symbols),
        "open": close, "high": np.round(close * 1.01, 4), "low": np.round(close * 0.99, 4), "close": close,
        "volume": rng.integers(1_000, 1_000_000, days * symbols),
    })
    path = folder / "universe.csv"
    frame.write_csv(path)
    return path


def phase(args) -> dict:
    from domain.sources.folder import FolderSource

    src = FolderSource(Path(args.folder))
    cpu0 = _cpu_s()
    t0 = time.perf_counter()
    if args.phase == "partition":
        out = {"rows": src.history([symbol_names(args.symbols)[args.symbols // 2]]).height}
    elif args.phase == "symbols":
        out = {"symbols": len(src.symbols())}
    elif args.phase == "fingerprints":
        before = json.loads(Path(args.folder, "fingerprints.json").read_text())
        after = src.fingerprints()
        out = {"changed": sum(before[s] != after[s] for s in after)}
    else:
        import polars as pl

        out = {"rows": pl.read_csv(Path(args.folder) / "universe.csv", infer_schema=False).height}
    return {**out, "seconds": round(time.perf_counter() - t0, 3), "cpu_s": round(_cpu_s() - cpu0, 3),
            "peak_rss_mb": round(peak_rss_mb(), 1)}


def _cpu_s() -> float:
    """User + system CPU seconds of this process: steadier than wall time on a shared machine."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = parser(__doc__, rows=2_000_000)
    ap.add_argument("--symbols", type=int, default=400)
    ap.add_argument("--phase", help="run one phase in this process (used internally)")
    ap.add_argument("--folder", help="the phase's folder (used internally)")
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(phase(args)))
        return
    report = Report(f"One long CSV: {args.rows:,} rows of {args.symbols:,} symbols", args)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = generate(folder, args.rows, args.symbols)
        size_mb = path.stat().st_size / 2**20
        common = ["--folder", str(folder), "--symbols", str(args.symbols)]
        results = run_phases(__file__, ["partition", "symbols"], common)
        from domain.sources.folder import FolderSource

        (folder / "fingerprints.json").write_text(json.dumps(FolderSource(folder).fingerprints()))
        with path.open("a") as fh:  # one bar appended for one symbol
            fh.write(f"{symbol_names(args.symbols)[0]},2099-01-04,1,1,1,1,1\n")
        results |= run_phases(__file__, ["fingerprints", "eager"], common)
    report.note(f"A {size_mb:.0f} MB CSV; each phase in a fresh process.")
    report.table(["phase", "wall s", "CPU s", "peak RSS MB", "other"],
                 [[name, f"{r['seconds']:.2f}", f"{r['cpu_s']:.2f}", f"{r['peak_rss_mb']:,.0f}",
                   ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("seconds", "cpu_s", "peak_rss_mb")) or "-"]
                  for name, r in results.items()])
    for name, r in results.items():
        report.figure(name, r)
    part = results["partition"]
    met = [part["peak_rss_mb"] < 500 and "memory yes", part["seconds"] < 2 and "time yes"]
    report.result(f"one long CSV, {args.rows:,} rows x {args.symbols:,} symbols: one partition", "< 2 s, < 500 MB",
                  f"{part['peak_rss_mb']:,.0f} MB; {part['cpu_s']:.2f} s CPU, {part['seconds']:.2f} s wall",
                  ", ".join(m for m in met if m) or "no")
    report.finish()

if __name__ == "__main__":
    main()
