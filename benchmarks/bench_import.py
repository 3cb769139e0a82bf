"""Import time of the code location against Dagster's own floor (issue 12's target:
`import pipeline.definitions` <= 1.3x `import dagster, polars`).

Each sample is a fresh interpreter (`python -c ...`), the two commands alternate so that
machine noise hits both alike, and the ratio is the median of the pairwise ratios.

    python benchmarks/bench_import.py [--repeat 9] [--record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import REPO, emit, machine  # noqa: E402

COMMANDS = {"ours": "import pipeline.definitions", "floor": "import dagster, polars"}


def wall(code: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    wall(COMMANDS["ours"])  # warm the OS file cache and numba's index once, unmeasured
    samples = {k: [] for k in COMMANDS}
    for _ in range(args.repeat):
        for name, code in COMMANDS.items():
            samples[name].append(wall(code))
    ratios = [a / b for a, b in zip(samples["ours"], samples["floor"])]
    med = {k: statistics.median(v) for k, v in samples.items()}
    lines = [
        f"### Import time of the code location ({dt.date.today()})",
        "",
        f"Machine: {machine()}. Command: `python benchmarks/bench_import.py --repeat {args.repeat}`.",
        "",
        "| command | median s | min s | max s |",
        "|---|---:|---:|---:|",
        *[f"| `python -c \"{COMMANDS[k]}\"` | {med[k]:.3f} | {min(v):.3f} | {max(v):.3f} |" for k, v in samples.items()],
        "",
        f"Median pairwise ratio ours / floor: **{statistics.median(ratios):.2f}x** (target <= 1.3x).",
        "",
    ]
    emit(lines, args.record)


if __name__ == "__main__":
    main()
