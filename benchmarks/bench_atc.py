"""Benchmark: the ATC scanner against the plain reference (seeds 002/004).

Phases, each in a fresh process:
  scan      500 symbols x 2,000 bars through the scanner (cpu), and the plain NumPy loop
            reference (kernels.atc.reference) on a few of the same symbols, extrapolated
            (seed 004: ~300 s originally, ~5 s fully optimized on its hardware; goal < 1 s)
  memory    5,000 symbols x 2,000 bars: peak RSS of the process (seed 002: < 2 GB; goal < 1 GB)

Usage: python benchmarks/bench_atc.py [--symbols 500] [--bars 2000] [--big 5000] [--record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import emit, machine, peak_rss_mb, run_phases  # noqa: E402


def universe(n_symbols: int, n_bars: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    close = 100.0 * np.exp(np.cumsum(rng.normal(0, 0.015, (n_symbols, n_bars)), axis=1))
    dates = (np.datetime64("2010-01-01", "D") + np.arange(n_bars)).astype("datetime64[ns]")
    return pl.DataFrame({"date": np.tile(dates, n_symbols), "symbol": np.repeat([f"S{i:05d}" for i in range(n_symbols)], n_bars),
                         "close": close.ravel().astype(np.float32)})


def phase_scan(args) -> dict:
    from domain.atc_scan import scan_universe
    from kernels.atc.reference import average_signal as reference

    bars = universe(args.symbols, args.bars)
    scan_universe(bars.head(2 * args.bars), n_bars=args.bars)  # load compiled code
    t0 = time.perf_counter()
    table, stats = scan_universe(bars, n_bars=args.bars)
    scan_s = time.perf_counter() - t0
    few = bars.filter(pl.col("symbol").is_in(table["symbol"].head(args.ref_symbols)))
    t0 = time.perf_counter()
    ref_last = []
    for sym, g in few.partition_by("symbol", as_dict=True, maintain_order=True).items():
        ref_last.append(reference(g["close"].to_numpy().astype(np.float64))[-1])
    ref_s = (time.perf_counter() - t0) / args.ref_symbols * args.symbols
    same = np.allclose(table["atc"].head(args.ref_symbols).to_numpy(), ref_last, atol=1e-6)
    return {"symbols": table.height, "scan_s": scan_s, "reference_s_extrapolated": ref_s, "same_values": bool(same),
            "chunks": stats.chunks, "peak_rss_mb": peak_rss_mb()}


def phase_memory(args) -> dict:
    from domain.atc_scan import scan_universe

    bars = universe(args.big, args.bars, seed=1)
    input_mb = bars.estimated_size() / 2**20
    t0 = time.perf_counter()
    table, stats = scan_universe(bars, n_bars=args.bars)
    return {"symbols": table.height, "seconds": time.perf_counter() - t0, "input_mb": input_mb,
            "chunks": stats.chunks, "peak_rss_mb": peak_rss_mb()}


PHASES = {"scan": phase_scan, "memory": phase_memory}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--symbols", type=int, default=500)
    ap.add_argument("--bars", type=int, default=2000)
    ap.add_argument("--big", type=int, default=5000)
    ap.add_argument("--ref-symbols", type=int, default=3)
    ap.add_argument("--phase", choices=sorted(PHASES))
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](args)))
        return 0
    r = run_phases(__file__, ["scan", "memory"], ["--symbols", str(args.symbols), "--bars", str(args.bars),
                                                 "--big", str(args.big), "--ref-symbols", str(args.ref_symbols)])
    s, m = r["scan"], r["memory"]
    emit([
        f"### ATC scanner ({dt.date.today()})", "",
        f"Machine: {machine()}. Command: `python benchmarks/bench_atc.py --symbols {args.symbols} --bars {args.bars} --big {args.big}`.",
        "", "| run | symbols x bars | seconds | peak RSS MB |", "|---|---:|---:|---:|",
        f"| scanner, cpu (numba, 2 threads) | {s['symbols']:,} x {args.bars:,} | {s['scan_s']:.3f} | {s['peak_rss_mb']:.0f} |",
        f"| plain NumPy-loop reference (measured on {args.ref_symbols} symbols, extrapolated) | {args.symbols:,} x {args.bars:,} | "
        f"{s['reference_s_extrapolated']:.1f} | - |",
        f"| scanner, cpu | {m['symbols']:,} x {args.bars:,} | {m['seconds']:.2f} | {m['peak_rss_mb']:.0f} |",
        "", f"Ratio reference / scanner: {s['reference_s_extrapolated'] / s['scan_s']:,.0f}x; same final values on the "
        f"reference symbols: {s['same_values']}. Goals: 500 x 2,000 under 1 s ({s['scan_s']:.2f} s); 5,000 x 2,000 under 1 GB "
        f"({m['peak_rss_mb']:.0f} MB, of which {m['input_mb']:.0f} MB is the input frame).", "",
    ], args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
