"""Runs that will never end: a build run whose process was killed stays STARTED forever in
the run storage (SQLite has no worker to report it). The chain sensor must neither wait on
such a run nor hide it.

A run in flight is *stale* when
- it started more than `automation.max_run_hours` ago, or
- the instance is local (SQLite: runs execute on this machine) and the process that started
  it (the pid of its RUN_START event) is no longer alive.
`fail_stale_runs` marks each stale run FAILURE with the reason in the event log, so the UI
shows it as failed, and returns the reasons for the sensor's log and skip message.
"""

from __future__ import annotations

import os
import time

from dagster import DagsterEventType, DagsterInstance, DagsterRun


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def start_pid(instance: DagsterInstance, run_id: str) -> int | None:
    """The pid of the process that started `run_id` (its RUN_START event), if recorded."""
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.RUN_START):
        if entry.dagster_event is not None and entry.dagster_event.pid:
            return int(entry.dagster_event.pid)
    return None


def is_local(instance: DagsterInstance) -> bool:
    from dagster._core.storage.runs import SqliteRunStorage

    return isinstance(instance.run_storage, SqliteRunStorage)


def stale_reason(instance: DagsterInstance, run: DagsterRun, max_age_s: float, now: float | None = None) -> str | None:
    """Why `run` (queued, starting or started) will never end by itself, or None."""
    now = time.time() if now is None else now
    record = instance.get_run_record_by_id(run.run_id)
    started = (record.start_time if record and record.start_time else None) or \
        (record.create_timestamp.timestamp() if record else now)
    if now - started > max_age_s:
        return f"run {run.run_id} has been in flight {(now - started) / 3600:.1f} h (over the {max_age_s / 3600:g} h limit)"
    if is_local(instance):
        pid = start_pid(instance, run.run_id)
        if pid is not None and not process_alive(pid):
            return f"run {run.run_id}: its process {pid} is gone"
    return None


def fail_stale_runs(instance: DagsterInstance, runs: list[DagsterRun], max_age_s: float) -> tuple[list[DagsterRun], list[str]]:
    """(the runs still really in flight, the reasons of those marked FAILURE)."""
    alive, reasons = [], []
    for run in runs:
        reason = stale_reason(instance, run, max_age_s)
        if reason is None:
            alive.append(run)
            continue
        instance.report_run_failed(run, message=f"marked failed by build_chain_sensor: {reason}")
        reasons.append(reason)
    return alive, reasons
