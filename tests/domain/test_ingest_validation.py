"""Bad input gets a clear error naming the file, the row or column, and what was expected."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from config.errors import InputDataError
from domain.sources.folder import FolderSource

GOOD = """Date,Open,High,Low,Close,Volume
2010-01-04,10,11,9,10.5,1000
2010-01-05,10.5,11.5,10,11,1200
2010-01-06,11,12,10.5,11.5,900
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def load(folder: Path, symbol: str) -> pl.DataFrame:
    return FolderSource(folder).history([symbol])


def test_good_file_is_cast_once_to_the_schema(tmp_path):
    write(tmp_path, "goog.csv", GOOD)
    df = load(tmp_path, "GOOG")
    assert df.schema["close"] == pl.Float32 and df.schema["date"] == pl.Datetime("ns")
    assert df["symbol"].to_list() == ["GOOG"] * 3


def test_column_names_match_case_insensitively_and_timestamp_is_a_date(tmp_path):
    write(tmp_path, "x.csv", "TIMESTAMP,OPEN,high,Low,CLOSE\n2010-01-04,1,2,0.5,1.5\n")
    df = load(tmp_path, "X")
    assert df["close"].to_list() == [1.5] and df["volume"].is_nan().all()


CASES = {
    "missing_column": (
        "Date,Open,High,Low,Volume\n2010-01-04,1,2,0.5,10\n",
        ["missing required column 'close'", "column 'close'", "expected date"],
    ),
    "non_numeric_price": (
        GOOD.replace(",10,11,1200", ",10,abc,1200"),
        ["column 'Close'", "row 2", "non-numeric value 'abc'", "expected a number"],
    ),
    "nan_price": (
        GOOD.replace("11,12,10.5", "NaN,12,10.5"),
        ["column 'Open'", "row 3", "expected a finite price > 0"],
    ),
    "zero_price": (
        GOOD.replace("2010-01-04,10,", "2010-01-04,0,"),
        ["column 'Open'", "row 1", "expected a finite price > 0"],
    ),
    "negative_price": (
        GOOD.replace(",10,11,1200", ",10,-11,1200"),
        ["column 'Close'", "row 2", "expected a finite price > 0"],
    ),
    "high_below_low": (
        GOOD.replace("2010-01-05,10.5,11.5,10,", "2010-01-05,10.5,9,10,"),
        ["column 'High/Low'", "row 2", "high 9.0 < low 10.0", "expected high >= low"],
    ),
    "duplicate_dates": (
        GOOD.replace("2010-01-06", "2010-01-05"),
        ["column 'Date'", "row 2", "duplicate date", "rows [2, 3]", "expected one row per date"],
    ),
    "bad_date": (
        GOOD.replace("2010-01-06", "yesterday"),
        ["column 'Date'", "row 3", "cannot parse date 'yesterday'"],
    ),
    "header_only": ("Date,Open,High,Low,Close\n", ["no data rows", "expected a header and at least one row"]),
    "empty_file": ("", ["the file is empty"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_is_reported_with_file_row_column_and_expectation(tmp_path, case):
    text, fragments = CASES[case]
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(InputDataError) as err:
        load(tmp_path, "BAD")
    msg = str(err.value)
    assert str(path) in msg
    for fragment in fragments:
        assert fragment in msg, f"{fragment!r} not in {msg!r}"


def test_unsorted_dates_are_sorted_not_an_error(tmp_path):
    lines = GOOD.strip().split("\n")
    write(tmp_path, "u.csv", "\n".join([lines[0], lines[3], lines[1], lines[2]]) + "\n")
    df = load(tmp_path, "U")
    assert df["date"].to_list() == [dt.datetime(2010, 1, d) for d in (4, 5, 6)]


def test_long_table_symbol_outside_the_pattern_never_becomes_a_path(tmp_path):
    write(tmp_path, "long.csv", "symbol,date,open,high,low,close\nAAA,2010-01-04,1,2,0.5,1\n../x,2010-01-04,1,2,0.5,1\n")
    write(tmp_path, "BBB.csv", GOOD)
    with pytest.warns(UserWarning, match=r"long\.csv: column 'symbol', row 2: symbol '\.\./x' is not allowed; expected the symbol: a name matching"):
        assert FolderSource(tmp_path).symbols() == ["BBB"]  # the file is skipped whole: nothing of it becomes a path


def test_long_table_errors_name_the_row_of_the_file(tmp_path):
    write(
        tmp_path,
        "long.csv",
        "Ticker,Date,Open,High,Low,Close\nAAA,2010-01-04,1,2,0.5,1\nBBB,2010-01-04,1,2,0.5,1\nBBB,2010-01-05,1,2,0.5,oops\n",
    )
    assert load(tmp_path, "AAA").height == 1
    with pytest.raises(InputDataError, match=r"column 'Close', row 3: non-numeric value 'oops'"):
        load(tmp_path, "BBB")


def test_parquet_files_and_long_tables_with_many_symbols(tmp_path):
    long = pl.DataFrame(
        {
            "symbol": ["AAA", "AAA", "BBB"],
            "date": [dt.date(2010, 1, 4), dt.date(2010, 1, 5), dt.date(2010, 1, 4)],
            "open": [1.0, 1.1, 5.0], "high": [1.2, 1.2, 5.5], "low": [0.9, 1.0, 4.5], "close": [1.1, 1.15, 5.2],
        }
    )
    long.write_parquet(tmp_path / "universe.parquet")
    src = FolderSource(tmp_path)
    assert src.symbols() == ["AAA", "BBB"]
    assert src.history(["AAA", "BBB"]).height == 3


def test_symbol_in_two_files_with_the_same_date_is_an_error(tmp_path):
    write(tmp_path, "aaa.csv", GOOD)
    write(tmp_path, "long.csv", "symbol,date,open,high,low,close\nAAA,2010-01-04,1,2,0.5,1\n")
    with pytest.raises(InputDataError, match="more than one file"):
        load(tmp_path, "AAA")


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(InputDataError, match="folder not found"):
        FolderSource(tmp_path / "nowhere").symbols()
