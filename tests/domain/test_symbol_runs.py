"""domain.symbol_runs: the facts that let the feature stage skip its sort and its partition
filter. A wrong True would compute features over a misordered series or keep halo rows, so
every way a frame can fail to be (symbol, date)-sorted, or hold a row outside the keys, is a
row here."""

import datetime as dt

import polars as pl
import pytest

from config.partitions import SymbolYear
from domain.symbol_runs import is_sorted_by_symbol_date, keeps_every_row, run_starts


def _frame(rows: list[tuple[str, str]]) -> pl.DataFrame:
    return pl.DataFrame({"symbol": [s for s, _ in rows], "date": [dt.date.fromisoformat(d) for _, d in rows]})


SORTED_CASES = [
    ("sorted", [("A", "2020-01-02"), ("A", "2020-01-03"), ("B", "2019-05-01"), ("B", "2019-05-02")], True),
    ("next_run_starts_earlier", [("A", "2021-01-04"), ("B", "2001-01-02")], True),
    ("one_row", [("A", "2020-01-02")], True),
    ("symbol_split_in_two_runs", [("A", "2020-01-02"), ("B", "2020-01-02"), ("A", "2020-01-03")], False),
    ("runs_in_decreasing_symbol_order", [("B", "2020-01-02"), ("A", "2020-01-02")], False),
    ("date_goes_back_inside_a_run", [("A", "2020-01-03"), ("A", "2020-01-02")], False),
    ("repeated_date", [("A", "2020-01-02"), ("A", "2020-01-02")], False),
]


@pytest.mark.parametrize("rows, expected", [c[1:] for c in SORTED_CASES], ids=[c[0] for c in SORTED_CASES])
def test_is_sorted_by_symbol_date_agrees_with_the_sort(rows, expected):
    frame = _frame(rows)
    assert is_sorted_by_symbol_date(frame, run_starts(frame["symbol"])) is expected
    assert frame.equals(frame.sort("symbol", "date")) or not expected


def test_is_sorted_by_symbol_date_null_date_answers_false():
    frame = pl.DataFrame({"symbol": ["A", "A"], "date": [dt.date(2020, 1, 2), None]})
    assert is_sorted_by_symbol_date(frame, run_starts(frame["symbol"])) is False


ROWS = [("A", "2019-12-31"), ("A", "2020-01-02"), ("A", "2021-01-04"), ("B", "2021-01-04")]
KEEP_CASES = [
    ("every_year_a_key", [SymbolYear("A", 2019), SymbolYear("A", 2020), SymbolYear("A", 2021), SymbolYear("B", 2021)], True),
    ("keys_beyond_the_rows", [SymbolYear("A", y) for y in range(2015, 2025)] + [SymbolYear("B", 2021)], True),
    ("halo_year_not_a_key", [SymbolYear("A", 2020), SymbolYear("A", 2021), SymbolYear("B", 2021)], False),
    ("middle_year_not_a_key", [SymbolYear("A", 2019), SymbolYear("A", 2021), SymbolYear("B", 2021)], False),
    ("symbol_without_keys", [SymbolYear("A", 2019), SymbolYear("A", 2020), SymbolYear("A", 2021)], False),
]


@pytest.mark.parametrize("keys, expected", [c[1:] for c in KEEP_CASES], ids=[c[0] for c in KEEP_CASES])
def test_keeps_every_row_only_when_every_row_year_is_a_key(keys, expected):
    frame = _frame(ROWS)
    assert keeps_every_row(frame, run_starts(frame["symbol"]), keys) is expected
