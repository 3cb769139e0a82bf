"""Benchmark: the ATC scanner's GPU break-even (domain.atc_scan.GPU_MIN_WORK), on a GPU machine.

For chunks of S symbols x B bars, as the scanner calls the kernel (float32 closes, float64
results, tail=1, default parameters), times `atc.compute` on the cpu backend (numba threads =
cores) and on cuda (transfers included, as the scanner pays them), best of --repeat after a
warm-up, and checks that the last values agree (tests/gpu.py `assert_engine_equal`). The
break-even is the smallest chunk (symbol-bars) from which cuda wins at every larger size;
route() sends a chunk to the GPU from GPU_MIN_WORK symbol-bars.

Usage: python benchmarks/atc_gpu_break_even.py [--symbols 128,512,...] [--bars 500,2000] [--repeat 3] [--out DIR]
Prints one row per size and the break-even last; writes <out>/atc_break_even.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_gpu import agree, best, walks  # noqa: E402 - it chooses the simulator first
from tests.gpu import assert_engine_equal  # noqa: E402


def break_even(rows: list[dict]) -> int | None:
    """The smallest work (symbol-bars) from which cuda is faster at that size and every larger one."""
    win = None
    for r in sorted(rows, key=lambda r: r["work"], reverse=True):
        if r["gpu_s"] >= r["cpu_s"]:
            break
        win = r["work"]
    return win


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--symbols", default="32,128,512,2048,8192,32768")
    ap.add_argument("--bars", default="500,2000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out"))
    args = ap.parse_args()
    from kernels import atc

    bars_list = [int(b) for b in args.bars.split(",")]
    sym_list = [int(s) for s in args.symbols.split(",")]
    closes = walks(max(sym_list), max(bars_list), 7).astype(np.float32)
    for b in ("cpu", "cuda"):
        atc.compute(closes[:2, :100], backend=b, dtype=np.float64, tail=1)  # compile
    rows = []
    print(f"{'symbols':>8} {'bars':>6} {'symbol-bars':>12} {'cpu s':>9} {'cuda s':>9} {'cpu/cuda':>9}  equal", flush=True)
    for bars in bars_list:
        for sym in sym_list:
            x = np.ascontiguousarray(closes[:sym, -bars:])
            t_cpu, (_, c_last) = best(lambda: atc.compute(x, dtype=np.float64, tail=1), args.repeat)  # noqa: B023
            t_gpu, (_, g_last) = best(lambda: atc.compute(x, backend="cuda", dtype=np.float64, tail=1), args.repeat)  # noqa: B023
            equal, _ = agree(lambda: assert_engine_equal(g_last, c_last))  # noqa: B023
            rows.append(dict(symbols=sym, bars=bars, work=sym * bars, cpu_s=t_cpu, gpu_s=t_gpu, equal=equal))
            print(
                f"{sym:>8,} {bars:>6,} {sym * bars:>12,} {t_cpu:>9.4f} {t_gpu:>9.4f} {t_cpu / t_gpu:>8.2f}x  {equal}", flush=True
            )
    per_bars = {bars: break_even([r for r in rows if r["bars"] == bars]) for bars in bars_list}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "atc_break_even.json").write_text(json.dumps({"rows": rows, "break_even": per_bars}, indent=2))
    for bars, work in per_bars.items():
        print(f"break-even at {bars:,} bars: " + (f"{work:,} symbol-bars" if work else "cuda never faster in this range"))
    return 0 if all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
