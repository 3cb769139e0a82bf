"""Honesty on real data: out-of-sample AUC, Brier and IC of the meta model on the
real daily series shipped in packages (GOOG 2004-2013, S&P 500 and NASDAQ 1999-2018).

The whole pipeline runs through Dagster in a fresh DAGSTER_HOME: raw_bars, features,
labels, specialists (one single-run backfill), then regime, cv_report and meta_model for
every test year (walk-forward: the model of year Y is trained on labels known before Y).
The spread is over test years; the meta model (logistic regression + isotonic calibration
on purged folds) is deterministic, so a spread over seeds would be zero for it alone.

With --seeds 0,1,2 the LSTM specialist joins (lstm_job for every year from --lstm-from,
`lstm.seed` = each seed, a short CPU budget: --lstm-steps), the meta models are retrained on
its out-of-sample scores, and the table adds the spread over seeds: per seed, the mean over
test years; then the mean and the standard deviation of those means across seeds.

Usage: python benchmarks/honesty_real_data.py [--first-test-year 2006] [--seeds 0,1,2] [--record] [--json PATH]
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import configured_instance, emit, machine, parser  # noqa: E402


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--first-test-year", type=int, default=2006)
    ap.add_argument("--last-year", type=int, default=2018)
    ap.add_argument("--seeds", help="comma-separated LSTM seeds: add the LSTM and report the spread over seeds")
    ap.add_argument("--lstm-from", type=int, default=2002, help="first year the LSTM is trained for")
    ap.add_argument("--lstm-steps", type=int, default=60, help="LSTM max_steps per year (CPU budget)")
    args = ap.parse_args()
    seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else [None]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = {
            "paths": {"data": str(tmp / "data"), "reports": str(tmp / "reports"), "models": str(tmp / "models")},
            "years": {"start": 1999, "end": args.last_year},
            "universe": {"source": "packaged", "packaged": {"symbols": ["GOOG", "SP500", "NASDAQ"]}},
            "lstm": {"max_steps": args.lstm_steps, "seed": 0},
        }
        _, settings, instance = configured_instance(tmp, base)
        from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

        from dagster import Definitions

        from config.settings import read_settings
        from pipeline.definitions import ALL_ASSETS, build_resources, defs
        from pipeline.runs import run_rectangle

        years = list(range(1999, args.last_year + 1))
        quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
        run_rectangle(defs.resolve_job_def("historical_build_and_train"), instance, ["GOOG", "SP500", "NASDAQ"], years,
                      log_level="WARNING")
        test_years = list(range(args.first_test_year, args.last_year + 1))
        per_seed = []  # per seed: {h: (n, auc[], brier[], ic[], base_brier)}
        for seed in seeds:
            if seed is not None:  # the LSTM of this seed for every year, before the meta models
                seed_cfg = tmp / f"settings_seed{seed}.yaml"  # settings are cached per file: one file per seed
                # each seed is its own experiment (its LSTM, meta models, predictions and reports)
                seed_cfg.write_text(json.dumps({**base, "experiment": f"seed{seed}", "lstm": {**base["lstm"], "seed": seed}}))
                from dagster import materialize

                from pipeline.definitions import ALL_ASSETS, build_resources

                for y in range(args.lstm_from, args.last_year + 1):  # walk-forward, in order
                    assert materialize(ALL_ASSETS, selection=["lstm_model"], instance=instance, run_config=quiet,
                                       resources=build_resources(str(seed_cfg)), partition_key=str(y)).success
            run_settings = settings if seed is None else read_settings(seed_cfg)
            run_defs = defs if seed is None else Definitions(assets=ALL_ASSETS, jobs=defs.jobs, executor=defs.executor,
                                                             resources=build_resources(str(seed_cfg)))
            run_defs.resolve_job_def("yearly_stages").execute_in_process(
                instance=instance, run_config=quiet,
                tags={ASSET_PARTITION_RANGE_START_TAG: "2001", ASSET_PARTITION_RANGE_END_TAG: str(args.last_year)})
            out = {}
            for h in settings.labels.horizons:
                metrics = [json.loads((run_settings.stage_reports_dir("meta_model") / f"h{h}_{y}.json").read_text())
                           for y in test_years if (run_settings.stage_reports_dir("meta_model") / f"h{h}_{y}.json").exists()]
                auc = np.array([m["auc"] for m in metrics if m.get("auc") is not None])
                brier = np.array([m["brier"] for m in metrics])
                ic = np.array([m["ic"] for m in metrics if m.get("ic") is not None])
                rate = np.array([m["positives"] / m["n"] for m in metrics])
                out[h] = (len(metrics), auc, brier, ic, np.mean(rate * (1 - rate)))
            lstm_used = [h for h in settings.labels.horizons
                         if any("lstm_score" in json.loads(p.read_text())["features"]
                                for p in (run_settings.models_dir).glob(f"meta_h{h}_*.json"))]
            per_seed.append((seed, out, lstm_used))
        rows = [(h, *per_seed[0][1][h]) for h in settings.labels.horizons]
    lines = [f"### Honesty on real data: meta model out of sample (GOOG, SP500, NASDAQ) ({dt.date.today()})", "",
             f"Machine: {machine()}. Command: `python benchmarks/honesty_real_data.py --first-test-year "
             f"{args.first_test_year} --last-year {args.last_year}`. Walk-forward: each test year's model is trained on "
             "labels known before that year. Spread = standard deviation over test years.", "",
             "| horizon | test years | AUC mean +- sd | Brier mean +- sd | Brier of the base rate | IC mean +- sd |",
             "|---|---:|---:|---:|---:|---:|"]
    for h, n, auc, brier, ic, base_brier in rows:
        lines.append(f"| {h} | {n} | {auc.mean():.3f} +- {auc.std():.3f} | {brier.mean():.4f} +- {brier.std():.4f} | "
                     f"{base_brier:.4f} | {ic.mean():+.3f} +- {ic.std():.3f} |")
    if seeds != [None]:
        lines += ["", f"With the LSTM specialist (lstm_job {args.lstm_from}-{args.last_year}, max_steps {args.lstm_steps} "
                  f"per year on CPU), seeds {args.seeds}: per seed the mean over test years; spread = sd across seeds.", "",
                  "| horizon | LSTM used by the meta models | AUC per seed | AUC mean +- sd over seeds | Brier mean +- sd | IC mean +- sd |",
                  "|---|---|---|---:|---:|---:|"]
        for h in [r[0] for r in rows]:
            aucs = np.array([o[h][1].mean() for _, o, _ in per_seed])
            briers = np.array([o[h][2].mean() for _, o, _ in per_seed])
            ics = np.array([o[h][3].mean() for _, o, _ in per_seed])
            used = all(h in u for _, _, u in per_seed)
            lines.append(f"| {h} | {'yes' if used else 'not in every seed'} | {', '.join(f'{a:.3f}' for a in aucs)} | "
                         f"{aucs.mean():.3f} +- {aucs.std(ddof=1) if len(aucs) > 1 else 0.0:.3f} | "
                         f"{briers.mean():.4f} +- {briers.std(ddof=1) if len(briers) > 1 else 0.0:.4f} | "
                         f"{ics.mean():+.3f} +- {ics.std(ddof=1) if len(ics) > 1 else 0.0:.3f} |")
        lines.append("")
        lines.append("The first table is the first seed's run.")
    lines += ["", "As measured: an AUC near 0.5 and an IC near 0 are the honest answer for daily index and "
              "single-stock prices with these specialists.", ""]
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "horizons": {
            str(h): {"test_years": n, "auc": auc.tolist(), "brier": brier.tolist(), "ic": ic.tolist(), "base_brier": base_brier}
            for h, n, auc, brier, ic, base_brier in rows}}, indent=1))
    emit(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
