"""Probe: the arithmetic that bounds a recursive indicator's single call on this CPU.

A recursive indicator computes one value from the last, so a row cannot finish faster than
the latency of the operations on that loop-carried chain, whatever else runs beside it.
Part 1 times such chains alone (numba, no fastmath, the operands loaded from arrays off
the chain; ns per step): `add`, `add+sub` (SMA's and WMA's running sums), `mul+add` (the
EMA family's and Wilder's `e*(1-k) + v*k`), `fma` (the same fused, as TA-Lib's C compiler
emits where the CPU has FMA), `sub+mul+add` (TA-Lib's KAMA `(v - p)*sc + p` unfused) and `sub+fma` (fused, as
`kernels.indicators.cores.kama_core` and TA-Lib compute it).
Part 2 times, on 10M float64 rows, the project's core into a reused output (what the
arithmetic costs), the public call (`kernels.indicators`, a fresh output: like for like with
TA-Lib, whose every call allocates its output) and TA-Lib's call, by thread CPU time,
interleaved; the table sets each core beside the bound of its chain. An indicator whose exact formula needs `mul+add` cannot
reach a library that fuses it into one FMA without changing last bits on one chain; the
cpu backend's time-chunked variants (`kernels.indicators.chunks`: ATR, EMA, RSI, TEMA) run 6-8
chains of one series side by side, so their core column can fall below one chain's bound.
Part 3 times the ATR core over each pair of input and output precisions (the float32 path
widens three values and narrows one a row: what those conversions cost beside the loop).

Usage: python benchmarks/probe_chains.py [--rows 10000000] [--repeat 7]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, interleaved, parser  # noqa: E402
from kernels.indicators._intrinsics import fma as _fma  # noqa: E402


@njit(nogil=True)
def chain_add(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s = s + a[i]
    return s


@njit(nogil=True)
def chain_add_sub(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s = (s + a[i]) - b[i]
    return s


@njit(nogil=True)
def chain_mul_add(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s = s * a[i] + b[i]
    return s


@njit(nogil=True)
def chain_fma(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s = _fma(s, a[i], b[i])
    return s


@njit(nogil=True)
def chain_sub_mul_add(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s = (b[i] - s) * a[i] + s
    return s


@njit(nogil=True)
def chain_sub_fma(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s = _fma(b[i] - s, a[i], s)
    return s


CHAINS = {"add": chain_add, "add+sub": chain_add_sub, "mul+add": chain_mul_add, "fma": chain_fma,
          "sub+mul+add": chain_sub_mul_add, "sub+fma": chain_sub_fma}
# indicator -> (its core and TA-Lib function, period, whether it reads (high, low, close), our chain,
# the chain of the fused formula)
CORES = {
    "sma(20)": ("sma", 20, False, "add+sub", "add+sub"),
    "wma(20)": ("wma", 20, False, "add+sub", "add+sub"),
    "ema(20)": ("ema", 20, False, "mul+add", "fma"),
    "tema(20)": ("tema", 20, False, "mul+add", "fma"),
    "kama(10)": ("kama", 10, False, "sub+fma", "sub+fma"),
    "rsi(14)": ("rsi", 14, False, "mul+add", "fma"),
    "atr(14)": ("atr", 14, True, "mul+add", "fma"),
}


def main() -> None:
    ap = parser(__doc__, rows=10_000_000, repeat=7)
    args = ap.parse_args()
    report = Report("Chain latencies and the cores beside them", args)
    n = args.rows
    rng = np.random.default_rng(0)
    # multipliers near 1 and small addends keep the chains finite and normal (no denormal stalls)
    a = rng.uniform(0.9, 0.99, n)
    b = rng.uniform(0.0, 1.0, n)
    chains = interleaved({k: (lambda f=f: f(a, b)) for k, f in CHAINS.items()}, args.repeat, clock=time.thread_time)
    chain_ns = {k: t.min / n * 1e9 for k, t in chains.items()}
    report.table(["chain", "ns per step (min)", "ns per step (median)"],
                 [[k, f"{chain_ns[k]:.2f}", f"{t.median / n * 1e9:.2f}"] for k, t in chains.items()])

    import talib

    from kernels import indicators as K
    from kernels.indicators.cpu import compiled

    c = 1000.0 + np.cumsum(rng.normal(0, 1, n)) * 0.05
    h = c + np.abs(rng.normal(0, 0.5, n))
    l = c - np.abs(rng.normal(0, 0.5, n))
    reused = np.empty(n)
    fns = {}
    for name, (base, p, ohlc, _, _) in CORES.items():
        core, public, peer = compiled(base + "_core"), getattr(K, base), getattr(talib, base.upper())
        args_in = (h, l, c) if ohlc else (c,)
        fns[name + " core"] = lambda core=core, args_in=args_in, p=p: core(*args_in, p, reused)
        fns[name + " ours"] = lambda public=public, args_in=args_in, p=p: public(*args_in, p, dtype=np.float64)
        fns[name + " TA-Lib"] = lambda peer=peer, args_in=args_in, p=p: peer(*args_in, p)
    timed = interleaved(fns, args.repeat, clock=time.thread_time)
    per_row = {k: t.min / n * 1e9 for k, t in timed.items()}
    rows = []
    for name, (_, _, _, ours_chain, fused_chain) in CORES.items():
        core, ours, ta = per_row[name + " core"], per_row[name + " ours"], per_row[name + " TA-Lib"]
        rows.append([name, ours_chain, f"{chain_ns[ours_chain]:.2f}", f"{core:.2f}", f"{ours:.2f}", f"{ta:.2f}",
                     f"{ours / ta:.2f}", fused_chain, f"{chain_ns[fused_chain]:.2f}",
                     f"{chain_ns[ours_chain] / chain_ns[fused_chain]:.2f}"])
        report.figure(name, {"core_ns": core, "ours_ns": ours, "talib_ns": ta, "chain_ns": chain_ns[ours_chain]})
    report.table(["indicator", "our chain", "its ns/row", "core, reused output ns/row", "ours, the public call ns/row",
                  "TA-Lib ns/row", "ours / TA-Lib", "fused chain", "its ns/row", "chain bound ours / fused"], rows)
    report.note("Minimum thread CPU time over the repeats. The public call and TA-Lib's both allocate their output: "
                "the difference between the core's column and the public call's is mostly that output's page faults.")
    report.figure("chains_ns", chain_ns)

    atr = compiled("atr_core")
    pairs = {(i.__name__, o.__name__): (tuple(v.astype(i) for v in (h, l, c)), np.empty(n, o))
             for i in (np.float64, np.float32) for o in (np.float64, np.float32)}
    by_dtype = interleaved({k: (lambda ins=ins, out=out: atr(*ins, 14, out)) for k, (ins, out) in pairs.items()},
                           args.repeat, clock=time.thread_time)
    atr_ns = {f"{i} in, {o} out": t.min / n * 1e9 for (i, o), t in by_dtype.items()}
    report.table(["atr(14) core, reused output", "ns per row (min)"], [[k, f"{v:.2f}"] for k, v in atr_ns.items()])
    report.figure("atr_dtypes_ns", atr_ns)
    report.finish()


if __name__ == "__main__":
    main()
