"""`dagster asset materialize` from the shell, in a fresh DAGSTER_HOME, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.partitions import SymbolYear
from resources.delta_store import DeltaStore

REPO = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).parent / "dagster")


@pytest.fixture(scope="module")
def shell_env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shell")
    cfg = tmp / "settings.yaml"
    cfg.write_text(
        "paths: {data: data, reports: reports, models: models}\n"
        "universe: {source: packaged, packaged: {symbols: [GOOG]}}\n"
    )
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp / "home")}
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "symbols", "sync"], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "registered 1 new symbol(s); 1 in all: GOOG" in out.stdout
    return tmp, env


def materialize(env, *args):
    cmd = [DAGSTER, "asset", "materialize", "-m", "pipeline.definitions", "--select", "raw_bars", *args]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_one_partition_from_the_shell(shell_env):
    tmp, env = shell_env
    out = materialize(env, "--partition", "GOOG|2010")
    assert out.returncode == 0, out.stderr[-3000:]
    df = DeltaStore(tmp / "data").read("raw_bars", [SymbolYear("GOOG", 2010)])
    assert df.height == 252 and df["symbol"].unique().to_list() == ["GOOG"]


def test_partition_range_runs_as_one_single_run_backfill(shell_env):
    tmp, env = shell_env
    out = materialize(env, "--partition-range", "GOOG|2011...GOOG|2013")
    assert out.returncode == 0, out.stderr[-3000:]
    store = DeltaStore(tmp / "data")
    assert {SymbolYear("GOOG", y) for y in (2011, 2012, 2013)} <= set(store.partitions("raw_bars"))
    commit = store.table("raw_bars").history(1)[0]
    assert sorted(json.loads(commit["pipeline.keys"])) == [f"GOOG|{y}" for y in (2011, 2012, 2013)]  # one commit for the run
    sidecar = json.loads((tmp / "reports" / "default" / "raw_bars" / "runs" / "GOOG_2011--GOOG_2013.json").read_text())
    assert sidecar["args"]["partitions"] == 3  # one step wrote all three years


def test_bad_settings_value_stops_the_cli_with_one_clear_message(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("device: gpu\n")
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "symbols", "sync"], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 2
    assert "bad.yaml: invalid settings" in out.stderr and "device: Input should be 'auto', 'cpu', 'cuda' or 'rocm' (got 'gpu')" in out.stderr
