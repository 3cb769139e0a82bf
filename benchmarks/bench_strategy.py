"""Benchmark: the seller-exhaustion population backtest, reference against batched engines.

Data: GOOG daily 2004-2013 (backtesting.test, 2,148 bars) tiled `--tile` times into one
longer series (each copy rescaled to continue from the previous copy's last close, so the
seams are ordinary bars; volume repeats). Populations of 24, 128 and 512 individuals drawn
(fixed seed) from the optimizer's search space (domain.strategy_search.SPACE).

Engines:
  reference  kernels.strategy.backtest_one on each individual in turn: its indicators from
             seller_exhaustion(), then the compiled walk (the straightforward way: one
             individual at a time, every indicator recomputed)
  cpu        backtest_population(backend="cpu"): unique indicator series once (the "bank"),
             then one walk per individual, numba prange over individuals
  cuda       backtest_population(backend="cuda"), only when a real GPU is present

The reference computes 9 series per individual (true range, two EMAs, ATR, vol_z, tr_z,
cloc, stop and target lines); the bank computes each unique one once.

Every engine's trades are checked equal to the reference's. Times are the best of
`--repeat` runs after one warm-up run (compilation excluded).

Usage: python benchmarks/bench_strategy.py [--tile 10] [--repeat 3] [--sizes 24,128,512] [--record] [--json PATH]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, parser, peak_rss_mb  # noqa: E402


def tiled_goog(tile: int) -> tuple[np.ndarray, ...]:
    from backtesting.test import GOOG

    o, h, l, c, v = (GOOG[k].to_numpy(dtype=np.float64) for k in ("Open", "High", "Low", "Close", "Volume"))
    parts, scale = [], 1.0
    for _ in range(tile):
        parts.append([a * scale for a in (o, h, l, c)] + [v])
        scale *= c[-1] / o[0]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(5))


def draw_population(n: int, seed: int) -> list:
    """n individuals drawn uniformly from the search space's grid (fixed seed)."""
    from optuna.distributions import IntDistribution

    from domain.strategy_search import SPACE, individual_from_params

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        params = {}
        for name, d in SPACE.items():
            step = d.step or 1
            k = int(rng.integers(0, round((d.high - d.low) / step) + 1))
            params[name] = int(d.low + k * step) if isinstance(d, IntDistribution) else round(d.low + k * step, 6)
        out.append(individual_from_params(params, fee_bps=5.0, slippage_bps=5.0))
    return out


def best_of(fn, repeat: int) -> tuple[float, object]:
    fn()  # warm-up (compilation, caches)
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def same_trades(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in
               ("offsets", "entry_idx", "exit_idx", "reason", "entry_px", "exit_px", "pnl", "r_mult"))


def main() -> int:
    ap = parser(__doc__, repeat=3)
    ap.add_argument("--tile", type=int, default=10)
    ap.add_argument("--sizes", default="24,128,512")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    report = Report("Seller-exhaustion population backtest", args)

    from kernels.strategy import (
        PopulationResult,
        backtest_one,
        backtest_population,
        build_walk_inputs,
    )
    from kernels.strategy.population import real_gpu

    data = tiled_goog(args.tile)
    n_bars = data[0].shape[0]
    gpu = real_gpu()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for n in sizes:
        pop = draw_population(n, args.seed)
        t_ref, ref = best_of(lambda pop=pop: PopulationResult.concat([backtest_one(*data, ind) for ind in pop]), args.repeat)
        t_bank, inp = best_of(lambda pop=pop: build_walk_inputs(*data, pop), args.repeat)
        t_cpu, cpu = best_of(lambda pop=pop: backtest_population(*data, pop, backend="cpu"), args.repeat)
        row = {"n": n, "ref": t_ref, "bank": t_bank, "cpu": t_cpu, "trades": int(ref.n_trades.sum()),
               "series": sum(inp.n_series.values()), "same_cpu": same_trades(ref, cpu)}
        if gpu:
            t_gpu, g = best_of(lambda pop=pop: backtest_population(*data, pop, backend="cuda", fallback=False), args.repeat)
            row.update(cuda=t_gpu, same_cuda=same_trades(ref, g) and g.backend == "cuda")
        rows.append(row)
        print(row, flush=True)

    report.note(f"Data: GOOG daily tiled x{args.tile} = {n_bars:,} bars. Best of {args.repeat} after a warm-up. "
                f"GPU: {'yes' if gpu else 'none (cuda engine not timed)'}.")
    header = ["individuals", "trades", "series: reference / bank", "reference s (one at a time)", "bank s", "cpu engine s",
              "reference / cpu"] + (["cuda engine s", "reference / cuda"] if gpu else [])
    report.table(header, [[r["n"], f"{r['trades']:,}", f"{9 * r['n']:,} / {r['series']:,}", f"{r['ref']:.3f}", f"{r['bank']:.3f}",
                           f"{r['cpu']:.3f}", f"{r['ref'] / r['cpu']:.1f}x"]
                          + ([f"{r['cuda']:.3f}", f"{r['ref'] / r['cuda']:.1f}x"] if gpu else []) for r in rows])
    same = all(r["same_cpu"] and r.get("same_cuda", True) for r in rows)
    report.note(f"Individual-bars per second (cpu engine, largest population): "
                f"{rows[-1]['n'] * n_bars / rows[-1]['cpu']:.3g}. Same trades as the reference on every engine: {same}. "
                f"Peak RSS {peak_rss_mb():.0f} MB.")
    report.figure("rows", rows)
    big = rows[-1]
    report.result(f"seller-exhaustion population backtest, GOOG x{args.tile} ({n_bars:,} bars), {big['n']} individuals, CPU",
                  "(measured)", f"cpu engine {big['cpu']:.3f} s, {big['ref'] / big['cpu']:.1f}x the one-at-a-time reference "
                  f"({big['ref']:.3f} s); identical trades: {same}", "measured")
    report.finish()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
