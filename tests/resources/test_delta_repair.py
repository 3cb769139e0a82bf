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


# every table, crash-safe (issue 42 item 3) ---------------------------------------------------
def test_find_tables_finds_tables_at_any_depth_but_not_in_a_table_or_the_quarantine(tmp_path):
    from resources.delta_repair import find_tables

    root = tmp_path / "data"
    for table in ("raw_bars", "experiments/default/predictions", "experiments/other/meta_model"):
        DeltaStore((root / table).parent).write(table.rsplit("/", 1)[-1], SymbolYear("AAA", 2010), bars("AAA", 2010))
    (root / "raw_bars" / "year=2010" / "nested" / LOG).mkdir(parents=True)  # inside a table: no table
    (root / "_quarantine" / "raw_bars" / LOG).mkdir(parents=True)  # the quarantine: no table
    (root / "experiments" / "empty").mkdir()
    assert [t.relative_to(root).as_posix() for t in find_tables(root)] == \
        ["experiments/default/predictions", "experiments/other/meta_model", "raw_bars"]


def test_a_damaged_experiment_table_the_stages_refuse_is_found_and_repaired_by_repair_store(
        make_settings, tmp_path, monkeypatch, capsys):
    """The dead end of issue 42: a stage reading data/experiments/<name>/predictions said
    "run repair-store", which looked only at the direct children of paths.data."""
    from config.settings import load_settings
    from pipeline.cli import main

    cfg = make_settings()
    settings = load_settings(cfg)
    shared, exp = DeltaStore(settings.table_root("raw_bars")), DeltaStore(settings.table_root("predictions"))
    assert exp.root == tmp_path / "data" / "experiments" / "default"
    shared.write("raw_bars", SymbolYear("AAA", 2010), bars("AAA", 2010))
    for symbol, year in (("AAA", 2010), ("AAA", 2011)):
        exp.write("predictions", SymbolYear(symbol, year), bars(symbol, year))
    exp_commit = exp.asset_dir("predictions") / LOG / f"{1:020d}.json"
    exp_commit.write_bytes(exp_commit.read_bytes()[:40])
    with pytest.raises(DamagedTableError, match=r"predictions: damaged Delta table: .*repair-store"):
        exp.read("predictions")  # what a stage (evaluate, backtest) meets

    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["repair-store"]) == 0
    out = capsys.readouterr().out.splitlines()
    (qdir,) = (tmp_path / "data" / "_quarantine" / "experiments" / "default" / "predictions").iterdir()
    assert out[:4] == [
        f"experiments/default/predictions: roll back to version 0 (move {exp_commit.name} into {qdir}); "
        "rebuild: (the keys of version 1: unreadable)",
        "raw_bars: no damage",
        f"1 of 2 table(s) under {settings.data_dir} repaired",
        f"quarantine folders (moved log files, never deleted, this repair's and earlier ones): "
        f"{qdir.relative_to(settings.data_dir)}"]
    assert exp.read("predictions").equals(bars("AAA", 2010).with_columns(pl.col("date").cast(pl.Datetime("ns"))))


RAW_KEYS = [("AAA", 2010), ("BBB", 2010), ("AAA", 2011), ("BBB", 2011), ("CCC", 2011)]  # versions 0..4
PREDICTION_KEYS = [("AAA", 2010), ("AAA", 2011)]  # versions 0, 1


def _damaged_store(root):
    """raw_bars: RAW_KEYS, a checkpoint at version 3, then commit 2 truncated inside its second
    line (its commitInfo line, with its keys, survives); experiments/default/predictions:
    PREDICTION_KEYS, then its 2011 data file deleted. A repair makes 8 changes: the journal,
    predictions' FSCK commit, 5 moves in raw_bars (_last_checkpoint, the checkpoint, commits 4,
    3, 2), the journal marked done."""
    from deltalake import DeltaTable

    raw, exp = DeltaStore(root), DeltaStore(root / "experiments" / "default")
    for symbol, year in RAW_KEYS:
        raw.write("raw_bars", SymbolYear(symbol, year), bars(symbol, year))
    DeltaTable(str(raw.asset_dir("raw_bars"))).create_checkpoint()
    for symbol, year in PREDICTION_KEYS:
        exp.write("predictions", SymbolYear(symbol, year), bars(symbol, year))
    whole = {"raw_bars": raw.read("raw_bars"), "predictions": exp.read("predictions")}
    text = commit(raw, 2).read_bytes()
    commit(raw, 2).write_bytes(text[: text.index(b"\n") + 60])
    (lost,) = exp.asset_dir("predictions").glob("year=2011/*.parquet")
    lost.unlink()
    return raw, exp, whole


def _repair_store_process(cfg, tmp_path, kill_at=None):
    """`python -m pipeline.cli repair-store` in a real process (killed by itself with SIGKILL
    after its `kill_at`th change: resources.delta_repair.KILL_AT)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from resources.delta_repair import KILL_AT

    env = {k: v for k, v in os.environ.items() if k != KILL_AT}
    env.update(PIPELINE_CONFIG=str(cfg), DAGSTER_HOME=str(tmp_path / "home"),
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    if kill_at is not None:
        env[KILL_AT] = str(kill_at)
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "repair-store"], env=env, capture_output=True,
                          text=True, timeout=300)


def _listed(line: str) -> list[SymbolYear]:
    """The keys after `rebuild:` of a repair-store line."""
    keys = line.split("rebuild: ", 1)[1].split(" (", 1)[0].split(", ")
    return [SymbolYear(k.split("|")[0], int(k.split("|")[1])) for k in keys]


KILL_POINTS = [(1, "after_the_journal_is_written"), (2, "after_the_fsck_commit_of_an_experiment_table"),
               (3, "after_moving_last_checkpoint"), (4, "after_moving_the_checkpoint"),
               (5, "after_moving_the_newest_commit"), (6, "after_moving_a_middle_commit"),
               (7, "after_moving_the_bad_commit_last"), (8, "after_the_journal_is_marked_done"),
               (9, "never_as_8_changes_are_all")]


@pytest.mark.parametrize("kill_at", [k for k, _ in KILL_POINTS], ids=[i for _, i in KILL_POINTS])
def test_repair_store_killed_at_each_change_is_finished_by_the_rerun_that_lists_every_partition(
        kill_at, make_settings, tmp_path):
    import signal

    from resources.delta_repair import journal_path

    cfg = make_settings()
    raw, exp, whole = _damaged_store(tmp_path / "data")
    root = raw.root
    bad_commit = commit(raw, 2).read_bytes()
    first = _repair_store_process(cfg, tmp_path, kill_at)
    if kill_at < 9:
        assert first.returncode == -signal.SIGKILL, first.stderr
        planned = json.loads(journal_path(root).read_text())  # written before the first change
        assert [(t["table"], t["rebuild"]) for t in planned["tables"]] == [
            ("experiments/default/predictions", ["AAA|2011"]), ("raw_bars", ["AAA|2011", "BBB|2011", "CCC|2011"])]
        try:  # a reader meanwhile: refused, the table as it was (read through the checkpoint), or
            seen = raw.read("raw_bars")  # the rolled-back prefix; never other rows
            assert seen.equals(whole["raw_bars"]) or seen.equals(whole["raw_bars"].filter(pl.col("date").dt.year() == 2010))
        except DamagedTableError:
            assert kill_at < 7
        rerun = _repair_store_process(cfg, tmp_path)
    else:
        rerun = first
    assert rerun.returncode == 0, rerun.stderr
    out = rerun.stdout.splitlines()

    (qdir,) = (root / "_quarantine" / "raw_bars").iterdir()  # one folder: the rerun reuses the journal's
    resumed = " (finishing the repair a killed repair-store began)" if kill_at < 9 else ""
    assert out[0] == ("experiments/default/predictions: remove 1 missing data file(s) from the log; "
                      f"rebuild: AAA|2011{resumed}")
    assert out[1].startswith("raw_bars: roll back to version 1 (move _last_checkpoint, ")
    assert out[1].endswith(f"{commit(raw, 4).name}, {commit(raw, 3).name}, {commit(raw, 2).name} into {qdir}); "
                           f"rebuild: AAA|2011, BBB|2011, CCC|2011{resumed}")
    assert out[2:4] == [f"2 of 2 table(s) under {root} repaired",
                        f"quarantine folders (moved log files, never deleted, this repair's and earlier ones): "
                        f"{qdir.relative_to(root)}"]
    assert (qdir / commit(raw, 2).name).read_bytes() == bad_commit
    assert len(list(qdir.glob("*.checkpoint*.parquet"))) == 1 and (qdir / "_last_checkpoint").is_file()
    assert not journal_path(root).exists()
    (record,) = (root / "_quarantine").glob("journal-*.json")
    assert json.loads(record.read_text())["state"] == "done"

    for name, store, line in (("predictions", exp, out[0]), ("raw_bars", raw, out[1])):
        assert store.read(name).equals(whole[name].filter(pl.col("date").dt.year() == 2010))
        for key in _listed(line):  # the rebuild: the keys listed, nothing else
            store.write(name, key, bars(key.symbol, key.year))
        assert store.read(name).equals(whole[name])
    assert _repair_store_process(cfg, tmp_path).stdout.splitlines()[:3] == [
        "experiments/default/predictions: no damage", "raw_bars: no damage", f"0 of 2 table(s) under {root} damaged"]


def test_a_dry_run_after_a_kill_reports_the_journaled_plan_and_changes_nothing(make_settings, tmp_path):
    import signal

    from resources.delta_repair import journal_path

    cfg = make_settings()
    raw, _, _ = _damaged_store(tmp_path / "data")
    assert _repair_store_process(cfg, tmp_path, kill_at=5).returncode == -signal.SIGKILL  # commit 4 moved
    log = sorted(p.name for p in (raw.asset_dir("raw_bars") / LOG).iterdir())
    journal = journal_path(raw.root).read_bytes()
    reports = {r.name: r for r in repair_store(raw.root, dry_run=True)}
    assert reports["raw_bars"].resumed and reports["raw_bars"].rebuild == ["AAA|2011", "BBB|2011", "CCC|2011"]
    assert reports["raw_bars"].line(dry_run=True).startswith("raw_bars: would roll back to version 1 (move _last_checkpoint")
    assert sorted(p.name for p in (raw.asset_dir("raw_bars") / LOG).iterdir()) == log
    assert journal_path(raw.root).read_bytes() == journal


def test_an_unreadable_journal_is_one_line_exit_1_and_nothing_is_changed(make_settings, tmp_path):
    from resources.delta_repair import journal_path

    cfg = make_settings()
    raw, _, _ = _damaged_store(tmp_path / "data")
    journal_path(raw.root).parent.mkdir()
    journal_path(raw.root).write_text('{"format": 1, "tab')
    before = sorted(p.name for p in (raw.asset_dir("raw_bars") / LOG).iterdir())
    done = _repair_store_process(cfg, tmp_path)
    assert done.returncode == 1
    err = [line for line in done.stderr.splitlines() if not line.startswith("tradelab: device ")]
    assert err == [f"error: {journal_path(raw.root)}: unreadable repair journal (JSONDecodeError: Unterminated "
                   "string starting at: line 1 column 15 (char 14)); it holds the plan of an unfinished "
                   "repair-store: fix it or move it aside, then run repair-store again"]
    assert sorted(p.name for p in (raw.asset_dir("raw_bars") / LOG).iterdir()) == before


def test_the_rebuild_example_of_another_experiments_table_names_that_experiment(make_settings, tmp_path, monkeypatch,
                                                                               capsys):
    from pipeline.cli import main

    cfg = make_settings()
    other = DeltaStore(tmp_path / "data" / "experiments" / "other")
    for year in (2010, 2011):
        other.write("backtest", SymbolYear("AAA", year), bars("AAA", year))
    (lost,) = other.asset_dir("backtest").glob("year=2011/*.parquet")
    lost.unlink()
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["repair-store"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "experiments/other/backtest: remove 1 missing data file(s) from the log; rebuild: AAA|2011",
        f"1 of 1 table(s) under {tmp_path / 'data'} repaired",
        "then re-materialize the partitions listed after `rebuild:`, e.g. dagster asset materialize -m "
        "pipeline.definitions --select backtest --partition 'AAA|2011' (with `experiment: other` in the settings)"]


def test_a_table_whose_first_commit_is_unreadable_is_rolled_back_whole_and_a_rerun_finds_no_damage(tmp_path):
    s = DeltaStore(tmp_path / "data")
    s.write("raw_bars", SymbolYear("AAA", 2010), bars("AAA", 2010))
    commit(s, 0).write_bytes(b"")
    (report,) = repair_store(s.root)
    assert (report.rolled_back_to, report.rebuild) == (-1, ["(the keys of version 0: unreadable)"])
    assert not s.exists("raw_bars")  # the next materialization creates it again
    assert [r.line() for r in repair_store(s.root)] == ["raw_bars: no damage"]
