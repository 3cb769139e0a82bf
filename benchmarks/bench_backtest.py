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

--sweep (issue 44 item 3): instead, a 100-point sweep in one pass (kernels.backtest.portfolio.
run_sweep) against one backtest of the grid's first point, same panel, same run, for each grid
of SWEEP_GRIDS (goal: <= 10x one backtest's time); every lane is checked bit for bit against
run_portfolio of its config on the first --check lanes (all: --check 100).

Usage: python benchmarks/bench_backtest.py [--days 6500] [--symbols 500] [--repeat 5] [--record] [--json PATH]
       python benchmarks/bench_backtest.py --sweep [--threads N] [--check 10]
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


def sweep_grids():
    """name -> 100 PortfolioConfigs: the shapes a researcher sweeps (books: distinct weight paths)."""
    from kernels.backtest.portfolio import PortfolioConfig as C

    return {
        "topk_dropout: topk 5 x n_drop 4 x fee_bps 5 (20 books)":
            [C(strategy="topk_dropout", topk=k, n_drop=d, fee_bps=f) for k in (10, 20, 30, 50, 100)
             for d in (1, 2, 5, 10) for f in (0, 2, 5, 10, 20)],
        "topk_dropout: topk 10 x n_drop 10 (100 books)":
            [C(strategy="topk_dropout", topk=k, n_drop=d) for k in range(10, 101, 10) for d in range(1, 11)],
        "threshold: threshold 10 x fee_bps 10 (10 books)":
            [C(threshold=round(th, 2), fee_bps=f) for th in np.arange(0.5, 0.99, 0.05) for f in range(10)],
        "threshold: threshold 10 x max_weight 10 (100 books)":
            [C(threshold=round(th, 2), max_weight=round(mw, 3)) for th in np.arange(0.5, 0.99, 0.05)
             for mw in np.arange(0.01, 0.105, 0.01)],
    }


def main_sweep(args, prices, probs) -> None:
    from kernels.backtest.portfolio import run_portfolio, run_sweep

    T, N = prices.shape
    report = Report(f"backtest sweep: 100 backtests in one pass, {T:,} days x {N:,} symbols", args)
    rows, checked = [], 0
    for name, configs in sweep_grids().items():
        run_portfolio(prices[:10], probs[:10], configs[0])
        run_sweep(prices[:10], probs[:10], configs, threads=args.threads)  # compile (or load numba's cache)
        one = best_of(lambda c=configs[0]: run_portfolio(prices, probs, c), args.repeat)
        sweep_s = best_of(lambda c=configs: run_sweep(prices, probs, c, threads=args.threads), max(1, args.repeat // 2))
        sw = run_sweep(prices, probs, configs, threads=args.threads)
        for j in range(min(args.check, len(configs))):
            r = run_portfolio(prices, probs, configs[j])
            assert all(getattr(sw, k)[j].tobytes() == getattr(r, k).tobytes()
                       for k in ("net", "gross", "turnover", "cost", "equity")), (name, j)
            checked += 1
        rows.append([name, f"{one * 1e3:.1f}", f"{sweep_s * 1e3:.0f}", f"{sweep_s / one:.1f}x", f"{sw.books}"])
        report.figure(f"{name}: ratio", sweep_s / one)
    report.table(["grid (100 points)", "one backtest ms", "sweep ms", "sweep / one", "books"], rows)
    report.note(f"threads {args.threads or 'default (CPUs)'}; {checked} lanes checked bit for bit against "
                "run_portfolio (net, gross, turnover, cost, equity); peak RSS "
                f"{peak_rss_mb():.0f} MB")
    worst = max(float(r[3][:-1]) for r in rows)
    report.result(f"backtest sweep, 100 points, {T:,} days x {N:,} symbols", "<= 10x one backtest",
                  "; ".join(f"{r[0]}: {r[3]}" for r in rows), "yes" if worst <= 10 else "partly")
    report.finish()


def main() -> None:
    ap = parser(__doc__, repeat=5)
    ap.add_argument("--days", type=int, default=6500)
    ap.add_argument("--symbols", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sweep", action="store_true", help="the 100-point sweep against one backtest")
    ap.add_argument("--threads", type=int, default=None, help="--sweep: run_sweep's threads (default: the CPUs)")
    ap.add_argument("--check", type=int, default=10, help="--sweep: lanes per grid checked bit for bit")
    args = ap.parse_args()
    if args.sweep:
        main_sweep(args, *panel(args.days, args.symbols, args.seed))
        return
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
