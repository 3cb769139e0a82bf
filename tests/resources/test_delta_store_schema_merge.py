"""Schema evolution of the `features` / `specialists` tables: a partial
overwrite that adds columns merges them into the table (other keys read them as null), one
that lacks stored columns keeps their stored values, dtype changes are still refused, and
two processes writing the old and the new schema at once both land (real processes)."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap

import polars as pl
import pytest

from config.partitions import SymbolYear
from resources.delta_store import DeltaStore
from tests.resources.test_delta_store import REPO, worker_env

AAA, BBB = SymbolYear("AAA", 2010), SymbolYear("BBB", 2010)


def feats(symbol: str, value: float, **extra: float) -> pl.DataFrame:
    dates = [dt.datetime(2010, 1, d) for d in range(4, 8)]
    return pl.DataFrame({"date": dates, "symbol": [symbol] * 4, "f_a": [value] * 4,
                         **{k: [v] * 4 for k, v in extra.items()}}).cast({pl.Float64: pl.Float32})


@pytest.fixture
def store(tmp_path):
    s = DeltaStore(tmp_path / "data")
    s.write_split("features", [AAA, BBB], pl.concat([feats("AAA", 1.0), feats("BBB", 2.0)]))
    return s


def test_a_rewrite_with_a_new_column_merges_it_and_other_keys_read_it_as_null(store):
    store.write("features", AAA, feats("AAA", 3.0, f_new=7.0))
    got = store.read("features").sort("symbol", "date")
    assert got.columns == ["date", "symbol", "f_a", "f_new"] and got.schema["f_new"] == pl.Float32
    assert got.filter(pl.col("symbol") == "AAA")["f_new"].to_list() == [7.0] * 4
    assert got.filter(pl.col("symbol") == "BBB")["f_new"].null_count() == 4  # not rebuilt: missing
    assert got.filter(pl.col("symbol") == "BBB")["f_a"].to_list() == [2.0] * 4  # untouched


def test_a_rewrite_without_a_stored_column_keeps_its_stored_values(store):
    store.write("features", AAA, feats("AAA", 3.0, f_new=7.0))
    store.write("features", AAA, feats("AAA", 4.0))  # the pack that made f_new is no longer selected
    got = store.read("features", [AAA])
    assert got["f_a"].to_list() == [4.0] * 4 and got["f_new"].to_list() == [7.0] * 4


def test_a_dtype_change_is_still_refused_and_other_tables_keep_their_schema(store):
    with pytest.raises(ValueError, match=r"in \['f_a'\] \(stored \['Float32'\], given \['Float64'\]\)"):
        store.write("features", AAA, feats("AAA", 3.0).with_columns(pl.col("f_a").cast(pl.Float64)))
    store.write_split("labels", [AAA], feats("AAA", 1.0))
    with pytest.raises(ValueError, match=r"differ from the stored table in \['f_new'\]"):
        store.write("labels", AAA, feats("AAA", 1.0, f_new=2.0))
    assert store.version("features") == 0


WRITER = textwrap.dedent(
    """
    import datetime as dt, sys
    import polars as pl
    from config.partitions import SymbolYear
    from resources.delta_store import DeltaStore
    root, symbol, extra, rounds = sys.argv[1], sys.argv[2], sys.argv[3] == "new", int(sys.argv[4])
    store = DeltaStore(root, backoff_seconds=0.01)
    for r in range(rounds):
        cols = {"f_a": [float(r)] * 4, **({"f_new": [float(r) + 0.5] * 4} if extra else {})}
        df = pl.DataFrame({"date": [dt.datetime(2010, 1, d) for d in range(4, 8)], "symbol": [symbol] * 4, **cols})
        df = df.cast({pl.Float64: pl.Float32})
        print("ready", flush=True)
        sys.stdin.readline()
        commit = store.write("features", SymbolYear(symbol, 2010), df)
        print("ok", commit.attempts, flush=True)
    """
)


def test_an_old_schema_writer_and_a_new_schema_writer_at_once_both_land(store, tmp_path):
    """Before each round the parent rewrites both symbols in one commit (one shared file, the
    stored schema), so both writers must rewrite it: the slower retries on the new snapshot,
    whose schema the faster may just have merged."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rounds = 3
    procs = [subprocess.Popen([sys.executable, str(script), str(store.root), s, kind, str(rounds)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=worker_env(), cwd=REPO)
             for s, kind in (("AAA", "new"), ("BBB", "old"))]
    try:
        for r in range(rounds):
            assert [p.stdout.readline().strip() for p in procs] == ["ready", "ready"]
            both = store.read("features", [AAA, BBB])
            store.write_split("features", [AAA, BBB], both.with_columns(pl.col("f_a") - 100.0))
            for p in procs:  # release both at the same moment
                p.stdin.write("go\n")
                p.stdin.flush()
            lines = [p.stdout.readline().split() for p in procs]
            assert [line[0] for line in lines] == ["ok", "ok"], lines
            got = store.read("features", [AAA, BBB]).sort("symbol", "date")
            assert got.filter(pl.col("symbol") == "AAA").select("f_a", "f_new").unique().rows() == [(float(r), r + 0.5)]
            assert got.filter(pl.col("symbol") == "BBB")["f_a"].unique().to_list() == [float(r)]
            assert got.height == 8
    finally:
        for p in procs:
            p.stdin.close()
            assert p.wait(timeout=60) == 0


def test_the_backtest_table_takes_a_column_added_by_newer_code_and_older_years_read_null(tmp_path):
    """A store written before the backtest gained a figure (its `trades` column) is not refused
    on the next run: the year rebuilt first merges the column, years not rebuilt read null."""
    store = DeltaStore(tmp_path / "data")
    day = lambda y: pl.DataFrame({"date": [dt.datetime(y, 1, 4)], "ret": [0.01]})  # noqa: E731
    store.write_year("backtest", 2010, day(2010))
    store.write_year("backtest", 2011, day(2011))
    store.write_year("backtest", 2011, day(2011).with_columns(pl.lit(3, pl.Int32).alias("trades")))
    got = store.read("backtest").sort("date")
    assert got["trades"].to_list() == [None, 3]
