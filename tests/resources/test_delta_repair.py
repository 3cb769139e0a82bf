"""Damaged Delta tables (resources.delta_repair): repair-store rolls unreadable commits back
into a quarantine folder and drops missing data files from the log; re-materializing the
keys it lists restores the table."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from config.partitions import SymbolYear
from resources.delta_repair import DamagedTableError, repair_store, repair_table
from resources.delta_store import DeltaStore

LOG = "_delta_log"


def bars(symbol: str, year: int, close: float = 10.0) -> pl.DataFrame:
    return pl.DataFrame({"date": [dt.datetime(year, 1, 4), dt.datetime(year, 1, 5)], "symbol": [symbol] * 2,
                         "close": [close, close + 1]})


@pytest.fixture
def store(tmp_path):
    """raw_bars: AAA|2010 (version 0), BBB|2010 (1), AAA|2011 (2)."""
    s = DeltaStore(tmp_path / "data")
    for symbol, year in (("AAA", 2010), ("BBB", 2010), ("AAA", 2011)):
        s.write("raw_bars", SymbolYear(symbol, year), bars(symbol, year))
    return s


def commit(store, version: int):
    return store.asset_dir("raw_bars") / LOG / f"{version:020d}.json"


def test_a_truncated_last_commit_is_moved_to_quarantine_and_its_key_rebuilt(store, tmp_path):
    whole = store.read("raw_bars")
    text = commit(store, 2).read_bytes()
    damaged = text[: text.index(b"\n") + 60]  # a crash inside the second line: the commitInfo line survives
    commit(store, 2).write_bytes(damaged)
    with pytest.raises(DamagedTableError):
        store.read("raw_bars")

    (report,) = repair_store(store.root)
    assert (report.rolled_back_to, report.quarantined, report.files_removed, report.rebuild) == \
        (1, [commit(store, 2).name], [], ["AAA|2011"])
    assert report.quarantine_dir.parent == store.root / "_quarantine" / "raw_bars"
    assert (report.quarantine_dir / commit(store, 2).name).read_bytes() == damaged  # moved, never deleted
    assert store.version("raw_bars") == 1 and store.partitions("raw_bars") == [SymbolYear("AAA", 2010),
                                                                               SymbolYear("BBB", 2010)]
    store.write("raw_bars", SymbolYear("AAA", 2011), bars("AAA", 2011))  # the rebuild
    assert store.read("raw_bars").equals(whole)
    assert store.assets() == ["raw_bars"]  # the quarantine is no table


def test_an_empty_commit_in_the_middle_rolls_back_it_and_every_later_commit(store):
    """delta-rs reads an empty commit file as "nothing happened" (its rows silently vanish);
    repair-store counts it as damage. The keys of an unreadable commit are said to be unknown."""
    store.write("raw_bars", SymbolYear("BBB", 2011), bars("BBB", 2011))  # version 3
    commit(store, 2).write_bytes(b"")
    assert store.read("raw_bars").height == 6  # AAA|2011 is gone without an error
    report = repair_table(store.asset_dir("raw_bars"), store.root / "_quarantine")
    assert report.rolled_back_to == 1
    assert report.quarantined == [commit(store, 3).name, commit(store, 2).name]  # newest first
    assert report.rebuild == ["(the keys of version 2: unreadable)", "BBB|2011"]
    assert store.partitions("raw_bars") == [SymbolYear("AAA", 2010), SymbolYear("BBB", 2010)]


def test_a_checkpoint_of_a_rolled_back_version_goes_to_quarantine_too(store):
    from deltalake import DeltaTable

    DeltaTable(str(store.asset_dir("raw_bars"))).create_checkpoint()  # version 2, and _last_checkpoint
    log = store.asset_dir("raw_bars") / LOG
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 2
    commit(store, 2).write_bytes(b"{\"commitInfo\":")
    (report,) = repair_store(store.root)
    assert sorted(report.quarantined) == sorted([commit(store, 2).name, "_last_checkpoint",
                                                 *[p.name for p in report.quarantine_dir.glob("*.checkpoint*.parquet")]])
    assert not list(log.glob("*.checkpoint*")) and not (log / "_last_checkpoint").exists()
    assert store.version("raw_bars") == 1 and store.read("raw_bars").height == 4


def test_a_dry_run_reports_the_repair_and_changes_nothing(store):
    commit(store, 2).write_bytes(b"garbage")
    before = sorted(p.name for p in (store.asset_dir("raw_bars") / LOG).iterdir())
    (report,) = repair_store(store.root, dry_run=True)
    assert report.line(dry_run=True) == (f"raw_bars: would roll back to version 1 (move {commit(store, 2).name}); "
                                         "rebuild: (the keys of version 2: unreadable)")
    assert sorted(p.name for p in (store.asset_dir("raw_bars") / LOG).iterdir()) == before
    assert not (store.root / "_quarantine").exists()


def test_a_deleted_data_file_is_repaired_and_rebuilt_through_dagster(make_settings, instance, tmp_path, monkeypatch,
                                                                   capsys):
    """A real table written by a Dagster run (raw_bars, AAA and BBB x 2001-2002, one file per
    year holding both symbols): a data file deleted by hand; repair-store drops it from the
    log and lists both symbols of its year; re-materializing them gives the table back."""
    from assets.raw_bars import raw_bars
    from pipeline.cli import main
    from tests.conftest import run_assets

    cfg = make_settings(years={"start": 2001, "end": 2002})
    assert run_assets([raw_bars], cfg, instance, ["AAA", "BBB"], [2001, 2002]).success
    store = DeltaStore(tmp_path / "data")
    whole = store.read("raw_bars")
    table = store.asset_dir("raw_bars")
    (lost,) = table.glob("year=2002/*.parquet")
    lost.unlink()
    with pytest.raises(DamagedTableError, match=r"1 data file\(s\) it references are missing: year=2002/"):
        store.read("raw_bars")

    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["repair-store"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["raw_bars: remove 1 missing data file(s) from the log; rebuild: AAA|2002, BBB|2002",
                   f"1 of 1 table(s) under {store.root} repaired",
                   "then re-materialize the partitions listed after `rebuild:`, e.g. dagster asset materialize "
                   "-m pipeline.definitions --select raw_bars --partition 'AAA|2002'"]
    assert store.read("raw_bars").equals(whole.filter(pl.col("date").dt.year() == 2001))

    assert run_assets([raw_bars], cfg, instance, ["AAA", "BBB"], [2002]).success  # the rebuild
    assert store.read("raw_bars").equals(whole)
    assert main(["repair-store"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == ["raw_bars: no damage", f"0 of 1 table(s) under {store.root} damaged"]
