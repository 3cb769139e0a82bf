"""Where `compute_alpha158`'s time goes, by operator and window: timers around the compiled
cores of kernels.alpha158.cpu (no cProfile, so the figures are the unprofiled ones) during
`--repeat` calls on `--symbols` x `--rows` synthetic float32 bars (bench_alpha158's data), one
thread.

    python benchmarks/profile_alpha158.py [--symbols 20] [--rows 6552] [--repeat 5] [--record] [--json PATH]

Per core and window: the best of the repeats of its summed CPU seconds (this thread's
CPU time: the machines here are shared) per call of compute_alpha158, and the Alpha158
column families it feeds. The element-wise steps (the
9 kbar and 4 price columns, the derived float32 inputs) are the call's time less the timed
cores.
"""

from __future__ import annotations

import collections
import functools
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_alpha158 import synthetic  # noqa: E402
from benchmarks.common import Report, parser  # noqa: E402

# core (as called by features._compute_chunk) -> the column families it feeds
FAMILIES = {
    "roll_mean": "MA, VMA, WVMA (and CORR/CORD's means); since the prefix sums: the windows they do not admit",
    "roll_sum": "SUMP/SUMN/SUMD, VSUMP/VSUMN/VSUMD (and CORR/CORD's counts)",
    "roll_var": "CORR/CORD (pairwise rows)",
    "roll_var_many": "STD, VSTD, WVMA, CORR, CORD (6 series)",
    "roll_linreg": "BETA, RSQR, RESI",
    "roll_max_idxmax": "MAX, IMAX, RSV, IMXD",
    "roll_min_idxmin": "MIN, IMIN, RSV, IMXD",
    "roll_qrank": "QTLU, QTLD, RANK",
    "exact_prefix": "(once per series and chunk) the prefix sums of MA, VMA, WVMA, SUM*, VSUM*, CORR/CORD",
    "roll_sum_prefix": "SUMP/SUMN/SUMD, VSUMP/VSUMN/VSUMD (exact windows)",
    "roll_mean_prefix": "MA, VMA, WVMA, CORR/CORD's means (exact windows)",
    "roll_count_prefix": "CORR/CORD's pairwise counts",
    "window_ratios": "the 29 per-window columns ROC..VSUMD (ratios, counts CNTP/CNTN/CNTD)",
}


def main() -> None:
    p = parser(__doc__, repeat=5)
    p.add_argument("--symbols", type=int, default=20)
    p.add_argument("--rows", type=int, default=6552)
    args = p.parse_args()

    from kernels.alpha158 import compute_alpha158, cpu
    from kernels.alpha158.features import WINDOWS

    names = [n for n in dir(cpu) if not n.startswith("_") and callable(getattr(cpu, n)) and n != "njit"]
    seconds: dict[tuple[str, object], float] = collections.defaultdict(float)
    calls: collections.Counter = collections.Counter()

    def timed(name):
        fn = getattr(cpu, name)

        @functools.wraps(fn)
        def wrapper(*a):
            # the window: the last int argument (the cores take (..., n, out...) or (d, arrays...))
            d = next((x for x in reversed(a) if isinstance(x, int)), None)
            t0 = time.thread_time()
            try:
                return fn(*a)
            finally:
                seconds[(name, d)] += time.thread_time() - t0
                calls[(name, d)] += 1
        return wrapper

    data = synthetic(args.symbols, args.rows)
    offsets = np.arange(args.symbols + 1, dtype=np.int64) * args.rows
    compute_alpha158(data, offsets)  # compile / load the cores
    originals = {n: getattr(cpu, n) for n in names}
    for n in names:
        setattr(cpu, n, timed(n))
    best: dict[tuple[str, object], float] = {}
    best_total = float("inf")
    try:
        for _ in range(args.repeat):
            seconds.clear()
            t0 = time.thread_time()
            compute_alpha158(data, offsets)
            best_total = min(best_total, time.thread_time() - t0)
            for k, s in seconds.items():
                best[k] = min(best.get(k, float("inf")), s)
    finally:
        for n, fn in originals.items():
            setattr(cpu, n, fn)

    rows = args.symbols * args.rows
    report = Report("Alpha158 by operator and window", args)
    report.note(f"{args.symbols} symbols x {args.rows:,} rows ({rows:,} rows), one thread; best of {args.repeat} "
                f"calls: {best_total * 1e3:.1f} ms CPU ({rows / best_total:,.0f} rows/s). CPU milliseconds per call of "
                "compute_alpha158, summed over the core's calls in that window.")
    cores = sorted({k[0] for k in best}, key=lambda n: -sum(s for (m, _), s in best.items() if m == n))
    table = []
    timed_total = 0.0
    for n in cores:
        per = [best.get((n, d), 0.0) for d in WINDOWS]
        total = sum(s for (m, _), s in best.items() if m == n)
        timed_total += total
        table.append([n, FAMILIES.get(n, ""), *(f"{s * 1e3:.2f}" for s in per), f"{total * 1e3:.2f}",
                      f"{100 * total / best_total:.0f}%"])
        report.figure(f"{n}_ms", total * 1e3)
    rest = best_total - timed_total
    table.append(["element-wise steps", "KMID..VWAP0, derived inputs, chunking", *([""] * len(WINDOWS)),
                  f"{rest * 1e3:.2f}", f"{100 * rest / best_total:.0f}%"])
    report.table(["core", "columns", *(f"d={d}" for d in WINDOWS), "all windows ms", "share"], table)
    report.figure("total_ms", best_total * 1e3)
    report.figure("rows_per_s", rows / best_total)
    report.finish()


if __name__ == "__main__":
    main()
