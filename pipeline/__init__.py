"""The Dagster code location: Definitions, partitions, jobs, schedules, sensors, CLI.

Two modules here are leaves that the lower layers may import: `pipeline.settings` (the
validated project settings) and `pipeline.partitions` (the one partitions definition).
Everything else in this package sits on top of `assets` and `resources`.

Importing the package pins BLAS/OpenMP threads in worker processes before NumPy loads.
"""

import os as _os

from resources.threads import pin_worker_threads

pin_worker_threads()
# Hand a partitioned output's materializations to the event log as one batch (see
# pipeline/event_log.py); a user's own value wins.
_os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", "1000")

import warnings as _warnings

# Beta in Dagster 1.13 and used on purpose: single-run backfills and the halo mappings.
_warnings.filterwarnings(
    "ignore", message=".*(backfill_policy|MultiPartitionMapping|allow_nonexistent_upstream_partitions).*"
)
