"""The Dagster instance of the embedded default: DAGSTER_HOME=<project>/.dagster, SQLite."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import DagsterInstance

from pipeline.settings import PROJECT_ROOT

DAGSTER_YAML = """\
# Dagster instance settings for the embedded default (SQLite storage in this folder).
telemetry:
  enabled: false
# One transaction per batch of partition materializations (pipeline/event_log.py).
event_log_storage:
  module: pipeline.event_log
  class: BatchedSqliteEventLogStorage
  config:
    base_dir: history/runs   # relative to DAGSTER_HOME
"""


def ensure_dagster_home() -> Path:
    """Use $DAGSTER_HOME, or <project>/.dagster; create it with a dagster.yaml if missing."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / ".dagster"))).resolve()
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text(DAGSTER_YAML)
    return home


def get_instance() -> DagsterInstance:
    ensure_dagster_home()
    return DagsterInstance.get()
