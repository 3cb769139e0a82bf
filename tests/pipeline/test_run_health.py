"""A killed run ends as failed and blocks nothing: a real build run is started in another
process and killed with SIGKILL mid-step; the chain sensor must not wait on it forever."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter, SkipReason
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

REPO = Path(__file__).resolve().parents[2]

BLOCKED_BUILD = """
import sys
import domain.sources as sources
from pipeline.definitions import defs
from pipeline.instance import get_instance
from pipeline.runs import run_rectangle

def blocked(self, symbols):
    print("started", flush=True)
    sys.stdin.readline()  # never answered: the parent kills this process here

sources.SyntheticSource.history = blocked
instance = get_instance()
from pipeline.symbols import register_symbols
register_symbols(instance, ["AAA"])  # and its group, when grouped
run_rectangle(defs.resolve_job_def("historical_build_and_train"), instance, ["AAA"], [2001], log_level="ERROR")
"""


def _tick(instance, run):
    from dagster import build_run_status_sensor_context

    from pipeline.definitions import defs
    from pipeline.sensors import build_chain_sensor

    event = next(r.event_log_entry.dagster_event for r in instance.get_records_for_run(run.run_id).records
                 if r.event_log_entry.dagster_event is not None)
    ctx = build_run_status_sensor_context(sensor_name="build_chain_sensor", dagster_event=event,
                                          dagster_instance=instance, dagster_run=run,
                                          repository_def=defs.get_repository_def())
    return build_chain_sensor(ctx)


def test_a_sigkilled_build_run_is_marked_failed_and_the_chain_goes_on(make_settings, tmp_path, monkeypatch):
    from pipeline.definitions import defs
    from resources.partitions import dynamic_key_of

    cfg = make_settings()
    home = tmp_path / "home"
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-c", BLOCKED_BUILD], cwd=REPO, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout.readline().strip() == "started"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    with DagsterInstance.from_config(str(home)) as instance:
        [killed] = instance.get_runs(RunsFilter(job_name="historical_build_and_train"))
        assert killed.status == DagsterRunStatus.STARTED  # what the killed process left behind
        key = f"{dynamic_key_of(instance, ['AAA'])['AAA']}|2002"  # the symbol's key, or its group's
        done = instance.create_run_for_job(
            defs.resolve_job_def("historical_build_and_train"), status=DagsterRunStatus.SUCCESS,
            tags={ASSET_PARTITION_RANGE_START_TAG: key, ASSET_PARTITION_RANGE_END_TAG: key})
        instance.report_run_failed(done)  # gives the context an event; the sensor reads statuses from the instance
        result = _tick(instance, done)
        assert not isinstance(result, SkipReason), result.skip_message
        assert {r.job_name for r in result} == {"yearly_stages", "atc_scan_job"}
        assert instance.get_run_by_id(killed.run_id).status == DagsterRunStatus.FAILURE
        failure = [e for e in instance.all_logs(killed.run_id) if e.dagster_event and e.dagster_event.is_run_failure]
        assert failure and f"its process {proc.pid} is gone" in failure[-1].dagster_event.message


def test_a_run_older_than_the_limit_is_stale_even_when_its_process_lives(instance):
    from pipeline.definitions import defs
    from pipeline.run_health import stale_reason

    run = instance.create_run_for_job(defs.resolve_job_def("historical_build_and_train"), status=DagsterRunStatus.STARTED)
    created = instance.get_run_record_by_id(run.run_id).create_timestamp.timestamp()
    assert stale_reason(instance, run, max_age_s=3600, now=created + 60) is None
    assert stale_reason(instance, run, max_age_s=3600, now=created + 7200) == (
        f"run {run.run_id} has been in flight 2.0 h (over the 1 h limit)")


def test_the_generated_instance_monitors_runs(tmp_path, monkeypatch):
    from pipeline.instance import get_instance

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert get_instance().run_monitoring_enabled


LOCATION = """
from pipeline.startup import prepare_process

prepare_process()

import os

from dagster import Definitions, asset, multiprocess_executor


@asset
def slow():
    with open(os.environ["MARK"], "w") as fh:  # a FIFO: the test reads this step's pid
        fh.write(str(os.getpid()))
    with open(os.environ["HOLD"]) as fh:  # a FIFO nobody writes: the step blocks here
        fh.read()


defs = Definitions(assets=[slow], executor=multiprocess_executor)
"""


def test_killing_dagster_asset_materialize_stops_its_step_workers(tmp_path):
    """`dagster asset materialize` runs steps in child processes; SIGKILL of the command
    must not leave a step worker running (prepare_process: die_with_parent)."""
    import select

    (tmp_path / "loc.py").write_text(LOCATION)
    mark, hold = tmp_path / "mark", tmp_path / "hold"
    os.mkfifo(mark)
    os.mkfifo(hold)
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "MARK": str(mark), "HOLD": str(hold),
           "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    (tmp_path / "home").mkdir()
    dagster = str(Path(sys.executable).with_name("dagster"))
    cli = subprocess.Popen([dagster, "asset", "materialize", "-f", str(tmp_path / "loc.py"), "--select", "slow"],
                           cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(mark) as fh:  # blocks until the step worker has started
        step_pid = int(fh.read())
    pidfd = os.pidfd_open(step_pid)
    try:
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait(timeout=60)
        ready, _, _ = select.select([pidfd], [], [], 60)  # readable once the step worker has exited
        assert ready, f"step worker {step_pid} still running a minute after its command was killed"
    finally:
        os.close(pidfd)
        try:
            os.kill(step_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
