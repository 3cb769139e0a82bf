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
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time


def _years(text: str) -> list[int]:
    a, _, b = text.partition("..")
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--years", default="2022..2026")
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
    args = ap.parse_args()
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
        if prof:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
