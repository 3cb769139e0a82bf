"""Benchmark: the daily portfolio backtest (kernels.backtest.portfolio) against its NumPy
reference and a plain per-day loop (the first sketch of this backtest), on the same panel in
the same run.

Data: T days x N symbols (default 6,500 x 500: ~26 years of a 500-name universe), float32
log-normal closes with 2% missing bars, uniform probabilities with 10% missing.

Engines (each timed after a warm-up call, so numba compilation is not counted; best of --repeat):
  kernel          run_portfolio, the numba loop in chunks of 256 days, no logging
  kernel+log      the same with one JSON line per day written through domain.async_writer
                  (on_chunk -> write_many): "loop" until run_portfolio returns (what the caller
                  waits for), "with close" until close() returns (every line on disk)
  numpy           kernels.backtest.reference.run_portfolio_reference (Python loop over days,
                  NumPy over symbols): the parity oracle
  seed            the first sketch, verbatim: a Python loop over days calling a small njit
                  rebalance per day and writing one dict per day to its AsyncWriter (close()
                  included). It does less (no costs, drift, caps or gaps; its "pnl" is
                  dot(w, prices)), so the ratio flatters it.

Throughput is days * symbols per second. Ratios are engine time / kernel time.

Usage: python benchmarks/bench_backtest.py [--days 6500] [--symbols 500] [--repeat 5] [--record] [--json PATH]
"""

from __future__ import annotations

import json
import queue
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from numba import njit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, parser, peak_rss_mb  # noqa: E402

# ---------------------------------------------------------------- the first sketch's code, verbatim


class SeedAsyncWriter:
    def __init__(self, outpath: str, batch_size=256):
        self.q = queue.Queue()
        self.path = Path(outpath); self.batch = []; self.batch_size = batch_size
        self.th = threading.Thread(target=self._run, daemon=True); self.th.start()

    def _run(self):
        while True:
            item = self.q.get()
            if item is None:
                if self.batch: self._flush(); break  # hangs when no batch is pending
            else:
                self.batch.append(item)
                if len(self.batch) >= self.batch_size: self._flush()

    def _flush(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            for x in self.batch: f.write(json.dumps(x) + "\n")
        self.batch.clear()

    def write(self, obj): self.q.put(obj)

    def close(self): self.q.put(None); self.th.join()


@njit(cache=True, fastmath=True)
def apply_slippage_fee(price, weight, fee_bps=1.0):
    # toy model, replace with your fill logic
    return price * (1.0 + np.sign(weight) * fee_bps * 1e-4)


@njit(cache=True, fastmath=True)
def rebalance(weights_prev, target_weights, price):
    # simple one-shot rebalance to targets
    exec_price = apply_slippage_fee(price, target_weights - weights_prev)
    return target_weights, exec_price


def seed_run_backtest(prices: np.ndarray, signals: np.ndarray, outlog: str):
    """prices: [T, N], signals: [T, N] in [0,1] probability -> map to weights."""
    writer = SeedAsyncWriter(outlog)
    T, N = prices.shape
    w = np.zeros((N,), dtype=np.float32)
    for t in range(T):
        tw = (signals[t] - 0.5) * 2.0  # [-1,1]
        w, px = rebalance(w, tw, prices[t])
        writer.write({"t": int(t), "pnl": float(np.dot(w, prices[t]))})
    writer.close()


# ---------------------------------------------------------------- ours


def kernel(prices, probs):
    from kernels.backtest.portfolio import run_portfolio

    return run_portfolio(prices, probs, chunk_days=256)


def kernel_logged(prices, probs, outlog: str) -> float:
    """Seconds until run_portfolio returns (the loop and the callbacks; the writer's thread may
    still be writing then); the caller times the whole call, close() included."""
    from domain.async_writer import AsyncWriter
    from kernels.backtest.portfolio import run_portfolio

    with AsyncWriter(outlog) as writer:
        def log(a, b, arrays):
            cols = zip(arrays["net"].tolist(), arrays["turnover"].tolist(), arrays["equity"].tolist(),
                       np.count_nonzero(arrays["weights"], axis=1).tolist())
            writer.write_many({"t": a + i, "net": n, "turnover": tv, "equity": eq, "positions": k}
                              for i, (n, tv, eq, k) in enumerate(cols))

        t0 = time.perf_counter()
        run_portfolio(prices, probs, chunk_days=256, on_chunk=log)
        return time.perf_counter() - t0


def reference(prices, probs):
    from kernels.backtest.reference import run_portfolio_reference

    return run_portfolio_reference(prices, probs)


def panel(T: int, N: int, seed: int):
    rng = np.random.default_rng(seed)
    prices = (50.0 * np.exp(np.cumsum(rng.normal(0.0002, 0.02, (T, N)), axis=0))).astype(np.float32)
    prices[rng.uniform(size=(T, N)) < 0.02] = np.nan
    probs = rng.uniform(size=(T, N)).astype(np.float32)
    probs[rng.uniform(size=(T, N)) < 0.10] = np.nan
    return prices, probs


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def best_of_logged(prices, probs, logs, repeat: int) -> tuple[float, float]:
    """(best loop seconds, best seconds with close) of kernel_logged."""
    loop = total = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        inner = kernel_logged(prices, probs, str(next(logs)))
        total = min(total, time.perf_counter() - t0)
        loop = min(loop, inner)
    return loop, total


def main() -> None:
    ap = parser(__doc__, repeat=5)
    ap.add_argument("--days", type=int, default=6500)
    ap.add_argument("--symbols", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    report = Report(f"backtest: daily portfolio, {args.days:,} days x {args.symbols:,} symbols", args)
    T, N = args.days, args.symbols
    prices, probs = panel(T, N, args.seed)
    cells = T * N

    with tempfile.TemporaryDirectory() as tmp:
        logs = iter(Path(tmp) / f"log{i}.jsonl" for i in range(10_000))
        t0 = time.perf_counter()
        kernel(prices[:10], probs[:10])  # compile (or load numba's cache)
        seed_run_backtest(prices[:10], probs[:10], str(next(logs)))
        compile_s = time.perf_counter() - t0

        ours = kernel(prices, probs)
        ref = reference(prices, probs)
        parity = max(float(np.max(np.abs(getattr(ours, k) - getattr(ref, k)))) for k in
                     ("net", "gross", "turnover", "cost", "equity"))
        log_loop, log_total = best_of_logged(prices, probs, logs, args.repeat)
        times = {
            "kernel": best_of(lambda: kernel(prices, probs), args.repeat),
            "kernel+log, loop": log_loop,
            "kernel+log, with close": log_total,
            "numpy": best_of(lambda: reference(prices, probs), max(1, args.repeat // 2)),
            "seed": best_of(lambda: seed_run_backtest(prices, probs, str(next(logs))), max(1, args.repeat // 2)),
        }
    s = ours.stats()
    base = times["kernel"]
    report.note(f"Warm-up (numba compile or cache load, both jitted engines): {compile_s:.2f} s; "
                f"kernel vs numpy reference max |diff| over net/gross/turnover/cost/equity: {parity:.1e}; "
                f"peak RSS {peak_rss_mb():.0f} MB")
    report.table(["engine", "seconds (best)", "days x symbols / s", "time / kernel"],
                 [[name, f"{sec:.4f}", f"{cells / sec:,.0f}", f"{sec / base:.1f}x"] for name, sec in times.items()])
    report.note(f"Book on the random panel: CAGR {s['cagr']:.3f}, Sharpe {s['sharpe']:.2f}, max drawdown "
                f"{s['max_drawdown']:.3f}, annual turnover {s['annual_turnover']:.0f}. "
                "The first sketch's loop does less work (no costs, drift, caps or missing bars), so its ratio flatters it.")
    for name, sec in times.items():
        report.figure(f"{name} s", sec)
    report.result(f"portfolio backtest hot loop, {T:,} days x {N:,} symbols", "faster than the NumPy reference",
                  f"{base * 1e3:.1f} ms ({cells / base:.1e} day-symbols/s), {times['numpy'] / base:.1f}x the NumPy reference",
                  "yes" if base < times["numpy"] else "no")
    report.finish()

if __name__ == "__main__":
    main()
