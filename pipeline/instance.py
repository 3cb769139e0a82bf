"""The Dagster instance of the embedded default: DAGSTER_HOME=<project>/.dagster, SQLite."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from dagster import DagsterInstance

from config.settings import PROJECT_ROOT

DAGSTER_YAML = """\
# Dagster instance settings for the embedded default (SQLite storage in this folder).
telemetry:
  enabled: false
# One transaction per batch of partition materializations (pipeline/event_log.py).
# Runs that hang while starting or cancelling are failed by the daemon; runs whose process
# was killed are failed by build_chain_sensor (pipeline/run_health.py).
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  cancel_timeout_seconds: 180
  max_resume_run_attempts: 0
  poll_interval_seconds: 60
# Schedule and sensor ticks are purged by the daemon (runs: prune_runs_job, pipeline/maintenance.py).
retention:
  schedule:
    purge_after_days: 90
  sensor:
    purge_after_days:
      skipped: 7
      success: 30
      failure: 90
      started: 90
event_log_storage:
  module: pipeline.event_log
  class: BatchedSqliteEventLogStorage
  config:
    base_dir: {base_dir}
"""


def ensure_dagster_home() -> Path:
    """Use $DAGSTER_HOME, or <project>/.dagster; create it with a dagster.yaml if missing."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / ".dagster"))).resolve()
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        # absolute: a process that opens this file without DAGSTER_HOME set must not write elsewhere
        cfg.write_text(DAGSTER_YAML.format(base_dir=home / "history" / "runs"))
    return home


@contextlib.contextmanager
def instance_lock(home: Path):
    """An exclusive lock on DAGSTER_HOME while its storages are created or migrated: two
    first uses at once would otherwise race on the SQLite schemas (alembic heads)."""
    with open(home / ".instance.lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def get_instance() -> DagsterInstance:
    """The instance of DAGSTER_HOME, its `gpu` concurrency pool sized (pipeline.executors).
    Opening it (which creates the storages on first use) happens under `instance_lock`."""
    from config.settings import load_settings
    from pipeline.executors import ensure_gpu_pool

    home = Path(os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / ".dagster"))).resolve()
    home.mkdir(parents=True, exist_ok=True)
    with instance_lock(home):
        ensure_dagster_home()
        instance = DagsterInstance.get()
        ensure_gpu_pool(instance, load_settings())
    return instance
