"""The Delta store: one table per asset, one commit per run, retries, time travel, vacuum.

Concurrency and crash promises run in real processes (a stdin handshake, a real SIGKILL).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from config.partitions import SymbolYear
from domain.schema import RAW_BARS
from resources.delta_store import (
    CommitConflictError,
    PREDICATE_METADATA,
    DeltaStore,
    migrate_parquet_store,
    partition_predicate,
)

REPO = Path(__file__).resolve().parents[2]


def bars(symbol: str, dates: list[dt.date], close: float = 10.0) -> pl.DataFrame:
    n = len(dates)
    return pl.DataFrame(
        {
            "date": [dt.datetime(d.year, d.month, d.day) for d in dates],
            "symbol": [symbol] * n,
            "open": [close] * n,
            "high": [close + 1] * n,
            "low": [close - 1] * n,
            "close": [close] * n,
            "volume": [100.0] * n,
        }
    ).pipe(RAW_BARS.cast)


KEYS = [SymbolYear("AAA", 2010), SymbolYear("AAA", 2011), SymbolYear("BBB", 2010)]


@pytest.fixture
def store(tmp_path):
    return DeltaStore(tmp_path / "data")


@pytest.fixture
def frame():
    return pl.concat(
        [bars("BBB", [dt.date(2010, 1, 4)]), bars("AAA", [dt.date(2011, 1, 3), dt.date(2010, 1, 5), dt.date(2010, 1, 4)])]
    )


def worker_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", "/tmp/nc-delta")}


# layout and commits ----------------------------------------------------------------------
def test_first_write_creates_one_table_partitioned_by_year_with_zstd_files(store, frame):
    commit = store.write_split("raw_bars", KEYS, frame)
    table = DeltaTable(str(store.asset_dir("raw_bars")))
    assert commit.version == 0 and commit.rows == 4
    assert table.metadata().partition_columns == ["year"]
    files = sorted(table.file_uris())
    assert [Path(f).parent.name for f in files] == ["year=2010", "year=2011"]
    assert all(f.endswith(".zstd.parquet") for f in files)


def test_rows_are_stored_sorted_by_symbol_then_date(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    stored = pl.read_parquet(next(f for f in DeltaTable(str(store.asset_dir("raw_bars"))).file_uris() if "2010" in f))
    assert stored.select("symbol", "date").rows() == [
        ("AAA", dt.datetime(2010, 1, 4)), ("AAA", dt.datetime(2010, 1, 5)), ("BBB", dt.datetime(2010, 1, 4))]


def test_a_run_is_one_commit_replacing_the_rows_of_its_keys_named_by_their_predicate(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    commit = store.write_split("raw_bars", KEYS, frame)
    assert commit.version == 1 == store.version("raw_bars")
    table = DeltaTable(str(store.asset_dir("raw_bars")))
    last = table.history(1)[0]
    assert last["operation"] == "WRITE"
    assert last[PREDICATE_METADATA] == partition_predicate(KEYS)
    assert "(year = 2011 AND symbol IN ('AAA'))" in last[PREDICATE_METADATA]
    assert store.read("raw_bars", KEYS).height == frame.height  # replaced, not appended


def test_partition_predicate_names_each_year_with_its_symbols():
    assert partition_predicate([SymbolYear("BBB", 2010), SymbolYear("AAA", 2011), SymbolYear("AAA", 2010)]) == (
        "(year = 2010 AND symbol IN ('AAA','BBB')) OR (year = 2011 AND symbol IN ('AAA'))")
    assert partition_predicate([2011, 2010]) == "year IN (2010, 2011)"


def test_rematerializing_one_partition_replaces_exactly_it(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    store.write("raw_bars", SymbolYear("AAA", 2010), bars("AAA", [dt.date(2010, 3, 1)], close=99.0))
    got = store.read("raw_bars", KEYS)
    assert got.select("symbol", "date", "close").rows() == [
        ("AAA", dt.datetime(2010, 3, 1), 99.0),  # replaced
        ("AAA", dt.datetime(2011, 1, 3), 10.0),  # other year of the symbol: untouched
        ("BBB", dt.datetime(2010, 1, 4), 10.0),  # other symbol of the year: untouched
    ]


def test_a_key_without_rows_deletes_its_old_rows_and_reads_as_an_empty_partition(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    store.write_split("raw_bars", [SymbolYear("BBB", 2010), SymbolYear("BBB", 2011)], bars("BBB", []))
    empty = store.read("raw_bars", [SymbolYear("BBB", 2010), SymbolYear("BBB", 2011)])
    assert empty.height == 0 and empty.schema == RAW_BARS.empty().schema
    assert SymbolYear("BBB", 2011) in store.partitions("raw_bars")
    assert store.read("raw_bars", [SymbolYear("AAA", 2010)]).height == 2


def test_rows_outside_the_run_are_a_value_error_naming_them_and_nothing_is_written(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    with pytest.raises(ValueError, match=r"outside this run: \['AAA\|2011'\]"):
        store.write_split("raw_bars", [SymbolYear("AAA", 2010), SymbolYear("BBB", 2010)], frame)
    assert store.version("raw_bars") == 0


def test_a_partial_overwrite_with_other_columns_or_dtypes_is_refused_naming_them(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    with pytest.raises(ValueError, match=r"differ from the stored table in \['extra'\]"):
        store.write("raw_bars", SymbolYear("AAA", 2010), bars("AAA", [dt.date(2010, 1, 4)]).with_columns(extra=pl.lit(1)))
    with pytest.raises(ValueError, match=r"in \['close'\] \(stored \['Float32'\], given \['Float64'\]\)"):
        store.write("raw_bars", SymbolYear("AAA", 2010), bars("AAA", [dt.date(2010, 1, 4)]).with_columns(pl.col("close").cast(pl.Float64)))
    assert store.version("raw_bars") == 0


def test_a_hostile_symbol_is_refused_before_any_predicate_is_built(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    hostile = "A') OR (1=1"
    with pytest.raises(ValueError, match="not allowed"):
        partition_predicate([SymbolYear(hostile, 2010)])
    with pytest.raises(ValueError, match="not allowed"):
        store.write_split("raw_bars", [SymbolYear(hostile, 2010)], bars("AAA", []).with_columns(pl.lit(hostile).alias("symbol")))
    with pytest.raises(ValueError, match="not allowed"):
        store.read("raw_bars", [SymbolYear(hostile, 2010)])
    assert store.version("raw_bars") == 0 and store.read("raw_bars", KEYS).height == 4


@pytest.mark.parametrize("keys, expected", [
    ([SymbolYear("AAA", 1), SymbolYear("BBB", True)], "year True: expected an integer year"),  # True == 1
    ([SymbolYear("AAA", 2010), SymbolYear("AAA", "2010")], "year '2010': expected an integer year"),
    ([SymbolYear("AAA", 2010), SymbolYear("aaa", 2010)], "symbol 'aaa' is not allowed"),
], ids=["bool_year_after_the_equal_int_year", "text_year_after_the_int_year", "bad_symbol_after_a_good_one"])
def test_every_key_of_a_run_is_checked_even_when_its_symbol_or_year_was_seen(keys, expected):
    # the keys of a run are checked once per distinct symbol and year: a value equal to one
    # already checked (True == 1) is still refused
    with pytest.raises(ValueError, match=re.escape(expected)):
        partition_predicate(keys)


def test_year_asset_replaces_only_its_years_and_takes_the_year_from_the_key_without_dates(store):
    report = lambda v: pl.DataFrame({"score": [v]}, schema={"score": pl.Float32})
    store.write_year("report", 2010, report(1.0))
    store.write_year("report", 2011, report(2.0))
    store.write_year("report", 2010, report(3.0))
    assert store.read("report", [2010, 2011]).get_column("score").to_list() == [3.0, 2.0]
    assert store.years("report") == [2010, 2011]


def test_year_asset_splits_a_dated_frame_over_several_years_in_one_commit(store):
    df = pl.concat([bars("AAA", [dt.date(2010, 1, 4)]), bars("AAA", [dt.date(2011, 1, 3)])])
    commit = store.write_years("labels_yearly", [2010, 2011], df)
    assert commit.version == 0
    assert store.read("labels_yearly", [2011]).get_column("date").to_list() == [dt.datetime(2011, 1, 3)]
    with pytest.raises(ValueError, match=r"outside this run: \['2011'\]"):
        store.write_year("labels_yearly", 2010, df)


# reads -----------------------------------------------------------------------------------
def test_read_returns_the_written_schema_with_ns_dates_and_no_derived_year(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    got = store.read("raw_bars", KEYS)
    assert got.schema == frame.schema
    assert got.equals(frame.sort("symbol", "date"))


def test_missing_partitions_are_an_error_naming_them_unless_allowed(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    wanted = [SymbolYear("AAA", 2010), SymbolYear("AAA", 2012)]
    with pytest.raises(FileNotFoundError, match=r"not materialized yet: \['AAA\|2012'\]; materialize raw_bars"):
        store.read("raw_bars", wanted)
    assert store.read("raw_bars", wanted, allow_missing=True).height == 2
    with pytest.raises(FileNotFoundError, match="AAA\\|2012"):
        store.read("raw_bars", [SymbolYear("AAA", 2012)], allow_missing=True)


def test_a_missing_table_is_file_not_found_naming_the_asset(store):
    with pytest.raises(FileNotFoundError, match=r"asset 'features' has no Delta table yet; materialize features first"):
        store.scan("features")
    with pytest.raises(FileNotFoundError, match="features"):
        store.version("features")


def test_scan_filters_year_and_symbol_down_to_the_files_of_the_keys(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    lf = store.scan("raw_bars", [SymbolYear("AAA", 2011)])
    plan = lf.explain()
    assert "year=2011" in plan and "year=2010" not in plan
    assert lf.collect().select("symbol", "year").rows() == [("AAA", 2011)]
    assert store.scan("raw_bars").collect().height == 4


def test_time_travel_reads_the_version_a_model_recorded(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    trained_on = store.version("raw_bars")
    store.write("raw_bars", SymbolYear("AAA", 2010), bars("AAA", [dt.date(2010, 3, 1)], close=99.0))
    old = store.scan("raw_bars", [SymbolYear("AAA", 2010)], version=trained_on).collect()
    assert old.get_column("close").to_list() == [10.0, 10.0]
    assert store.read("raw_bars", [SymbolYear("AAA", 2010)], version=trained_on).height == 2
    assert store.read("raw_bars", [SymbolYear("AAA", 2010)]).get_column("close").to_list() == [99.0]


def test_unpartitioned_asset_is_one_table_overwritten_whole(store):
    store.write_unpartitioned("universe", pl.DataFrame({"symbol": ["AAA", "BBB"]}))
    commit = store.write_unpartitioned("universe", pl.DataFrame({"symbol": ["CCC"], "weight": [1.0]}))
    assert commit.version == 1
    assert store.read("universe").rows() == [("CCC", 1.0)]


# maintenance, modes ----------------------------------------------------------------------
def test_vacuum_refuses_a_retention_under_168_hours_and_keeps_versions_within_it(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    store.write_split("raw_bars", KEYS, frame)
    with pytest.raises(Exception, match="minimum retention for vacuum"):
        store.vacuum("raw_bars", retention_hours=1)
    assert store.vacuum() == []  # the replaced files are younger than 168 h
    assert store.read("raw_bars", KEYS, version=0).height == 4


def test_vacuum_with_a_zero_retention_removes_unreferenced_files_and_their_old_version(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    base = store.asset_dir("raw_bars")
    old_files = {str(Path(f).relative_to(base)) for f in DeltaTable(str(base)).file_uris()}
    store.write_split("raw_bars", KEYS, frame)
    removed = store.vacuum("raw_bars", retention_hours=0, enforce_retention_duration=False)
    assert removed == sorted(f"raw_bars/{f}" for f in old_files)
    assert store.read("raw_bars", KEYS).height == 4
    assert store.version("raw_bars") == 3  # delta-rs logs the vacuum as two commits (START, END)
    with pytest.raises(FileNotFoundError):  # its files are gone
        store.read("raw_bars", KEYS, version=0)


def test_new_files_and_folders_get_0666_and_0777_minus_the_umask(store, frame):
    old = os.umask(0o027)
    try:
        store.write_split("raw_bars", KEYS, frame)
    finally:
        os.umask(old)
    base = store.asset_dir("raw_bars")
    files = [p for p in base.rglob("*") if p.is_file()]
    assert files and {oct(p.stat().st_mode & 0o777) for p in files} == {"0o640"}
    assert {oct(p.stat().st_mode & 0o777) for p in base.rglob("*") if p.is_dir()} == {"0o750"}


def test_retries_are_bounded_and_end_in_a_clear_error(tmp_path):
    store = DeltaStore(tmp_path, max_attempts=3, backoff_seconds=0.0)
    calls = []

    def always_conflicts(_attempt):
        calls.append(1)
        raise CommitFailedError("Commit failed: a concurrent transactions added new data")

    with pytest.raises(CommitConflictError, match="raw_bars: commit still conflicted .* after 3 attempts"):
        store._with_retries("raw_bars", always_conflicts)
    assert len(calls) == 3


# real processes --------------------------------------------------------------------------
WRITER = textwrap.dedent(
    """
    import datetime as dt, sys
    import polars as pl
    from config.partitions import SymbolYear
    from resources.delta_store import DeltaStore
    root, symbol, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = DeltaStore(root, backoff_seconds=0.01)
    for r in range(rounds):
        df = pl.DataFrame({"date": [dt.datetime(2010, 1, d) for d in range(4, 9)], "symbol": [symbol] * 5,
                           "close": [float(r)] * 5})
        print("ready", flush=True)
        sys.stdin.readline()
        commit = store.write("raw_bars", SymbolYear(symbol, 2010), df)
        print("ok", commit.attempts, flush=True)
    """
)


def test_two_processes_writing_different_symbols_of_one_year_at_once_both_succeed(tmp_path):
    """Round 0 races two creations of the table. Before each later round the parent writes both
    symbols in one commit (one shared file), so both writers must rewrite that file: delta-rs
    then rejects the slower commit ("a concurrent transaction added new data") and it retries."""
    store = DeltaStore(tmp_path / "data")
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rounds = 4
    procs = [subprocess.Popen([sys.executable, str(script), str(store.root), s, str(rounds)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=worker_env(), cwd=REPO) for s in ("AAA", "BBB")]
    attempts = []
    try:
        for r in range(rounds):
            assert [p.stdout.readline().strip() for p in procs] == ["ready", "ready"]
            if r:
                both = pl.DataFrame({"date": [dt.datetime(2010, 1, 1)] * 2, "symbol": ["AAA", "BBB"], "close": [-1.0] * 2})
                store.write_split("raw_bars", [SymbolYear("AAA", 2010), SymbolYear("BBB", 2010)], both)
            for p in procs:  # release both at the same moment
                p.stdin.write("go\n")
                p.stdin.flush()
            lines = [p.stdout.readline().split() for p in procs]
            assert [line[0] for line in lines] == ["ok", "ok"], lines
            attempts += [int(line[1]) for line in lines]
            got = store.read("raw_bars", [SymbolYear("AAA", 2010), SymbolYear("BBB", 2010)])
            assert got.group_by("symbol").agg(pl.col("close").unique()).sort("symbol").rows() == [
                ("AAA", [float(r)]), ("BBB", [float(r)])]
            assert got.height == 10
    finally:
        for p in procs:
            p.stdin.close()
            assert p.wait(timeout=60) == 0
    assert store.version("raw_bars") == rounds * 3 - 2
    print("attempts per write:", attempts)  # > 1 where delta-rs reported a concurrent commit


KILLED_WRITER = textwrap.dedent(
    """
    import datetime as dt, sys
    import numpy as np, polars as pl
    from config.partitions import SymbolYear
    from resources.delta_store import DeltaStore
    n = int(sys.argv[2])
    df = pl.DataFrame({"date": pl.datetime_range(dt.datetime(2010, 1, 1), dt.datetime(2010, 12, 31), "1s", eager=True)[:n],
                       "close": np.random.default_rng(0).random(n).astype("float32")}).with_columns(symbol=pl.lit("AAA"))
    store = DeltaStore(sys.argv[1], target_file_size=1 << 17)  # many small files: a long write to land in
    print("writing", flush=True)
    store.write("raw_bars", SymbolYear("AAA", 2010), df)
    print("committed", flush=True)
    """
)


def test_a_sigkilled_writer_leaves_the_old_or_the_new_complete_version_and_a_next_write_succeeds(tmp_path):
    store = DeltaStore(tmp_path / "data")
    key = SymbolYear("AAA", 2010)
    old = pl.DataFrame({"date": [dt.datetime(2010, 1, 4)], "close": [1.0]}, schema_overrides={"close": pl.Float32}
                       ).with_columns(symbol=pl.lit("AAA"))
    store.write("raw_bars", key, old)
    script = tmp_path / "killed.py"
    script.write_text(KILLED_WRITER)
    n = 400_000
    part = store.asset_dir("raw_bars") / "year=2010"
    for _ in range(5):
        before = set(os.listdir(part))
        child = subprocess.Popen([sys.executable, str(script), str(store.root), str(n)], stdout=subprocess.PIPE, text=True,
                                 env=worker_env(), cwd=REPO)
        assert child.stdout.readline().strip() == "writing"
        while child.poll() is None and not (set(os.listdir(part)) - before):
            pass  # kill as soon as the first data file of the write appears: mid-write
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        got = store.read("raw_bars", [key])
        assert got.height in (1, n)  # the old complete version or the new complete one, never a mix
        if got.height == 1:
            assert store.version("raw_bars") == 0 and got.get_column("close").to_list() == [1.0]
            break
    else:
        pytest.skip("the write committed before every kill; never caught it mid-write")
    base = store.asset_dir("raw_bars")
    live = {Path(f).name for f in DeltaTable(str(base)).file_uris()}
    leftovers = {p.name for p in part.iterdir()} - live
    assert leftovers  # the kill landed mid-write: files of the uncommitted write remain
    removed = store.vacuum("raw_bars", retention_hours=0, enforce_retention_duration=False)
    assert {Path(f).name for f in removed} >= leftovers and {p.name for p in part.iterdir()} == live
    print("killed writer left", sorted(leftovers))
    before_write = store.version("raw_bars")  # vacuum commits too (VACUUM START/END)
    assert store.write("raw_bars", key, old.with_columns(pl.lit(2.0, pl.Float32).alias("close"))).version == before_write + 1
    assert store.read("raw_bars", [key]).get_column("close").to_list() == [2.0]


# migration -------------------------------------------------------------------------------
def write_hive_store(root: Path, frame: pl.DataFrame) -> None:
    """The former Parquet store's layout, as it wrote it: `<asset>/symbol=<S>/year=<Y>/part.parquet`
    (an empty file for a key without rows), `<asset>/year=<Y>/part.parquet`, `<asset>/part.parquet`."""
    def put(rel: str, df: pl.DataFrame) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        df.write_parquet(root / rel, compression="zstd")

    for key in KEYS + [SymbolYear("BBB", 2011)]:
        put(f"raw_bars/symbol={key.symbol}/year={key.year}/part.parquet",
            frame.filter((pl.col("symbol") == key.symbol) & (pl.col("date").dt.year() == key.year)))
    put("report/year=2010/part.parquet", pl.DataFrame({"score": [1.0, 2.0]}))
    put("report/year=2011/part.parquet", pl.DataFrame({"score": [3.0]}))
    put("universe/part.parquet", pl.DataFrame({"symbol": ["AAA", "BBB"]}))


def test_migrating_a_parquet_store_gives_one_commit_per_asset_with_equal_rows(tmp_path, frame):
    write_hive_store(tmp_path / "parquet", frame)
    counts = migrate_parquet_store(tmp_path / "parquet", tmp_path / "delta")
    assert counts == {"raw_bars": 4, "report": 3, "universe": 2}
    dst = DeltaStore(tmp_path / "delta")
    assert all(dst.version(a) == 0 for a in counts)
    all_keys = KEYS + [SymbolYear("BBB", 2011)]
    assert dst.read("raw_bars", all_keys).equals(frame.sort("symbol", "date"))
    assert dst.partitions("raw_bars") == sorted(all_keys)  # the empty BBB|2011 too
    assert dst.read("report", [2010, 2011]).get_column("score").to_list() == [1.0, 2.0, 3.0]
    assert dst.read("universe").equals(pl.DataFrame({"symbol": ["AAA", "BBB"]}))
    history = DeltaTable(str(dst.asset_dir("raw_bars"))).history()
    assert json.loads(history[0]["pipeline.keys"])[-1] == "BBB|2011"


def test_the_migrate_store_command_converts_an_old_store_into_the_configured_data_dir(tmp_path, frame):
    write_hive_store(tmp_path / "old", frame)
    cfg = tmp_path / "settings.yaml"
    cfg.write_text("paths: {data: data, reports: reports, models: models}\n")
    env = {**worker_env(), "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "home")}
    cmd = [sys.executable, "-m", "pipeline.cli", "migrate-store", "--from", str(tmp_path / "old")]
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines() if line.endswith(" rows")}
    assert lines == {"raw_bars": "4", "report": "3", "universe": "2"}
    assert DeltaStore(tmp_path / "data").read("raw_bars", KEYS).height == 4
    again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "already has Delta tables for ['raw_bars', 'report', 'universe']" in again.stderr


# empty keys and the schema ----------------------------------------------------------------
def test_an_empty_frame_of_another_schema_records_its_key_in_the_stored_schema(store):
    store.write_year("meta", 2002, pl.DataFrame({"year": [2002], "auc": [0.6]}))
    store.write_year("meta", 2001, pl.DataFrame(schema={"year": pl.Int32}))  # a year with nothing to train on
    assert store.years("meta") == [2001, 2002]
    assert store.read("meta", [2001, 2002]).rows() == [(2002, 0.6)]


def test_a_table_with_only_empty_keys_takes_the_schema_of_the_first_rows(store):
    store.write_year("meta", 2001, pl.DataFrame(schema={"year": pl.Int32}))
    store.write_year("meta", 2002, pl.DataFrame({"year": [2002], "auc": [0.6]}))
    assert store.years("meta") == [2001, 2002]
    assert store.read("meta", [2001, 2002]).rows() == [(2002, 0.6)]
    with pytest.raises(ValueError, match="columns differ"):  # rows stored: a partial overwrite keeps the schema
        store.write_year("meta", 2003, pl.DataFrame({"year": [2003], "other": [1.0]}))


# concurrency on one key --------------------------------------------------------------------
SAME_KEY_WRITER = textwrap.dedent(
    """
    import datetime as dt, sys
    import polars as pl
    from config.partitions import SymbolYear
    from resources.delta_store import DeltaStore
    store, value = DeltaStore(sys.argv[1]), float(sys.argv[2])
    df = pl.DataFrame({"date": [dt.datetime(2010, 1, d) for d in range(1, 11)], "symbol": ["AAA"] * 10,
                       "close": [value] * 10})
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(int(sys.argv[3])):
        store.write("raw_bars", SymbolYear("AAA", 2010), df)
    print("done", flush=True)
    """
)


def test_two_processes_rewriting_the_same_partition_both_succeed_and_leave_one_complete_version(tmp_path):
    store = DeltaStore(tmp_path / "data")
    script = tmp_path / "same_key.py"
    script.write_text(SAME_KEY_WRITER)
    writes = 8
    procs = [subprocess.Popen([sys.executable, str(script), str(store.root), v, str(writes)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env(), cwd=REPO)
             for v in ("1", "2")]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-1500:] for _, err in outs]
    got = store.read("raw_bars", [SymbolYear("AAA", 2010)])
    assert got.height == 10 and got.get_column("close").unique().len() == 1  # one writer's whole version
    assert store.version("raw_bars") == 2 * writes - 1
