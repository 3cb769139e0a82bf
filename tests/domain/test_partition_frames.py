"""domain.partition_frames.keep_partitions: the rows of a run's partitions, order kept; a
frame that holds nothing else is returned as it is (not copied: at 3.3M rows x 177 feature
columns a copy is 2.3 GB at the features step's peak)."""

import datetime as dt

import polars as pl

from config.partitions import SymbolYear
from domain.partition_frames import keep_partitions


def _frame() -> pl.DataFrame:
    """AAA and BBB, two rows in each of 2019, 2020 and 2021, BBB first (order must be kept)."""
    dates = [dt.date(y, m, 1) for y in (2019, 2020, 2021) for m in (3, 9)]
    return pl.DataFrame({"symbol": ["BBB"] * 6 + ["AAA"] * 6, "date": dates * 2, "x": [float(i) for i in range(12)]})


def test_a_frame_whose_every_row_is_kept_is_returned_uncopied():
    frame = _frame()
    keys = [SymbolYear(s, y) for s in ("AAA", "BBB") for y in (2019, 2020, 2021)]
    assert keep_partitions(frame, keys) is frame


def test_halo_years_and_other_symbols_are_dropped_order_kept():
    out = keep_partitions(_frame(), [SymbolYear("BBB", 2020), SymbolYear("BBB", 2021), SymbolYear("AAA", 2021)])
    assert out["x"].to_list() == [2.0, 3.0, 4.0, 5.0, 10.0, 11.0]
    assert out.columns == ["symbol", "date", "x"]


def test_keys_that_are_not_a_year_range_per_symbol_take_the_semi_join():
    out = keep_partitions(_frame(), [SymbolYear("AAA", 2019), SymbolYear("AAA", 2021)])
    assert out["x"].to_list() == [6.0, 7.0, 10.0, 11.0]


def test_no_key_keeps_no_row():
    out = keep_partitions(_frame(), [])
    assert out.height == 0 and out.columns == ["symbol", "date", "x"]
