"""Process set-up for the entry points (the code location module and the CLI).

`prepare_process()` must run before NumPy, numba or torch loads: it pins BLAS/OpenMP
threads (see `resources.threads`), asks the event log to take a partitioned output's
materializations as one batch (`pipeline/event_log.py`), and silences the beta warnings of
the Dagster features used on purpose. Values the user exported already win. Idempotent.
"""

from __future__ import annotations

import os
import warnings

from resources.threads import pin_worker_threads

EVENT_BATCH_SIZE = "1000"


def prepare_process() -> None:
    pin_worker_threads()
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", EVENT_BATCH_SIZE)
    # Beta in Dagster 1.13 and used on purpose: single-run backfills and the halo mappings.
    warnings.filterwarnings(
        "ignore", message=".*(backfill_policy|MultiPartitionMapping|allow_nonexistent_upstream_partitions).*"
    )
