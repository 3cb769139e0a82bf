"""Benchmark: every indicator against TA-Lib and ta-lib-takt on the same array, interleaved.

Two columns for ours: like for like with TA-Lib (float64 in, float64 out: TA-Lib's Python
wrapper takes and returns float64), and the project's own path (the stored float32 bars
in, float32 features out; the cores still compute in float64). Output allocation is
included everywhere. Sides run interleaved, round by round in a rotating order (ours f64,
ours f32, TA-Lib, takt), each call timed by `time.thread_time` (the CPU time of the calling
thread: what the kernel costs, less sensitive to being descheduled on a shared machine);
reported: the minimum per side and the median over rounds of the per-round ratios
ours / TA-Lib and ours / takt (so load shifts both sides alike). One warm-up round (numba
compiled and cached) is discarded.

ta-lib-takt is a drop-in `talib` (so never in the project's venv): as in
benchmarks/bench_sweeps.py, a throwaway venv (`--takt-venv`, made once with `pip install
ta-lib-takt`) runs a worker process that evaluates the same TA-Lib expression on the same
data (same generator, same seed) and answers its thread time.

Usage: python benchmarks/bench_indicators.py [--rows 10000000] [--rounds 5] [--only NAMES] [--cold] [--no-takt] [--record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import talib

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_sweeps import takt_python  # noqa: E402
from benchmarks.common import emit, machine  # noqa: E402
from kernels import indicators as K  # noqa: E402


def data(rows):
    """(high, low, close) float64; the takt worker runs this function's own source."""
    rng = np.random.default_rng(0)
    c = 1000.0 + np.cumsum(rng.normal(0, 1, rows)) * 0.05
    h = c + np.abs(rng.normal(0, 0.5, rows))
    l = c - np.abs(rng.normal(0, 0.5, rows))  # noqa: E741
    return h, l, c


# (name, ours(inputs, dtype), the TA-Lib expression over h, l, c: run by both TA-Libs)
CASES = [
    ("sma(20)", lambda a, d: K.sma(a[2], 20, dtype=d), "talib.SMA(c, 20)"),
    ("ema(20)", lambda a, d: K.ema(a[2], 20, dtype=d), "talib.EMA(c, 20)"),
    ("wma(20)", lambda a, d: K.wma(a[2], 20, dtype=d), "talib.WMA(c, 20)"),
    ("dema(20)", lambda a, d: K.dema(a[2], 20, dtype=d), "talib.DEMA(c, 20)"),
    ("tema(20)", lambda a, d: K.tema(a[2], 20, dtype=d), "talib.TEMA(c, 20)"),
    ("hma(20) vs 3 WMA calls", lambda a, d: K.hma(a[2], 20, dtype=d),
     "talib.WMA(2.0 * talib.WMA(c, 10) - talib.WMA(c, 20), 4)"),
    ("lsma(20) LINEARREG", lambda a, d: K.lsma(a[2], 20, dtype=d), "talib.LINEARREG(c, 20)"),
    ("kama(10)", lambda a, d: K.kama(a[2], 10, dtype=d), "talib.KAMA(c, 10)"),
    ("rsi(14)", lambda a, d: K.rsi(a[2], 14, dtype=d), "talib.RSI(c, 14)"),
    ("atr(14)", lambda a, d: K.atr(*a, 14, dtype=d), "talib.ATR(h, l, c, 14)"),
    ("plus_di(14)", lambda a, d: K.plus_di(*a, 14, dtype=d), "talib.PLUS_DI(h, l, c, 14)"),
    ("minus_di(14)", lambda a, d: K.minus_di(*a, 14, dtype=d), "talib.MINUS_DI(h, l, c, 14)"),
    ("adx(14)", lambda a, d: K.adx(*a, 14, dtype=d), "talib.ADX(h, l, c, 14)"),
    ("dmi(14) vs PLUS_DI+MINUS_DI+ADX", lambda a, d: K.dmi(*a, 14, dtype=d),
     "(talib.PLUS_DI(h, l, c, 14), talib.MINUS_DI(h, l, c, 14), talib.ADX(h, l, c, 14))"),
    ("rolling_std(20) STDDEV", lambda a, d: K.rolling_std(a[2], 20, dtype=d), "talib.STDDEV(c, 20)"),
    ("returns(1) ROCP", lambda a, d: K.returns(a[2], 1, dtype=d), "talib.ROCP(c, 1)"),
]

# Runs in the takt venv: reads {"expr", "rows"} lines, answers {"s": thread seconds}.
WORKER = "import json, sys, time\nimport numpy as np, talib\n" + inspect.getsource(data) + r"""
cache = {}
for line in sys.stdin:
    req = json.loads(line)
    if req["rows"] not in cache:
        cache.clear()
        cache[req["rows"]] = data(req["rows"])
    h, l, c = cache[req["rows"]]
    t0 = time.thread_time()
    out = eval(req["expr"])
    s = time.thread_time() - t0
    del out
    print(json.dumps({"s": s, "version": talib.__version__}), flush=True)
"""


class Takt:
    def __init__(self, py: Path):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.proc = subprocess.Popen([str(py), "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
        self.version = "?"

    def time(self, expr: str, rows: int) -> float:
        self.proc.stdin.write(json.dumps({"expr": expr, "rows": rows}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        self.version = reply["version"]
        return reply["s"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def thread_timed(fn) -> float:
    t0 = time.thread_time()
    out = fn()
    s = time.thread_time() - t0
    del out
    return s


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated case names (the part before '('), default all")
    ap.add_argument("--no-takt", action="store_true")
    ap.add_argument("--takt-venv", default="/tmp/tradelab-takt-venv")
    ap.add_argument("--cold", action="store_true",
                    help="read a 64 MB buffer before every timed call, so that every side starts with its inputs "
                         "out of the caches (by default a side's inputs are as warm as the calls before left them: "
                         "TA-Lib's float64 inputs are also ours f64's, our float32 inputs are read by ours f32 alone)")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    h, l, c = data(args.rows)
    f64, f32 = (h, l, c), tuple(v.astype(np.float32) for v in (h, l, c))
    env = {"talib": talib, "h": h, "l": l, "c": c}
    only = {s for s in args.only.split(",") if s}
    cases = [cs for cs in CASES if not only or cs[0].split("(")[0] in only]
    takt = None if args.no_takt else Takt(takt_python(Path(args.takt_venv), None))
    load = os.getloadavg()
    evict = np.ones(8_000_000) if args.cold else None  # 64 MB, twice the L3 of the machines in RESULTS.md

    def timed(side):
        def run(ours, expr):
            if evict is not None:
                evict.sum()
            return side(ours, expr)
        return run

    sides = {
        "f64": lambda ours, expr: thread_timed(lambda: ours(f64, np.float64)),
        "f32": lambda ours, expr: thread_timed(lambda: ours(f32, np.float32)),
        "talib": lambda ours, expr: thread_timed(lambda: eval(expr, env)),  # noqa: S307 (our own expressions)
    }
    if takt is not None:
        sides["takt"] = lambda ours, expr: takt.time(expr, args.rows)
    sides = {k: timed(v) for k, v in sides.items()}
    times = {name: {k: [] for k in sides} for name, _, _ in cases}
    order = list(sides)
    for r in range(args.rounds + 1):  # round 0: warm-up, discarded
        for name, ours, expr in cases:
            for k in order[r % len(order):] + order[: r % len(order)]:
                s = sides[k](ours, expr)
                if r:
                    times[name][k].append(s)
    if takt is not None:
        takt.close()

    def ratio(name, a, b):
        return float(np.median(np.array(times[name][a]) / np.array(times[name][b])))

    refs = ["talib"] + (["takt"] if takt is not None else [])
    head = "| indicator | TA-Lib ms | " + ("takt ms | " if takt else "") + "f64 / TA-Lib | f32 / TA-Lib | " + (
        "f64 / takt | f32 / takt |" if takt else "")
    lines = [
        f"### Indicators vs TA-Lib{' and ta-lib-takt' if takt else ''}, {args.rows:,} rows ({dt.date.today()})", "",
        f"Machine: {machine()}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the start. Command: "
        f"`python benchmarks/bench_indicators.py --rows {args.rows} --rounds {args.rounds}"
        + (f" --only {args.only}" if args.only else "") + (" --no-takt" if args.no_takt else "")
        + (" --cold" if args.cold else "")
        + f"`. TA-Lib {talib.__version__}"
        + (f", ta-lib-takt {takt.version} (own venv)" if takt else "") + ". Interleaved rounds, thread CPU time per "
        "call, output allocation included" + ("; every call with its inputs out of the caches (--cold)" if args.cold else "")
        + "; ratios: medians of per-round ratios (<= 1.0: at or under the C library's "
        "time); ms: minimum per side. f64: float64 in and out, like TA-Lib; f32: the project's path.", "",
        head, "|---|" + "---:|" * (head.count("|") - 2),
    ]
    for name, _, _ in cases:
        t = times[name]
        cells = [f"{min(t['talib']) * 1e3:.2f}"] + ([f"{min(t['takt']) * 1e3:.2f}"] if takt else [])
        cells += [f"{ratio(name, s, ref):.2f}" for ref in refs for s in ("f64", "f32")]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    worst = {ref: max(max(ratio(n, "f64", ref), ratio(n, "f32", ref)) for n, _, _ in cases) for ref in refs}
    lines += ["", "Worst ratio: " + ", ".join(f"{v:.2f} (vs {k})" for k, v in worst.items()) + ".", ""]
    emit(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
