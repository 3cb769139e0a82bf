"""resources.delta_store: a checkpoint every CHECKPOINT_EVERY versions, every version still readable;
and Delta statistics for date columns (resources.delta_files)."""

from __future__ import annotations

import datetime as dt
import json
import logging

import polars as pl
from deltalake import DeltaTable

from config.partitions import SymbolYear
from resources.delta_store import CHECKPOINT_EVERY, DeltaStore
from tests.resources.test_delta_store import bars

KEY = SymbolYear("AAA", 2010)


def _checkpoints(store: DeltaStore, asset: str) -> list[int]:
    log = store.asset_dir(asset) / "_delta_log"
    return sorted(int(p.name.split(".")[0]) for p in log.glob("*.checkpoint.parquet"))


def _write_versions(store: DeltaStore, n: int) -> None:
    for close in range(n):  # version `close` holds close = close
        store.write_split("raw_bars", [KEY], bars("AAA", [dt.date(2010, 1, 4)], close=float(close)))


def test_every_tenth_version_gets_a_checkpoint_and_every_version_stays_readable(tmp_path):
    store = DeltaStore(tmp_path / "data")
    _write_versions(store, 2 * CHECKPOINT_EVERY + 3)
    assert store.version("raw_bars") == 2 * CHECKPOINT_EVERY + 2
    assert _checkpoints(store, "raw_bars") == [CHECKPOINT_EVERY, 2 * CHECKPOINT_EVERY]
    last = json.loads((store.asset_dir("raw_bars") / "_delta_log" / "_last_checkpoint").read_text())
    assert last["version"] == 2 * CHECKPOINT_EVERY
    assert store.read("raw_bars", [KEY])["close"].to_list() == [2 * CHECKPOINT_EVERY + 2]
    # time travel before, at and after a checkpoint: the JSON commits are all kept
    for version in (3, CHECKPOINT_EVERY, CHECKPOINT_EVERY + 1):
        assert store.read("raw_bars", [KEY], version=version)["close"].to_list() == [version]
    assert store.partitions("raw_bars") == [KEY]


def test_whole_table_overwrites_get_checkpoints_too(tmp_path):
    store = DeltaStore(tmp_path / "data")
    for i in range(CHECKPOINT_EVERY + 2):
        store.write_unpartitioned("grid_table", pl.DataFrame({"a": [i]}))
    assert _checkpoints(store, "grid_table") == [CHECKPOINT_EVERY]
    assert store.read("grid_table")["a"].to_list() == [CHECKPOINT_EVERY + 1]


def test_a_checkpoint_that_fails_leaves_the_commit_and_says_so_in_the_log(tmp_path, monkeypatch, caplog):
    store = DeltaStore(tmp_path / "data")

    def disk_full(self):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(DeltaTable, "create_checkpoint", disk_full)
    with caplog.at_level(logging.WARNING, logger="resources.delta_store"):
        _write_versions(store, CHECKPOINT_EVERY + 2)
    assert store.version("raw_bars") == CHECKPOINT_EVERY + 1
    assert _checkpoints(store, "raw_bars") == []
    assert store.read("raw_bars", [KEY])["close"].to_list() == [CHECKPOINT_EVERY + 1]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert f"no checkpoint of version {CHECKPOINT_EVERY}" in warnings[0] and "No space left" in warnings[0]


def test_a_date_column_is_stored_with_date_statistics(tmp_path):
    store = DeltaStore(tmp_path / "data")
    frame = pl.DataFrame({"date": [dt.date(2010, 1, 5), dt.date(2010, 1, 4)], "symbol": ["AAA", "AAA"],
                          "close": [2.0, 1.0]})
    store.write_split("daily_notes", [KEY], frame)
    assert store.read("daily_notes", [KEY])["date"].to_list() == [dt.date(2010, 1, 4), dt.date(2010, 1, 5)]
    actions = store.table("daily_notes").get_add_actions(flatten=False)
    assert actions.column("min")[0].as_py()["date"] == dt.date(2010, 1, 4)  # delta-rs parsed the file's statistics
    assert actions.column("max")[0].as_py()["date"] == dt.date(2010, 1, 5)
