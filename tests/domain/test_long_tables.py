"""One long table of many symbols (domain.sources.folder): reading one symbol scans the file
with a filter and never holds the other symbols' rows; each symbol has its own fingerprint,
so a bar appended for one symbol changes that symbol's alone."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

import domain.sources.folder as folder_module
from domain.sources.folder import FolderSource

SYMBOLS = [f"S{i:03d}" for i in range(50)]
DAYS = [dt.date(2010, 1, 4) + dt.timedelta(days=d) for d in range(40)]


def long_table(symbols=SYMBOLS, days=DAYS) -> pl.DataFrame:
    n = len(days)
    return pl.DataFrame({
        "symbol": [s for s in symbols for _ in days], "date": [d.isoformat() for _ in symbols for d in days],
        "open": [10.0] * (n * len(symbols)), "high": [11.0] * (n * len(symbols)),
        "low": [9.0] * (n * len(symbols)), "close": [10.5] * (n * len(symbols)),
    })


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_one_symbol_of_a_50_symbol_long_table_reads_only_its_own_rows(tmp_path, monkeypatch, suffix):
    table = long_table()
    path = tmp_path / f"universe.{suffix}"
    table.write_csv(path) if suffix == "csv" else table.write_parquet(path)
    conformed = []
    real = folder_module.conform_bars

    def spy(df, origin, symbol, **kw):
        conformed.append((symbol, df.height))
        return real(df, origin, symbol, **kw)

    def no_eager_read(p):  # the whole file in memory is what a long table must never cost
        raise AssertionError(f"{p} read whole")

    monkeypatch.setattr(folder_module, "conform_bars", spy)
    monkeypatch.setattr(folder_module, "read_table", no_eager_read)
    df = FolderSource(tmp_path).history(["S017"])
    assert conformed == [("S017", len(DAYS))]
    assert df.height == len(DAYS) and df["symbol"].unique().to_list() == ["S017"]


def test_appending_one_bar_for_one_symbol_changes_that_symbols_fingerprint_only(tmp_path):
    path = tmp_path / "universe.csv"
    long_table().write_csv(path)
    before = FolderSource(tmp_path).fingerprints()
    with path.open("a") as f:
        f.write("S017,2010-02-13,10,11,9,10.5\n")
    after = FolderSource(tmp_path).fingerprints()
    assert sorted(after) == SYMBOLS
    assert [s for s in SYMBOLS if before[s] != after[s]] == ["S017"]


def test_a_null_symbol_in_a_parquet_long_table_names_its_row(tmp_path):
    from config.errors import InputDataError

    table = long_table(["AAA", "BBB"], DAYS[:2]).with_columns(
        pl.when(pl.int_range(pl.len()) == 2).then(None).otherwise(pl.col("symbol")).alias("symbol"))
    table.write_parquet(tmp_path / "universe.parquet")
    with pytest.raises(InputDataError, match=r"universe\.parquet: column 'symbol', row 3: empty symbol"):
        FolderSource(tmp_path).history(["AAA"])
