"""The Dagster instance of the embedded default: DAGSTER_HOME=<project>/.dagster, SQLite."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import DagsterInstance

from config.settings import PROJECT_ROOT

DAGSTER_YAML = """\
# Dagster instance settings for the embedded default (SQLite storage in this folder).
telemetry:
  enabled: false
# One transaction per batch of partition materializations (pipeline/event_log.py).
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


def get_instance() -> DagsterInstance:
    """The instance of DAGSTER_HOME, its `gpu` concurrency pool sized (pipeline.executors)."""
    from pipeline.executors import ensure_gpu_pool
    from config.settings import load_settings

    ensure_dagster_home()
    instance = DagsterInstance.get()
    ensure_gpu_pool(instance, load_settings())
    return instance
