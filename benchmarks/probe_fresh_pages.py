"""Probe: what a fresh output block costs on this machine, apart from any indicator.

`block`: allocate and fill a [rows, 99] block (`np.empty` + `fill`, numpy's THP madvise on,
or off with `--no-hugepages`) several times, pausing `--gaps` seconds between calls; prints
ms per call and minor faults. On a VM whose balloon reports free pages to the host, the time
grows with the pause (the host took the freed pages back).
`loop`: `[talib.EMA(c, p) for p in 2..100]` round after round with minor faults per round; run
it with the takt venv's python (`/tmp/tradelab-takt-venv/bin/python`), with and without
`MALLOC_MMAP_THRESHOLD_=131072`, to see whether glibc hands the loop recycled pages.

Usage: python benchmarks/probe_fresh_pages.py block [--rows 1000000] [--dtype float64] [--gaps 0,0.3,1,3]
       python benchmarks/probe_fresh_pages.py loop [--rows 1000000] [--rounds 12]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

PERIODS = range(2, 101)


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def probe_block(rows: int, dtype, gaps: list[float], calls: int, hugepages: bool) -> None:
    try:  # numpy's switch for its madvise(MADV_HUGEPAGE) on large allocations (private: 2.x, then 1.x)
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:
        from numpy.core.multiarray import _set_madvise_hugepage

    _set_madvise_hugepage(hugepages)
    for gap in gaps:
        times, faults = [], []
        for _ in range(calls):
            f0, t0 = minor_faults(), time.perf_counter()
            block = np.empty((rows, len(PERIODS)), dtype=dtype)
            block.fill(1.0)
            times.append(time.perf_counter() - t0)
            faults.append(minor_faults() - f0)
            del block
            time.sleep(gap)
        print(f"gap {gap:g} s: ms {[round(t * 1e3, 1) for t in times]}  minor faults {faults}", flush=True)


def probe_loop(rows: int, rounds: int) -> None:
    import talib

    rng = np.random.default_rng(0)
    c = 1000.0 + np.cumsum(rng.normal(0, 1, rows)) * 0.05
    for r in range(rounds):
        f0, t0 = minor_faults(), time.perf_counter()
        outs = [talib.EMA(c, p) for p in PERIODS]
        s = time.perf_counter() - t0
        del outs
        print(f"round {r}: {s * 1e3:.1f} ms, {minor_faults() - f0} minor faults", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("block", "loop"))
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    ap.add_argument("--gaps", default="0,0.3,1,3", help="seconds between calls, comma-separated")
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--no-hugepages", action="store_true")
    ap.add_argument("--rounds", type=int, default=12)
    args = ap.parse_args()
    if args.what == "block":
        probe_block(args.rows, np.dtype(args.dtype), [float(g) for g in args.gaps.split(",")], args.calls,
                    not args.no_hugepages)
    else:
        probe_loop(args.rows, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
