"""The built-in synthetic market: deterministic, on the XNYS calendar, with the stylised
facts of daily prices (fat tails, volatility clustering, volume rising with |return|)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from domain.sources.synthetic import SyntheticMarket


@pytest.fixture(scope="module")
def market():
    return SyntheticMarket(seed=11, start=dt.date(2000, 1, 1), end=dt.date(2019, 12, 31))


@pytest.fixture(scope="module")
def frame(market):
    return market.generate(["AAA", "BBB", "CCC"])


def test_same_seed_same_bytes(market, frame):
    again = SyntheticMarket(seed=11, start=dt.date(2000, 1, 1), end=dt.date(2019, 12, 31)).generate(["AAA", "BBB", "CCC"])
    assert frame.equals(again)


def test_other_seed_other_prices(frame):
    other = SyntheticMarket(seed=12, start=dt.date(2000, 1, 1), end=dt.date(2019, 12, 31)).generate(["AAA"])
    assert not np.allclose(other["close"].to_numpy(), frame.filter(pl.col("symbol") == "AAA")["close"].to_numpy())


def test_a_symbol_does_not_depend_on_the_other_symbols(market, frame):
    alone = market.generate(["BBB"])
    assert alone.equals(frame.filter(pl.col("symbol") == "BBB"))


def test_extending_the_end_date_keeps_earlier_sessions(market):
    short = SyntheticMarket(seed=11, start=dt.date(2000, 1, 1), end=dt.date(2010, 6, 30)).generate(["AAA"])
    long = market.generate(["AAA"])
    assert long.head(short.height).equals(short)


def test_sessions_follow_the_xnys_calendar_with_holidays(market):
    dates = set(market.sessions.astype("datetime64[D]").astype(dt.date))
    assert dt.date(2010, 1, 4) in dates
    for holiday in (dt.date(2010, 1, 1), dt.date(2010, 1, 18), dt.date(2010, 7, 5), dt.date(2010, 11, 25), dt.date(2012, 10, 29)):
        assert holiday not in dates  # New Year, MLK, Independence (observed), Thanksgiving, Hurricane Sandy
    assert sum(d.year == 2010 for d in dates) == 252
    assert all(d.weekday() < 5 for d in dates)


def test_ohlc_is_consistent(frame):
    bad = frame.filter(
        (pl.col("low") > pl.min_horizontal("open", "close")) | (pl.col("high") < pl.max_horizontal("open", "close"))
    )
    assert bad.height == 0
    assert (frame["low"] > 0).all() and (frame["volume"] > 0).all()


def _returns(frame, symbol):
    close = frame.filter(pl.col("symbol") == symbol)["close"].to_numpy().astype(np.float64)
    return np.diff(np.log(close))


def test_fat_tails_and_volatility_clustering(frame):
    for sym in ("AAA", "BBB", "CCC"):
        r = _returns(frame, sym)
        z = (r - r.mean()) / r.std()
        assert np.mean(z**4) - 3.0 > 1.0  # excess kurtosis: fatter than normal
        acf_abs = np.corrcoef(np.abs(r[1:]), np.abs(r[:-1]))[0, 1]
        acf_raw = np.corrcoef(r[1:], r[:-1])[0, 1]
        assert acf_abs > 0.05 > abs(acf_raw)  # |r| clusters, r itself is nearly unpredictable


def test_volume_rises_with_absolute_return(frame):
    sub = frame.filter(pl.col("symbol") == "AAA")
    r = np.abs(_returns(frame, "AAA"))
    assert np.corrcoef(sub["volume"].to_numpy()[1:], r)[0, 1] > 0.3


def test_bull_bear_and_sideways_regimes_switch(market):
    regime, ret = market.market
    share = np.bincount(regime, minlength=3) / len(regime)
    assert (share > 0.05).all()
    assert (np.diff(regime) != 0).sum() >= 10
    assert ret[regime == 1].mean() > 0 > ret[regime == 2].mean()


def test_symbols_share_a_market_factor(frame):
    a, b = _returns(frame, "AAA"), _returns(frame, "BBB")
    assert np.corrcoef(a, b)[0, 1] > 0.1
