"""How much the Dagster history (DAGSTER_HOME/history: runs.db, the event log's index.db and
one <run id>.db shard per run) grows per run, and what `prune-runs` gives back.

A fresh DAGSTER_HOME with the project's dagster.yaml; N runs of a small job: raw_bars of
S synthetic symbols x 1 year in one run (pipeline.runs-style single-run backfill); the
bytes of history/ before, after the runs, and after `prune_runs(older_than_days=0)` (the
last run stays: it holds the latest materializations).

    python benchmarks/event_log_growth.py [--runs 10] [--symbols 2] [--record] [--json PATH]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import Report, parser  # noqa: E402


def history_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in (home / "history").rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--symbols", type=int, default=2)
    args = ap.parse_args(argv)
    out = Report(f"Event-log growth: {args.runs} runs of raw_bars, {args.symbols} partitions each", args)
    tmp = Path(tempfile.mkdtemp(prefix="event_log_growth_"))
    symbols = [f"S{i:03d}" for i in range(args.symbols)]
    cfg = tmp / "settings.yaml"
    cfg.write_text(yaml.safe_dump({
        "paths": {"data": str(tmp / "data"), "reports": str(tmp / "reports"), "models": str(tmp / "models")},
        "years": {"start": 2001, "end": 2001},
        "universe": {"source": "synthetic", "synthetic": {"symbols": symbols, "seed": 3, "end_date": "2001-12-31"}},
    }))
    os.environ.update(PIPELINE_CONFIG=str(cfg), DAGSTER_HOME=str(tmp / "home"))

    from dagster import materialize
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    from assets.raw_bars import raw_bars
    from pipeline.definitions import build_resources
    from pipeline.instance import get_instance
    from pipeline.maintenance import prune_runs
    from pipeline.startup import prepare_process
    from pipeline.symbols import register_symbols

    prepare_process()
    instance = get_instance()
    register_symbols(instance, symbols)
    home = tmp / "home"
    tags = {ASSET_PARTITION_RANGE_START_TAG: f"{symbols[0]}|2001", ASSET_PARTITION_RANGE_END_TAG: f"{symbols[-1]}|2001"}
    resources = build_resources(str(cfg))
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    materialize([raw_bars], resources=resources, instance=instance, tags=tags, run_config=quiet)  # storages created, not counted
    before, t0 = history_bytes(home), time.perf_counter()
    for _ in range(args.runs):
        assert materialize([raw_bars], resources=resources, instance=instance, tags=tags, run_config=quiet).success
    seconds = time.perf_counter() - t0
    after = history_bytes(home)
    report = prune_runs(instance, 0)
    pruned = history_bytes(home)
    figures = {
        "runs": args.runs, "partitions_per_run": len(symbols), "seconds_per_run": round(seconds / args.runs, 3),
        "bytes_per_run": (after - before) // args.runs, "history_bytes_after_runs": after,
        "mb_per_minute_at_this_rate": round((after - before) / seconds * 60 / 1e6, 2),
        "runs_deleted_by_prune": len(report.deleted), "runs_kept": len(report.kept_for_assets),
        "history_bytes_after_prune": pruned, "shard_bytes_freed": report.bytes_freed,
    }
    out.table(["figure", "value"], [[k, f"{v:,}"] for k, v in figures.items()])
    for k, v in figures.items():
        out.figure(k, v)
    out.result("event-log growth per run", "(measured)",
               f"~{figures['bytes_per_run'] / 1e3:,.0f} KB per {len(symbols)}-partition `raw_bars` run "
               f"({figures['mb_per_minute_at_this_rate']} MB a minute back to back); `prune-runs` "
               f"{after / 1e6:.2f} -> {pruned / 1e6:.2f} MB", "measured")
    out.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
