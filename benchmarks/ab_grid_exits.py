"""Interleaved A/B of exit resolution: an older `kernels/gridsearch/exits.py` against this one,
in one process, on bench_grid's scale data (1M trades, 10 targets x 10 stops).

    git show 6dec667:kernels/gridsearch/exits.py > /tmp/exits_old.py
    python benchmarks/ab_grid_exits.py --old /tmp/exits_old.py [--rounds 3] [--data /tmp/scale.npz]

Prints each round's wall for both, whether results and exit rows are identical, the
crossings alone, and the min-over-rounds ratio new / old.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_grid import BIG, _grid, build_data  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="a copy of an older kernels/gridsearch/exits.py")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data", default="/tmp/scale.npz", help="bench_grid scale data (built when missing)")
    args = ap.parse_args()
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
    for name, mod in mods.items():
        ft = np.empty((len(t_s), len(start)), np.int64)
        fs = np.empty((len(s_s), len(start)), np.int64)
        t0 = time.perf_counter()
        mod.crossings_cpu(start, end, entry, prices, t_s, s_s, ft, fs)
        print(name, "crossings alone", round(time.perf_counter() - t0, 3))
    print("min old / new:", round(min(walls["old"]), 3), round(min(walls["new"]), 3),
          "ratio", round(min(walls["new"]) / min(walls["old"]), 3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
