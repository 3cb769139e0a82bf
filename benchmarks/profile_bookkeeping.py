"""Where a rebuild's Dagster bookkeeping goes: timers around Dagster's own
functions (no cProfile, so the figures are the unprofiled ones) during one rebuild of
`--symbols` x `--years` through the four symbol x year assets, in a temp folder.

    python benchmarks/profile_bookkeeping.py [--symbols 40] [--years 2000-2025] [--symbols-per-group N]
                                             [--record] [--json PATH]

Prints the run's wall / stage / write seconds and, per timed function, its total seconds
and calls (timers nest: e.g. `serialize_value` is inside `store_event_batch`).
"""

from __future__ import annotations

import collections
import functools
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_orchestration import _ours_run, write_settings  # noqa: E402
from benchmarks.common import Report, parser, symbol_names  # noqa: E402

SECONDS: dict[str, float] = collections.defaultdict(float)
CALLS: collections.Counter = collections.Counter()


def timed(owner, name: str, label: str) -> None:
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - t0
            CALLS[label] += 1

    setattr(owner, name, wrapper)


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--symbols", type=int, default=40)
    ap.add_argument("--years", default="2000-2025")
    ap.add_argument("--symbols-per-group", type=int, default=1, help="partitions.symbols_per_group")
    args = ap.parse_args()
    report = Report(f"Where the bookkeeping of a {args.symbols} x {args.years} rebuild goes", args)
    y0, y1 = (int(x) for x in args.years.split("-"))
    symbols = symbol_names(args.symbols)
    with tempfile.TemporaryDirectory(prefix="profile-bookkeeping-") as tmp:
        os.environ["PIPELINE_CONFIG"] = str(write_settings(Path(tmp), symbols, y0, y1, args.symbols_per_group))
        os.environ["DAGSTER_HOME"] = str(Path(tmp) / "home")
        import dagster._core.events as events
        import dagster._core.execution.context.data_version_cache as versions
        import dagster._core.execution.context.system as system
        import dagster._core.instance.runs.run_domain as run_domain
        import dagster._core.storage.event_log.sql_event_log as sql_event_log

        import pipeline.event_log as event_log
        from pipeline.instance import get_instance
        from pipeline.symbols import register_symbols

        import dagster._core.execution.plan.execute_step as execute_step
        import dagster._core.execution.plan.inputs as inputs

        import domain.checks as checks
        import resources.io_manager as io_manager

        register_symbols(get_instance(), symbols)
        timed(inputs.FromStepOutput, "load_input_object", "inputs loaded (mapping + our load_input)")
        timed(io_manager.DeltaTableIOManager, "load_input", "  our load_input (Delta reads)")
        timed(execute_step, "_store_output", "outputs stored (our handle_output + materialization events)")
        timed(io_manager.DeltaTableIOManager, "handle_output", "  our handle_output (Delta writes)")
        timed(execute_step, "_log_materialization_or_observation_events_for_asset", "  materialization events")
        for name in ("raw_bars", "features", "labels", "specialists"):  # they import it by name
            timed(importlib.import_module(f"assets.{name}"), "build_per_symbol", "stage compute (build_per_symbol)")
        timed(io_manager, "expand", "group keys expanded to symbol-years (expand, in the IO manager)")
        for name in ("unique_dates", "plausible_moves", "exchange_sessions", "finite_positive_prices"):
            timed(checks, name, f"raw_bars check {name}")
        timed(run_domain.RunDomain, "create_run", "run creation (planned events included)")
        timed(run_domain.RunDomain, "_log_asset_planned_events", "planned events")
        timed(system.StepExecutionContext, "asset_partitions_subset_for_input", "input partition mappings")
        timed(versions.DataVersionCache, "fetch_external_input_asset_version_info", "input data-version lookup")
        timed(events.DagsterEvent, "asset_materialization", "materialization events built and logged")
        timed(event_log.BatchedSqliteEventLogStorage, "store_event_batch", "store_event_batch")
        timed(event_log.BatchedSqliteEventLogStorage, "store_event", "store_event (one at a time)")
        timed(event_log.BatchedSqliteEventLogStorage, "_store_asset_event_tags", "  asset event tags")
        timed(sql_event_log, "serialize_value", "  serialize_value")
        run = _ours_run(symbols, y0, y1)
    print(json.dumps(run))
    n = run["partitions"]
    book = run["seconds"] - run["stage_s"] - run["write_s"]
    report.note(f"Run wall {run['seconds']:.2f} s = stage {run['stage_s']:.2f} s + writes {run['write_s']:.2f} s + bookkeeping "
                f"{book:.2f} s = {book / n * 1e3:.2f} ms per partition over {n:,} partitions. Timers nest.")
    report.table(["timed function", "seconds", "calls", "ms per partition"],
                 [[label, f"{SECONDS[label]:.3f}", CALLS[label], f"{SECONDS[label] / n * 1e3:.3f}"]
                  for label in sorted(SECONDS, key=SECONDS.get, reverse=True)])
    report.figure("run", run)
    report.figure("seconds", dict(SECONDS))
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
