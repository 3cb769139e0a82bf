"""Benchmark: Alpha158 on the alpha158 cores against pyqlib's expression engine.

Goals: >= 40x Qlib's rows/s on one core; 500 symbols x 26 years (~3.3M rows) <= 30 s on
2 cores.

Phases, each in a fresh process (`--phase`, run by `main`):
  qlib   `--qlib-symbols` x `--qlib-rows` synthetic float32 bars written as Qlib's bin layout;
         Qlib's `D.features` for the 158 Alpha158 expressions (kernels=1: one process, no
         expression or dataset cache) timed inside the pyqlib interpreter (a throwaway
         virtualenv per pandas version of `--qlib-pandas`, pinned in QLIB_STACKS, made on first
         use by scripts/alpha158_fixture.py's qlib_python, run as a subprocess), then ours
         (`compute_alpha158`, one thread) on the same float32 arrays: a warm-up call, then
         the best of `--repeat` (wall clock and, less sensitive to a shared machine, process
         CPU time, for both). Both rows/s and the ratios; and how many of the 158 columns
         are bit-equal to Qlib's on that data (CORR/CORD within rtol 1e-5).
  big    `--symbols` x `--years` x 252 synthetic bars (float32), ours alone: one call
         (`--workers 1`) or symbol chunks of `--chunk` symbols spread over `--workers` threads
         (the cores release the GIL), the 158 float32 columns written into preallocated
         arrays (`out=`; their pages are first touched inside the timed run). Seconds (wall, after a small
         warm-up call that loads the compiled cores) and peak RSS (VmHWM of this process,
         including the 158 x rows x 4 bytes of output).

Usage: python benchmarks/bench_alpha158.py [--qlib-symbols 20] [--qlib-rows 6552] [--qlib-pandas 3.0.6,2.2.3] [--repeat 3]
           [--symbols 500] [--years 26] [--workers 2] [--chunk 25] [--skip-qlib] [--skip-big] [--record] [--json PATH]
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import Report, parser  # noqa: E402

FIELDS = ("open", "high", "low", "close", "volume", "vwap")
# The Qlib environments measured (pyqlib 0.9.7, scripts/alpha158_fixture.QLIB_VERSION, on Python
# 3.11): pandas 3.x as a user installs it today and pandas 2.2.3 (the fixture's); numpy 1.26.4 (what
# pyqlib 0.9.7's Cython extensions are built against, and pandas 3.0.6 accepts). The other
# packages are what `import qlib` and qlib.data need, versions as measured on 2026-11-28.
_QLIB_COMMON = ("numpy==1.26.4", "scipy==1.17.1", "PyYAML==6.0.4", "ruamel.yaml==0.19.1", "filelock==4.3.1",
                "loguru==0.7.3", "pydantic-settings==2.16.3", "joblib==1.6.0", "tqdm==4.70.1", "fire==0.7.1",
                "dill==0.4.1", "redis==8.1.0", "python-redis-lock==4.0.1", "pymongo==4.20.1", "requests==2.34.2",
                "packaging==26.4")
QLIB_STACKS = {"3.0.6": ("pandas==3.0.6", *_QLIB_COMMON), "2.2.3": ("pandas==2.2.3", *_QLIB_COMMON)}
QLIB_ENV_ROOT = Path(os.environ.get("TRADELAB_QLIB_ENV_ROOT", tempfile.gettempdir()))


def synthetic(symbols: int, rows: int, seed: int = 24) -> dict[str, np.ndarray]:
    """symbols x rows daily bars (float32), stored back to back: a log-normal walk per symbol."""
    rng = np.random.default_rng(seed)
    shape = (symbols, rows)
    close = 50 * np.exp(np.cumsum(rng.normal(0, 0.02, shape), axis=1))
    open_ = close * np.exp(rng.normal(0, 0.005, shape))
    high = np.maximum(open_, close) * (1 + np.abs(rng.normal(0, 0.01, shape)))
    low = np.minimum(open_, close) * (1 - np.abs(rng.normal(0, 0.01, shape)))
    volume = np.round(rng.lognormal(13, 0.5, shape))
    vwap = (high + low + close) / 3
    return {k: v.astype(np.float32).ravel() for k, v in zip(FIELDS, (open_, high, low, close, volume, vwap))}


def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def phase_qlib(args) -> dict:
    sys.path.insert(0, str(ROOT / "scripts"))
    import alpha158_fixture as fx

    from kernels.alpha158 import ALPHA158_NAMES, compute_alpha158

    rows, symbols = args.qlib_rows, args.qlib_symbols
    data = synthetic(symbols, rows)
    calendar = [str(d.date()) for d in __import__("pandas").bdate_range("1990-01-02", periods=rows)]
    per_symbol = {f"S{k:03d}": (0, {f: data[f][k * rows:(k + 1) * rows] for f in FIELDS}) for k in range(symbols)}
    python = fx.qlib_python(QLIB_ENV_ROOT / f"tradelab-qlib-pandas{args.qlib_pandas}", QLIB_STACKS[args.qlib_pandas])
    with tempfile.TemporaryDirectory() as tmp:
        fx.write_qlib_bins(Path(tmp), calendar, per_symbol)
        ref = fx.run_qlib(Path(tmp), kernels=1, python=python)
    offsets = np.arange(symbols + 1, dtype=np.int64) * rows
    compute_alpha158(data, offsets)
    best = best_cpu = float("inf")
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        ours = compute_alpha158(data, offsets)
        best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
    expected = np.concatenate([ref[f"ref_{s}"] for s in per_symbol], axis=1)
    equal = 0
    for j, name in enumerate(ALPHA158_NAMES):
        a, b = ours[name], expected[j]
        same_nan = np.array_equal(np.isnan(a), np.isnan(b))
        if name.startswith(("CORR", "CORD")):
            ok = same_nan and np.allclose(a, b, rtol=1e-5, atol=0, equal_nan=True)
        else:
            ok = same_nan and np.array_equal(a[~np.isnan(a)], b[~np.isnan(b)])
        equal += ok
    total = symbols * rows
    q, q_cpu = float(ref["seconds"]), float(ref["cpu_seconds"])
    return {"phase": "qlib", "rows": total, "qlib_seconds": q, "qlib_cpu_seconds": q_cpu, "ours_seconds": best,
            "ours_cpu_seconds": best_cpu, "qlib_rows_per_s": total / q, "ours_rows_per_s": total / best,
            "ratio": q / best, "ratio_cpu": q_cpu / best_cpu, "columns_equal": int(equal), "qlib": str(ref["qlib"]),
            "pandas": str(ref["pandas"])}


def phase_big(args) -> dict:
    from kernels.alpha158 import ALPHA158_NAMES, compute_alpha158

    rows = args.years * 252
    data = synthetic(args.symbols, rows)
    total = args.symbols * rows
    small = {f: v[: 2 * rows] for f, v in data.items()}
    compute_alpha158(small, np.array([0, rows, 2 * rows]))  # loads the compiled cores
    out = {name: np.empty(total, dtype=np.float32) for name in ALPHA158_NAMES}

    def chunk(first: int) -> None:
        last = min(first + args.chunk, args.symbols)
        a, b = first * rows, last * rows
        compute_alpha158({f: v[a:b] for f, v in data.items()}, np.arange(last - first + 1) * rows,
                         out={name: col[a:b] for name, col in out.items()})

    t0 = time.perf_counter()
    if args.workers == 1:
        compute_alpha158(data, np.arange(args.symbols + 1) * rows, out=out)
    else:
        with ThreadPoolExecutor(args.workers) as pool:
            list(pool.map(chunk, range(0, args.symbols, args.chunk)))
    seconds = time.perf_counter() - t0
    return {"phase": "big", "symbols": args.symbols, "rows": total, "workers": args.workers, "chunk": args.chunk,
            "seconds": seconds, "rows_per_s": total / seconds, "peak_rss_mb": peak_rss_mb(),
            "output_mb": total * 158 * 4 / 2**20}


def main() -> None:
    p = parser(__doc__, repeat=3)
    p.add_argument("--phase", choices=["qlib", "big"], help="run one phase in this process (used internally)")
    p.add_argument("--qlib-symbols", type=int, default=20)
    p.add_argument("--qlib-rows", type=int, default=6552)
    p.add_argument("--qlib-pandas", default=",".join(QLIB_STACKS),
                   help=f"the Qlib environments to measure against, by pandas version ({', '.join(QLIB_STACKS)})")
    p.add_argument("--symbols", type=int, default=500)
    p.add_argument("--years", type=int, default=26)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--chunk", type=int, default=25)
    p.add_argument("--skip-qlib", action="store_true")
    p.add_argument("--skip-big", action="store_true")
    args = p.parse_args()
    if args.phase:
        result = phase_qlib(args) if args.phase == "qlib" else phase_big(args)
        print(json.dumps(result))
        return
    report = Report("Alpha158 against Qlib's expression engine", args)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    phases = [ph for ph, skip in (("qlib", args.skip_qlib), ("big", args.skip_big)) if not skip]
    passed = [a for a in shlex.split(report.command)[2:] if not a.startswith("--skip")]  # without --record / --json
    stacks = args.qlib_pandas.split(",")
    unknown = [v for v in stacks if v not in QLIB_STACKS]
    if unknown:
        p.error(f"--qlib-pandas {unknown[0]}: expected one of {', '.join(QLIB_STACKS)}")
    runs = [(ph, v) for ph in phases for v in (stacks if ph == "qlib" else [None])]
    for phase, version in runs:
        cmd = [sys.executable, __file__, "--phase", phase, *passed]
        if version:
            cmd += ["--qlib-pandas", version]
        line = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout.strip().splitlines()[-1]
        r = json.loads(line)
        report.figure(f"{phase}_pandas{version}" if version else phase, r)
        if phase == "qlib":
            report.note(f"pyqlib {r['qlib']}, pandas {r['pandas']}; {args.qlib_symbols} symbols x {args.qlib_rows} rows.")
            report.table(["engine", "rows", "wall s", "rows/s", "CPU s"], [
                ["Qlib D.features (kernels=1)", f"{r['rows']:,}", f"{r['qlib_seconds']:.2f}", f"{r['qlib_rows_per_s']:,.0f}",
                 f"{r['qlib_cpu_seconds']:.2f}"],
                ["ours, compute_alpha158 (one thread)", f"{r['rows']:,}", f"{r['ours_seconds']:.4f}", f"{r['ours_rows_per_s']:,.0f}",
                 f"{r['ours_cpu_seconds']:.4f}"]])
            report.note(f"Ratio ours / Qlib: {r['ratio']:.1f}x wall, {r['ratio_cpu']:.1f}x CPU; columns equal to Qlib's: "
                        f"{r['columns_equal']}/158.")
            report.result(f"Alpha158 vs Qlib's expression engine (pandas {r['pandas']})", ">= 40x Qlib",
                          f"{r['ratio_cpu']:.1f}x at {args.qlib_rows:,} rows per symbol (CPU time, same run); "
                          f"{r['columns_equal']}/158 columns equal", "yes" if r["ratio_cpu"] >= 40 else "no")
        else:
            report.table(["symbols", "rows", "threads", "seconds", "rows/s", "peak RSS MB", "output MB"],
                         [[r["symbols"], f"{r['rows']:,}", r["workers"], f"{r['seconds']:.2f}", f"{r['rows_per_s']:,.0f}",
                           f"{r['peak_rss_mb']:,.0f}", f"{r['output_mb']:,.0f}"]])
    report.finish()


if __name__ == "__main__":
    main()
