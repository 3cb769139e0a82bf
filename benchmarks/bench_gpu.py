"""Benchmark: every GPU engine against its CPU engine, in one run (`make gpu-check`).

Each section times the CPU engine and the GPU engine on the same inputs in the same process
and checks that they agree (tests/gpu.py `assert_engine_equal`: bit for bit under the CUDA
simulator, within FMA rounding on a real GPU; torch within the tolerances its tests use).

  indicators  kernels.indicators, backend cuda and torch vs cpu (float64 out)
  atc         kernels.atc.compute, backend cuda and torch vs cpu (5,000 symbols)
  grid        exit resolution (numba cpu vs cuda), dominance sums (NumPy vs CuPy) on the big
              grid (10M combinations x 1M trades), brute force (cpu vs cuda) on the default
              grid, and the cuda brute force on the big grid (checks/s)
  population  kernels.strategy.backtest_population, engine cpu vs cuda (512 individuals)
  lstm        domain.learning.lstm_training: inference (forward_windows) on the device under bf16
              autocast vs fp32 on the CPU (sequences/s)
  lstm_train  training steps, AMP + torch.compile on the GPU vs fp32 on the CPU (samples/s)

The portfolio backtest (kernels.backtest.portfolio) has no GPU engine, so it has no section.
`--quick` runs tiny sizes: the dry run (GPU_CHECK_DRY=1) uses it under the CUDA simulator and
torch-CPU, where the "gpu" times mean nothing; it only proves the script and the checks work.

Writes <out>/gpu_check.json (every number, one object per section) and <out>/gpu_check.txt
(the table, also printed last). Imports only the kernels (no Dagster, polars or cuDF).

Usage: python benchmarks/bench_gpu.py [--quick] [--out benchmarks/out] [--sections grid,lstm] [--record] [--json PATH]
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import sys
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.gpu import assert_engine_equal, choose_simulator, real_cuda, simulated, torch_device  # noqa: E402

choose_simulator()  # before numba.cuda is imported: TRADELAB_GPU=0 simulator, 1 real device

from benchmarks.common import Report, load, machine, parser  # noqa: E402

# Sizes: full on a GPU machine, quick for the dry run (simulator: every CUDA thread is Python).
SIZES = {
    "full": dict(ind_series=1000, ind_bars=10_000, atc_symbols=5000, atc_bars=2000, grid_rows=7_000_000,
                 grid_trades=1_000_000, pop=512, pop_bars=21_480, lstm_symbols=50, lstm_rows=20_000,
                 lstm_cpu_seqs=20_000, lstm_batch=16_384, lstm_steps=100, repeat=3),
    "quick": dict(ind_series=2, ind_bars=60, atc_symbols=2, atc_bars=60, grid_rows=4000, grid_trades=30,
                  pop=4, pop_bars=200, lstm_symbols=2, lstm_rows=40, lstm_cpu_seqs=40, lstm_batch=64,
                  lstm_steps=3, repeat=1),
}
GOALS = {
    "grid": "exits + dominance sums, 10M combinations x 1M trades <= 50 ms from NumPy inputs on an H100",
    "brute": "brute force >= 1e12 checks/s",
    "lstm": "inference >= 1M sequences/s in bf16",
    "atc": "5,000 x 2,000 at tail=1 <= 15 ms and >= 5x the CPU",
    "population": "faster than the CPU",
    "indicators": ">= 4x the CPU with NumPy in and out, <= 10 ms with CuPy in and out",
    "lstm_train": "AMP + torch.compile on the GPU (compile time included)",
}


BRUTE_BUDGET_S = 30.0
ENGINES = ["cpu", "cuda", "torch"]  # --skip-torch drops torch from the indicators and atc sections  # at most this long for the big grid's brute force on cuda


def best(fn, repeat: int):
    """(best seconds of `repeat` calls, last output). Warm up (compile) before calling."""
    secs, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        secs = min(secs, time.perf_counter() - t0)
    return secs, out


def agree(check) -> tuple[bool, str]:
    """Run a comparison that raises AssertionError on a mismatch: (ok, first line of why not)."""
    try:
        check()
        return True, ""
    except AssertionError as err:
        return False, str(err).strip().splitlines()[0][:300] if str(err).strip() else "mismatch"


def walks(n: int, t: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.01, (n, t)), axis=1))


# ------------------------------------------------------------------------------- sections


def indicator_data(s: dict):
    """((high, low, close) float64 [ind_series, ind_bars], {name: call(backend, (h, l, c))}):
    the indicators section's inputs and its five calls (also scripts/gpu_profile.py's)."""
    from kernels import indicators as K

    close = walks(s["ind_series"], s["ind_bars"], 0)
    spread = np.abs(np.random.default_rng(1).normal(0, 0.3, (2,) + close.shape))
    high, low = close + spread[0], close - spread[1]
    calls = {"ema(20)": lambda b, a: K.ema(a[2], 20, backend=b, dtype=np.float64),
             "rsi(14)": lambda b, a: K.rsi(a[2], 14, backend=b, dtype=np.float64),
             "kama(10)": lambda b, a: K.kama(a[2], 10, backend=b, dtype=np.float64),
             "atr(14)": lambda b, a: K.atr(*a, 14, backend=b, dtype=np.float64),
             "adx(14)": lambda b, a: K.adx(*a, 14, backend=b, dtype=np.float64)}
    return (high, low, close), calls


def section_indicators(s: dict) -> dict:
    full, calls = indicator_data(s)
    high, low, close = full
    small = (high[:2, :64], low[:2, :64], close[:2, :64])
    out = {"rows": int(close.size), "cpu_s": 0.0, "cuda_s": 0.0, "torch_s": 0.0 if "torch" in ENGINES else None,
           "cuda_device_io_s": None, "mismatches": []}
    xp, to_device = _device_arrays()
    on_device = tuple(to_device(a) for a in full) if xp is not None else None
    if on_device is not None:
        out["cuda_device_io_s"] = 0.0
    for name, f in calls.items():
        for b in ENGINES:
            f(b, small)  # compile
        t_cpu, cpu = best(lambda f=f: f("cpu", full), s["repeat"])
        t_gpu, gpu = best(lambda f=f: f("cuda", full), s["repeat"])
        out["cpu_s"] += t_cpu
        out["cuda_s"] += t_gpu
        checks = [("cuda", lambda gpu=gpu, cpu=cpu: assert_engine_equal(gpu, cpu))]
        if on_device is not None:  # CuPy in, CuPy out: the device path alone
            def dev_call(f=f):
                got = f("cuda", on_device)
                xp.cuda.runtime.deviceSynchronize()
                return got
            t_dev, dev = best(dev_call, s["repeat"])
            out["cuda_device_io_s"] += t_dev
            checks.append(("cuda cupy", lambda dev=dev, cpu=cpu: assert_engine_equal(xp.asnumpy(dev), cpu)))
        if "torch" in ENGINES:
            t_tor, tor = best(lambda f=f: f("torch", full), s["repeat"])
            out["torch_s"] += t_tor
            checks.append(("torch", lambda tor=tor, cpu=cpu: np.testing.assert_allclose(tor, cpu, rtol=1e-9, atol=1e-9)))
        for engine, got in checks:
            ok, why = agree(got)
            if not ok:
                out["mismatches"].append(f"{name} {engine}: {why}")
    out["equal"] = not out["mismatches"]
    out["size"] = f"{len(calls)} indicators on {s['ind_series']:,} x {s['ind_bars']:,}"
    out["gpu_s"] = out["cuda_s"]
    if not simulated():
        out["goal_met"] = out["cpu_s"] / out["cuda_s"] >= 4 and (out["cuda_device_io_s"] or 1.0) <= 0.010
    return out


def _device_arrays():
    """(cupy, cupy.asarray) on a real device, else (None, None)."""
    if simulated():
        return None, None
    try:
        import cupy

        return cupy, cupy.asarray
    except ImportError:
        return None, None


def section_atc(s: dict) -> dict:
    """Every bar (tail=None: the families [S, 6, T] come back) and tail=1 (as the scanner calls
    it; the goal's figure, `gpu_s`), cuda and cpu, float32 closes as the scanner passes them."""
    from kernels import atc

    x = walks(s["atc_symbols"], s["atc_bars"], 2)
    kw = dict(dtype=np.float64, length=28)
    for b in ENGINES:
        atc.compute(x[:2, :80], backend=b, **kw)  # compile
        atc.compute(x[:2, :80], backend=b, tail=1, **kw)
    t_cpu, (c_fams, c_final) = best(lambda: atc.compute(x, **kw), s["repeat"])
    t_gpu, (g_fams, g_final) = best(lambda: atc.compute(x, backend="cuda", **kw), s["repeat"])
    t1_cpu, (_, c_last) = best(lambda: atc.compute(x, tail=1, **kw), s["repeat"])
    t1_gpu, (_, g_last) = best(lambda: atc.compute(x, backend="cuda", tail=1, **kw), s["repeat"])

    def cuda_equal():
        assert_engine_equal(g_final, c_final)
        assert_engine_equal(g_last, c_last, err_msg="tail=1")
        for name in atc.FAMILIES:
            assert_engine_equal(g_fams[name], c_fams[name], err_msg=name)

    ok_cuda, why_cuda = agree(cuda_equal)
    ok_torch, why_torch, t_tor = True, "", None
    if "torch" in ENGINES:  # once: the torch path took 45.7 s a call at full size (H100, 2026-11-27)
        t_tor, (t_fams, t_final) = best(lambda: atc.compute(x, backend="torch", **kw), 1)
        ok_torch, why_torch = agree(lambda: np.testing.assert_allclose(t_final, c_final, rtol=0, atol=1e-9))
    return {"size": f"{s['atc_symbols']:,} symbols x {s['atc_bars']:,} bars, tail=1", "cpu_s": t1_cpu, "gpu_s": t1_gpu,
            "every_bar_cpu_s": t_cpu, "every_bar_gpu_s": t_gpu, "torch_s": t_tor, "equal": ok_cuda and ok_torch,
            "goal_met": None if simulated() else (t1_gpu <= 0.015 and t1_cpu / t1_gpu >= 5),
            "mismatches": [m for m in (why_cuda, why_torch) if m]}


def grid_data(rows: int, n_trades: int, seed: int):
    """Prices (a random walk, float32) and trades on them: random entry row, hold 30-2700
    rows; five coarse entry features (float32), the close-out percent at the last row."""
    rng = np.random.default_rng(seed)
    prices = (100 * np.exp(np.cumsum(rng.normal(0, 0.0004, rows)))).astype(np.float32)
    start = rng.integers(0, rows - 40, n_trades).astype(np.int64)
    end = np.minimum(start + rng.integers(30, 2700, n_trades), rows - 1)
    entry = prices[start].astype(np.float64)
    pct = np.round((prices[end] / entry - 1.0) * 100.0, 4)
    features = np.stack([rng.uniform(0, 1, n_trades), rng.uniform(0, 1.5, n_trades), rng.uniform(0, 50, n_trades),
                         rng.uniform(0, 50, n_trades), rng.uniform(0, 50, n_trades)]).astype(np.float32)
    return prices, start, end, entry, pct, features


def grids(quick: bool):
    """(big, default) Grids: bench_grid's BIG (10M combinations) and DEFAULT, one tiny grid for both when quick."""
    from benchmarks.bench_grid import BIG, DEFAULT
    from kernels.gridsearch.grid import Grid

    small = dict(volatility=[0.0, 0.5], ratio=[0.0, 0.7], adx28=[0, 20], adx14=[0, 30], adx7=[0, 25], target=[0.1, 0.3],
                 stop_loss=[-0.3, -0.1])
    return Grid.from_mapping(small if quick else BIG), Grid.from_mapping(small if quick else DEFAULT)


def pair_rows(big, default) -> list[int]:
    """Rows of `big`'s exit results ([target x stop pairs, trades]) that are `default`'s pairs, in its order."""
    return [big.target.index(t) * len(big.stop_loss) + big.stop_loss.index(sl)
            for t in default.target for sl in default.stop_loss]


def section_grid(s: dict, quick: bool) -> dict:
    from kernels.gpu_phases import recording
    from kernels.gridsearch.brute import brute_force
    from kernels.gridsearch.cube import cube_roi, cube_top, grid_top
    from kernels.gridsearch.cuda import array_module
    from kernels.gridsearch.exits import resolve_exits
    from kernels.gridsearch.ranking import top_k_full

    big, default = grids(quick)
    prices, start, end, entry, pct, feats = grid_data(s["grid_rows"], s["grid_trades"], 3)
    xp, to_device = array_module()
    sync = (lambda: xp.cuda.runtime.deviceSynchronize()) if xp is not np else (lambda: None)
    w = slice(0, 20)
    for b in ("cpu", "cuda"):  # compile
        r, _ = resolve_exits(start[w], end[w], entry[w], prices, pct[w], big.target, big.stop_loss, backend=b)
        brute_force(feats[:, w], r, default, backend=b)
        grid_top(start[w], end[w], entry[w], prices, pct[w], feats[:, w], big, k=10, min_trades=1, backend=b)

    # as the user calls it: NumPy in, no exit rows; on cuda the results stay on the device
    exits = lambda b, **kw: resolve_exits(start, end, entry, prices, pct, big.target, big.stop_loss,  # noqa: E731
                                          backend=b, exit_rows=False, **kw)[0]
    t_ex_cpu, res_cpu = best(lambda: exits("cpu"), 1)

    def exits_gpu():
        out = exits("cuda", on_device=True)
        sync()
        return out

    t_ex_gpu, res_dev = best(exits_gpu, s["repeat"])
    res_gpu = res_dev if xp is np else xp.asnumpy(res_dev)  # for the checks and the brute force, untimed
    t_cube_cpu, top_cpu = best(lambda: cube_top(feats, res_cpu, big, k=10, min_trades=1), 1)
    # the sums from the device's results and the NumPy features (copied in), the top-10 out
    t_cube_gpu, top_gpu = best(lambda: cube_top(feats, res_dev, big, k=10, min_trades=1, backend="cuda"), s["repeat"])
    # the whole call, NumPy in and top-10 out: exits -> sums on the device (the goal's figure)
    t_all_gpu, top_all = best(lambda: grid_top(start, end, entry, prices, pct, feats, big, k=10, min_trades=1,
                                               backend="cuda"), s["repeat"])
    with recording() as rec:  # one more call, by phase (CUDA events on a device)
        grid_top(start, end, entry, prices, pct, feats, big, k=10, min_trades=1, backend="cuda")
    phases = [{"kind": ph.kind, "name": ph.name, "s": ph.seconds, "bytes": ph.bytes, "blocks": ph.blocks}
              for ph in rec.resolve()]
    res_dev = None  # the device copy of the results is not needed past here
    rows = lambda top: list(zip(top.index.tolist(), top.roi_units.tolist(), top.trades.tolist()))  # noqa: E731
    # brute force: the default grid on both engines (the same size), the big grid on cuda alone
    d_res = res_cpu[pair_rows(big, default)] if not quick else res_cpu
    t_br_cpu, br_cpu = best(lambda: brute_force(feats, d_res, default), 1)
    t_br_gpu, br_gpu = best(lambda: brute_force(feats, d_res, default, backend="cuda"), s["repeat"])
    # the big grid by brute force on cuda: 1e13 checks, ~10 s at the goal's rate; a probe on 1%
    # of the trades first, and only as many trades as fit BRUTE_BUDGET_S at the probed rate
    n_all = feats.shape[1]
    first = lambda a, n: np.ascontiguousarray(a[:, :n])  # noqa: E731 - the first n trades
    probe = max(1, n_all // 100)
    t_probe, _ = best(lambda: brute_force(first(feats, probe), first(res_gpu, probe), big, backend="cuda"), 1)
    n_big = n_all if t_probe * n_all / probe <= BRUTE_BUDGET_S else max(probe, int(probe * BRUTE_BUDGET_S / t_probe))
    f_big, r_big = first(feats, n_big), first(res_gpu, n_big)
    t_br_big, br_big = best(lambda: brute_force(f_big, r_big, big, backend="cuda"), 1)
    checks_big = big.n_combinations * n_big
    cube_big = top_cpu if n_big == n_all else top_k_full(*cube_roi(f_big, first(res_cpu, n_big), big), 10, 1)
    same = {"exits": agree(lambda: np.testing.assert_array_equal(res_gpu, res_cpu)),
            "cube top-10": agree(lambda: assert_equal_lists(rows(top_gpu), rows(top_cpu))),
            "grid_top top-10": agree(lambda: assert_equal_lists(rows(top_all), rows(top_cpu))),
            "brute default top-10": agree(lambda: assert_equal_lists(rows(br_gpu), rows(br_cpu))),
            "brute big = cube big": agree(lambda: assert_equal_lists(rows(br_big), rows(cube_big)))}
    return {"size": f"{big.n_combinations:,} combinations x {feats.shape[1]:,} trades on {len(prices):,} rows",
            "combinations": big.n_combinations, "trades": int(feats.shape[1]),
            "cpu_s": t_ex_cpu + t_cube_cpu, "gpu_s": t_all_gpu, "grid_top_gpu_s": t_all_gpu, "grid_phases": phases,
            "exits_cpu_s": t_ex_cpu, "exits_gpu_s": t_ex_gpu, "cube_cpu_s": t_cube_cpu, "cube_gpu_s": t_cube_gpu,
            "array_module": xp.__name__, "brute_default_combinations": default.n_combinations,
            "brute_default_cpu_s": t_br_cpu, "brute_default_gpu_s": t_br_gpu, "brute_big_gpu_s": t_br_big,
            "brute_big_trades": n_big,
            "brute_big_checks_per_s": checks_big / t_br_big,
            "goal_met": t_all_gpu <= 0.05 if not quick else None,
            "brute_goal_met": checks_big / t_br_big >= 1e12 if not quick else None,
            "equal": all(ok for ok, _ in same.values()),
            "mismatches": [f"{k}: {why}" for k, (ok, why) in same.items() if not ok]}


def _phase_totals(phases: list[dict]) -> dict[str, float]:
    """Seconds per phase kind (host_prep, h2d, ...) of a recorded grid_top call."""
    out: dict[str, float] = {}
    for ph in phases:
        out[ph["kind"]] = out.get(ph["kind"], 0.0) + ph["s"]
    return out


def assert_equal_lists(a, b):
    assert a == b, f"{a[:3]} != {b[:3]}"


def population_data(s: dict):
    """((open, high, low, close, volume) [pop_bars], [pop Individuals]): the population section's inputs."""
    from kernels.strategy import Individual

    rng = np.random.default_rng(5)
    close = walks(1, s["pop_bars"], 4)[0]
    open_ = close * (1 + rng.normal(0, 0.003, close.size))
    high = np.maximum(open_, close) * (1 + np.abs(rng.normal(0, 0.006, close.size)))
    low = np.minimum(open_, close) * (1 - np.abs(rng.normal(0, 0.006, close.size)))
    volume = rng.lognormal(13, 0.5, close.size)
    pick = lambda xs: rng.choice(xs).item()  # noqa: E731
    pop = [Individual.from_dict({
        "ema_fast": pick([5, 8, 10, 15]), "ema_slow": pick([20, 30, 50]), "z_window": pick([15, 20, 30]),
        "atr_window": pick([5, 10, 14]), "vol_z_min": pick([0.0, 0.5, 1.0]), "tr_z_min": pick([-0.5, 0.0, 0.5]),
        "cloc_min": pick([0.2, 0.4, 0.6]), "atr_stop_mult": pick([0.5, 1.0, 1.5]), "reward_r": pick([1.0, 1.5, 2.5]),
        "max_hold": pick([3, 8, 20]), "fee_bps": pick([0.0, 2.5, 5.0]), "slippage_bps": pick([0.0, 1.0, 3.0])})
        for _ in range(s["pop"])]
    return (open_, high, low, close, volume), pop


def section_population(s: dict) -> dict:
    from kernels.strategy import backtest_population

    data, pop = population_data(s)
    close = data[3]
    for engine in ("cpu", "cuda"):  # compile
        backtest_population(*(a[:120] for a in data), pop[:2], backend=engine, fallback=False)
    t_cpu, cpu = best(lambda: backtest_population(*data, pop, backend="cpu"), s["repeat"])
    t_gpu, gpu = best(lambda: backtest_population(*data, pop, backend="cuda", fallback=False), s["repeat"])

    def same():
        for f in ("offsets", "entry_idx", "exit_idx", "reason", "entry_px", "exit_px", "pnl", "r_mult"):
            assert_engine_equal(getattr(gpu, f), getattr(cpu, f), err_msg=f)

    ok, why = agree(same)
    return {"size": f"{len(pop)} individuals x {close.size:,} bars", "trades": int(cpu.n_trades.sum()),
            "cpu_s": t_cpu, "gpu_s": t_gpu, "equal": ok and gpu.backend == "cuda", "mismatches": [why] if why else [],
            "goal_met": None if simulated() else t_gpu < t_cpu}


def section_lstm(s: dict) -> dict:
    import torch

    from domain.learning import lstm_training as L

    dev = torch.device(torch_device())
    precision = "bf16" if dev.type == "cuda" else "fp32"
    seq_len, n_feat = 64, 32
    n = s["lstm_rows"] + seq_len - 1
    rng = np.random.default_rng(6)
    X = rng.normal(size=(s["lstm_symbols"] * n, n_feat)).astype(np.float32)
    off = np.arange(s["lstm_symbols"] + 1, dtype=np.int64) * n
    ends = L.make_sequences(X, off, seq_len)
    torch.manual_seed(0)
    model = L.LSTMSpec(n_feat)
    Xd, Xc = torch.from_numpy(X).to(dev), torch.from_numpy(X)
    sub = ends[: s["lstm_cpu_seqs"]]

    def on_device(e):
        out = L.forward_windows(model.to(dev), Xd, e, seq_len, s["lstm_batch"], precision)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        return out.cpu().numpy()

    on_device(ends[:64])  # warm-up (cuDNN plans, autocast caches)
    t_gpu, _ = best(lambda: on_device(ends), s["repeat"])
    model_cpu = L.LSTMSpec(n_feat)
    model_cpu.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    t_cpu, cpu = best(lambda: L.forward_windows(model_cpu, Xc, sub, seq_len, 4096, "fp32").numpy(), 1)
    p_gpu, p_cpu = 1 / (1 + np.exp(-on_device(sub).astype(np.float64))), 1 / (1 + np.exp(-cpu.astype(np.float64)))
    ok, why = agree(lambda: np.testing.assert_allclose(p_gpu, p_cpu, rtol=0, atol=3e-2))
    gpu_rate, cpu_rate = len(ends) / t_gpu, len(sub) / t_cpu
    return {"size": f"{len(ends):,} sequences (seq_len {seq_len}, {n_feat} features, hidden 128 x 2)",
            "device": dev.type, "precision": precision, "cpu_s": t_cpu * len(ends) / len(sub), "gpu_s": t_gpu,
            "cpu_sequences": int(len(sub)), "inference_seq_per_s_gpu": gpu_rate, "inference_seq_per_s_cpu": cpu_rate,
            "goal_met": gpu_rate >= 1e6 if dev.type == "cuda" else None,
            "equal": ok, "mismatches": [why] if why else []}


def section_lstm_train(s: dict) -> dict:
    """Training steps of the seed's model: AMP + torch.compile on a GPU (compile time counted
    in the first steps), fp32 on the CPU; the same number of steps on each."""

    from domain.learning import lstm_training as L

    dev = torch_device()
    seq_len, n_feat, n = 64, 32, s["lstm_rows"] + 63
    rng = np.random.default_rng(7)
    X = rng.normal(size=(s["lstm_symbols"] * n, n_feat)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    off = np.arange(s["lstm_symbols"] + 1, dtype=np.int64) * n
    every = np.ones(X.shape[0], dtype=bool)

    def train(device, steps):
        t0 = time.perf_counter()
        r = L.train_lstm(X, y, off, every, ~every, seq_len=seq_len, batch_size=512, epochs=1000, max_steps=steps,
                         device=device)
        return time.perf_counter() - t0, r

    t_gpu, r_gpu = train(dev, s["lstm_steps"])
    cpu_steps = max(2, s["lstm_steps"] // 10)
    t_cpu, r_cpu = train("cpu", cpu_steps)
    finite = all(np.isfinite(h["train_loss"]) for h in r_gpu.history + r_cpu.history)
    return {"size": f"{s['lstm_steps']} steps of batch 512 (cpu: {cpu_steps}, scaled)", "device": dev,
            "cpu_s": t_cpu * s["lstm_steps"] / cpu_steps, "gpu_s": t_gpu,
            "train_samples_per_s_gpu": r_gpu.samples_per_s, "train_samples_per_s_cpu": r_cpu.samples_per_s,
            "train_precision": r_gpu.precision, "train_compiled": r_gpu.compiled,
            "equal": finite, "mismatches": [] if finite else ["non-finite training loss"]}


SECTIONS = ("indicators", "atc", "grid", "population", "lstm", "lstm_train")


def tests_summary(junit: str | None, rc: int | None) -> dict | None:
    """The `pytest -m gpu` run's counts from its JUnit XML (scripts/gpu_check.sh step 3)."""
    if junit is None:
        return None
    import xml.etree.ElementTree as ET

    out = {"rc": rc, "passed": 0, "failed": 0, "errors": 0, "skipped": 0, "failures": []}
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError) as err:
        out["error"] = f"no JUnit XML ({type(err).__name__}): the tests did not finish (timeout?)"
        return out
    for case in root.iter("testcase"):
        kind = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), None)
        key = {"failure": "failed", "error": "errors", "skipped": "skipped"}.get(kind, "passed")
        out[key] += 1
        if kind in ("failure", "error"):
            out["failures"].append(f"{case.get('classname')}::{case.get('name')}")
    return out


def device_info() -> dict:
    info = {"numba_cuda_simulator": simulated(), "real_cuda": real_cuda()}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except Exception as err:  # noqa: BLE001
        info["torch"] = f"unavailable: {err}"
    try:
        import cupy

        info["cupy"] = cupy.__version__
    except Exception as err:  # noqa: BLE001
        info["cupy"] = f"unavailable: {type(err).__name__}"
    return info


def table(report: dict) -> str:
    lines = [f"GPU check ({report['mode']}) {report['date']} on {report['machine']}",
             f"device: {report['device']}", "",
             f"{'section':<11} {'size':<58} {'cpu s':>9} {'gpu s':>9} {'cpu/gpu':>9} {'equal':>6}  goal"]
    for name in SECTIONS:
        if name not in report["sections"]:
            continue
        r = report["sections"][name]
        if "error" in r:
            lines.append(f"{name:<11} ERROR: {r['error']}")
            continue
        ratio = r["cpu_s"] / r["gpu_s"] if r.get("gpu_s") else float("nan")
        goal = GOALS.get(name, "")
        if r.get("goal_met") is not None:
            goal += f" -> {'met' if r['goal_met'] else 'NOT met'}"
        lines.append(f"{name:<11} {r['size'][:58]:<58} {r['cpu_s']:>9.3f} {r['gpu_s']:>9.3f} {ratio:>8.3g}x "
                     f"{str(r['equal']):>6}  {goal}".rstrip())
        if name == "grid":
            met = "" if r["brute_goal_met"] is None else f" -> {'met' if r['brute_goal_met'] else 'NOT met'}"
            lines.append(f"{'':<11} brute force big grid x {r['brute_big_trades']:,} trades on cuda: {r['brute_big_gpu_s']:.3f} s, "
                         f"{r['brute_big_checks_per_s']:.3g} checks/s ({GOALS['brute']}{met}); exits cpu/gpu "
                         f"{r['exits_cpu_s']:.3f}/{r['exits_gpu_s']:.3f} s, sums cpu/gpu {r['cube_cpu_s']:.3f}/"
                         f"{r['cube_gpu_s']:.3f} s ({r['array_module']}); gpu by phase: "
                         + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in _phase_totals(r.get("grid_phases", [])).items()))
        if name == "indicators" and r.get("cuda_device_io_s") is not None:
            lines.append(f"{'':<11} cuda with CuPy in and out: {r['cuda_device_io_s'] * 1e3:.1f} ms")
        if name == "atc" and "every_bar_gpu_s" in r:
            lines.append(f"{'':<11} every bar (families back): cpu {r['every_bar_cpu_s']:.3f} s, cuda {r['every_bar_gpu_s']:.3f} s")
        if name == "lstm":
            lines.append(f"{'':<11} inference {r['inference_seq_per_s_gpu']:,.0f} seq/s on {r['device']} "
                         f"({r['precision']}), cpu fp32 {r['inference_seq_per_s_cpu']:,.0f} seq/s")
        if name == "lstm_train":
            lines.append(f"{'':<11} training {r['train_samples_per_s_gpu']:,.0f} samples/s on {r['device']} "
                         f"({r['train_precision']}, compile {r['train_compiled']}), cpu "
                         f"{r['train_samples_per_s_cpu']:,.0f} samples/s")
        for m in r.get("mismatches", []):
            lines.append(f"{'':<11} MISMATCH {m}")
    t = report.get("tests")
    if t is not None:
        lines += ["", f"tests marked gpu: {t['passed']} passed, {t['failed']} failed, {t['errors']} errors, "
                      f"{t['skipped']} skipped (pytest rc {t['rc']})" + (f"; {t['error']}" if "error" in t else "")]
        lines += [f"  FAILED {name}" for name in t["failures"][:20]]
    if report["simulated"]:
        lines += ["", "Dry run: numba.cuda on its simulator, torch on the CPU; the gpu times mean nothing."]
    return "\n".join(lines)


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (the dry run)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out"))
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--skip-torch", action="store_true", help="time no torch engine in the indicators and atc sections")
    ap.add_argument("--tests-junit", help="JUnit XML of the `pytest -m gpu` run, summarised into the JSON")
    ap.add_argument("--tests-rc", type=int, help="that run's exit status")
    args = ap.parse_args()
    if args.skip_torch:
        ENGINES.remove("torch")
    load_start = load()
    s = SIZES["quick" if args.quick else "full"]
    report = {"mode": "quick" if args.quick else "full", "date": dt.datetime.now().isoformat(timespec="seconds"),
              "machine": machine(), "python": platform.python_version(), "simulated": simulated(),
              "device": device_info(), "goals": GOALS, "tests": tests_summary(args.tests_junit, args.tests_rc),
              "sections": {}}
    for name in args.sections.split(","):
        t0 = time.perf_counter()
        try:
            fn = globals()[f"section_{name}"]
            report["sections"][name] = fn(s, args.quick) if name == "grid" else fn(s)
        except Exception as err:  # noqa: BLE001 - one broken section must not hide the others
            traceback.print_exc()
            report["sections"][name] = {"error": f"{type(err).__name__}: {err}"[:500], "equal": False}
        report["sections"][name]["wall_s"] = time.perf_counter() - t0
        print(f"{name}: {json.dumps(report['sections'][name], default=str)}", flush=True)
        text = write(report, Path(args.out))  # after every section: a timeout keeps what is done
    print(text)
    if args.record or args.json:
        harness_entry(report, args, load_start)
    return 0 if report["all_equal"] else 1


def harness_entry(report: dict, args, load_start) -> None:
    """The run as a benchmarks/common.py entry: one markdown table of the sections, a
    RESULTS.md row per section (--record: appended to LOG.md; --json: written)."""
    entry = Report(f"GPU check ({report['mode']})", args, load_start=load_start)
    entry.note(f"device: {report['device']}" + (" (dry run: simulator, the gpu times mean nothing)" if report["simulated"] else ""))
    rows = []
    for name, r in report["sections"].items():
        if "error" in r:
            rows.append([name, "-", "-", "-", "-", "ERROR", r["error"][:80]])
            continue
        ratio = r["cpu_s"] / r["gpu_s"] if r.get("gpu_s") else float("nan")
        rows.append([name, r["size"], f"{r['cpu_s']:.3f}", f"{r['gpu_s']:.3f}", f"{ratio:.3g}x", r["equal"], GOALS.get(name, "")])
        met = {True: "yes", False: "no", None: "measured"}[r.get("goal_met")]
        entry.result(f"GPU: {name} ({r['size']})", GOALS.get(name, "(measured)"),
                     f"gpu {r['gpu_s']:.3f} s, cpu {r['cpu_s']:.3f} s ({ratio:.3g}x); equal: {r['equal']}",
                     "blocked (simulator)" if report["simulated"] else met)
    entry.table(["section", "size", "cpu s", "gpu s", "cpu/gpu", "equal", "goal"], rows)
    entry.figure("sections", report["sections"])
    entry.figure("device", report["device"])
    entry.finish()


def write(report: dict, out: Path) -> str:
    report["all_equal"] = all(r.get("equal") for r in report["sections"].values())
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(report, indent=2, default=str))
    text = table(report)
    (out / "gpu_check.txt").write_text(text + "\n")
    return text


if __name__ == "__main__":
    sys.exit(main())
