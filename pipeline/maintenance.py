"""Table maintenance: `vacuum_job` and its weekly schedule `weekly_vacuum`.

`vacuum_job` runs DeltaStore.vacuum on every Delta table under `paths.data`: files that no
table version within `storage.vacuum_retention_hours` references, and files of killed
writers older than that, are deleted. Versions older than the retention may not be
readable afterwards (time travel to them fails); a model's recorded `table_versions` stay
readable for the retention after the next write of the table. The schedule (Sunday 03:00)
is off by default; `automation.vacuum_schedule: true` starts it with the daemon, or switch
it on in the UI.
"""

from __future__ import annotations

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

    store = DeltaStore(data_dir)
    enforce = retention_hours >= MIN_RETENTION_HOURS
    return {asset: len(store.vacuum(asset, retention_hours=retention_hours, enforce_retention_duration=enforce))
            for asset in store.assets()}


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


@schedule(
    name="weekly_vacuum",
    job=vacuum_job,
    cron_schedule="0 3 * * 0",
    default_status=DefaultScheduleStatus.RUNNING if load_settings().automation.vacuum_schedule
    else DefaultScheduleStatus.STOPPED,
)
def weekly_vacuum(context: ScheduleEvaluationContext):
    return RunRequest(run_key=f"vacuum:{context.scheduled_execution_time:%Y-%m-%d}")
