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

Usage: python benchmarks/bench_sweeps.py [--rows 1000000] [--rounds 5] [--no-takt] [--names ema,dema]
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
    def __init__(self, py: Path):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
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
    ap.add_argument("--names", default=",".join(NAMES), help=f"comma-separated, of {sorted(TALIB_FN)}")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()

    import talib

    from kernels import indicators as K

    h, l, c = series(args.rows)
    takt = None if args.no_takt else Takt(takt_python(Path(args.takt_venv), args.takt_wheel))
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
        times: dict[str, list[float]] = {k: [] for k in (*sides, "takt")}
        for r in range(args.rounds + 1):
            for k, f in sides.items():
                s = timed(f)
                if r:
                    times[k].append(s)
            if takt is not None:
                s = takt.time(name, args.rows)
                if r:
                    times["takt"].append(s)
        ref = "takt" if takt is not None else "talib"
        med = {k: float(np.median(v)) for k, v in times.items() if v}
        ratio = {k: float(np.median(np.array(times[k]) / np.array(times[ref])))
                 for k in ("f32", "f64", "f32_out", "f64_out", "talib")}
        rows.append((name, med, ratio))
        print(f"{name}: " + "  ".join(f"{k} {v * 1e3:.0f} ms" for k, v in med.items())
              + f"  | ratio to {ref}: f32 {ratio['f32']:.2f} f64 {ratio['f64']:.2f} f32(out=) {ratio['f32_out']:.2f} "
              f"f64(out=) {ratio['f64_out']:.2f} TA-Lib {ratio['talib']:.2f}",
              flush=True)
    if takt is not None:
        takt.close()
    ref = "ta-lib-takt" if takt is not None else "TA-Lib"
    lines = [
        f"### 99-period sweeps (periods 2..100), {args.rows:,} rows ({dt.date.today()})",
        "",
        f"Machine: {machine()}; load average {os.getloadavg()[0]:.2f} at the end. Command: "
        f"`python benchmarks/bench_sweeps.py --rows {args.rows} --rounds {args.rounds}"
        + ("" if args.names == ",".join(NAMES) else f" --names {args.names}") + f"`. TA-Lib {talib.__version__}"
        + (f", ta-lib-takt {takt.version} (own venv)" if takt is not None else "")
        + ". Medians over rounds, interleaved; ratios are medians of per-round ratios to " + ref + "'s loop of 99 calls.",
        "",
        f"| indicator | sweep f32 ms | sweep f64 ms | f32 out= ms | f64 out= ms | TA-Lib loop ms | "
        f"{'takt loop ms | ' if takt else ''}f32 / {ref} | f64 / {ref} | f32 out= / {ref} | f64 out= / {ref} | "
        f"TA-Lib / {ref} |",
        "|---|---:|---:|---:|---:|---:|" + ("---:|" if takt else "") + "---:|---:|---:|---:|---:|",
        *[f"| {n} | {m['f32'] * 1e3:.0f} | {m['f64'] * 1e3:.0f} | {m['f32_out'] * 1e3:.0f} | {m['f64_out'] * 1e3:.0f} | "
          f"{m['talib'] * 1e3:.0f} | " + (f"{m['takt'] * 1e3:.0f} | " if takt else "")
          + f"{r['f32']:.2f} | {r['f64']:.2f} | {r['f32_out']:.2f} | {r['f64_out']:.2f} | {r['talib']:.2f} |"
          for n, m, r in rows],
        "",
    ]
    emit(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
