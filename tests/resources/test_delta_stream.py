"""The streamed write path (DeltaStore.write_stream): a run's chunks are written as they come
and committed once. Every promise of the store, again on this path: one commit per run, a
re-materialized key replaced exactly, schema evolution, concurrent writers, a real SIGKILL
mid-run, and the commit lock released by a killed holder.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable

from config.partitions import SymbolYear
from resources.commit_lock import LOCK_NAME, commit_lock
from resources.delta_store import DeltaStore

REPO = Path(__file__).resolve().parents[2]


def rows(symbol: str, year: int, value: float, n: int = 3, **extra) -> pl.DataFrame:
    return pl.DataFrame({
        "date": [dt.datetime(year, 1, d + 2) for d in range(n)], "symbol": [symbol] * n,
        "f": pl.Series([value] * n, dtype=pl.Float32), **{k: pl.Series([v] * n, dtype=pl.Float32) for k, v in extra.items()},
    })


def keys(symbols, years) -> list[SymbolYear]:
    return [SymbolYear(s, y) for s in symbols for y in years]


def chunk(symbols, years, value: float, **extra) -> pl.DataFrame:
    return pl.concat([rows(s, y, value, **extra) for s in symbols for y in years])


def live_files(store: DeltaStore, asset: str) -> set[str]:
    return {Path(f).name for f in DeltaTable(str(store.asset_dir(asset))).file_uris()}


def worker_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", "/tmp/nc-delta")}


@pytest.fixture
def store(tmp_path):
    return DeltaStore(tmp_path / "data")


def test_chunks_are_written_one_behind_the_build_never_held_until_the_end(store):
    """A chunk's files are written while the next chunk is built, and at most one chunk is in
    flight: the third chunk is asked for only after the first one's files are on disk."""
    seen = []

    def frames():
        yield chunk(["AAA"], [2010, 2011], 1.0)
        yield chunk(["BBB"], [2010, 2011], 2.0)
        seen.append({p.parent.name for p in store.asset_dir("features").rglob("*.parquet")})
        seen.append(len(list(store.asset_dir("features").rglob("*.parquet"))))
        yield chunk(["CCC"], [2010, 2011], 3.0)

    commit = store.write_stream("features", keys(["AAA", "BBB", "CCC"], [2010, 2011]), frames())
    assert seen[0] == {"year=2010", "year=2011"} and seen[1] >= 2  # AAA's two files, before CCC was built
    assert commit.version == 0 and commit.rows == 18
    assert len(live_files(store, "features")) == 6  # a file per chunk and year


def test_a_failed_file_write_fails_the_run_and_commits_nothing(store, monkeypatch):
    import resources.delta_files as files

    store.write_stream("features", keys(["AAA"], [2010]), [chunk(["AAA"], [2010], 1.0)])
    real = files.stage_frame

    def stage(root, frame):
        if frame.get_column("symbol")[0] == "BBB":
            raise OSError(28, "No space left on device")
        return real(root, frame)

    monkeypatch.setattr(files, "stage_frame", stage)
    with pytest.raises(OSError, match="No space left"):
        store.write_stream("features", keys(["AAA", "BBB", "CCC"], [2010]),
                           iter([chunk(["AAA"], [2010], 2.0), chunk(["BBB"], [2010], 2.0), chunk(["CCC"], [2010], 2.0)]))
    assert store.version("features") == 0 and store.read("features").get_column("f").to_list() == [1.0] * 3


def test_a_build_error_while_the_write_before_it_fails_names_both(store, monkeypatch):
    import threading

    import resources.delta_files as files

    writing = threading.Event()

    def failing_stage(root, frame):
        writing.set()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "stage_frame", failing_stage)

    def frames():
        yield chunk(["AAA"], [2010], 1.0)
        writing.wait(10)
        raise RuntimeError("the build of BBB broke")

    with pytest.raises(RuntimeError, match="BBB broke") as raised:
        store.write_stream("features", keys(["AAA", "BBB"], [2010]), frames())
    assert any("No space left on device" in note for note in raised.value.__notes__)
    assert not store.exists("features")


def test_a_build_error_waits_for_the_chunk_in_flight_and_raises_the_builds_error(store, monkeypatch):
    import threading

    import resources.delta_files as files

    real, writing = files.stage_frame, threading.Event()

    def slow_stage(root, frame):
        writing.set()
        return real(root, frame)

    monkeypatch.setattr(files, "stage_frame", slow_stage)

    def frames():
        yield chunk(["AAA"], [2010], 1.0)
        writing.wait(10)
        raise RuntimeError("the build of BBB broke")

    with pytest.raises(RuntimeError, match="BBB broke"):
        store.write_stream("features", keys(["AAA", "BBB"], [2010]), frames())
    assert not [t for t in threading.enumerate() if t.name.startswith("stage-files")]  # no writer left running
    assert not store.exists("features")  # nothing committed; AAA's staged file is unreferenced


def test_a_streamed_run_is_one_commit_replacing_exactly_its_keys(store):
    store.write_stream("features", keys(["AAA", "BBB", "CCC"], [2010, 2011]),
                       [chunk(["AAA", "BBB"], [2010, 2011], 1.0), chunk(["CCC"], [2010, 2011], 1.0)])
    commit = store.write_stream("features", keys(["BBB"], [2010]), iter([chunk(["BBB"], [2010], 9.0)]))
    assert commit.version == 1
    got = store.read("features").group_by("symbol", pl.col("date").dt.year().alias("y")).agg(pl.col("f").max())
    assert sorted(got.rows()) == [("AAA", 2010, 1.0), ("AAA", 2011, 1.0), ("BBB", 2010, 9.0), ("BBB", 2011, 1.0),
                                  ("CCC", 2010, 1.0), ("CCC", 2011, 1.0)]
    assert store.read("features").height == 18


def test_a_key_of_the_run_without_rows_in_any_chunk_is_emptied(store):
    store.write_stream("features", keys(["AAA", "BBB"], [2010]), [chunk(["AAA", "BBB"], [2010], 1.0)])
    store.write_stream("features", keys(["AAA", "BBB"], [2010]), [chunk(["AAA"], [2010], 2.0), chunk(["AAA"], [2010], 2.0).head(0)])
    assert store.read("features").get_column("symbol").unique().to_list() == ["AAA"]
    assert SymbolYear("BBB", 2010) in store.partitions("features")  # recorded, empty


def test_a_chunk_with_rows_outside_the_run_is_refused_and_nothing_is_committed(store):
    store.write_stream("features", keys(["AAA"], [2010]), [chunk(["AAA"], [2010], 1.0)])
    with pytest.raises(ValueError, match=r"rows for partitions outside this run: \['ZZZ\|2010'\]"):
        store.write_stream("features", keys(["AAA"], [2010]), [chunk(["AAA"], [2010], 2.0), chunk(["ZZZ"], [2010], 2.0)])
    assert store.version("features") == 0 and store.read("features").get_column("f").unique().to_list() == [1.0]


def test_new_columns_merge_and_other_keys_keep_their_files_read_null_for_them(store):
    store.write_stream("features", keys(["AAA", "BBB"], [2010, 2011]), [chunk(["AAA", "BBB"], [2010, 2011], 1.0)])
    store.write_stream("features", keys(["AAA"], [2010]), [chunk(["AAA"], [2010], 2.0, g=5.0)])
    got = store.read("features").sort("symbol", "date")
    assert got.columns == ["date", "symbol", "f", "g"]
    assert got.filter(pl.col("symbol") == "AAA", pl.col("date").dt.year() == 2010).get_column("g").to_list() == [5.0] * 3
    assert got.filter(pl.col("symbol") == "BBB").get_column("g").null_count() == 6
    assert got.filter(pl.col("symbol") == "BBB").get_column("f").to_list() == [1.0] * 6


def test_a_stream_without_a_stored_column_carries_its_values_over(store):
    store.write_stream("features", keys(["AAA"], [2010]), [chunk(["AAA"], [2010], 1.0, g=5.0)])
    store.write_stream("features", keys(["AAA"], [2010]), [chunk(["AAA"], [2010], 2.0)])
    got = store.read("features")
    assert got.get_column("f").to_list() == [2.0] * 3 and got.get_column("g").to_list() == [5.0] * 3


def test_dropped_symbols_stay_out_of_the_commit_and_keep_their_rows(store):
    store.write_stream("features", keys(["AAA", "BBB"], [2010]), [chunk(["AAA", "BBB"], [2010], 1.0)])
    failed = {}

    def frames():
        yield chunk(["AAA"], [2010], 2.0)
        failed["BBB"] = "boom"

    store.write_stream("features", keys(["AAA", "BBB"], [2010]), frames(), drop_symbols=lambda: failed)
    got = store.read("features").group_by("symbol").agg(pl.col("f").max()).sort("symbol")
    assert got.rows() == [("AAA", 2.0), ("BBB", 1.0)]


def test_the_commit_lock_is_released_when_its_holder_is_sigkilled(tmp_path):
    table = tmp_path / "data" / "features"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, pathlib
            from resources.commit_lock import commit_lock
            with commit_lock(pathlib.Path({str(table)!r})):
                print("holding", flush=True)
                sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=worker_env(), cwd=REPO)
    assert holder.stdout.readline().strip() == "holding"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with commit_lock(table):  # would wait forever if the dead holder still held it
        pass
    store = DeltaStore(tmp_path / "data")
    assert store.write_stream("features", keys(["AAA"], [2010]), [chunk(["AAA"], [2010], 1.0)]).version == 0
    assert (table / LOCK_NAME).exists() and LOCK_NAME not in live_files(store, "features")


STREAM_WRITER = textwrap.dedent(
    """
    import datetime as dt, sys
    import polars as pl
    from config.partitions import SymbolYear
    from resources.delta_store import DeltaStore
    root, value, symbols, rounds = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(","), int(sys.argv[4])
    years = [2010, 2011]
    store = DeltaStore(root, backoff_seconds=0.01)

    def frames(r):
        for s in symbols:
            yield pl.concat([pl.DataFrame({"date": [dt.datetime(y, 1, d) for d in range(2, 7)], "symbol": [s] * 5,
                                           "f": pl.Series([value + r] * 5, dtype=pl.Float32)}) for y in years])
            if s == symbols[0]:
                print("staged", flush=True)
                sys.stdin.readline()   # the parent holds every writer here, then releases them together

    for r in range(rounds):
        commit = store.write_stream("features", [SymbolYear(s, y) for s in symbols for y in years], frames(r))
        print("ok", commit.attempts, flush=True)
    """
)


def test_two_processes_streaming_overlapping_symbol_groups_at_once_leave_whole_runs(tmp_path):
    """Writer 1 streams AAA,BBB; writer 2 streams BBB,CCC (BBB in both): each round both
    stage a chunk, are released together and commit. Every key ends with the rows of exactly
    one writer's run, BBB is never doubled, and nothing of the other symbols is lost."""
    store = DeltaStore(tmp_path / "data")
    store.write_stream("features", keys(["AAA", "BBB", "CCC", "DDD"], [2010, 2011]),
                       [chunk(["AAA", "BBB", "CCC", "DDD"], [2010, 2011], 0.0)])
    script = tmp_path / "stream_writer.py"
    script.write_text(STREAM_WRITER)
    rounds = 3
    procs = [subprocess.Popen([sys.executable, str(script), str(store.root), v, syms, str(rounds)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env(), cwd=REPO)
             for v, syms in (("100", "AAA,BBB"), ("200", "BBB,CCC"))]
    attempts = []
    try:
        for r in range(rounds):
            assert [p.stdout.readline().strip() for p in procs] == ["staged", "staged"]
            for p in procs:
                p.stdin.write("go\n")
                p.stdin.flush()
            lines = [p.stdout.readline().split() for p in procs]
            assert [line[:1] for line in lines] == [["ok"], ["ok"]], (lines, [p.stderr.read() for p in procs if p.poll()])
            attempts += [int(line[1]) for line in lines]
            got = store.read("features")
            per_key = got.group_by("symbol", pl.col("date").dt.year().alias("y")).agg(pl.len(), pl.col("f").unique())
            lens = {(s, y): n for s, y, n, _ in per_key.rows()}
            values = {(s, y): v for s, y, _, v in per_key.rows()}
            assert per_key.height == 8, per_key
            assert {lens[(s, y)] for s in ("AAA", "BBB", "CCC") for y in (2010, 2011)} == {5}  # no doubles
            assert lens[("DDD", 2010)] == 3
            assert values[("AAA", 2010)] == [100.0 + r] and values[("CCC", 2011)] == [200.0 + r]
            assert values[("DDD", 2010)] == [0.0]  # untouched by both
            assert values[("BBB", 2010)] in ([100.0 + r], [200.0 + r])
            assert values[("BBB", 2010)] == values[("BBB", 2011)]  # one writer's whole run
    finally:
        for p in procs:
            p.stdin.close()
            assert p.wait(timeout=120) == 0
    assert store.version("features") == 2 * rounds
    print("attempts per write:", attempts)


KILLED_STREAM = textwrap.dedent(
    """
    import datetime as dt, sys
    import numpy as np, polars as pl
    from config.partitions import SymbolYear
    from resources.delta_store import DeltaStore
    store = DeltaStore(sys.argv[1])
    symbols = [f"S{i:02d}" for i in range(8)]

    def frames():
        for i, s in enumerate(symbols):
            yield pl.DataFrame({"date": [dt.datetime(2010, 1, d) for d in range(2, 12)], "symbol": [s] * 10,
                                "f": pl.Series(np.full(10, 9.0), dtype=pl.Float32)})
            if i == 4:
                print("mid-run", flush=True)
                sys.stdin.readline()   # killed here: four chunks staged, the fifth written or being written, nothing committed

    store.write_stream("features", [SymbolYear(s, 2010) for s in symbols], frames())
    print("committed", flush=True)
    """
)


def test_a_run_sigkilled_mid_stream_leaves_the_previous_version_and_the_next_run_succeeds(tmp_path):
    store = DeltaStore(tmp_path / "data")
    symbols = [f"S{i:02d}" for i in range(8)]
    store.write_stream("features", keys(symbols, [2010]), [chunk(symbols, [2010], 1.0)])
    before = store.read("features")
    script = tmp_path / "killed.py"
    script.write_text(KILLED_STREAM)
    child = subprocess.Popen([sys.executable, str(script), str(store.root)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=worker_env(), cwd=REPO)
    assert child.stdout.readline().strip() == "mid-run"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert store.version("features") == 0 and store.read("features").equals(before)
    part = store.asset_dir("features") / "year=2010"
    leftovers = {p.name for p in part.iterdir()} - live_files(store, "features")
    # the staged chunks of the killed run, referenced by no version: four, and the fifth when its
    # write (one chunk behind the build) finished before the kill (a half-written file is removed too)
    assert len(leftovers) in (4, 5)
    removed = store.vacuum("features", retention_hours=0, enforce_retention_duration=False)
    assert {Path(f).name for f in removed} >= leftovers
    assert store.write_stream("features", keys(symbols, [2010]), [chunk(symbols, [2010], 2.0)]).rows == 24
    assert store.read("features").get_column("f").unique().to_list() == [2.0]


def test_a_stream_without_a_stored_column_for_new_symbols_only_reads_null_for_it(store):
    store.write_stream("features", keys(["AAA"], [2010]), [chunk(["AAA"], [2010], 1.0, g=5.0)])
    store.write_stream("features", keys(["BBB"], [2010]), [chunk(["BBB"], [2010], 2.0)])
    got = store.read("features").sort("symbol", "date")
    assert got.filter(pl.col("symbol") == "AAA").get_column("g").to_list() == [5.0] * 3
    assert got.filter(pl.col("symbol") == "BBB").get_column("g").null_count() == 3
