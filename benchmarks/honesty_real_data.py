"""Honesty on real data (issue 6): out-of-sample AUC, Brier and IC of the meta model on the
real daily series shipped in packages (GOOG 2004-2013, S&P 500 and NASDAQ 1999-2018).

The whole pipeline runs through Dagster in a fresh DAGSTER_HOME: raw_bars, features,
labels, specialists (one single-run backfill), then regime, cv_report and meta_model for
every test year (walk-forward: the model of year Y is trained on labels known before Y).
The spread is over test years; the meta model (logistic regression + isotonic calibration
on purged folds) is deterministic, so a spread over seeds would be zero for it.

Usage: python benchmarks/honesty_real_data.py [--first-test-year 2006] [--record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import emit, machine  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--first-test-year", type=int, default=2006)
    ap.add_argument("--last-year", type=int, default=2018)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cfg = tmp / "settings.yaml"
        cfg.write_text(json.dumps({
            "paths": {"data": str(tmp / "data"), "reports": str(tmp / "reports"), "models": str(tmp / "models")},
            "years": {"start": 1999, "end": args.last_year},
            "universe": {"source": "packaged", "packaged": {"symbols": ["GOOG", "SP500", "NASDAQ"]}},
        }))
        os.environ["PIPELINE_CONFIG"] = str(cfg)
        os.environ["DAGSTER_HOME"] = str(tmp / "home")
        from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

        from pipeline.definitions import defs
        from pipeline.instance import get_instance
        from pipeline.runs import run_rectangle
        from pipeline.settings import load_settings
        from pipeline.symbols import sync_symbols

        settings = load_settings()
        instance = get_instance()
        sync_symbols(instance, settings)
        years = list(range(1999, args.last_year + 1))
        quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
        run_rectangle(defs.resolve_job_def("historical_build_and_train"), instance, ["GOOG", "SP500", "NASDAQ"], years,
                      log_level="WARNING")
        test_years = list(range(args.first_test_year, args.last_year + 1))
        defs.resolve_job_def("yearly_stages").execute_in_process(
            instance=instance, run_config=quiet,
            tags={ASSET_PARTITION_RANGE_START_TAG: "2001", ASSET_PARTITION_RANGE_END_TAG: str(args.last_year)})
        rows = []
        for h in settings.labels.horizons:
            metrics = [json.loads((settings.reports_dir / "meta" / f"h{h}_{y}.json").read_text())
                       for y in test_years if (settings.reports_dir / "meta" / f"h{h}_{y}.json").exists()]
            auc = np.array([m["auc"] for m in metrics if m.get("auc") is not None])
            brier = np.array([m["brier"] for m in metrics])
            ic = np.array([m["ic"] for m in metrics if m.get("ic") is not None])
            base = np.array([m["positives"] / m["n"] for m in metrics])
            rows.append((h, len(metrics), auc, brier, ic, np.mean(base * (1 - base))))
    lines = [f"### Honesty on real data: meta model out of sample (GOOG, SP500, NASDAQ) ({dt.date.today()})", "",
             f"Machine: {machine()}. Command: `python benchmarks/honesty_real_data.py --first-test-year "
             f"{args.first_test_year} --last-year {args.last_year}`. Walk-forward: each test year's model is trained on "
             "labels known before that year. Spread = standard deviation over test years.", "",
             "| horizon | test years | AUC mean +- sd | Brier mean +- sd | Brier of the base rate | IC mean +- sd |",
             "|---|---:|---:|---:|---:|---:|"]
    for h, n, auc, brier, ic, base_brier in rows:
        lines.append(f"| {h} | {n} | {auc.mean():.3f} +- {auc.std():.3f} | {brier.mean():.4f} +- {brier.std():.4f} | "
                     f"{base_brier:.4f} | {ic.mean():+.3f} +- {ic.std():.3f} |")
    lines += ["", "As measured: an AUC near 0.5 and an IC near 0 are the honest answer for daily index and "
              "single-stock prices with these specialists.", ""]
    emit(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
