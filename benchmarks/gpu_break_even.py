"""Benchmark: the GPU break-even of every routed family (kernels/backends/routing.py), on a GPU machine.

For each family, batches of growing work are timed on the cpu backend (numba threads = cores)
and on the GPU backend as the routed stage calls it (NumPy in, NumPy out, transfers included),
best of --repeat after a warm-up, and the results are checked equal (tests/gpu.py
`assert_engine_equal`). A family's break-even is the smallest work from which the GPU wins at
that size and every larger one measured; `routing.BREAK_EVEN` is set from it.

  atc          the ATC scanner's chunks: S symbols x B bars, float32 closes, float64 results,
               tail=1, default parameters (`atc.compute`); work = symbol-bars
  indicators   the indicator kernels the feature stage calls, as bench_gpu's indicators section
               mixes them (ema, rsi, kama, atr, adx; float64, NumPy in and out) over S series of
               B bars; work = symbol-bars
  strategy     the population backtest: N individuals on one series of B bars
               (`backtest_population`); work = individual-bars

Usage: python benchmarks/gpu_break_even.py [--families atc,indicators,strategy] [--repeat 3] [--quick] [--out DIR]
Prints one row per size, then one line per family with its break-even (or "never") and the
`BreakEven(...)` to put in routing.py; writes <out>/gpu_break_even.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_gpu import agree, best, walks  # noqa: E402 - it chooses the simulator first
from tests.gpu import assert_engine_equal  # noqa: E402

# (name, sizes) per family: sizes as (count, bars); `--quick` keeps the first two of each
SIZES = {
    "atc": [(32, 500), (128, 500), (512, 500), (2048, 500), (8192, 500), (32, 2000), (128, 2000), (512, 2000),
            (2048, 2000), (8192, 2000), (32768, 2000)],
    "indicators": [(16, 2000), (64, 2000), (256, 2000), (1024, 2000), (1024, 10_000)],
    "strategy": [(128, 21_480), (512, 21_480), (2048, 21_480), (8192, 21_480)],
}
QUICK = {"atc": [(2, 60), (3, 60)], "indicators": [(2, 80), (3, 80)], "strategy": [(2, 200), (3, 200)]}
UNITS = {"atc": "symbol-bars", "indicators": "symbol-bars", "strategy": "individual-bars"}


def break_even(rows: list[dict]) -> int | None:
    """The smallest work from which the GPU is faster at that size and every larger one."""
    win = None
    for r in sorted(rows, key=lambda r: r["work"], reverse=True):
        if r["gpu_s"] >= r["cpu_s"]:
            break
        win = r["work"]
    return win


def atc_case(count: int, bars: int):
    from kernels import atc

    x = np.ascontiguousarray(walks(count, bars, 7).astype(np.float32))
    run = lambda b: atc.compute(x, backend=b, dtype=np.float64, tail=1)[1]  # noqa: E731
    return run, lambda got, want: assert_engine_equal(got, want)


def indicator_case(count: int, bars: int):
    """The five indicators of bench_gpu's indicators section (ema 20, rsi 14, kama 10, atr 14,
    adx 14; float64, NumPy in and out) over `count` series of `bars` bars, one call each."""
    from benchmarks.bench_gpu import indicator_data

    full, calls = indicator_data({"ind_series": count, "ind_bars": bars})

    def run(b):
        return {name: f(b, full) for name, f in calls.items()}

    def same(got, want):
        for name in want:
            assert_engine_equal(got[name], want[name], err_msg=name)

    return run, same


def strategy_case(count: int, bars: int):
    from benchmarks.bench_gpu import population_data
    from kernels.strategy import backtest_population

    data, pop = population_data({"pop": count, "pop_bars": bars})
    run = lambda b: backtest_population(*data, pop, backend=b, fallback=False)  # noqa: E731

    def same(got, want):
        for f in ("offsets", "entry_idx", "exit_idx", "reason", "pnl"):
            assert_engine_equal(getattr(got, f), getattr(want, f), err_msg=f)

    return run, same


CASES = {"atc": atc_case, "indicators": indicator_case, "strategy": strategy_case}


def sweep(family: str, sizes, repeat: int) -> list[dict]:
    """Time cpu against cuda at each size (after a compile on the smallest) and check them equal."""
    case = CASES[family]
    warm, _ = case(*sizes[0])
    warm("cpu"), warm("cuda")  # compile both
    rows = []
    for count, bars in sizes:
        run, same = case(count, bars)
        t_cpu, want = best(lambda: run("cpu"), repeat)  # noqa: B023
        t_gpu, got = best(lambda: run("cuda"), repeat)  # noqa: B023
        equal, why = agree(lambda: same(got, want))  # noqa: B023
        rows.append(dict(family=family, count=count, bars=bars, work=count * bars, cpu_s=t_cpu, gpu_s=t_gpu,
                         equal=equal, why=why))
        print(f"{family:>10} {count:>7,} x {bars:>6,} {count * bars:>13,} {t_cpu:>9.4f} {t_gpu:>9.4f} "
              f"{t_cpu / t_gpu:>8.2f}x  {equal}", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=",".join(CASES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="two tiny sizes per family (the simulator: times mean nothing)")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "benchmarks" / "out"))
    args = ap.parse_args()
    families = [f for f in args.families.split(",") if f]
    unknown = sorted(set(families) - set(CASES))
    if unknown:
        ap.error(f"--families: unknown {', '.join(unknown)}; expected some of {', '.join(CASES)}")
    print(f"{'family':>10} {'size':>17} {'work':>13} {'cpu s':>9} {'cuda s':>9} {'cpu/cuda':>9}  equal", flush=True)
    rows, evens = [], {}
    for family in families:
        got = sweep(family, (QUICK if args.quick else SIZES)[family], 1 if args.quick else args.repeat)
        rows += got
        evens[family] = break_even(got)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_break_even.json").write_text(json.dumps({"rows": rows, "break_even": evens}, indent=2))
    for family, work in evens.items():
        where = f"{work:,} {UNITS[family]}" if work else "cuda never faster in this range"
        print(f"break-even {family}: {where}  ->  BreakEven({UNITS[family]!r}, {work}, ...)")
    return 0 if all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
