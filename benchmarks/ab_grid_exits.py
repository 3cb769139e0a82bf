"""Interleaved A/B of exit resolution: an older `kernels/gridsearch/exits.py` against this one,
in one process, on bench_grid's scale data (1M trades, 10 targets x 10 stops).

    git show 6dec667:kernels/gridsearch/exits.py > /tmp/exits_old.py
    python benchmarks/ab_grid_exits.py --old /tmp/exits_old.py [--rounds 3] [--data /tmp/scale.npz] [--record] [--json PATH]

Prints each round's wall for both, whether results and exit rows are identical, the
crossings alone, and the min-over-rounds ratio new / old.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_grid import BIG, _grid, build_data  # noqa: E402
from benchmarks.common import Report, Timing, parser  # noqa: E402


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--old", required=True, help="a copy of an older kernels/gridsearch/exits.py")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data", default="/tmp/scale.npz", help="bench_grid scale data (built when missing)")
    args = ap.parse_args()
    report = Report("Exit resolution A/B: an older kernels/gridsearch/exits.py against this one", args)
    path = Path(args.data)
    if not path.exists():
        print(build_data(100, 1_000_000, 2, path))
    d = np.load(path)
    prices, entry, pct = d["prices"], d["entry"], d["pct"]
    start, end = d["start"].astype(np.int64), d["end"].astype(np.int64)
    spec = importlib.util.spec_from_file_location("exits_old", args.old)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    import kernels.gridsearch.exits as new

    grid = _grid(BIG)
    mods = {"old": old, "new": new}
    for mod in mods.values():  # compile
        mod.resolve_exits(start[:100], end[:100], entry[:100], prices, pct[:100], grid.target, grid.stop_loss)
    walls: dict[str, list[float]] = {"old": [], "new": []}
    ref = None
    for rnd in range(args.rounds):
        for name, mod in mods.items():
            t0 = time.perf_counter()
            res, rows = mod.resolve_exits(start, end, entry, prices, pct, grid.target, grid.stop_loss)
            walls[name].append(time.perf_counter() - t0)
            if rnd == 0 and name == "old":
                ref = (res.copy(), rows.copy())
            elif rnd == 0:
                print("identical:", np.array_equal(res, ref[0]), np.array_equal(rows, ref[1]))
            del res, rows
        print(rnd, {k: round(v[-1], 2) for k, v in walls.items()}, flush=True)
    t_s, s_s, _, _ = new.level_orders(grid.target, grid.stop_loss)
    crossings = {}
    for name, mod in mods.items():
        ft = np.empty((len(t_s), len(start)), np.int64)
        fs = np.empty((len(s_s), len(start)), np.int64)
        t0 = time.perf_counter()
        mod.crossings_cpu(start, end, entry, prices, t_s, s_s, ft, fs)
        crossings[name] = time.perf_counter() - t0
    t = {k: Timing(tuple(v)) for k, v in walls.items()}
    report.note(f"{len(start):,} trades, {len(grid.target)} targets x {len(grid.stop_loss)} stops; rounds interleaved "
                f"(old, new), {args.rounds} each.")
    report.table(["what", "old", "new", "ratio new / old"], [
        ["exit resolution, min of rounds, s", f"{t['old'].min:.3f}", f"{t['new'].min:.3f}", f"{t['new'].min / t['old'].min:.3f}"],
        ["exit resolution, median, s", f"{t['old'].median:.3f}", f"{t['new'].median:.3f}", f"{t['new'].median / t['old'].median:.3f}"],
        ["crossings alone, s", f"{crossings['old']:.3f}", f"{crossings['new']:.3f}", f"{crossings['new'] / crossings['old']:.3f}"]])
    report.figure("walls", walls)
    report.figure("crossings", crossings)
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
