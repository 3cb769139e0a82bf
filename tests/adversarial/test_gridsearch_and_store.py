"""Grid-search inputs and damaged Delta tables, as a careless user or a crash leaves them:
each row is one input and the exact line it must produce."""

from __future__ import annotations

import pytest

MARKET_HEADER = "Ticker,Price,Val,Avg,Atr14,Atr28,Rsi,Volume,Adx28,Adx14,Adx7,Volatility Percent,Volatility Ratio,Time"
MARKET_NAME = "Raw_Market_data_03-04-2024.csv"
TRADE_HEADER = ("Date,Trade Id,Ticker,Entry Price,Exit Price,Entry Time,Exit Time,Worst Exit Percent,"
                "Entry Volatility Percent,Entry Volatility Ratio,Entry Adx28,Entry Adx14,Entry Adx7,"
                "Trade Best Exit Percent,Trade Percent Change")


def _market_line(price: str, time: str) -> str:
    return f"SOXL,{price},0,0,0,0,0,0,20,20,20,1.0,1.0,{time}"


def _trade_line(trade_id: str) -> str:
    return f"2024-03-04,{trade_id},SOXL,10,10.5,09:30:01,09:30:03,-1,1,1,20,20,20,6,5"


# (id, price written on the market file's row 2, exact line after the file's path)
BAD_MARKET_PRICES = [
    ("price_inf", "inf", "column 'Price', row 2: price 'inf'; expected a finite price > 0"),
    ("price_nan", "NaN", "column 'Price', row 2: price 'NaN'; expected a finite price > 0"),
    ("price_that_overflows_float32", "1e40",
     "column 'Price', row 2: '1e40' does not fit the stored float32; expected a number between 1.18e-38 and 3.40e+38"),
    ("price_that_underflows_float32", "1e-40",
     "column 'Price', row 2: '1e-40' does not fit the stored float32; expected a number between 1.18e-38 and 3.40e+38"),
    ("price_zero", "0", "column 'Price', row 2: price '0'; expected a finite price > 0"),
]


@pytest.mark.parametrize("price, line", [r[1:] for r in BAD_MARKET_PRICES], ids=[r[0] for r in BAD_MARKET_PRICES])
def test_market_prices_the_engines_cannot_use_are_refused(tmp_path, price, line):
    from config.errors import InputDataError
    from domain.gridsearch.inputs import read_market_data

    path = tmp_path / MARKET_NAME
    path.write_text("\n".join([MARKET_HEADER, _market_line("10", "09:30:00"), _market_line(price, "09:30:01"),
                               _market_line("10", "09:30:02")]) + "\n")
    with pytest.raises(InputDataError) as err:
        read_market_data(tmp_path, ["SOXL"])
    assert str(err.value) == f"{path}: {line}"


def test_a_market_file_with_a_latin1_byte_is_one_line(tmp_path):
    from config.errors import InputDataError
    from domain.gridsearch.inputs import read_market_data

    path = tmp_path / MARKET_NAME
    path.write_bytes(f"{MARKET_HEADER}\n{_market_line('10', '09:30:00')}\n".encode()
                     + "SOXL,10,0,0,0,0,0,0,20,20,20,1.0,1.0,caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputDataError) as err:
        read_market_data(tmp_path, ["SOXL"])
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{path}: cannot be read: ")
    assert text.endswith("; expected a UTF-8 CSV market-data file")


# (id, Trade Ids of the log's lines in order, exact line after the file's path)
DUPLICATE_TRADES = [
    ("same_line_twice", ["T1", "T2", "T2"], "column 'Trade Id', row 3: Trade Id 'T2' again (first at row 2); "
     "expected one line per trade"),
    ("id_again_far_below", ["T7", "T1", "T2", "T7"], "column 'Trade Id', row 4: Trade Id 'T7' again (first at row 1); "
     "expected one line per trade"),
]


@pytest.mark.parametrize("ids, line", [r[1:] for r in DUPLICATE_TRADES], ids=[r[0] for r in DUPLICATE_TRADES])
def test_a_trade_on_two_lines_is_refused_not_counted_twice(tmp_path, ids, line):
    from config.errors import InputDataError
    from domain.gridsearch.inputs import read_market_data, read_trade_log

    (tmp_path / MARKET_NAME).write_text("\n".join([MARKET_HEADER] + [_market_line("10", f"09:30:0{s}") for s in range(5)]) + "\n")
    market = read_market_data(tmp_path, ["SOXL"])
    log = tmp_path / "all_trade_logs.csv"
    log.write_text("\n".join([TRADE_HEADER, *[_trade_line(i) for i in ids]]) + "\n")
    with pytest.raises(InputDataError) as err:
        read_trade_log(log, ["SOXL"], market)
    assert str(err.value) == f"{log}: {line}"


def _bars(symbol: str, year: int):
    import datetime as dt

    import polars as pl

    return pl.DataFrame({"date": [dt.datetime(year, 1, 4), dt.datetime(year, 1, 5)], "symbol": [symbol] * 2,
                         "close": [10.0, 11.0]})


def _three_commits(root):
    """raw_bars with AAA|2010 (version 0), BBB|2010 (1), AAA|2011 (2): one data file each."""
    from config.partitions import SymbolYear
    from resources.delta_store import DeltaStore

    store = DeltaStore(root)
    for symbol, year in (("AAA", 2010), ("BBB", 2010), ("AAA", 2011)):
        store.write("raw_bars", SymbolYear(symbol, year), _bars(symbol, year))
    return store


def _truncate_last_commit(table):
    last = table / "_delta_log" / "00000000000000000002.json"
    last.write_bytes(last.read_bytes()[:150])
    return "commit file _delta_log/00000000000000000002.json cannot be read"


def _garbage_last_commit(table):
    (table / "_delta_log" / "00000000000000000002.json").write_bytes(b"\x00\xffnot json\n")
    return "commit file _delta_log/00000000000000000002.json cannot be read"


def _delete_data_file(table):
    (gone,) = [p.relative_to(table).as_posix() for p in table.glob("year=2011/*.parquet")]
    (table / gone).unlink()
    return f"1 data file(s) it references are missing: {gone}"


# (id, damage done by hand: returns the damage as the line names it)
DAMAGED_TABLES = [
    ("truncated_last_commit", _truncate_last_commit),
    ("garbage_in_last_commit", _garbage_last_commit),
    ("deleted_data_file", _delete_data_file),
]


@pytest.mark.parametrize("damage", [r[1] for r in DAMAGED_TABLES], ids=[r[0] for r in DAMAGED_TABLES])
def test_reading_a_damaged_table_is_one_line_naming_the_table_and_the_repair(tmp_path, damage):
    from config.partitions import SymbolYear
    from resources.delta_repair import DamagedTableError

    store = _three_commits(tmp_path / "data")
    table = store.asset_dir("raw_bars")
    what = damage(table)
    line = (f"{table}: damaged Delta table: {what}; run `python -m pipeline.cli repair-store`, "
            "then rebuild the partitions it lists")
    for use in (lambda: store.read("raw_bars"), lambda: store.partitions("raw_bars"),
                 lambda: store.write("raw_bars", SymbolYear("AAA", 2011), _bars("AAA", 2011))):
        with pytest.raises(DamagedTableError) as err:
            use()
        assert str(err.value) == line


def test_a_command_on_a_damaged_table_exits_1_with_one_line(tmp_path, make_settings, monkeypatch, capsys):
    from pipeline.cli import main

    cfg = make_settings()
    store = _three_commits(tmp_path / "data")
    table = store.asset_dir("raw_bars")
    what = _truncate_last_commit(table)
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["strategy-search", "--symbol", "AAA"]) == 1
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("tradelab: device ")]
    assert err == [f"error: {table}: damaged Delta table: {what}; run `python -m pipeline.cli repair-store`, "
                   "then rebuild the partitions it lists"]
