"""The Parquet store: hive layout, zstd, atomic writes that survive a killed writer."""

from __future__ import annotations

import datetime as dt
import hashlib
import signal
import subprocess
import sys
import textwrap

import polars as pl
import pyarrow.parquet as pq
import pytest

from domain.schema import RAW_BARS
from config.partitions import SymbolYear
from resources.parquet_store import ParquetStore


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


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


KEYS = [SymbolYear("AAA", 2010), SymbolYear("AAA", 2011), SymbolYear("BBB", 2010)]


@pytest.fixture
def store(tmp_path):
    return ParquetStore(tmp_path / "data")


@pytest.fixture
def frame():
    return pl.concat(
        [bars("AAA", [dt.date(2010, 1, 4), dt.date(2010, 1, 5), dt.date(2011, 1, 3)]), bars("BBB", [dt.date(2010, 1, 4)])]
    )


def test_split_write_uses_hive_layout_and_zstd(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    path = store.root / "raw_bars" / "symbol=AAA" / "year=2010" / "part.parquet"
    assert path.is_file()
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"
    assert pl.read_parquet(path).height == 2
    assert store.partitions("raw_bars") == sorted(KEYS)


def test_key_without_rows_gets_an_empty_file_with_the_schema(store, frame):
    store.write_split("raw_bars", KEYS + [SymbolYear("BBB", 2011)], frame)
    empty = store.read("raw_bars", [SymbolYear("BBB", 2011)])
    assert empty.height == 0 and empty.schema == RAW_BARS.empty().schema


def test_rows_outside_the_run_are_an_error_not_dropped(store, frame):
    with pytest.raises(ValueError, match=r"outside this run.*AAA', year=2011"):
        store.write_split("raw_bars", [SymbolYear("AAA", 2010), SymbolYear("BBB", 2010)], frame)


def test_read_of_several_partitions_is_one_frame_in_symbol_date_order(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    got = store.read("raw_bars", [SymbolYear("AAA", 2011), SymbolYear("AAA", 2010)])
    assert got["date"].is_sorted() and got.height == 3


def test_missing_partition_is_named(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    with pytest.raises(FileNotFoundError, match=r"SymbolYear\(symbol='BBB', year=2011\)"):
        store.read("raw_bars", [SymbolYear("BBB", 2011)])


def test_whole_asset_scan_has_hive_columns(store, frame):
    store.write_split("raw_bars", KEYS, frame)
    got = store.scan("raw_bars").collect()
    assert {"symbol", "year"} <= set(got.columns) and got.height == 4


@pytest.mark.parametrize("symbol", ["../x", "a/b", "", "lower", "X" * 17])
def test_symbol_can_never_become_a_path(store, symbol):
    with pytest.raises(ValueError, match="not allowed in a path"):
        store.partition_path("raw_bars", symbol, 2010)


def test_same_input_gives_the_same_bytes(tmp_path, frame):
    a, b = ParquetStore(tmp_path / "a"), ParquetStore(tmp_path / "b")
    a.write_split("raw_bars", KEYS, frame)
    b.write_split("raw_bars", KEYS, frame)
    for key in KEYS:
        assert sha(a.partition_path("raw_bars", *key)) == sha(b.partition_path("raw_bars", *key))


# A child process writes a new version of a stored partition and is killed with SIGKILL
# at a chosen point: mid-way through the Parquet bytes, or with the temporary file complete
# but not yet renamed. It prints "ready" at that point and waits, so no timing is involved.
KILL_POINTS = {
    "mid_write": """
        def blocking_write(self, fh, **kw):
            fh.write(b"PAR1 half a file")
            fh.flush()
            print("ready", flush=True)
            sys.stdin.read()
        pl.DataFrame.write_parquet = blocking_write
    """,
    "before_rename": """
        def blocking_replace(src, dst):
            print("ready", flush=True)
            sys.stdin.read()
        os.replace = blocking_replace
    """,
}


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_killed_writer_leaves_the_previous_partition_intact(tmp_path, point):
    store = ParquetStore(tmp_path / "data")
    key = SymbolYear("AAA", 2010)
    old = bars("AAA", [dt.date(2010, 1, 4)], close=10.0)
    store.write("raw_bars", key, old)
    path = store.partition_path("raw_bars", *key)
    before = sha(path)

    child = textwrap.dedent(
        """
        import datetime as dt, os, sys
        import polars as pl
        from resources.parquet_store import ParquetStore
        from config.partitions import SymbolYear
        from tests.test_parquet_store import bars
        """
    ) + textwrap.dedent(KILL_POINTS[point]) + textwrap.dedent(
        f"""
        new = bars("AAA", [dt.date(2010, 1, 4), dt.date(2010, 1, 5)], close=99.0)
        ParquetStore({str(store.root)!r}).write("raw_bars", SymbolYear("AAA", 2010), new)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent),
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert list(path.parent.glob(".part-*.tmp")), "the writer should be mid-way"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert sha(path) == before
    assert store.read("raw_bars", [key]).equals(old)
    assert store.scan("raw_bars").collect().height == 1  # the stray temp file is ignored
    store.write("raw_bars", key, old)  # the next write of that partition cleans up
    assert not list(path.parent.glob(".part-*.tmp"))


CONCURRENT_WRITER = """
import sys
import polars as pl
from config.partitions import SymbolYear
from resources.parquet_store import ParquetStore

store = ParquetStore(sys.argv[1])
frame = pl.DataFrame({"x": list(range(20000))})
print("ready", flush=True)
sys.stdin.readline()
for _ in range(40):
    store.write("raw_bars", SymbolYear("AAA", 2010), frame)
print("done", flush=True)
"""


def test_two_writers_of_the_same_partition_never_delete_each_others_temp_files(tmp_path):
    """Real processes writing one partition at the same time, 40 times each: both succeed."""
    import subprocess
    import sys

    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT_WRITER, str(tmp_path / "data")], text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-600:] for _, err in outs]
    assert all(out.strip() == "done" for out, _ in outs)
    assert ParquetStore(tmp_path / "data").read("raw_bars", [SymbolYear("AAA", 2010)]).height == 20000
