"""The grid-search data generator: the market-data folder and the trade log in their
file formats, exactly."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from domain.gridsearch.synthetic import (
    DEFAULT_TICKERS,
    EXTRA_TRADE_COLUMNS,
    MARKET_COLUMNS,
    SECONDS,
    TRADE_COLUMNS,
    generate_arrays,
    generate_grid_data,
    trading_days,
)
from kernels import indicators as ki

MARKET_HEADER = "Ticker,Price,Val,Avg,Atr14,Atr28,Rsi,Volume,Adx28,Adx14,Adx7,Volatility Percent,Volatility Ratio,Time"
TRADE_HEADER = (
    "Date,Trade Id,Ticker,Entry Price,Exit Price,Entry Time,Exit Time,Worst Exit Percent,Entry Volatility Percent,"
    "Entry Volatility Ratio,Entry Adx28,Entry Adx14,Entry Adx7,Trade Best Exit Percent,Trade Percent Change"
)
START = dt.date(2024, 3, 8)  # a Friday: the second day is Monday 03-11
ARGS = dict(days=2, start=START, seed=5, trades_per_day=70)
FLOATS = [c for c in MARKET_COLUMNS if c not in ("Ticker", "Time", "Volume")]


def _seconds(times: pl.Series) -> np.ndarray:
    parts = times.str.split_exact(":", 2).struct.unnest()
    h, m, s = (parts[c].cast(pl.Int64).to_numpy() for c in parts.columns)
    return h * 3600 + m * 60 + s - (9 * 3600 + 30 * 60)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return generate_grid_data(tmp_path_factory.mktemp("grid"), **ARGS)


@pytest.fixture(scope="module")
def market(data):
    """Per file: the raw CSV text columns as strings, in file order."""
    files = sorted(data.market_data.iterdir(), key=lambda p: dt.datetime.strptime(p.name[16:26], "%m-%d-%Y"))
    return [(f, pl.read_csv(f, infer_schema_length=0)) for f in files]


@pytest.fixture(scope="module")
def prices(market):
    """Ticker -> Price over both days, [day, second]."""
    out = {}
    for t in DEFAULT_TICKERS:
        out[t] = np.stack([df.filter(pl.col("Ticker") == t)["Price"].cast(pl.Float64).to_numpy() for _, df in market])
    return out


@pytest.fixture(scope="module")
def trades(data):
    return pl.read_csv(data.trade_log, infer_schema_length=0)


def test_trading_days_skip_weekends():
    assert trading_days(dt.date(2024, 3, 8), 3) == (dt.date(2024, 3, 8), dt.date(2024, 3, 11), dt.date(2024, 3, 12))
    assert trading_days(dt.date(2024, 3, 9), 1) == (dt.date(2024, 3, 11),)


def test_file_names_headers_and_rows(data, market):
    assert sorted(p.name for p in data.market_data.iterdir()) == [
        "Raw_Market_data_03-08-2024.csv",
        "Raw_Market_data_03-11-2024.csv",
    ]
    assert data.days == 2 and data.rows == 2 * SECONDS * 7 and data.trades == 2 * 70
    assert SECONDS == 23_401
    for path, df in market:
        assert path.read_text().split("\n", 1)[0] == MARKET_HEADER
        assert df.height == SECONDS * 7
        assert df["Ticker"].to_list() == list(DEFAULT_TICKERS) * SECONDS
        assert df["Time"].str.contains(r"^\d\d:\d\d:\d\d$").all()
        assert df["Time"][0] == "09:30:00" and df["Time"][-1] == "16:00:00"
        for t in DEFAULT_TICKERS:
            secs = _seconds(df.filter(pl.col("Ticker") == t)["Time"])
            assert np.array_equal(secs, np.arange(SECONDS))  # one row a second, ascending
    assert data.trade_log.read_text().split("\n", 1)[0] == TRADE_HEADER + ",Strategy,Notes"


def test_market_values_are_sane(market, prices):
    for i, (_, df) in enumerate(market):
        num = df.with_columns(pl.col(FLOATS).cast(pl.Float64), pl.col("Volume").cast(pl.Int64))
        assert num["Price"].min() > 0 and num["Volume"].min() >= 1
        assert num["Price"].null_count() == num["Volume"].null_count() == num["Val"].null_count() == 0
        assert np.allclose(num["Price"], np.round(num["Price"], 2), rtol=0, atol=1e-9)  # cents
        assert np.allclose(num["Val"], num["Price"] * num["Volume"], rtol=0, atol=0.0051)
        # empty cells only during the warm-up at the very start: ATR14 needs 15 minutes
        assert num["Atr14"].null_count() == (15 * 60 * 7 if i == 0 else 0)
        assert num["Adx28"].null_count() == (56 * 60 * 7 if i == 0 else 0)
    # Avg: trailing 60 s mean of Price, across the day boundary
    for t, p in prices.items():
        flat = p.ravel()
        c = np.concatenate([[0.0], np.cumsum(flat)])
        n = np.minimum(np.arange(flat.size) + 1, 60)
        want = (c[1:] - c[np.arange(flat.size) + 1 - n]) / n
        got = np.concatenate([df.filter(pl.col("Ticker") == t)["Avg"].cast(pl.Float64).to_numpy() for _, df in market])
        assert np.allclose(got, want, rtol=0, atol=5.1e-5)


def test_volatility_columns_follow_the_seed_formulas(market):
    checked = 0
    for _, df in market:
        num = df.select(pl.col("Price", "Atr14", "Atr28", "Volatility Percent", "Volatility Ratio").cast(pl.Float64))
        rows = num.drop_nulls(["Atr14"]).rows()
        for price, a14, a28, vp, vr in rows:
            assert vp == round((a14 / price) * 100, 2)
            if a28 is not None:
                assert vr == round(a14 / a28, 2)
                checked += 1
            else:
                assert vr is None
    assert checked > SECONDS * 7


def test_indicators_come_from_minute_bars_of_the_prices(market, prices):
    for t, p in prices.items():
        bars = p[:, : 390 * 60].reshape(2, 390, 60)
        hi, lo, cl = (x.ravel() for x in (bars.max(2), bars.min(2), bars[:, :, -1]))
        want = {
            "Atr14": ki.atr(hi, lo, cl, 14, dtype=np.float64),
            "Atr28": ki.atr(hi, lo, cl, 28, dtype=np.float64),
            "Rsi": ki.rsi(cl, 14, dtype=np.float64),
            "Adx28": ki.adx(hi, lo, cl, 28, dtype=np.float64),
            "Adx14": ki.adx(hi, lo, cl, 14, dtype=np.float64),
            "Adx7": ki.adx(hi, lo, cl, 7, dtype=np.float64),
        }
        # second s of day d carries the minute that ended last: d*390 + s//60 - 1
        idx = (np.arange(2)[:, None] * 390 + np.arange(SECONDS)[None, :] // 60 - 1).ravel()
        rows = pl.concat([df.filter(pl.col("Ticker") == t) for _, df in market])
        for name, minute in want.items():
            expect = np.where(idx >= 0, minute[np.maximum(idx, 0)], np.nan)
            got = rows[name].cast(pl.Float64).fill_null(np.nan).to_numpy()
            assert np.array_equal(np.isnan(got), np.isnan(expect)), name
            tol = 0.5e-4 if name.startswith("Atr") else 0.5e-2
            ok = ~np.isnan(got)
            assert np.allclose(got[ok], expect[ok], rtol=0, atol=tol + 1e-9), name


def test_trades_match_the_market_paths(data, market, prices, trades):
    assert trades.columns == list(TRADE_COLUMNS) + list(EXTRA_TRADE_COLUMNS)
    assert trades.height == 140 and trades["Trade Id"].n_unique() == 140
    assert trades["Trade Id"][0] == "T000001"
    assert set(trades["Ticker"]) == set(DEFAULT_TICKERS)
    assert set(trades["Date"]) == {"2024-03-08", "2024-03-11"}
    day_index = {"2024-03-08": 0, "2024-03-11": 1}
    rows = {t: [df.filter(pl.col("Ticker") == t) for _, df in market] for t in DEFAULT_TICKERS}
    num = trades.with_columns(pl.col(TRADE_COLUMNS[3:5] + TRADE_COLUMNS[7:]).cast(pl.Float64))
    for r in num.iter_rows(named=True):
        d = day_index[r["Date"]]
        e, x = (int(_seconds(pl.Series([r[c]]))[0]) for c in ("Entry Time", "Exit Time"))
        assert 0 <= e and e + 30 <= x <= min(e + 45 * 60, SECONDS - 1)
        path = prices[r["Ticker"]][d, e : x + 1]
        assert r["Entry Price"] == path[0] and r["Exit Price"] == path[-1]
        change = (path / path[0] - 1) * 100
        assert r["Trade Best Exit Percent"] == round(float(change.max()), 4)
        assert r["Worst Exit Percent"] == round(float(change.min()), 4)
        assert r["Trade Percent Change"] == round(float(change[-1]), 4)
        row = rows[r["Ticker"]][d].row(e, named=True)
        for col in ("Volatility Percent", "Volatility Ratio", "Adx28", "Adx14", "Adx7"):
            assert row[col] is not None and r["Entry " + col] == float(row[col]), col
    # no overlap per ticker and day: the next entry is strictly after the previous exit
    spans = trades.with_columns(pl.col("Entry Time", "Exit Time").str.to_time("%H:%M:%S")).sort(
        "Ticker", "Date", "Entry Time"
    )
    prev = spans.with_columns(pl.col("Exit Time").shift(1).over("Ticker", "Date").alias("prev_exit"))
    assert prev.filter(pl.col("Entry Time") <= pl.col("prev_exit")).height == 0
    # the file is ordered by date then entry time, ids in that order
    order = trades.with_columns(pl.col("Entry Time").str.to_time("%H:%M:%S"))
    assert order.equals(order.sort("Date", "Entry Time", maintain_order=True))


def test_same_seed_same_bytes_other_seed_other_data(data, tmp_path):
    again = generate_grid_data(tmp_path / "again", **ARGS)
    for f in data.market_data.iterdir():
        assert (again.market_data / f.name).read_bytes() == f.read_bytes()
    assert again.trade_log.read_bytes() == data.trade_log.read_bytes()
    other = generate_grid_data(tmp_path / "other", **{**ARGS, "seed": 6, "days": 1})
    name = "Raw_Market_data_03-08-2024.csv"
    assert (other.market_data / name).read_bytes() != (data.market_data / name).read_bytes()
    assert other.trade_log.read_bytes() != data.trade_log.read_bytes()


@pytest.mark.parametrize("fmt, pattern", [("%m/%d/%Y", r"^03/08/2024$"), ("%m-%d-%Y", r"^03-08-2024$")])
def test_date_format(tmp_path, fmt, pattern):
    out = generate_grid_data(tmp_path, days=1, start=START, seed=5, trades_per_day=14, date_format=fmt)
    log = pl.read_csv(out.trade_log, infer_schema_length=0)
    assert log.height == 14 and log["Date"].str.contains(pattern).all()


def test_arrays_match_files_and_tickers_are_independent(data, market):
    arrays = generate_arrays(**ARGS)
    assert arrays.dates == (dt.date(2024, 3, 8), dt.date(2024, 3, 11))
    assert arrays.market.columns == list(MARKET_COLUMNS) + ["Date"]
    assert arrays.trades.height == 140
    first = arrays.market.filter(pl.col("Date") == START)
    assert np.array_equal(first["Price"].to_numpy(), market[0][1]["Price"].cast(pl.Float64).to_numpy())
    alone = generate_arrays(days=2, start=START, seed=5, tickers=["IONQ"], trades_per_day=0)
    assert alone.trades.height == 0
    both = arrays.market.filter(pl.col("Ticker") == "IONQ")
    assert np.array_equal(alone.market["Price"].to_numpy(), both["Price"].to_numpy())
    assert alone.market["Adx7"].equals(both["Adx7"])


def test_too_many_trades_is_an_error():
    with pytest.raises(ValueError, match="trades_per_day"):
        generate_arrays(days=1, tickers=["IONQ"], trades_per_day=1000)
