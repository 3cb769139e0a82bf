"""Symbol groups (`partitions.symbols_per_group: 3`), as a user meets them: real CLI
processes on a folder source, the instance and the Delta tables read back afterwards.

A group x year partition writes its symbols' rows in one commit; a failed symbol is named in
the step's error and the others of its group are written; a new symbol fills the last group
and its run (tagged with its name) computes and overwrites only its rows."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import polars as pl
import yaml

GOOD = "date,open,high,low,close,volume\n2001-01-02,10,11,9,10,100\n2001-01-03,10,11,9,10.5,100\n"
DUPLICATE_DATE = "date,open,high,low,close,volume\n2001-01-02,10,11,9,10,100\n2001-01-02,10,11,9,10,100\n"


def _setup(tmp_path: Path, files: dict[str, str]) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    for name, text in files.items():
        (raw / f"{name}.csv").write_text(text)
    conf = tmp_path / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "settings.yaml").write_text(yaml.safe_dump({
        "paths": {k: str(tmp_path / k) for k in ("data", "reports", "models")},
        "years": {"start": 2001, "end": 2001},
        "universe": {"source": "folder", "folder": {"path": str(raw)}},
        "partitions": {"symbols_per_group": 3},
    }))
    return raw


def _cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PIPELINE_CONFIG": str(tmp_path / "conf" / "settings.yaml"),
           "DAGSTER_HOME": str(tmp_path / "home"),
           "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "pipeline.cli", *argv])
    return subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, timeout=300)


def _instance(tmp_path: Path):
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    return DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path / "home")))


def _raw_bars(tmp_path: Path) -> pl.DataFrame:
    return pl.read_delta(str(tmp_path / "data" / "raw_bars")).sort("symbol", "date")


def _last_commit_keys(tmp_path: Path) -> list[str]:
    from deltalake import DeltaTable

    info = DeltaTable(str(tmp_path / "data" / "raw_bars")).history(1)[0]
    return json.loads(info["pipeline.keys"])


def test_a_group_of_three_with_one_bad_symbol_names_it_in_the_error_and_writes_the_two_others(tmp_path):
    _setup(tmp_path, {"AAA": GOOD, "BBB": GOOD, "CCC": DUPLICATE_DATE})
    out = _cli(tmp_path, "build-features", "--years", "2001-2001")
    assert out.returncode == 2, out.stderr[-3000:]
    line = next(x for x in out.stderr.splitlines() if x.startswith("error: "))
    assert line.startswith("error: raw_bars: symbol(s) CCC failed (CCC: "), line
    assert "duplicate date 2001-01-02" in line and line.endswith("were written: AAA, BBB"), line
    assert _raw_bars(tmp_path)["symbol"].unique().sort().to_list() == ["AAA", "BBB"]
    assert _last_commit_keys(tmp_path) == ["AAA|2001", "BBB|2001"]  # one commit, the group's good symbols
    with _instance(tmp_path) as instance:
        assert instance.get_dynamic_partitions("symbol_groups") == ["G0000"]
        assert instance.get_dynamic_partitions("symbols") == ["AAA", "BBB", "CCC"]


def test_a_new_symbol_fills_the_last_group_and_its_run_computes_it_alone(tmp_path):
    raw = _setup(tmp_path, {"AAA": GOOD, "BBB": GOOD})
    assert _cli(tmp_path, "build-features", "--years", "2001-2001").returncode == 0
    before = _raw_bars(tmp_path)
    (raw / "CCC.csv").write_text(GOOD)
    out = _cli(tmp_path, "build-features", "--years", "2001-2001", "--symbols", "CCC")
    assert out.returncode == 0, out.stderr[-3000:]
    assert _last_commit_keys(tmp_path) == ["CCC|2001"]  # the overwrite named CCC alone
    after = _raw_bars(tmp_path)
    assert after.filter(pl.col("symbol") != "CCC").equals(before)
    assert after.filter(pl.col("symbol") == "CCC").height == 2
    with _instance(tmp_path) as instance:
        from dagster import DagsterRunStatus, RunsFilter

        assert instance.get_dynamic_partitions("symbol_groups") == ["G0000"]
        groups = json.loads(instance.run_storage.get_cursor_values({"tradelab/symbol_groups"})["tradelab/symbol_groups"])
        assert groups == {"size": 3, "groups": [["AAA", "BBB", "CCC"]]}
        runs = instance.get_runs(RunsFilter(job_name="historical_build_and_train", statuses=[DagsterRunStatus.SUCCESS]))
        tags = runs[0].tags  # the latest
        assert tags["tradelab/symbols"] == "CCC"
        assert (tags["dagster/asset_partition_range_start"], tags["dagster/asset_partition_range_end"]) == \
            ("G0000|2001", "G0000|2001")
        assert "tradelab/symbols" not in runs[1].tags  # the first run: every symbol of its group


REGISTER = """
import sys
from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef
from pipeline.symbols import register_symbols
prefix = sys.argv[1]
with DagsterInstance.from_ref(InstanceRef.from_dir(sys.argv[2])) as instance:
    for i in range(12):
        register_symbols(instance, [f"{prefix}{i:02d}"])
"""


def test_two_processes_registering_at_once_lose_no_symbol_and_share_no_slot(tmp_path):
    _setup(tmp_path, {})
    env = {**os.environ, "PIPELINE_CONFIG": str(tmp_path / "conf" / "settings.yaml"),
           "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    home = tmp_path / "home"
    home.mkdir()
    with _instance(tmp_path):  # the instance's storages exist before both start
        pass
    procs = [subprocess.Popen([sys.executable, "-c", REGISTER, prefix, str(home)], env=env, stderr=subprocess.PIPE,
                              text=True) for prefix in ("AA", "BB")]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()[-2000:]
    with _instance(tmp_path) as instance:
        groups = json.loads(instance.run_storage.get_cursor_values({"tradelab/symbol_groups"})["tradelab/symbol_groups"])
        members = [s for g in groups["groups"] for s in g]
        assert sorted(members) == sorted(f"{p}{i:02d}" for p in ("AA", "BB") for i in range(12))  # each once
        assert [len(g) for g in groups["groups"]] == [3] * 8  # every group full: no slot lost or shared
        assert instance.get_dynamic_partitions("symbol_groups") == [f"G{i:04d}" for i in range(8)]
        assert sorted(instance.get_dynamic_partitions("symbols")) == sorted(members)


TICKS = """
import datetime as dt, json, sys
from dagster import DagsterInstance, build_schedule_context, build_sensor_context
from dagster._core.instance.ref import InstanceRef
from pipeline.schedules import nightly_rebuild
from pipeline.sensors import new_symbol_sensor

def ranges(requests):
    return [[r.tags["dagster/asset_partition_range_start"], r.tags["dagster/asset_partition_range_end"],
             r.tags.get("tradelab/symbols")] for r in requests]

with DagsterInstance.from_ref(InstanceRef.from_dir(sys.argv[1])) as instance:
    first = new_symbol_sensor(build_sensor_context(instance=instance))
    open(sys.argv[2] + "/CCC.csv", "w").write(open(sys.argv[2] + "/AAA.csv").read())
    second = new_symbol_sensor(build_sensor_context(instance=instance, cursor=first.cursor))
    when = dt.datetime(2001, 3, 5, 2, 0, tzinfo=dt.timezone.utc)
    nightly = nightly_rebuild(build_schedule_context(instance=instance, scheduled_execution_time=when))
    print(json.dumps({"first": ranges(first.run_requests), "second": ranges(second.run_requests),
                      "nightly": ranges([nightly]), "groups": instance.get_dynamic_partitions("symbol_groups")}))
"""


def test_grouped_sensor_requests_a_new_symbol_alone_in_the_last_group_and_the_nightly_range_has_no_tag(tmp_path):
    raw = _setup(tmp_path, {"AAA": GOOD, "BBB": GOOD})
    env = {**os.environ, "PIPELINE_CONFIG": str(tmp_path / "conf" / "settings.yaml"),
           "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    (tmp_path / "home").mkdir()
    with _instance(tmp_path):
        pass
    out = subprocess.run([sys.executable, "-c", TICKS, str(tmp_path / "home"), str(raw)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["first"] == [["G0000|2001", "G0000|2001", None]]  # the group's every symbol: no tag
    assert got["second"] == [["G0000|2001", "G0000|2001", "CCC"]]  # the new symbol fills G0000, computed alone
    assert got["nightly"] == [["G0000|2001", "G0000|2001", None]]
    assert got["groups"] == ["G0000"]
