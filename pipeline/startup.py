"""Process set-up for the entry points (the code location module and the CLI).

`prepare_process()` must run before NumPy, numba or torch loads: in a step worker it asks
to die with its parent (`die_with_parent`); it pins BLAS/OpenMP
threads (see `resources.threads`), asks the event log to take a partitioned output's
materializations as one batch (`pipeline/event_log.py`), and silences the beta warnings of
the Dagster features used on purpose. Values the user exported already win. Idempotent.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import warnings

from resources.threads import pin_worker_threads

EVENT_BATCH_SIZE = "1000"


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a process started by `multiprocessing` (a Dagster step worker), ask the kernel for
    SIGTERM when the parent dies: a killed `dagster asset materialize` then stops all its
    work instead of leaving step workers that write and hang. Linux only; elsewhere a no-op."""
    if multiprocessing.parent_process() is None or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None and os.getppid() != parent.pid and not _alive(parent.pid):
        os._exit(1)  # the parent died before the request took effect


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prepare_process() -> None:
    die_with_parent()
    pin_worker_threads()
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", EVENT_BATCH_SIZE)
    # Beta in Dagster 1.13 and used on purpose: single-run backfills and the halo mappings.
    warnings.filterwarnings(
        "ignore", message=".*(backfill_policy|MultiPartitionMapping|MultiToSingleDimensionPartitionMapping|allow_nonexistent_upstream_partitions).*"
    )
