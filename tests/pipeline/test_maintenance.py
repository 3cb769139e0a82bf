"""Run retention (pipeline.maintenance.prune_runs and `prune-runs`): old finished runs are
deleted with their events and their SQLite run shard, except the runs that hold the latest
materialization of an asset partition and runs not finished."""

from __future__ import annotations

import datetime as dt
import os
import uuid

import pytest
from dagster import AssetKey, DagsterRun, DagsterRunStatus, StaticPartitionsDefinition, asset, job, materialize, op

from pipeline.maintenance import prune_runs


@asset
def thing() -> int:
    return 1


@asset(partitions_def=StaticPartitionsDefinition(["a", "b"]))
def piece(context) -> int:
    return len(context.partition_key)


@op
def nothing() -> None:
    pass


@job
def op_only():
    nothing()


@pytest.fixture
def home(tmp_path, make_settings, monkeypatch):
    """A persistent DAGSTER_HOME with the project's dagster.yaml (sharded SQLite event log)."""
    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings()))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    from pipeline.instance import get_instance

    instance = get_instance()
    yield instance
    instance.dispose()


def test_old_runs_go_with_their_shard_but_runs_of_latest_materializations_and_unfinished_runs_stay(home):
    superseded = materialize([thing], instance=home).run_id
    latest = materialize([thing], instance=home).run_id
    part_a = materialize([piece], partition_key="a", instance=home).run_id
    part_b = materialize([piece], partition_key="b", instance=home).run_id
    plain = op_only.execute_in_process(instance=home).run_id
    running = DagsterRun(job_name="op_only", run_id=str(uuid.uuid4()), status=DagsterRunStatus.STARTED)
    home.add_run(running)
    shard = home.event_log_storage.path_for_shard
    assert all(os.path.exists(shard(r)) for r in (superseded, plain))

    assert prune_runs(home, 1).deleted == []  # nothing is a day old yet
    report = prune_runs(home, 1, now=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2))
    assert sorted(report.deleted) == sorted([superseded, plain])
    assert sorted(report.kept_for_assets) == sorted([latest, part_a, part_b])
    assert report.bytes_freed > 0
    assert home.get_run_by_id(superseded) is None and home.get_run_by_id(plain) is None
    assert not os.path.exists(shard(superseded)) and not os.path.exists(shard(plain))
    assert home.get_run_by_id(running.run_id).status == DagsterRunStatus.STARTED
    assert home.get_latest_materialization_event(AssetKey("thing")).run_id == latest
    assert home.get_materialized_partitions(AssetKey("piece")) == {"a", "b"}


def test_the_prune_runs_command_deletes_and_a_dry_run_only_counts(home, capsys):
    from pipeline.cli import main

    materialize([thing], instance=home)
    last = materialize([thing], instance=home).run_id
    assert main(["prune-runs", "--older-than-days", "0", "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("would delete 1 run(s) finished more than 0 day(s) ago (")
    assert len(home.get_runs()) == 2
    assert main(["prune-runs", "--older-than-days", "0"]) == 0
    assert capsys.readouterr().out.strip().endswith(
        "kept 1 old run(s) that hold the latest materialization of a partition")
    assert [r.run_id for r in home.get_runs()] == [last]
    assert main(["prune-runs", "--older-than-days", "-1"]) == 2


def test_the_daily_prune_is_off_by_default_and_its_job_prunes_with_the_settings_retention(home, make_settings):
    from dagster import DefaultScheduleStatus

    from pipeline.definitions import build_resources, defs
    from pipeline.maintenance import prune_runs_job

    schedule = defs.resolve_schedule_def("daily_prune_runs")
    assert schedule.cron_schedule == "0 4 * * *" and schedule.default_status == DefaultScheduleStatus.STOPPED
    assert schedule.job_name == "prune_runs_job"
    old = op_only.execute_in_process(instance=home).run_id
    cfg = make_settings(automation={"run_retention_days": 0})
    res = prune_runs_job.execute_in_process(instance=home, resources=build_resources(str(cfg)))
    assert res.success and home.get_run_by_id(old) is None
    assert home.get_run_by_id(res.run_id) is not None  # the pruning run itself was not finished yet
    logs = [e.message for e in home.all_logs(res.run_id) if (e.message or "").startswith("prune runs")]
    assert logs and logs[0].startswith("prune runs (> 0 days): deleted 1 run(s)")
