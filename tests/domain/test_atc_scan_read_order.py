"""domain.atc_scan.scan_store: a chunk read from a year-partitioned store comes a year at a
time, never in symbol order; scan_store hands scan_universe each chunk in (symbol, date)
order already (a numeric sort, not scan_universe's String sort), and the table stays the
whole-frame scan bit for bit, repeated dates included."""

import datetime as dt

import polars as pl
import pytest

from domain import atc_scan as scanner
from domain.sources.synthetic import SyntheticMarket


@pytest.fixture(scope="module")
def year_blocks():
    """Bars as a year-partitioned read returns them: year by year (latest first), each
    year's rows sorted by symbol and date."""
    frame = SyntheticMarket(4, dt.date(2014, 1, 1), dt.date(2016, 12, 31)).generate([f"S{i}" for i in range(5)])
    year = pl.col("date").dt.year()
    return pl.concat([frame.filter(year == y).sort("symbol", "date") for y in (2016, 2014, 2015)])


def _spy(monkeypatch):
    seen, real = [], scanner.scan_universe

    def spy(frame, **kw):
        seen.append(frame)
        return real(frame, **kw)

    monkeypatch.setattr(scanner, "scan_universe", spy)
    return seen


def test_store_scan_hands_each_year_block_chunk_in_symbol_date_order(year_blocks, monkeypatch):
    whole, _ = scanner.scan_universe(year_blocks, n_bars=300)
    seen = _spy(monkeypatch)
    table, _, _ = scanner.scan_store(year_blocks.lazy(), n_bars=300, read_symbols=2)
    assert [f["symbol"].unique().sort().to_list() for f in seen] == [["S0", "S1"], ["S2", "S3"], ["S4"]]
    assert all(f.equals(f.sort("symbol", "date")) for f in seen)
    assert table.equals(whole)


def test_store_scan_chunk_with_a_repeated_date_is_left_to_scan_universe_sort(year_blocks, monkeypatch):
    doubled = pl.concat([year_blocks, year_blocks.filter(pl.col("symbol") == "S1").tail(1)])
    whole, _ = scanner.scan_universe(doubled, n_bars=300)
    seen = _spy(monkeypatch)
    table, _, _ = scanner.scan_store(doubled.lazy(), n_bars=300, read_symbols=2)
    assert seen[0].equals(doubled.filter(pl.col("symbol").is_in(["S0", "S1"])).select("symbol", "date", "close"))  # as read
    assert table.equals(whole)
