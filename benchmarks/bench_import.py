"""Import time of the code location against Dagster's own floor: `import pipeline.definitions`
should cost at most 1.3x `import dagster, polars` (heavy libraries load inside the functions
that use them).

Each sample is a fresh interpreter (`python -c ...`), the two commands alternate so that
machine noise hits both alike, and the ratio is the median of the pairwise ratios.

    python benchmarks/bench_import.py [--repeat 9] [--record] [--json out.json]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import REPO, Report, interleaved, parser  # noqa: E402

COMMANDS = {"ours": "import pipeline.definitions", "floor": "import dagster, polars"}
TARGET = 1.3


def run(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True)


def main() -> None:
    args = parser(__doc__, repeat=9).parse_args()
    report = Report("Import time of the code location", args)
    # the warm-up round warms the OS file cache and numba's index, unmeasured
    t = interleaved({k: (lambda code=code: run(code)) for k, code in COMMANDS.items()}, args.repeat)
    ratio = statistics.median(a / b for a, b in zip(t["ours"].samples, t["floor"].samples))
    report.table(["command", "median s", "min s", "max s"],
                 [[f"`python -c \"{COMMANDS[k]}\"`", f"{v.median:.3f}", f"{v.min:.3f}", f"{v.max:.3f}"] for k, v in t.items()])
    report.note(f"Median pairwise ratio ours / floor: **{ratio:.2f}x** (target <= {TARGET}x).")
    report.figure("ratio", ratio)
    report.figure("median_s", {k: v.median for k, v in t.items()})
    report.result("import time of the code location", f"<= {TARGET}x `import dagster, polars`",
                  f"{ratio:.2f}x (median of pairwise ratios)", "yes" if ratio <= TARGET else "no")
    report.finish()


if __name__ == "__main__":
    main()
