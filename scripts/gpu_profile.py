"""Where each GPU path spends its time, in one call (issue 46 item 1; scripts/gpu_check.sh runs it).

Paths, at benchmarks/bench_gpu.py's full sizes (its data builders, imported):
  indicators        ema 20, rsi 14, kama 10, atr 14, adx 14 on 1,000 x 10,000 float64, cuda backend, NumPy in/out
  indicators_cupy   the same with CuPy in and out (only when CuPy imports)
  atc               kernels.atc.compute, 5,000 x 2,000, backend cuda, tail=1
  exits             gridsearch resolve_exits on the big grid (10M combinations) x 1M trades, backend cuda
  sums              dominance sums + top-10 (cube_top) on those exits, backend cuda
  brute             brute force on the default grid, backend cuda
  population        backtest_population 512 x 21,480, engine cuda

Each path: one warm-up call (compilation, pools), then one call inside
`kernels.gpu_phases.recording()`; its wall time is taken around the call and a device
synchronisation, so "unattributed" = wall - the phases' sum is the time no phase claims (all
of it for an engine that has no phases yet). Then the CPU engine once (after a warm-up on a
slice) for the ratio. A path that raises is an error entry; the others still run.

Per path it prints seconds and % of wall per phase kind, then one roofline line per kernel
phase: its stated bytes over its time against HBM bandwidth (measured once: a CuPy
device-to-device copy, bytes read + written; else 3.35e12 B/s, the H100 SXM's datasheet
figure), its stated operations over its time against the issue rate
  SMs x 4 schedulers x 1 warp instruction/clock x 32 lanes x SM clock
(CuPy's MultiProcessorCount and ClockRate; else an H100 SXM's 132 SMs at 1.98 GHz), and its
blocks against the SMs. When torch sees CUDA one more call per path runs under torch.profiler
(CUPTI sees every kernel of the process, numba's and CuPy's too; a call of its own, so that
tracing's per-launch overhead stays out of the phase figures): the top 20 by device time go
to <out>/gpu_profile_trace.txt. nsys, if on the PATH, is named (not required).

--quick: tiny sizes under numba's CUDA simulator (TRADELAB_GPU=0), for CI; times mean nothing.
Writes <out>/gpu_profile.json and <out>/gpu_profile.txt (the final table, also printed last).
Imports no Dagster, polars, pyarrow or cuDF (the GPU machine has none); the JSON lists any
that got imported anyway under "forbidden_imported".

Usage: python scripts/gpu_profile.py [--quick] [--out DIR (default $OUT or benchmarks/out)] [--paths atc,brute]
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import importlib.util
import json
import os
import shutil
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.gpu import choose_simulator, simulated  # noqa: E402

choose_simulator()  # before numba.cuda is imported

import numpy as np  # noqa: E402

from kernels.gpu_phases import PHASES, recording  # noqa: E402

PATHS = ("indicators", "indicators_cupy", "atc", "exits", "sums", "brute", "population")
H100_HBM = 3.35e12  # B/s, H100 SXM datasheet
H100_SMS, H100_CLOCK = 132, 1.98e9
ISSUE_FORMULA = "SMs x 4 schedulers x 1 warp-instr/clk x 32 lanes x SM clock"
FORBIDDEN = ("dagster", "polars", "pyarrow", "cudf")


@dataclass
class Spec:
    """One path: the GPU call to profile, the CPU engine's call, a CPU warm-up, its size in words."""

    size: str
    gpu: Callable[[], object]
    cpu: Callable[[], object]
    cpu_warm: Callable[[], object]
    note: str = ""


@functools.cache
def has_cupy() -> bool:
    """CuPy imports and sees a device (never under the simulator, where numba has none)."""
    if simulated() or importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - a broken CuPy is "no CuPy" here; the preflight names it
        return False


def sync() -> None:
    """Wait for the device (numba's and CuPy's work share the legacy default stream)."""
    if simulated():
        return
    from numba import cuda

    cuda.synchronize()
    if has_cupy():
        import cupy

        cupy.cuda.runtime.deviceSynchronize()


# ------------------------------------------------------------------------------- the paths


def path_indicators(s: dict, ctx: dict) -> Spec:
    from benchmarks.bench_gpu import indicator_data

    full, calls = indicator_data(s)
    small = tuple(np.ascontiguousarray(a[:2, :64]) for a in full)
    return Spec(f"{len(calls)} indicators on {s['ind_series']:,} x {s['ind_bars']:,} f64, NumPy in/out",
                lambda: [f("cuda", full) for f in calls.values()], lambda: [f("cpu", full) for f in calls.values()],
                lambda: [f("cpu", small) for f in calls.values()])


def path_indicators_cupy(s: dict, ctx: dict) -> Spec:
    if not has_cupy():
        raise RuntimeError("CuPy is not available here: no CuPy in/out path")
    import cupy

    from benchmarks.bench_gpu import indicator_data

    full, calls = indicator_data(s)
    on_device = tuple(cupy.asarray(a) for a in full)
    small = tuple(np.ascontiguousarray(a[:2, :64]) for a in full)
    return Spec(f"{len(calls)} indicators on {s['ind_series']:,} x {s['ind_bars']:,} f64, CuPy in/out",
                lambda: [f("cuda", on_device) for f in calls.values()], lambda: [f("cpu", full) for f in calls.values()],
                lambda: [f("cpu", small) for f in calls.values()])


def path_atc(s: dict, ctx: dict) -> Spec:
    from benchmarks.bench_gpu import walks
    from kernels import atc

    x = walks(s["atc_symbols"], s["atc_bars"], 2)
    kw = dict(dtype=np.float64, length=28, tail=1)
    return Spec(f"{s['atc_symbols']:,} symbols x {s['atc_bars']:,} bars, tail=1",
                lambda: atc.compute(x, backend="cuda", **kw), lambda: atc.compute(x, backend="cpu", **kw),
                lambda: atc.compute(x[:2, :80], backend="cpu", **kw))


def grid_inputs(s: dict, ctx: dict) -> dict:
    """The grid paths' shared inputs, built once: grids, trades, features."""
    if "grid" not in ctx:
        from benchmarks.bench_gpu import grid_data, grids

        big, default = grids(ctx["quick"])
        prices, start, end, entry, pct, feats = grid_data(s["grid_rows"], s["grid_trades"], 3)
        ctx["grid"] = dict(big=big, default=default, prices=prices, start=start, end=end, entry=entry, pct=pct,
                           feats=feats)
    return ctx["grid"]


def grid_results(s: dict, ctx: dict) -> np.ndarray:
    """The big grid's exit results int32 [pairs, trades] (the CPU engine's, computed once)."""
    g = grid_inputs(s, ctx)
    if "results" not in g:
        from kernels.gridsearch.exits import resolve_exits

        g["results"] = resolve_exits(g["start"], g["end"], g["entry"], g["prices"], g["pct"], g["big"].target,
                                     g["big"].stop_loss, backend="cpu")[0]
    return g["results"]


def path_exits(s: dict, ctx: dict) -> Spec:
    from kernels.gridsearch.exits import resolve_exits

    g = grid_inputs(s, ctx)
    w = slice(0, 20)

    def run(backend, rows=slice(None)):
        return resolve_exits(g["start"][rows], g["end"][rows], g["entry"][rows], g["prices"], g["pct"][rows],
                             g["big"].target, g["big"].stop_loss, backend=backend)

    def cpu():
        g["results"] = run("cpu")[0]

    return Spec(f"{g['big'].n_combinations:,} combinations ({len(g['big'].target) * len(g['big'].stop_loss)} exit "
                f"pairs) x {len(g['start']):,} trades", lambda: run("cuda"), cpu, lambda: run("cpu", w))


def path_sums(s: dict, ctx: dict) -> Spec:
    from kernels.gridsearch.cube import cube_roi, cube_top
    from kernels.gridsearch.ranking import top_k_full

    g, res = grid_inputs(s, ctx), grid_results(s, ctx)
    big, feats, w = g["big"], g["feats"], slice(0, 20)
    if has_cupy() or not simulated():
        gpu, note = (lambda: cube_top(feats, res, big, k=10, min_trades=1, backend="cuda")), ""
    else:  # the cuda entry needs CuPy; the simulator has none: NumPy stands in, as in bench_gpu
        gpu, note = (lambda: top_k_full(*cube_roi(feats, res, big), 10, 1)), "NumPy stands in for CuPy (simulator)"
    return Spec(f"dominance sums + top-10, {big.n_combinations:,} combinations x {res.shape[1]:,} trades", gpu,
                lambda: cube_top(feats, res, big, k=10, min_trades=1, backend="cpu"),
                lambda: cube_top(feats[:, w], res[:, w], big, k=10, min_trades=1, backend="cpu"), note)


def path_brute(s: dict, ctx: dict) -> Spec:
    from benchmarks.bench_gpu import pair_rows
    from kernels.gridsearch.brute import brute_force

    g, res = grid_inputs(s, ctx), grid_results(s, ctx)
    default, feats, w = g["default"], g["feats"], slice(0, 20)
    d_res = res if ctx["quick"] else np.ascontiguousarray(res[pair_rows(g["big"], default)])
    return Spec(f"default grid, {default.n_combinations:,} combinations x {d_res.shape[1]:,} trades",
                lambda: brute_force(feats, d_res, default, backend="cuda"), lambda: brute_force(feats, d_res, default),
                lambda: brute_force(feats[:, w], d_res[:, w], default))


def path_population(s: dict, ctx: dict) -> Spec:
    from benchmarks.bench_gpu import population_data
    from kernels.strategy import backtest_population

    data, pop = population_data(s)
    return Spec(f"{len(pop)} individuals x {data[3].size:,} bars",
                lambda: backtest_population(*data, pop, backend="cuda", fallback=False),
                lambda: backtest_population(*data, pop, backend="cpu"),
                lambda: backtest_population(*(a[:120] for a in data), pop[:2], backend="cpu"))


# ------------------------------------------------------------------------------- the device


def device_limits() -> dict:
    """HBM bandwidth (measured when CuPy sees a device), SM count and issue rate, each with its source."""
    out = {"hbm_bytes_per_s": H100_HBM, "hbm_source": "assumed: H100 SXM datasheet", "sms": H100_SMS,
           "sm_clock_hz": H100_CLOCK, "limits_source": "assumed: H100 SXM (132 SMs, 1.98 GHz)",
           "issue_formula": ISSUE_FORMULA}
    if has_cupy():
        import cupy

        attrs = cupy.cuda.Device().attributes
        out.update(sms=int(attrs["MultiProcessorCount"]), limits_source="CuPy device attributes")
        if attrs.get("ClockRate"):  # kHz; an attribute CUDA has deprecated, so it may be missing
            out["sm_clock_hz"] = float(attrs["ClockRate"]) * 1e3
        else:
            out["limits_source"] += " (SM clock assumed: 1.98 GHz)"
        out["hbm_bytes_per_s"], out["hbm_source"] = measured_bandwidth(), "measured: CuPy device-to-device copy"
        cupy.get_default_memory_pool().free_all_blocks()  # the copy's 2 GiB back before the paths run
    out["issue_ops_per_s"] = out["sms"] * 4 * 32 * out["sm_clock_hz"]
    return out


def measured_bandwidth(nbytes: int = 1 << 30, repeat: int = 3) -> float:
    """Bytes read + written per second of the best of `repeat` device-to-device copies of `nbytes`."""
    import cupy

    a = cupy.ones(nbytes // 8, dtype=cupy.float64)
    b = cupy.empty_like(a)
    b[...] = a  # warm-up
    best = float("inf")
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        b[...] = a
        end.record()
        end.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return 2 * a.nbytes / best


def device_info() -> dict:
    info = {"simulated": simulated(), "nsys": shutil.which("nsys")}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except Exception as err:  # noqa: BLE001
        info["torch"] = f"unavailable: {type(err).__name__}"
    if has_cupy():
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        info["cupy"], info["device"] = cupy.__version__, name.decode() if isinstance(name, bytes) else name
    return info


class Trace:
    """torch.profiler around one extra call per path when torch sees CUDA (and the simulator is
    off); otherwise nothing runs. `tables` collects each path's key_averages table."""

    def __init__(self):
        self.on = False
        self.tables: dict[str, str] = {}
        if not simulated() and importlib.util.find_spec("torch") is not None:
            import torch

            self.on = torch.cuda.is_available()

    def around(self, name: str, fn: Callable[[], object]) -> None:
        if not self.on:
            return
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
        averages = prof.key_averages()
        try:
            self.tables[name] = averages.table(sort_by="device_time_total", row_limit=20)
        except Exception:  # noqa: BLE001 - older torch names the key cuda_time_total
            self.tables[name] = averages.table(sort_by="cuda_time_total", row_limit=20)


# ------------------------------------------------------------------------------- one path


def profile_path(name: str, s: dict, ctx: dict, limits: dict, trace: Trace) -> dict:
    """Warm up, record one GPU call by phase (wall synchronised), time the CPU engine once."""
    spec = globals()[f"path_{name}"](s, ctx)
    spec.gpu()  # warm-up: compilation, memory pools
    sync()
    wall = {}

    def measured():
        t0 = time.perf_counter()
        spec.gpu()
        sync()
        wall["s"] = time.perf_counter() - t0

    with recording() as rec:
        measured()
    phases = rec.resolve()
    trace.around(name, lambda: (spec.gpu(), sync()))
    spec.cpu_warm()
    t0 = time.perf_counter()
    spec.cpu()
    cpu_s = time.perf_counter() - t0
    totals = rec.totals()
    totals["unattributed"] = wall["s"] - sum(totals.values())
    return {"size": spec.size, "note": spec.note, "wall_s": wall["s"], "cpu_s": cpu_s,
            "cpu_over_gpu": cpu_s / wall["s"] if wall["s"] > 0 else None,
            "totals": totals, "phases": [asdict(p) for p in phases],
            "kernels": [roofline(asdict(p), limits) for p in phases if p.kind == "kernel"]}


def roofline(ph: dict, limits: dict) -> dict:
    """One kernel phase against the device: % of HBM bandwidth, of issue rate, blocks per SM."""
    sec = ph["seconds"]
    out = {"name": ph["name"], "seconds": sec, "bytes": ph["bytes"], "ops": ph["ops"], "blocks": ph["blocks"],
           "threads": ph["threads"], "hbm_pct": None, "issue_pct": None,
           "blocks_per_sm": ph["blocks"] / limits["sms"] if ph["blocks"] else None}
    if sec > 0 and ph["bytes"]:
        out["hbm_pct"] = 100 * ph["bytes"] / sec / limits["hbm_bytes_per_s"]
    if sec > 0 and ph["ops"]:
        out["issue_pct"] = 100 * ph["ops"] / sec / limits["issue_ops_per_s"]
    return out


# ------------------------------------------------------------------------------- reports


def _pct(x) -> str:
    return "-" if x is None else f"{x:.3g}%"


def path_lines(name: str, r: dict, limits: dict) -> list[str]:
    """A path's phase table (kind -> seconds, % of wall) and its kernels' roofline lines."""
    if "error" in r:
        return [f"{name}: ERROR {r['error']}"]
    lines = [f"{name}: {r['size']}" + (f" ({r['note']})" if r["note"] else ""),
             f"  wall {r['wall_s']:.4f} s (gpu, synchronised), cpu engine {r['cpu_s']:.4f} s"]
    for kind, sec in r["totals"].items():
        if sec or kind == "unattributed":
            lines.append(f"  {kind:<13} {sec:>10.4f} s {100 * sec / r['wall_s'] if r['wall_s'] else 0:>6.1f}%")
    for k in r["kernels"]:
        blocks = f"{k['blocks']:,} blocks x {k['threads']} threads on {limits['sms']} SMs ({k['blocks_per_sm']:.2g}/SM)" \
            if k["blocks"] else "launch shape not stated"
        lines.append(f"  kernel {k['name']}: {k['seconds']:.4g} s; {k['bytes']:,} B -> {_pct(k['hbm_pct'])} of HBM; "
                     f"{k['ops']:,} ops -> {_pct(k['issue_pct'])} of issue rate; {blocks}")
    return lines


def summary_lines(report: dict) -> list[str]:
    """The short final table: one line per path."""
    lines = [f"{'path':<16} {'gpu s':>9} {'cpu s':>9} {'cpu/gpu':>8}  {'top phase':<22} top kernel (% of HBM)"]
    for name, r in report["paths"].items():
        if "error" in r:
            lines.append(f"{name:<16} ERROR {r['error'][:100]}")
            continue
        kind, sec = max(r["totals"].items(), key=lambda kv: kv[1])
        top = max(r["kernels"], key=lambda k: k["seconds"], default=None)
        kernel = f"{top['name']} {top['seconds']:.3g} s ({_pct(top['hbm_pct'])})" if top else "-"
        ratio = f"{r['cpu_over_gpu']:.3g}x" if r["cpu_over_gpu"] else "-"
        share = f"{kind} {100 * sec / r['wall_s'] if r['wall_s'] else 0:.0f}%"
        lines.append(f"{name:<16} {r['wall_s']:>9.4f} {r['cpu_s']:>9.4f} {ratio:>8}  {share:<22} {kernel}")
    if report["simulated"]:
        lines.append("Dry run: numba.cuda on its simulator; the times mean nothing.")
    return lines


def write(report: dict, out: Path, detail: list[str]) -> str:
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_profile.json").write_text(json.dumps(report, indent=2, default=str))
    summary = "\n".join(summary_lines(report))
    (out / "gpu_profile.txt").write_text("\n".join(detail) + "\n\n" + summary + "\n")
    return summary


def default_paths() -> list[str]:
    return [p for p in PATHS if p != "indicators_cupy" or has_cupy()]


def main(argv: list[str] | None = None) -> int:
    from benchmarks.bench_gpu import SIZES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes under the simulator (CI)")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "benchmarks" / "out"))
    ap.add_argument("--paths", help=f"comma-separated, of {', '.join(PATHS)} (default: all that apply here)")
    args = ap.parse_args(argv)
    names = args.paths.split(",") if args.paths else default_paths()
    limits = device_limits()
    report = {"mode": "quick" if args.quick else "full", "date": dt.datetime.now().isoformat(timespec="seconds"),
              "simulated": simulated(), "device": device_info(), "limits": limits, "phase_kinds": list(PHASES),
              "paths": {}}
    print(f"gpu-profile: {'DRY (simulator)' if simulated() else 'REAL GPU'}, HBM {limits['hbm_bytes_per_s']:.3g} B/s "
          f"({limits['hbm_source']}), issue rate {limits['issue_ops_per_s']:.3g} ops/s = {ISSUE_FORMULA} "
          f"({limits['sms']} x 4 x 32 x {limits['sm_clock_hz']:.3g} Hz; {limits['limits_source']}); "
          f"nsys: {report['device']['nsys'] or 'not on PATH'}", flush=True)
    s, ctx, trace, detail = SIZES[report["mode"]], {"quick": args.quick}, Trace(), []
    for name in names:
        try:
            if name not in PATHS:
                raise KeyError(f"no path {name!r} (paths: {', '.join(PATHS)})")
            report["paths"][name] = profile_path(name, s, ctx, limits, trace)
        except Exception as err:  # noqa: BLE001 - one broken path must not hide the others
            traceback.print_exc()
            report["paths"][name] = {"error": f"{type(err).__name__}: {err}"[:500]}
        lines = path_lines(name, report["paths"][name], limits)
        print("\n".join(lines), flush=True)
        detail += lines
        report["forbidden_imported"] = sorted(m for m in FORBIDDEN if m in sys.modules)
        summary = write(report, Path(args.out), detail)  # after every path: a timeout keeps what is done
    if trace.tables:
        (Path(args.out) / "gpu_profile_trace.txt").write_text(
            "\n\n".join(f"== {name}\n{table}" for name, table in trace.tables.items()))
        report["trace"] = "gpu_profile_trace.txt"
        summary = write(report, Path(args.out), detail)
    print()
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
