"""Benchmark: every indicator against TA-Lib on the same 10M-row array, in one run.

Two columns for ours: like for like with TA-Lib (float64 in, float64 out: TA-Lib's Python
wrapper takes and returns float64), and the project's own path (the stored float32 bars
in, float32 features out; the cores still compute in float64). Allocation of the output is
included everywhere. Each timing is the best of `--repeat` runs after one warm-up call
(numba compiled and cached). Ratio = ours / TA-Lib (<= 1.0: as fast as the C library or
faster).

Usage: python benchmarks/bench_indicators.py [--rows 10000000] [--repeat 5] [--record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

import numpy as np
import talib

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import emit, machine  # noqa: E402
from kernels import indicators as K  # noqa: E402


def cases(h, l, c, h32, l32, c32):
    """(name, ours(inputs, dtype), TA-Lib())."""
    w = lambda n: 2.0 * talib.WMA(c, n // 2) - talib.WMA(c, n)  # noqa: E731
    return [
        ("sma(20)", lambda a, d: K.sma(a[2], 20, dtype=d), lambda: talib.SMA(c, 20)),
        ("ema(20)", lambda a, d: K.ema(a[2], 20, dtype=d), lambda: talib.EMA(c, 20)),
        ("wma(20)", lambda a, d: K.wma(a[2], 20, dtype=d), lambda: talib.WMA(c, 20)),
        ("dema(20)", lambda a, d: K.dema(a[2], 20, dtype=d), lambda: talib.DEMA(c, 20)),
        ("tema(20)", lambda a, d: K.tema(a[2], 20, dtype=d), lambda: talib.TEMA(c, 20)),
        ("hma(20) vs 3 WMA calls", lambda a, d: K.hma(a[2], 20, dtype=d), lambda: talib.WMA(w(20), 4)),
        ("lsma(20) LINEARREG", lambda a, d: K.lsma(a[2], 20, dtype=d), lambda: talib.LINEARREG(c, 20)),
        ("kama(10)", lambda a, d: K.kama(a[2], 10, dtype=d), lambda: talib.KAMA(c, 10)),
        ("rsi(14)", lambda a, d: K.rsi(a[2], 14, dtype=d), lambda: talib.RSI(c, 14)),
        ("atr(14)", lambda a, d: K.atr(*a, 14, dtype=d), lambda: talib.ATR(h, l, c, 14)),
        ("plus_di(14)", lambda a, d: K.plus_di(*a, 14, dtype=d), lambda: talib.PLUS_DI(h, l, c, 14)),
        ("minus_di(14)", lambda a, d: K.minus_di(*a, 14, dtype=d), lambda: talib.MINUS_DI(h, l, c, 14)),
        ("adx(14)", lambda a, d: K.adx(*a, 14, dtype=d), lambda: talib.ADX(h, l, c, 14)),
        ("dmi(14) vs PLUS_DI+MINUS_DI+ADX", lambda a, d: K.dmi(*a, 14, dtype=d),
         lambda: (talib.PLUS_DI(h, l, c, 14), talib.MINUS_DI(h, l, c, 14), talib.ADX(h, l, c, 14))),
        ("rolling_std(20) STDDEV", lambda a, d: K.rolling_std(a[2], 20, dtype=d), lambda: talib.STDDEV(c, 20)),
        ("returns(1) ROCP", lambda a, d: K.returns(a[2], 1, dtype=d), lambda: talib.ROCP(c, 1)),
    ]


def best(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    c = 1000.0 + np.cumsum(rng.normal(0, 1, args.rows)) * 0.05
    h = c + np.abs(rng.normal(0, 0.5, args.rows))
    l = c - np.abs(rng.normal(0, 0.5, args.rows))
    f64, f32 = (h, l, c), tuple(v.astype(np.float32) for v in (h, l, c))
    rows = []
    for name, ours, ref in cases(*f64, *f32):
        a = best(lambda: ours(f64, np.float64), args.repeat)
        a32 = best(lambda: ours(f32, np.float32), args.repeat)
        b = best(ref, args.repeat)
        rows.append((name, a, a32, b))
        print(f"{name:34s} ours f64 {a * 1e3:7.1f} ms  f32 {a32 * 1e3:7.1f} ms  TA-Lib {b * 1e3:7.1f} ms  "
              f"ratio {a / b:5.2f} / {a32 / b:5.2f}", flush=True)
    worst = max(a / b for _, a, _, b in rows)
    worst32 = max(a32 / b for _, _, a32, b in rows)
    lines = [
        f"### Indicators vs TA-Lib, {args.rows:,} rows ({dt.date.today()})",
        "",
        f"Machine: {machine()}. Command: `python benchmarks/bench_indicators.py --rows {args.rows} --repeat {args.repeat}`. "
        f"TA-Lib {talib.__version__} (Python wrapper, C library bundled). Best of {args.repeat}, output allocation "
        "included. f64: float64 in and out, like TA-Lib; f32: the project's path, float32 in and out (float64 inside).",
        "",
        "| indicator | ours f64 ms | ours f32 ms | TA-Lib ms | ratio f64 | ratio f32 |",
        "|---|---:|---:|---:|---:|---:|",
        *[f"| {n} | {a * 1e3:.1f} | {a32 * 1e3:.1f} | {b * 1e3:.1f} | {a / b:.2f} | {a32 / b:.2f} |" for n, a, a32, b in rows],
        "",
        f"Worst ratio: {worst:.2f} (f64), {worst32:.2f} (f32).",
        "",
    ]
    emit(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
