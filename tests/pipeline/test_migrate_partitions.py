"""`migrate-partitions`: an instance and store built with a key per symbol move to groups of
3 and back, in real CLI processes; the Delta tables are not rewritten, nothing built shows as
missing, and a following build (a new symbol) works in the new layout."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import polars as pl
import yaml
from dagster import AssetKey


def _settings(tmp_path: Path, symbols: list[str], per_group: int) -> None:
    conf = tmp_path / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "settings.yaml").write_text(yaml.safe_dump({
        "paths": {k: str(tmp_path / k) for k in ("data", "reports", "models")},
        "years": {"start": 2001, "end": 2002},
        "universe": {"source": "synthetic", "synthetic": {"symbols": symbols, "seed": 3, "end_date": "2002-12-31"}},
        "partitions": {"symbols_per_group": per_group},
    }))


def _cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PIPELINE_CONFIG": str(tmp_path / "conf" / "settings.yaml"),
           "DAGSTER_HOME": str(tmp_path / "home"),
           "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "pipeline.cli", *argv])
    out = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def _instance(tmp_path: Path):
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    return DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path / "home")))


def _table(tmp_path: Path, asset: str) -> pl.DataFrame:
    return pl.read_delta(str(tmp_path / "data" / asset)).sort("symbol", "date")


def _version(tmp_path: Path, asset: str) -> int:
    from deltalake import DeltaTable

    return DeltaTable(str(tmp_path / "data" / asset)).version()


def test_a_per_symbol_instance_migrates_to_groups_of_3_builds_a_new_symbol_and_migrates_back(tmp_path):
    first = ["AAA", "BBB", "CCC", "DDD"]
    _settings(tmp_path, first, 1)
    _cli(tmp_path, "build-features")  # today's layout: a key per symbol
    before = {a: _table(tmp_path, a) for a in ("raw_bars", "features")}
    versions = {a: _version(tmp_path, a) for a in before}

    _settings(tmp_path, first, 3)
    out = _cli(tmp_path, "migrate-partitions")
    assert out.stdout.strip() == ("migrate-partitions: symbols_per_group 1 -> 3: 2 group(s); materialized keys carried "
                                  "over: raw_bars 4, features 4, labels 4, specialists 4; the Delta tables are unchanged")
    assert {a: _version(tmp_path, a) for a in before} == versions  # no table was written
    with _instance(tmp_path) as instance:
        assert instance.get_dynamic_partitions("symbol_groups") == ["G0000", "G0001"]
        assert set(instance.get_materialized_partitions(AssetKey("raw_bars"))) >= {
            "G0000|2001", "G0000|2002", "G0001|2001", "G0001|2002"}
    assert _cli(tmp_path, "migrate-partitions").stdout.strip().endswith("nothing to do")

    _settings(tmp_path, [*first, "EEE"], 3)  # a new symbol in the source: it fills G0001, built alone
    _cli(tmp_path, "build-features", "--symbols", "EEE")
    _cli(tmp_path, "build-features", "--years", "2002-2002")  # the nightly increment: every group, the last year
    after = _table(tmp_path, "raw_bars")
    assert after.filter(pl.col("symbol") != "EEE").equals(before["raw_bars"])  # nothing lost or changed
    assert after.filter(pl.col("symbol") == "EEE").height > 0
    assert _table(tmp_path, "features").filter(pl.col("symbol") != "EEE").equals(before["features"])
    with _instance(tmp_path) as instance:
        groups = json.loads(instance.run_storage.get_cursor_values({"tradelab/symbol_groups"})["tradelab/symbol_groups"])
        assert groups == {"size": 3, "groups": [["AAA", "BBB", "CCC"], ["DDD", "EEE"]]}

    _settings(tmp_path, [*first, "EEE"], 1)  # and back: a key per symbol
    out = _cli(tmp_path, "migrate-partitions")
    assert out.stdout.strip().startswith("migrate-partitions: symbols_per_group 3 -> 1: 0 group(s)")
    with _instance(tmp_path) as instance:
        assert instance.get_dynamic_partitions("symbol_groups") == []
        done = set(instance.get_materialized_partitions(AssetKey("raw_bars")))
        assert {"AAA|2001", "DDD|2002", "EEE|2001", "EEE|2002"} <= done
    _cli(tmp_path, "build-features", "--years", "2002-2002", "--symbols", "EEE")
    assert _table(tmp_path, "raw_bars").equals(after)
