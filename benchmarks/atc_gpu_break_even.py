"""The old name of `benchmarks/gpu_break_even.py --families atc` (kernels.deprecations.RENAMED).

Usage: python benchmarks/atc_gpu_break_even.py [--symbols 128,512,...] [--bars 500,2000] [--repeat 3] [--out DIR]
Says once that it is deprecated, then sweeps the ATC scanner's chunks (the sizes asked for)
and writes <out>/gpu_break_even.json as the new script does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import benchmarks.gpu_break_even as new  # noqa: E402 - it chooses the simulator first
from kernels.deprecations import renamed  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--symbols", default="32,128,512,2048,8192,32768")
    ap.add_argument("--bars", default="500,2000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out"))
    args = ap.parse_args()
    renamed("benchmarks/atc_gpu_break_even.py", emit=lambda text: print(f"warning: {text}", file=sys.stderr))
    new.SIZES["atc"] = [(int(s), int(b)) for b in args.bars.split(",") for s in args.symbols.split(",")]
    sys.argv = [sys.argv[0], "--families", "atc", "--repeat", str(args.repeat), "--out", args.out]
    return new.main()


if __name__ == "__main__":
    sys.exit(main())
