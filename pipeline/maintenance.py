"""Maintenance: `vacuum_job` (Delta tables) and `prune_runs_job` (the Dagster run history),
with their schedules `weekly_vacuum` and `daily_prune_runs`.

`vacuum_job` runs DeltaStore.vacuum on every Delta table under `paths.data`: files that no
table version within `storage.vacuum_retention_hours` references, and files of killed
writers older than that, are deleted. Versions older than the retention may not be
readable afterwards (time travel to them fails); a model's recorded `table_versions` stay
readable for the retention after the next write of the table. The schedule (Sunday 03:00)
is off by default; `automation.vacuum_schedule: true` starts it with the daemon, or switch
it on in the UI.

`prune_runs_job` (and `python -m pipeline.cli prune-runs --older-than-days N`) deletes the
finished runs (success, failure, canceled) last updated more than `automation.run_retention_days`
ago, with their events (`instance.delete_run`) and, on the SQLite event log, their run
shard file `<run id>.db` (delete_run empties it but leaves the file). It keeps every run
that holds the latest materialization of an asset partition (deleting it would make Dagster
forget the partition is materialized) and every run not finished. The index and runs
databases do not shrink on disk: SQLite reuses their freed pages. The schedule (daily at
04:00) is off by default; `automation.prune_schedule: true` starts it with the daemon.
Schedule and sensor ticks are trimmed by Dagster itself (`retention:` in dagster.yaml,
pipeline/instance.py).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    job,
    op,
    schedule,
)

from config.settings import load_settings
from resources.project import ProjectResource


def vacuum_tables(data_dir, retention_hours: int) -> dict[str, int]:
    """Vacuum every table under `data_dir`; {asset: files removed}. Under delta-rs's minimum
    retention (168 h) its check is switched off: the setting is the user's decision."""
    from resources.delta_store import MIN_RETENTION_HOURS, DeltaStore

    enforce = retention_hours >= MIN_RETENTION_HOURS
    removed: dict[str, int] = {}
    # the shared tables, then each experiment's own (data/experiments/<name>/<asset>)
    for root in [Path(data_dir), *sorted(p for p in (Path(data_dir) / "experiments").glob("*") if p.is_dir())]:
        store, prefix = DeltaStore(root), "" if root == Path(data_dir) else f"experiments/{root.name}/"
        for asset in store.assets():
            removed[prefix + asset] = len(store.vacuum(asset, retention_hours=retention_hours,
                                                       enforce_retention_duration=enforce))
    return removed


@op(description="DeltaStore.vacuum on every table under paths.data (retention: storage.vacuum_retention_hours)")
def vacuum(context, project: ProjectResource) -> None:
    # no output: the IO manager stores asset values only; the result is in the run's log
    settings = project.settings()
    hours = settings.storage.vacuum_retention_hours
    removed = vacuum_tables(settings.data_dir, hours)
    context.log.info(f"vacuum ({hours} h retention): {sum(removed.values())} file(s) removed from "
                     f"{len(removed)} table(s): {removed}")


@job(description="Remove Delta table files older than storage.vacuum_retention_hours that no version references.")
def vacuum_job():
    vacuum()


def _dated_schedule(name: str, job, cron: str, on: bool, key: str):
    """A schedule of `job` at `cron`, running by default when the setting `on` says so; its
    run key is `key` and the scheduled date, so a repeated tick launches nothing twice."""
    @schedule(name=name, job=job, cron_schedule=cron,
              default_status=DefaultScheduleStatus.RUNNING if on else DefaultScheduleStatus.STOPPED)
    def _tick(context: ScheduleEvaluationContext):
        return RunRequest(run_key=f"{key}:{context.scheduled_execution_time:%Y-%m-%d}")

    return _tick


weekly_vacuum = _dated_schedule("weekly_vacuum", vacuum_job, "0 3 * * 0", load_settings().automation.vacuum_schedule,
                                "vacuum")


FINISHED = ("SUCCESS", "FAILURE", "CANCELED")


@dataclass
class PruneReport:
    """What `prune_runs` deleted (or, with dry_run, would delete)."""

    deleted: list[str] = field(default_factory=list)          # run ids
    kept_for_assets: list[str] = field(default_factory=list)  # old runs that hold a latest materialization
    bytes_freed: int = 0                                      # run shard files removed


def _latest_materialization_runs(instance) -> set[str]:
    """Run ids holding the latest materialization of some asset partition (or asset)."""
    from dagster import AssetRecordsFilter, DagsterEventType

    storage = instance.event_log_storage
    runs: set[str] = set()
    for key in storage.all_asset_keys():
        ids = set(storage.get_latest_storage_id_by_partition(key, DagsterEventType.ASSET_MATERIALIZATION).values())
        (record,) = instance.get_asset_records([key]) or [None]
        last = record.asset_entry.last_materialization_record if record else None
        if last is not None:
            ids.add(last.storage_id)
        ordered = sorted(ids)
        for i in range(0, len(ordered), 1000):
            chunk = ordered[i:i + 1000]
            got = instance.fetch_materializations(AssetRecordsFilter(asset_key=key, storage_ids=chunk), limit=len(chunk))
            runs.update(r.run_id for r in got.records)
    return runs


def prune_runs(instance, older_than_days: float, *, now: dt.datetime | None = None, dry_run: bool = False) -> PruneReport:
    """Delete the finished runs last updated before `now - older_than_days` (see the module
    docstring: runs holding a latest materialization stay)."""
    from dagster import DagsterRunStatus, RunsFilter

    if older_than_days < 0:
        raise ValueError(f"--older-than-days {older_than_days:g}: expected a number of days >= 0")
    now = now or dt.datetime.now(dt.timezone.utc)
    cutoff = now - dt.timedelta(days=older_than_days)
    old = instance.get_run_records(RunsFilter(statuses=[DagsterRunStatus(s) for s in FINISHED], updated_before=cutoff))
    report = PruneReport()
    if not old:
        return report
    keep = _latest_materialization_runs(instance)
    storage = instance.event_log_storage
    for record in old:
        run_id = record.dagster_run.run_id
        if run_id in keep:
            report.kept_for_assets.append(run_id)
            continue
        report.deleted.append(run_id)
        shard = storage.path_for_shard(run_id) if hasattr(storage, "path_for_shard") else None
        files = [f"{shard}{suffix}" for suffix in ("", "-wal", "-shm")] if shard else []
        report.bytes_freed += sum(os.path.getsize(f) for f in files if os.path.exists(f))
        if dry_run:
            continue
        instance.delete_run(run_id)
        for f in files:  # delete_run empties the run's shard but leaves the file
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass
    return report


@op(description="Delete finished runs older than automation.run_retention_days (keeps runs of latest materializations)")
def prune_old_runs(context, project: ProjectResource) -> None:
    days = project.settings().automation.run_retention_days
    report = prune_runs(context.instance, days)
    context.log.info(f"prune runs (> {days:g} days): deleted {len(report.deleted)} run(s), {report.bytes_freed:,} bytes "
                     f"of run shards; kept {len(report.kept_for_assets)} old run(s) holding latest materializations")


@job(description="Delete finished Dagster runs older than automation.run_retention_days, with their events.")
def prune_runs_job():
    prune_old_runs()


daily_prune_runs = _dated_schedule("daily_prune_runs", prune_runs_job, "0 4 * * *",
                                   load_settings().automation.prune_schedule, "prune-runs")
