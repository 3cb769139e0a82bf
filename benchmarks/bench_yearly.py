"""Time the yearly stages (cv_report, meta_model, evaluation) on a built store.

    python benchmarks/bench_yearly.py --years 2022..2026 [--stages cv_report,meta_model,evaluation]
        [--workers N] [--profile STAGE]
    python benchmarks/bench_yearly.py --years 2022..2026 --compare-c-search --repeats 2 --workers 1
    python benchmarks/bench_yearly.py --years 2022..2026 --compare-solver --repeats 2 --workers 1

Reads the store the settings name (PIPELINE_CONFIG, default dagster_project.yaml: the demo's,
after `python -m pipeline.cli demo`); a larger synthetic market is built the same way with a
settings file of N synthetic symbols, `python -m pipeline.cli build-features` and
`python -m pipeline.cli train-meta --years A-B` (regime, meta_model, predictions through
Dagster). Writes the stages' reports and models as the assets do. Prints one JSON line per
stage (seconds, years); --compare-c-search runs meta_model with the old nested C search
(c_search=per_fold) and the C searched once, interleaved in one process, with the mean
out-of-sample AUC and IC per horizon of each (the planted market: universe.synthetic.planted).

A fresh store of N synthetic symbols, built and timed in one command (the goal "the yearly
stages over 500 symbols x 26 years <= 5 minutes"):

    python benchmarks/bench_yearly.py --build --symbols 500 --years 2000..2025 [--symbols-per-group 50]
        [--via job|commands] [--root DIR] [--reuse DIR] [--record] [--json PATH]

  build   (timed apart, not against the goal) a settings file in a temp folder (or --root DIR,
          kept): N synthetic symbols (benchmarks.common.symbol_names) with the shipped planted
          signal (universe.synthetic.planted 0.1, linear, h7), the years, symbol groups of
          --symbols-per-group; then `python -m pipeline.cli build-features` (raw_bars, features,
          labels, specialists of every symbol x year) in a fresh process, with a fresh DAGSTER_HOME
  yearly  --via job (default): the `yearly_stages` job (regime, cv_report, meta_model,
          predictions, backtest, evaluation) over all the years in ONE run, as
          build_chain_sensor / pipeline.runs.run_graph launch it after a build, in a fresh
          process: each step's seconds (Dagster's step stats), the run's wall and the
          process's wall (imports included); --via commands: what a user types instead,
          `python -m pipeline.cli train-meta`, `backtest`, `evaluate` (each a fresh process;
          cv_report has no command and is then run in process through build_cv_report, as
          its asset does)

--quality DIR[,DIR2] reads what the yearly stages of kept stores found (per horizon: the meta
model's mean out-of-sample AUC and IC, the evaluation's overall AUC / IC / rank IC / ICIR,
cv_report's mean isotonic AUC, and with two stores the fits whose chosen C differ): the
before / after check of a change to what the stages compute.

--reuse DIR measures the yearly stages again on a store a previous --root DIR built (no
build); with --reuse, `--profile STAGE` cProfiles that stage in this process on that store
(run_stage: the code the asset runs; --workers 1 keeps the fits in the profiled process).
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, load, parser, run_json, symbol_names  # noqa: E402

GOAL_S = 300.0  # the yearly stages over 500 symbols x 26 years
YEAR_ASSETS = ("regime", "cv_report", "meta_model", "predictions", "backtest", "evaluation")  # pipeline.jobs


def _years(text: str) -> list[int]:
    """`2000..2025` or `2000-2025` (or one year)."""
    a, sep, b = text.partition("..")
    if not sep:
        a, _, b = text.partition("-")
    return list(range(int(a), int(b or a) + 1))


def scans(settings, names):
    import polars as pl

    from resources.delta_store import DeltaStore

    out = {}
    for n in names:
        try:
            out[n] = DeltaStore(settings.table_root(n)).scan(n)
        except FileNotFoundError:  # an optional input not stored (as the io manager gives it)
            out[n] = pl.LazyFrame()
    return out


def run_stage(stage: str, settings, years: list[int], c_search: str = "once", solver: str = "newton-cholesky"):
    if stage == "cv_report":
        from domain.learning.cv_report import build_cv_report

        t = scans(settings, ("specialists", "labels"))
        return build_cv_report(t["specialists"], t["labels"], years, settings)
    if stage == "meta_model":
        from domain.learning.meta import build_meta_models

        t = scans(settings, ("specialists", "labels", "regime", "lstm_model", "features"))
        return build_meta_models(t["specialists"], t["labels"], t["regime"], t["lstm_model"], years, settings,
                                 features=t["features"], c_search=c_search, solver=solver)
    if stage == "evaluation":
        from domain.evaluation import build_evaluation

        t = scans(settings, ("predictions", "labels"))
        return build_evaluation(t["predictions"], t["labels"], settings.labels.horizons, years,
                                settings.stage_reports_dir("evaluation"), settings.evaluation.min_symbols_per_day,
                                settings.evaluation.year_figures)
    if stage == "regime":
        from domain.regime import regime_years

        return regime_years(scans(settings, ("raw_bars",))["raw_bars"], years, settings.regime.index_symbol)
    if stage == "predictions":
        from domain.learning.predictions import predict_years

        t = scans(settings, ("specialists", "regime", "lstm_model", "features"))
        return predict_years(t["specialists"], t["regime"], t["lstm_model"], years, settings.models_dir,
                             settings.labels.horizons, features=t["features"])
    if stage == "backtest":
        from domain.backtest import build_backtest

        t = scans(settings, ("predictions", "raw_bars"))
        return build_backtest(t["predictions"], t["raw_bars"], years, settings.backtest,
                              settings.stage_reports_dir("backtest"))
    raise ValueError(f"unknown stage {stage!r}")


def compare(settings, years: list[int], repeats: int, key: str, modes: tuple[str, ...], solver: str) -> None:
    """A/B in one process, interleaved: meta_model under each of `modes` of `key` (c_search:
    the old nested C search against the C searched once; solver: lbfgs against newton-cholesky)."""
    import os
    import subprocess

    for r in range(repeats):
        for mode in modes:
            kw = {"c_search": "once", "solver": solver, key: mode}
            t0 = time.perf_counter()
            table, _ = run_stage("meta_model", settings, years, **kw)
            wall = time.perf_counter() - t0
            load = os.getloadavg()[0]
            per_h = {f"h{h}": {"auc": round(float(g["auc"].mean()), 4), "ic": round(float(g["ic"].mean()), 4)}
                     for (h,), g in table.group_by("horizon", maintain_order=True)}
            per_fit = [{"year": int(row["year"]), "h": int(row["horizon"]), "auc": row["auc"], "ic": row["ic"]}
                       for row in table.iter_rows(named=True)]
            print(json.dumps({"repeat": r, **kw, "s": round(wall, 2), "load1": load, "fits": table.height,
                              "mean_over_years": per_h, "per_fit": per_fit}), flush=True)
    subprocess.run(["uptime"], check=False)


# ---------------------------------------------------------------- --build: a fresh store of N symbols


def write_settings(root: Path, n_symbols: int, y0: int, y1: int, per_group: int, workers: int | None) -> Path:
    """The settings of the measured store: N synthetic symbols with the shipped planted
    signal (dagster_project.yaml's), years y0..y1, symbol groups of `per_group`."""
    cfg = root / "settings.yaml"
    cfg.write_text(json.dumps({
        "paths": {"data": str(root / "data"), "reports": str(root / "reports"), "models": str(root / "models")},
        "years": {"start": y0, "end": y1},
        "universe": {"source": "synthetic", "synthetic": {
            "symbols": symbol_names(n_symbols), "seed": 7, "end_date": f"{y1}-12-31",
            "planted": {"strength": 0.1, "kind": "linear", "horizon": 7}}},
        "partitions": {"symbols_per_group": per_group},
        "automation": {"build_chain_sensor": False},  # nothing launches runs behind the benchmark
        **({"build": {"workers": workers}} if workers else {}),
    }))
    return cfg


def env_for(root: Path) -> dict:
    return {**os.environ, "DAGSTER_HOME": str(root / "home"), "PIPELINE_CONFIG": str(root / "settings.yaml"),
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def timed_process(cmd: list[str], what: str, env: dict) -> float:
    """Run `cmd` (a fresh process, output to this one's stderr); its wall seconds."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=REPO, stdout=sys.stderr, stderr=sys.stderr, check=False)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"{what} failed (exit {out.returncode})")
    return wall


def build_store(root: Path, years: list[int]) -> dict:
    """raw_bars, features, labels, specialists of every symbol x year: `pipeline.cli build-features`."""
    la = load()
    wall = timed_process([sys.executable, "-m", "pipeline.cli", "build-features", "--years", f"{years[0]}-{years[-1]}"],
                         "build-features", env_for(root))
    return {"s": wall, "load": [la, load()]}


def phase_job(years: list[int]) -> dict:
    """In the child process: the yearly_stages job over `years` in one run (as the chain
    launches it); the run's wall and each step's seconds."""
    from pipeline.startup import prepare_process

    prepare_process()
    from pipeline.chain import year_range_tags
    from pipeline.definitions import defs
    from pipeline.instance import get_instance
    from pipeline.run_report import console_run_config
    from pipeline.runs import raise_if_failed

    instance = get_instance()
    job = defs.resolve_job_def("yearly_stages")
    t0 = time.perf_counter()
    res = job.execute_in_process(instance=instance, tags=year_range_tags(years), run_config=console_run_config("WARNING"),
                                 raise_on_error=False)
    wall = time.perf_counter() - t0
    raise_if_failed(res, f"yearly_stages {years[0]}..{years[-1]}")
    steps = {s.step_key: round(s.end_time - s.start_time, 3) for s in instance.get_run_step_stats(res.run_id)
             if s.start_time and s.end_time}
    return {"run_s": wall, "steps": steps}


def yearly_job(root: Path, years: list[int]) -> dict:
    la = load()
    res = run_json([sys.executable, __file__, "--phase", "job", "--years", f"{years[0]}..{years[-1]}"],
                   "yearly_stages", env=env_for(root), cwd=REPO)
    return {**res, "load": [la, load()]}


def yearly_commands(root: Path, years: list[int]) -> dict:
    """train-meta, backtest, evaluate as a user types them (fresh processes), and cv_report
    (no command) in process through build_cv_report."""
    env, span = env_for(root), f"{years[0]}-{years[-1]}"
    la = load()
    walls = {}
    for cmd in ("train-meta", "backtest", "evaluate"):
        walls[cmd] = timed_process([sys.executable, "-m", "pipeline.cli", cmd, "--years", span], cmd, env)
        print(f"{cmd}: {walls[cmd]:.1f} s (load {load()})", file=sys.stderr, flush=True)
    res = run_json([sys.executable, __file__, "--phase", "cv_report", "--years", f"{years[0]}..{years[-1]}"],
                   "cv_report", env=env, cwd=REPO)
    walls["cv_report (in process)"] = res["s"]
    return {"commands": walls, "load": [la, load()]}


def phase_stage(stage: str, years: list[int]) -> dict:
    from config.settings import load_settings

    settings = load_settings()
    t0 = time.perf_counter()
    run_stage(stage, settings, years)
    return {"s": time.perf_counter() - t0}


def bench_built(args, years: list[int]) -> None:
    """--build / --reuse: the store of --symbols synthetic symbols, then the yearly stages."""
    keep = args.root or args.reuse
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="bench_yearly_"))
    if args.reuse and (root / "settings.yaml").exists():  # the store's own size, not the flags'
        stored = json.loads((root / "settings.yaml").read_text())
        args.symbols = len(stored["universe"]["synthetic"]["symbols"])
        args.symbols_per_group = stored["partitions"]["symbols_per_group"]
    n = args.symbols
    report = Report(f"yearly stages: {n} symbols x {years[0]}-{years[-1]}, a fresh store", args)
    figures: dict = {"symbols": n, "years": [years[0], years[-1]], "symbols_per_group": args.symbols_per_group}
    try:
        if args.reuse:
            if not (root / "settings.yaml").exists():
                raise SystemExit(f"--reuse {root}: no settings.yaml there (build one with --build --root DIR)")
        else:
            root.mkdir(parents=True, exist_ok=True)
            write_settings(root, n, years[0], years[-1], args.symbols_per_group, args.workers)
            b = build_store(root, years)
            figures["build"] = b
            print(f"build: {b['s']:.1f} s (load {b['load']})", file=sys.stderr, flush=True)
        if args.profile:
            os.environ.update({k: v for k, v in env_for(root).items() if k in ("DAGSTER_HOME", "PIPELINE_CONFIG")})
            from config.settings import load_settings

            settings = load_settings()
            if args.workers:
                settings = settings.model_copy(update={"build": settings.build.model_copy(update={"workers": args.workers})})
            prof = cProfile.Profile()
            la = load()
            t0 = time.perf_counter()
            prof.enable()
            run_stage(args.profile, settings, years)
            prof.disable()
            wall = time.perf_counter() - t0
            figures["profile"] = {"stage": args.profile, "s": wall, "load": [la, load()]}
            report.table(["stage (profiled, in process)", "seconds", "load at start", "load at end"],
                         [[args.profile, f"{wall:.1f}", " ".join(map(str, la)), " ".join(map(str, load()))]])
            pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        elif args.via == "job":
            r = yearly_job(root, years)
            figures["yearly"] = r
            steps = r["steps"]
            rows = [[a, f"{steps[a]:.1f}" if a in steps else "-"] for a in YEAR_ASSETS]
            rows += [["steps, sum", f"{sum(steps.values()):.1f}"], ["the run (execute_in_process)", f"{r['run_s']:.1f}"],
                     ["the process (imports included)", f"{r['process_s']:.1f}"]]
            report.table(["yearly_stages, one run", "seconds"], rows)
            total = r["process_s"]
            met = "yes" if total <= GOAL_S else "no"
            b = figures.get("build")
            report.note((f"Build (build-features, not against the goal): {b['s']:.1f} s at load {b['load']}; " if b else
                         "No build (--reuse); ") + f"yearly at load {r['load']}.")
            report.result(f"yearly stages over {n} symbols x {len(years)} years", "<= 5 min",
                          f"{total:.0f} s (" + ", ".join(f"{a} {steps.get(a, 0):.0f}" for a in YEAR_ASSETS) + ")", met)
        else:
            r = yearly_commands(root, years)
            figures["yearly"] = r
            rows = [[k, f"{v:.1f}"] for k, v in r["commands"].items()] + [["sum", f"{sum(r['commands'].values()):.1f}"]]
            report.table(["command (fresh process)", "seconds"], rows)
            report.note(f"Load {r['load']}.")
        report.figure("run", figures)
        print(json.dumps(figures), flush=True)
        report.finish()
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def quality(root: Path) -> dict:
    """What the yearly stages of a kept store found, per horizon, from its reports and model
    sidecars: the meta model's out-of-sample AUC and IC (mean over the years), the
    evaluation's overall AUC, IC, rank IC and ICIR, cv_report's isotonic AUC (mean over the
    specialists and years), and each fit's chosen C (to count the fits whose C changed)."""
    import statistics

    def mean(values) -> float | None:
        values = [v for v in values if v is not None]
        return round(statistics.fmean(values), 4) if values else None

    settings = json.loads((root / "settings.yaml").read_text())
    reports = Path(settings["paths"]["reports"]) / "default"
    models = Path(settings["paths"]["models"]) / "default"
    overall = json.loads((reports / "evaluation" / "overall.json").read_text())
    out: dict = {}
    for key in [k for k in overall if k.startswith("h") and k[1:].isdigit()]:
        metas = [json.loads(f.read_text()) for f in sorted((reports / "meta_model").glob(f"{key}_*.json"))]
        cvs = [json.loads(f.read_text())["summary"] for f in sorted((reports / "cv_report" / key).glob("*.json"))]
        out[key] = {
            "meta_auc": mean(m["auc"] for m in metas),
            "meta_ic": mean(m["ic"] for m in metas),
            **{f"eval_{m}": mean([overall[key][m]]) for m in ("auc", "ic", "rank_ic", "icir")},
            "cv_iso_auc": mean(m["isotonic"]["auc"] for s in cvs for m in s.values()),
            "C": {f.stem.rsplit("_", 1)[1]: json.loads(f.read_text()).get("C")
                  for f in sorted(models.glob(f"meta_{key}_*.json"))},
        }
    return out


def compare_quality(dirs: list[str], report) -> None:
    """--quality DIR[,DIR2]: the table of `quality` per store (DIR2: after), and the fits whose C differ."""
    q = [quality(Path(d)) for d in dirs]
    cols = ("meta_auc", "meta_ic", "eval_auc", "eval_ic", "eval_rank_ic", "eval_icir", "cv_iso_auc")
    rows = []
    for h in q[0]:
        for name, one in zip(dirs, q):
            rows.append([h, name, *["n/a" if one[h][c] is None else f"{one[h][c]:.4f}" for c in cols]])
        if len(q) == 2:
            a, b = q[0][h]["C"], q[1][h]["C"]
            rows.append([h, "fits whose C changed", f"{sum(a[y] != b.get(y) for y in a)} of {len(a)}", *[""] * (len(cols) - 1)])
    report.table(["horizon", "store", *cols], rows)
    report.figure("quality", q)
    print(json.dumps(q), flush=True)
    report.finish()


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--years", default="2022..2026", help="A..B or A-B")
    ap.add_argument("--build", action="store_true",
                    help="build a fresh store of --symbols synthetic symbols x --years in a temp folder (timed apart), "
                         "then time the yearly stages on it")
    ap.add_argument("--symbols", type=int, default=500, help="with --build: synthetic symbols (default 500)")
    ap.add_argument("--symbols-per-group", type=int, default=50,
                    help="with --build: partitions.symbols_per_group of the store (default 50)")
    ap.add_argument("--via", default="job", choices=("job", "commands"),
                    help="with --build/--reuse: the yearly_stages job in one run, or the CLI commands")
    ap.add_argument("--root", help="with --build: build in this folder and keep it (for --reuse)")
    ap.add_argument("--reuse", metavar="DIR", help="time the yearly stages on the store a --build --root DIR left")
    ap.add_argument("--phase", help=argparse_suppress())
    ap.add_argument("--stages", default="cv_report,meta_model,evaluation")
    ap.add_argument("--workers", type=int, default=None, help="override settings build.workers")
    ap.add_argument("--c-search", default="once", choices=("once", "per_fold"), help="meta_model's C search")
    ap.add_argument("--compare-c-search", action="store_true",
                    help="meta_model with c_search per_fold then once (interleaved, --repeats times): seconds and "
                         "the out-of-sample AUC / IC per horizon of each")
    ap.add_argument("--solver", default="newton-cholesky", choices=("newton-cholesky", "lbfgs"),
                    help="meta_model's logistic solver")
    ap.add_argument("--compare-solver", action="store_true",
                    help="meta_model with solver lbfgs then newton-cholesky (interleaved, --repeats times): seconds "
                         "and the out-of-sample AUC / IC per horizon and per fit of each")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--profile", default=None, help="cProfile this stage, print the top 25 by cumulative time")
    ap.add_argument("--quality", metavar="DIR[,DIR2]",
                    help="what kept stores' yearly stages found (meta AUC/IC, evaluation, cv_report AUC, C per fit); "
                         "two: before and after")
    args = ap.parse_args()
    if args.quality:
        compare_quality(args.quality.split(","), Report("yearly stages: what they found", args))
        return
    if args.phase:  # a child process of --build / --reuse
        years = _years(args.years)
        print(json.dumps(phase_job(years) if args.phase == "job" else phase_stage(args.phase, years)), flush=True)
        return
    if args.build or args.reuse:
        bench_built(args, _years(args.years))
        return
    from config.settings import load_settings

    settings = load_settings()
    if args.workers:
        settings = settings.model_copy(update={"build": settings.build.model_copy(update={"workers": args.workers})})
    years = _years(args.years)
    if args.compare_c_search:
        compare(settings, years, args.repeats, "c_search", ("per_fold", "once"), args.solver)
        return
    if args.compare_solver:
        compare(settings, years, args.repeats, "solver", ("lbfgs", "newton-cholesky"), args.solver)
        return
    report = Report(f"yearly stages on the settings' store, {years[0]}-{years[-1]}", args)
    rows = []
    for stage in args.stages.split(","):
        prof = cProfile.Profile() if stage == args.profile else None
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        run_stage(stage, settings, years, c_search=args.c_search, solver=args.solver)
        if prof:
            prof.disable()
        wall = time.perf_counter() - t0
        print(json.dumps({"stage": stage, "s": round(wall, 3), "years": [years[0], years[-1]]}), flush=True)
        rows.append([stage, f"{wall:.2f}"])
        report.figure(f"{stage} s", wall)
        if prof:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    report.table(["stage (in process)", "seconds"], rows)
    report.finish()


if __name__ == "__main__":
    main()
