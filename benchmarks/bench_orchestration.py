"""Orchestration overhead against Dagster's floor (the per-partition bookkeeping).

A BARE Dagster project is written to a temp folder: one module with the same partitions
(DynamicPartitionsDefinition "symbols" x yearly TimeWindowPartitionsDefinition) and the four
symbol x year assets as trivial assets that return None (same dependencies, single-run
backfill policy), on a stock instance. Ours and the bare project alternate in the same run:

  (a) cli      `dagster asset materialize -m <module> --select raw_bars --partition "SYN003|2015"`,
               fresh DAGSTER_HOME per sample, symbols registered beforehand (not timed);
               median of the pairwise ratios (target <= 1.3x)
  (b) rebuild  raw_bars, features, labels, specialists over N symbols x the years in ONE run
               (pipeline.runs.run_rectangle over historical_build_and_train): wall, stage compute
               and write seconds from the materialization metadata, input read seconds (the IO
               manager's load_input, timed by the benchmark), bookkeeping per partition
               (wall - stage - writes - reads)
               (targets at 500 x 26: <= 45 s, <= 0.5 ms per partition)
  (c) nightly  the latest year of the N symbols through the same 4 assets after (b), in a fresh
               process: the run alone and the process (imports included) (target <= 10 s)
  (d) demo     `python -m pipeline.cli demo` with the shipped settings (a copy of
               dagster_project.yaml in a temp folder, so its relative paths land there), fresh
               DAGSTER_HOME (target <= 40 s)

    python benchmarks/bench_orchestration.py [--symbols 500] [--years 2000-2025] [--repeat 5]
                                             [--bare-symbols N] [--parts a,b,c,d] [--record]
                                             [--symbols-per-group N]

--symbols-per-group N (partitions.symbols_per_group): our dynamic keys are groups of N
symbols; the bare project then registers as many keys as we have groups (the same partition
count: Dagster's floor for it), and (b) also reports bookkeeping per symbol-year.

--bare-symbols runs the bare project's (b) and (c) on fewer symbols (stock Dagster records a
partition in ~20 ms here: 500 x 26 would take ~20 minutes); its figures are then compared per
partition, and the table says so.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import emit, machine, run_json, symbol_names  # noqa: E402

DAGSTER = str(Path(sys.executable).parent / "dagster")
ASSETS = ("raw_bars", "features", "labels", "specialists")

BARE_MODULE = '''"""A bare Dagster project: our partitions, four trivial assets."""
from dagster import (BackfillPolicy, Definitions, DynamicPartitionsDefinition, MultiPartitionsDefinition,
                     TimeWindowPartitionsDefinition, asset, define_asset_job)

parts = MultiPartitionsDefinition({{
    "symbol": DynamicPartitionsDefinition(name="symbols"),
    "year": TimeWindowPartitionsDefinition(cron_schedule="0 0 1 1 *", start="{y0}", end="{y_end}", fmt="%Y"),
}})
kw = dict(partitions_def=parts, backfill_policy=BackfillPolicy.single_run())


@asset(**kw)
def raw_bars() -> None:
    return None


@asset(deps=[raw_bars], **kw)
def features() -> None:
    return None


@asset(deps=[raw_bars], **kw)
def labels() -> None:
    return None


@asset(deps=[raw_bars], **kw)
def specialists() -> None:
    return None


build = define_asset_job("build", selection="*", partitions_def=parts)
defs = Definitions(assets=[raw_bars, features, labels, specialists], jobs=[build])
'''


# ---------------------------------------------------------------- set-up helpers

def write_bare(folder: Path, y0: int, y1: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bare_defs.py").write_text(BARE_MODULE.format(y0=y0, y_end=y1 + 1))
    return folder


def write_settings(tmp: Path, symbols: list[str] | int, y0: int, y1: int, per_group: int = 1) -> Path:
    cfg = tmp / "settings.yaml"
    cfg.write_text(json.dumps({
        "paths": {"data": str(tmp / "data"), "reports": str(tmp / "reports"), "models": str(tmp / "models")},
        "years": {"start": y0, "end": y1},
        "universe": {"source": "synthetic", "synthetic": {"symbols": symbols, "seed": 7, "end_date": f"{y1}-12-31"}},
        "partitions": {"symbols_per_group": per_group},
    }))
    return cfg


def env_for(kind: str, tmp: Path, bare: Path, cfg: Path | None) -> dict:
    env = {**os.environ, "DAGSTER_HOME": str(tmp / "home")}
    if kind == "ours":
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["PIPELINE_CONFIG"] = str(cfg)
    else:
        env["PYTHONPATH"] = str(bare)
        env.pop("PIPELINE_CONFIG", None)
    return env


def register(kind: str, env: dict, symbols: list[str]) -> None:
    """A fresh DAGSTER_HOME with the symbols registered (ours: our dagster.yaml, through the CLI's
    instance; bare: a stock instance), in a separate process, not timed."""
    code = ("from pipeline.instance import get_instance; from pipeline.symbols import register_symbols; "
            f"register_symbols(get_instance(), {symbols!r})" if kind == "ours" else
            "import os; from dagster import DagsterInstance; os.makedirs(os.environ['DAGSTER_HOME'], exist_ok=True); "
            f"DagsterInstance.get().add_dynamic_partitions('symbols', {symbols!r})")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, cwd=REPO)


# ---------------------------------------------------------------- (a) the CLI, one partition

def part_a(args, root: Path) -> dict:
    bare = write_bare(root / "bare_a", 2000, 2025)
    samples: dict[str, list[float]] = {"ours": [], "bare": []}
    for i in range(args.repeat + 1):  # sample 0 warms the file cache and numba's index, unrecorded
        for kind in ("ours", "bare"):
            tmp = root / f"a_{kind}_{i}"
            tmp.mkdir()
            cfg = write_settings(tmp, 4, 2000, 2025, args.symbols_per_group) if kind == "ours" else None
            env = env_for(kind, tmp, bare, cfg)
            register(kind, env, ["SYN000", "SYN001", "SYN002", "SYN003"])
            module = "pipeline.definitions" if kind == "ours" else "bare_defs"
            key = f"G{3 // args.symbols_per_group:04d}|2015" if kind == "ours" and args.symbols_per_group > 1 else "SYN003|2015"
            t0 = time.perf_counter()
            out = subprocess.run([DAGSTER, "asset", "materialize", "-m", module, "--select", "raw_bars",
                                  "--partition", key], env=env, cwd=REPO if kind == "ours" else bare,
                                 capture_output=True, text=True)
            sec = time.perf_counter() - t0
            if out.returncode:
                raise RuntimeError(f"(a) {kind} failed:\n{out.stderr[-3000:]}")
            if i:
                samples[kind].append(sec)
            print(f"(a) {kind} sample {i}: {sec:.2f} s", flush=True)
            shutil.rmtree(tmp, ignore_errors=True)
    ratios = [a / b for a, b in zip(samples["ours"], samples["bare"])]
    return {"ours": statistics.median(samples["ours"]), "bare": statistics.median(samples["bare"]),
            "ratio": statistics.median(ratios), "samples": samples}


# ---------------------------------------------------------------- (b), (c): phases in fresh processes

def _bare_run(module_dir: str, symbols: list[str], y0: int, y1: int) -> float:
    sys.path.insert(0, module_dir)
    from dagster import DagsterInstance

    import bare_defs
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    instance = DagsterInstance.get()
    job = bare_defs.defs.resolve_job_def("build")
    tags = {ASSET_PARTITION_RANGE_START_TAG: f"{symbols[0]}|{y0}", ASSET_PARTITION_RANGE_END_TAG: f"{symbols[-1]}|{y1}"}
    t0 = time.perf_counter()
    res = job.execute_in_process(instance=instance, tags=tags,
                                 run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}})
    sec = time.perf_counter() - t0
    assert res.success
    return sec


def _ours_run(symbols: list[str], y0: int, y1: int) -> dict:
    from pipeline.startup import prepare_process

    prepare_process()
    from pipeline.definitions import defs
    from pipeline.instance import get_instance
    from pipeline.runs import run_rectangle

    import resources.io_manager as io_manager

    # the IO manager's input reads (Delta scans of the upstream rows) are data movement, not
    # bookkeeping: timed here, in the benchmark only (the run records no metadata for inputs)
    read_s = [0.0]
    load_input = io_manager.DeltaTableIOManager.load_input

    def timed_load_input(self, context):
        t = time.perf_counter()
        try:
            return load_input(self, context)
        finally:
            read_s[0] += time.perf_counter() - t

    io_manager.DeltaTableIOManager.load_input = timed_load_input
    instance = get_instance()
    job = defs.resolve_job_def("historical_build_and_train")
    t0 = time.perf_counter()
    summary = run_rectangle(job, instance, symbols, list(range(y0, y1 + 1)), log_level="WARNING")
    sec = time.perf_counter() - t0
    return {"seconds": sec, "stage_s": sum(s.seconds for s in summary.values()),
            "write_s": sum(s.write_seconds for s in summary.values()), "read_s": read_s[0],
            "partitions": sum(s.partitions for s in summary.values()),
            "per_asset": {k: [v.partitions, round(v.seconds, 3), round(v.write_seconds, 3)] for k, v in summary.items()}}


def phase_run(args) -> dict:
    """One run over symbols x [y0, y1] (ours or bare); the process's wall from start is in `process_s`."""
    symbols = symbol_names(args.symbols)
    if args.kind == "bare":
        n = len(symbols) * (args.run_y1 - args.run_y0 + 1) * len(ASSETS)
        return {"seconds": _bare_run(args.bare, symbols, args.run_y0, args.run_y1), "partitions": n}
    return _ours_run(symbols, args.run_y0, args.run_y1)


def run_phase(kind: str, env: dict, args, n_symbols: int, y0: int, y1: int, bare: Path,
              profile: Path | None = None) -> dict:
    cmd = [sys.executable, *(["-m", "cProfile", "-o", str(profile)] if profile else []), __file__, "--phase", "run",
           "--kind", kind, "--symbols", str(n_symbols), "--run-years", f"{y0}-{y1}", "--bare", str(bare)]
    return run_json(cmd, f"{kind} run {y0}-{y1}", env=env, cwd=REPO)


def part_bc(args, root: Path) -> dict:
    """(b) the whole rebuild, then (c) the latest year, ours and bare alternating (fresh stores
    and instances per repeat)."""
    bare = write_bare(root / "bare_b", args.y0, args.y1)
    rows = {"b_ours": [], "b_bare": [], "c_ours": [], "c_bare": []}
    for i in range(args.repeat_b):
        for kind in ("ours", "bare"):
            n_symbols = args.bare_symbols if kind == "bare" else args.symbols
            if kind == "bare":  # as many dynamic keys as our groups
                n_symbols = -(-n_symbols // args.symbols_per_group)
            symbols = symbol_names(n_symbols)
            tmp = root / f"b_{kind}_{i}"
            tmp.mkdir()
            cfg = write_settings(tmp, symbols, args.y0, args.y1, args.symbols_per_group) if kind == "ours" else None
            env = env_for(kind, tmp, bare, cfg)
            register(kind, env, symbols)
            prof = root / f"b_{kind}_{i}.prof" if args.profile else None
            b = run_phase(kind, env, args, n_symbols, args.y0, args.y1, bare, prof)
            print(f"(b) {kind} {i}: {json.dumps(b)}", flush=True)
            c = run_phase(kind, env, args, n_symbols, args.y1, args.y1, bare)
            print(f"(c) {kind} {i}: {json.dumps(c)}", flush=True)
            rows[f"b_{kind}"].append(b)
            rows[f"c_{kind}"].append(c)
            if prof:
                shutil.copy(prof, REPO / "benchmarks" / "out" / prof.name) if (REPO / "benchmarks" / "out").is_dir() else None
            shutil.rmtree(tmp, ignore_errors=True)
    return rows


# ---------------------------------------------------------------- (d) the demo

def part_d(args, root: Path) -> dict:
    tmp = root / "demo"
    tmp.mkdir()
    shutil.copy(REPO / "dagster_project.yaml", tmp / "settings.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(tmp / "home"), "PIPELINE_CONFIG": str(tmp / "settings.yaml"),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "demo"], env=env, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"demo failed:\n{out.stderr[-4000:]}")
    inner = [ln for ln in out.stdout.splitlines() if ln.startswith("total wall time")]
    steps = [ln for ln in out.stdout.splitlines() if ln.split()[:1] and ln.split()[0] in ASSETS]
    print(out.stdout[-3000:], flush=True)
    return {"seconds": wall, "inner": inner[0] if inner else "", "steps": steps}


# ---------------------------------------------------------------- report

def med(xs, key):
    return statistics.median(x[key] for x in xs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--symbols", type=int, default=500)
    ap.add_argument("--years", default="2000-2025")
    ap.add_argument("--repeat", type=int, default=5, help="(a): samples per command")
    ap.add_argument("--repeat-b", type=int, default=1, help="(b), (c): rebuilds per kind")
    ap.add_argument("--bare-symbols", type=int, help="(b), (c): the bare project's symbols (default: --symbols)")
    ap.add_argument("--parts", default="a,b,c,d")
    ap.add_argument("--symbols-per-group", type=int, default=1, help="partitions.symbols_per_group of our project")
    ap.add_argument("--profile", action="store_true", help="(b): cProfile our rebuild into benchmarks/out/")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--phase", choices=["run"])
    ap.add_argument("--kind", choices=["ours", "bare"])
    ap.add_argument("--run-years")
    ap.add_argument("--bare")
    args = ap.parse_args()
    args.y0, args.y1 = (int(x) for x in args.years.split("-"))
    args.bare_symbols = args.bare_symbols or args.symbols
    if args.phase:
        args.run_y0, args.run_y1 = (int(x) for x in args.run_years.split("-"))
        print(json.dumps(phase_run(args)))
        return 0
    parts = set(args.parts.split(","))
    res: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-orch-") as tmp:
        root = Path(tmp)
        if "a" in parts:
            res["a"] = part_a(args, root)
            print("(a)", res["a"], flush=True)
        if parts & {"b", "c"}:
            res["bc"] = part_bc(args, root)
        if "d" in parts:
            res["d"] = part_d(args, root)
            print("(d)", res["d"], flush=True)

    n_years = args.y1 - args.y0 + 1
    cmd = (f"python benchmarks/bench_orchestration.py --symbols {args.symbols} --years {args.years} "
           f"--repeat {args.repeat} --repeat-b {args.repeat_b} --parts {args.parts}"
           + (f" --bare-symbols {args.bare_symbols}" if args.bare_symbols != args.symbols else "")
           + (f" --symbols-per-group {args.symbols_per_group}" if args.symbols_per_group > 1 else ""))
    lines = [f"### Orchestration overhead against a bare Dagster project ({dt.date.today()})", "",
             f"Machine: {machine()}. Command: `{cmd}`. Ours and the bare project (same partitions, four trivial "
             "assets returning None, stock SQLite instance) alternate; medians.", "",
             "| what | ours | bare Dagster | ratio | target | met? |", "|---|---:|---:|---:|---|---|"]
    notes = []
    if "a" in res:
        a = res["a"]
        lines.append(f"| (a) `dagster asset materialize --select raw_bars --partition SYN003\\|2015`, s ({args.repeat} samples each) | "
                     f"{a['ours']:.2f} | {a['bare']:.2f} | {a['ratio']:.2f}x | <= 1.3x bare | {'yes' if a['ratio'] <= 1.3 else 'NO'} |")
    if "bc" in res:
        r = res["bc"]
        bo, bb, co, cb = r["b_ours"], r["b_bare"], r["c_ours"], r["c_bare"]
        parts_n = med(bo, "partitions")
        book = [(x["seconds"] - x["stage_s"] - x["write_s"] - x.get("read_s", 0.0)) / x["partitions"] * 1e3 for x in bo]
        bare_pp = [x["seconds"] / x["partitions"] * 1e3 for x in bb]
        full = args.symbols == 500 and n_years == 26
        t_rebuild = "<= 45 s at 500 x 26" + ("" if full else " (not this size)")
        # with --bare-symbols the bare project ran a smaller rectangle: scale its wall per partition
        same = "" if args.bare_symbols == args.symbols else f" (bare: {args.bare_symbols} symbols, scaled per partition)"
        bare_b = med(bb, "seconds") * med(bo, "partitions") / med(bb, "partitions")
        bare_c = med(cb, "seconds") * med(co, "partitions") / med(cb, "partitions")
        lines.append(f"| (b) rebuild {args.symbols} x {n_years}, 4 assets ({parts_n:,.0f} partition materializations), run wall s{same} | "
                     f"{med(bo, 'seconds'):.1f} | {bare_b:.1f} | {med(bo, 'seconds') / bare_b:.2f}x | "
                     f"{t_rebuild} | {('yes' if med(bo, 'seconds') <= 45 else 'NO') if full else 'n/a'} |")
        lines.append(f"| (b) bookkeeping per partition, ms (ours: wall - stage - writes - input reads) | {statistics.median(book):.2f} | "
                     f"{statistics.median(bare_pp):.2f} | {statistics.median(book) / statistics.median(bare_pp):.2f}x | <= 0.5 ms | "
                     f"{'yes' if statistics.median(book) <= 0.5 else 'NO'} |")
        per_sy = [(x["seconds"] - x["stage_s"] - x["write_s"] - x.get("read_s", 0.0)) / (args.symbols * n_years) * 1e3
                  for x in bo]
        lines.append(f"| (b) bookkeeping per symbol-year (4 assets), ms | {statistics.median(per_sy):.3f} | - | - | "
                     f"<= 0.3 ms | {'yes' if statistics.median(per_sy) <= 0.3 else 'NO'} |")
        lines.append(f"| (c) nightly: {args.y1} of {args.symbols} symbols, 4 assets, run wall s{same} | {med(co, 'seconds'):.1f} | "
                     f"{bare_c:.1f} | {med(co, 'seconds') / bare_c:.2f}x | <= 10 s | "
                     f"{'yes' if med(co, 'seconds') <= 10 else 'NO'} |")
        lines.append(f"| (c) nightly, the whole process (imports, instance) s{' (bare: unscaled, its own size)' if same else ''} | "
                     f"{med(co, 'process_s'):.1f} | {med(cb, 'process_s'):.1f} | {med(co, 'process_s') / med(cb, 'process_s'):.2f}x | "
                     f"<= 10 s | {'yes' if med(co, 'process_s') <= 10 else 'NO'} |")
        x = bo[len(bo) // 2]
        notes.append(f"(b) breakdown of our rebuild: wall {x['seconds']:.1f} s = stage compute {x['stage_s']:.1f} s + "
                     f"Delta writes {x['write_s']:.1f} s + input reads {x.get('read_s', 0.0):.1f} s + bookkeeping "
                     f"{x['seconds'] - x['stage_s'] - x['write_s'] - x.get('read_s', 0.0):.1f} s; "
                     f"per asset [partitions, stage s, write s]: {x['per_asset']}.")
        y = co[len(co) // 2]
        notes.append(f"(c) breakdown of our nightly run: wall {y['seconds']:.1f} s = stage compute {y['stage_s']:.1f} s + "
                     f"writes {y['write_s']:.1f} s + input reads {y.get('read_s', 0.0):.1f} s + bookkeeping "
                     f"{y['seconds'] - y['stage_s'] - y['write_s'] - y.get('read_s', 0.0):.1f} s.")
    if "d" in res:
        d = res["d"]
        lines.append(f"| (d) `python -m pipeline.cli demo`, shipped settings, fresh DAGSTER_HOME, s | {d['seconds']:.1f} | - | - | "
                     f"<= 40 s | {'yes' if d['seconds'] <= 40 else 'NO'} |")
        notes.append(f"(d) demo: {d['inner']}; build steps (partitions, rows, step s): {'; '.join(' '.join(s.split()) for s in d['steps'])}.")
    lines += ["", *notes, ""]
    emit(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
