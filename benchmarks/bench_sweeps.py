"""Benchmark: a 99-period sweep (periods 2..100) over one series, ours in one call against a
loop of 99 single calls in TA-Lib and in ta-lib-takt (goal: float32 <= 0.6x, float64 <= 1.0x of takt's loop).

Ours: `kernels.indicators.sweep(name, inputs, periods)` (one pass of the multi-lane core,
outputs as one time-major [T, 99] block), float32 (the project's precision) and float64,
into a fresh block and into a reused one (`out=`: no page faults).
TA-Lib: the project's `talib`, 99 calls, float64. ta-lib-takt: a drop-in `talib` (so never in
the project's venv): the script makes a throwaway venv under /tmp (`--takt-venv`) with
`pip install ta-lib-takt` (or `--takt-wheel PATH`) and runs its loop in a worker process
there. Sides are interleaved round by round (ours f32, ours f64, TA-Lib, takt; output
allocation included everywhere) and the ratios reported are medians of the per-round ratios,
so machine load shifts both sides alike. One warm-up round is discarded.

Fresh pages against recycled ones: takt's 99 outputs of 8 MB (float64, 1M rows) are served
from glibc's heap once its dynamic mmap threshold has risen past them (after the first
round), so its loop writes into pages the previous round freed: the like-for-like figure for
it is ours into a reused block. Our one block (396 / 792 MB) is above glibc's 32 MB ceiling
for that threshold, so a fresh block is new pages every call. Unless `--no-takt-fresh`, the script
times a second takt worker started with `MALLOC_MMAP_THRESHOLD_=131072`, which pins the
threshold so that each of its outputs is new pages too: the like-for-like figure for ours
into a fresh block.

Usage: python benchmarks/bench_sweeps.py [--rows 1000000] [--rounds 5] [--no-takt] [--no-takt-fresh] [--names ema,dema]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import emit, machine  # noqa: E402

PERIODS = list(range(2, 101))
NAMES = ("ema", "rsi", "atr", "adx")
TALIB_FN = {"ema": "EMA", "dema": "DEMA", "tema": "TEMA", "rsi": "RSI", "atr": "ATR", "adx": "ADX"}

# Runs in the takt venv: reads {"name", "rows"} lines, answers {"s": seconds} per loop of
# 99 single calls on the same data as the parent (same generator and seed).
WORKER = r"""
import json, sys, time
import numpy as np, talib
PERIODS = list(range(2, 101))
FN = {"ema": "EMA", "dema": "DEMA", "tema": "TEMA", "rsi": "RSI", "atr": "ATR", "adx": "ADX"}
data = {}
for line in sys.stdin:
    req = json.loads(line)
    if req["rows"] not in data:
        from_seed = np.random.default_rng(0)
        n = req["rows"]
        c = 1000.0 + np.cumsum(from_seed.normal(0, 1, n)) * 0.05
        h = c + np.abs(from_seed.normal(0, 0.5, n))
        l = c - np.abs(from_seed.normal(0, 0.5, n))
        data[n] = (h, l, c)
    h, l, c = data[req["rows"]]
    fn = getattr(talib, FN[req["name"]])
    args = (h, l, c) if req["name"] in ("atr", "adx") else (c,)
    t0 = time.perf_counter()
    outs = [fn(*args, p) for p in PERIODS]
    s = time.perf_counter() - t0
    del outs
    print(json.dumps({"s": s, "version": talib.__version__}), flush=True)
"""


def series(rows: int):
    rng = np.random.default_rng(0)
    c = 1000.0 + np.cumsum(rng.normal(0, 1, rows)) * 0.05
    h = c + np.abs(rng.normal(0, 0.5, rows))
    l = c - np.abs(rng.normal(0, 0.5, rows))
    return h, l, c


def takt_python(venv: Path, wheel: str | None) -> Path:
    """The takt venv's python, made (once) with the project's interpreter."""
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "numpy", wheel or "ta-lib-takt==0.8.2"], check=True)
    return py


class Takt:
    def __init__(self, py: Path, fresh_pages: bool = False):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if fresh_pages:  # glibc's threshold pinned at its default: every 8 MB output is a new mapping
            env["MALLOC_MMAP_THRESHOLD_"] = "131072"
        self.proc = subprocess.Popen([str(py), "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
        self.version = "?"

    def time(self, name: str, rows: int) -> float:
        self.proc.stdin.write(json.dumps({"name": name, "rows": rows}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        self.version = reply["version"]
        return reply["s"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def timed(fn) -> float:
    t0 = time.perf_counter()
    out = fn()
    s = time.perf_counter() - t0
    del out
    return s


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-takt", action="store_true")
    ap.add_argument("--takt-venv", default="/tmp/tradelab-takt-venv")
    ap.add_argument("--takt-wheel", default=None)
    ap.add_argument("--no-takt-fresh", action="store_true", help="skip the takt worker whose outputs are fresh pages")
    ap.add_argument("--names", default=",".join(NAMES), help=f"comma-separated, of {sorted(TALIB_FN)}")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()

    import talib

    from kernels import indicators as K

    h, l, c = series(args.rows)
    takt = None if args.no_takt else Takt(takt_python(Path(args.takt_venv), args.takt_wheel))
    takt_fresh = None if takt is None or args.no_takt_fresh else Takt(takt_python(Path(args.takt_venv), args.takt_wheel),
                                                                       fresh_pages=True)
    rows = []
    # reused output blocks (sweep(out=)): what a repeated sweep costs without fresh pages
    block32 = np.zeros((args.rows, len(PERIODS)), dtype=np.float32)
    block64 = np.zeros((args.rows, len(PERIODS)), dtype=np.float64)
    for name in args.names.split(","):
        inputs = (h, l, c) if name in ("atr", "adx") else (c,)
        fn = getattr(talib, TALIB_FN[name])
        sides = {
            "f32": lambda name=name, inputs=inputs: K.sweep(name, inputs, PERIODS, dtype=np.float32),
            "f64": lambda name=name, inputs=inputs: K.sweep(name, inputs, PERIODS, dtype=np.float64),
            "f32_out": lambda name=name, inputs=inputs: K.sweep(name, inputs, PERIODS, dtype=np.float32, out=block32),
            "f64_out": lambda name=name, inputs=inputs: K.sweep(name, inputs, PERIODS, dtype=np.float64, out=block64),
            "talib": lambda fn=fn, inputs=inputs: [fn(*inputs, p) for p in PERIODS],
        }
        workers = {k: w for k, w in (("takt", takt), ("takt_fresh", takt_fresh)) if w is not None}
        times: dict[str, list[float]] = {k: [] for k in (*sides, *workers)}
        for r in range(args.rounds + 1):
            for k, f in sides.items():
                s = timed(f)
                if r:
                    times[k].append(s)
            for k, w in workers.items():
                s = w.time(name, args.rows)
                if r:
                    times[k].append(s)
        ref = "takt" if takt is not None else "talib"
        med = {k: float(np.median(v)) for k, v in times.items() if v}
        ratio = {k: float(np.median(np.array(times[k]) / np.array(times[ref])))
                 for k in ("f32", "f64", "f32_out", "f64_out", "talib")}
        if takt_fresh is not None:  # fresh pages on both sides
            for k in ("f32", "f64"):
                ratio[k + "_fresh"] = float(np.median(np.array(times[k]) / np.array(times["takt_fresh"])))
        rows.append((name, med, ratio))
        print(f"{name}: " + "  ".join(f"{k} {v * 1e3:.0f} ms" for k, v in med.items())
              + f"  | ratio to {ref}: f32 {ratio['f32']:.2f} f64 {ratio['f64']:.2f} f32(out=) {ratio['f32_out']:.2f} "
              f"f64(out=) {ratio['f64_out']:.2f} TA-Lib {ratio['talib']:.2f}"
              + (f" | fresh pages both sides: f32 {ratio['f32_fresh']:.2f} f64 {ratio['f64_fresh']:.2f}"
                 if takt_fresh is not None else ""),
              flush=True)
    for w in (takt, takt_fresh):
        if w is not None:
            w.close()
    ref = "ta-lib-takt" if takt is not None else "TA-Lib"

    def ms(key):
        return lambda n, m, r: f"{m[key] * 1e3:.0f}"

    def ratio_of(key):
        return lambda n, m, r: f"{r[key]:.2f}"

    cols = [("indicator", lambda n, m, r: n), ("sweep f32 ms", ms("f32")), ("sweep f64 ms", ms("f64")),
            ("f32 out= ms", ms("f32_out")), ("f64 out= ms", ms("f64_out")), ("TA-Lib loop ms", ms("talib"))]
    if takt is not None:
        cols.append(("takt loop ms", ms("takt")))
    if takt_fresh is not None:
        cols.append(("takt loop, fresh pages ms", ms("takt_fresh")))
    cols += [(f"f32 / {ref}", ratio_of("f32")), (f"f64 / {ref}", ratio_of("f64")),
             (f"f32 out= / {ref}", ratio_of("f32_out")), (f"f64 out= / {ref}", ratio_of("f64_out"))]
    if takt_fresh is not None:
        cols += [("f32 / takt fresh pages", ratio_of("f32_fresh")), ("f64 / takt fresh pages", ratio_of("f64_fresh"))]
    cols.append((f"TA-Lib / {ref}", ratio_of("talib")))
    lines = [
        f"### 99-period sweeps (periods 2..100), {args.rows:,} rows ({dt.date.today()})",
        "",
        f"Machine: {machine()}; load average {os.getloadavg()[0]:.2f} at the end. Command: "
        f"`python benchmarks/bench_sweeps.py --rows {args.rows} --rounds {args.rounds}"
        + ("" if args.names == ",".join(NAMES) else f" --names {args.names}") + f"`. TA-Lib {talib.__version__}"
        + (f", ta-lib-takt {takt.version} (own venv)" if takt is not None else "")
        + ". Medians over rounds, interleaved; ratios are medians of per-round ratios to " + ref + "'s loop of 99 calls"
        + ("; 'takt fresh pages': the same loop in a worker started with MALLOC_MMAP_THRESHOLD_=131072, so each output is "
           "new pages as in our fresh block (recycled pages: ours out= against takt's loop)." if takt_fresh else "."),
        "",
        "| " + " | ".join(c for c, _ in cols) + " |",
        "|---|" + "---:|" * (len(cols) - 1),
        *["| " + " | ".join(fmt(n, m, r) for _, fmt in cols) + " |" for n, m, r in rows],
        "",
    ]
    emit(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
