"""A daily bar's date is the session date the file shows, in every format: a UTC offset
never moves a bar to another day, and dates are judged against the exchange's sessions
(domain.sources.dates, domain.sources.conform)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from domain.sources.dates import non_sessions
from domain.sources.folder import FolderSource

HEADER = "date,open,high,low,close,volume\n"


def _dates(folder, symbol="AAA") -> list[dt.datetime]:
    return FolderSource(folder).history([symbol])["date"].to_list()


def test_plus_0900_offset_keeps_the_wall_date_not_the_utc_one(tmp_path):
    (tmp_path / "AAA.csv").write_text(HEADER + "2016-01-04T00:00:00+09:00,10,11,9,10,100\n"
                                      "2016-01-05T00:00:00+09:00,10,11,9,10,100\n")
    assert _dates(tmp_path) == [dt.datetime(2016, 1, 4), dt.datetime(2016, 1, 5)]  # not Sunday 2016-01-03


def test_mixed_minus_0500_and_plus_0100_offsets_give_one_bar_per_wall_date(tmp_path):
    # in UTC both fall on 2016-01-04 (05:00 and 23:00): two bars on one day
    (tmp_path / "AAA.csv").write_text(HEADER + "2016-01-04T00:00:00-05:00,10,11,9,10,100\n"
                                      "2016-01-05T00:00:00+01:00,10,11,9,10,100\n"
                                      "2016-01-06T00:00:00Z,10,11,9,10,100\n")
    assert _dates(tmp_path) == [dt.datetime(2016, 1, d) for d in (4, 5, 6)]


def test_tz_aware_parquet_keeps_the_wall_date(tmp_path):
    stamps = pl.Series([dt.datetime(2016, 1, 4), dt.datetime(2016, 1, 5)]).dt.replace_time_zone("Asia/Tokyo")
    pl.DataFrame({"date": stamps, "open": [10.0, 10.0], "high": [11.0, 11.0], "low": [9.0, 9.0],
                  "close": [10.0, 10.0]}).write_parquet(tmp_path / "AAA.parquet")
    assert _dates(tmp_path) == [dt.datetime(2016, 1, 4), dt.datetime(2016, 1, 5)]


def test_a_daily_close_time_is_stored_as_the_session_date(tmp_path):
    (tmp_path / "AAA.csv").write_text(HEADER + "2016-01-04 16:00:00,10,11,9,10,100\n2016-01-05 16:00:00,10,11,9,10,100\n")
    assert _dates(tmp_path) == [dt.datetime(2016, 1, 4), dt.datetime(2016, 1, 5)]


def test_weekends_and_xnys_holidays_are_not_sessions_and_far_dates_are_not_judged():
    dates = pl.Series([dt.datetime(2016, 1, 1), dt.datetime(2016, 1, 2), dt.datetime(2016, 1, 4),
                       dt.datetime(2016, 7, 4), dt.datetime(2016, 11, 25), dt.datetime(2200, 1, 4)])
    assert non_sessions(dates, "XNYS").to_list() == [True, True, False, True, False, False]
    assert non_sessions(pl.Series([dt.datetime(2016, 12, 26)]), "XLON").to_list() == [True]  # Boxing Day


def test_resample_daily_builds_one_ohlcv_bar_per_day_from_0930_and_1530_rows(tmp_path):
    (tmp_path / "AAA.csv").write_text(HEADER + "2016-01-04 15:30,11,13,10,12,300\n2016-01-04 09:30,10,11,8,11,100\n"
                                      "2016-01-05 09:30,12,12,11,11.5,50\n2016-01-05 15:30,11.5,14,11,13,70\n")
    bars = FolderSource(tmp_path, resample=True).history(["AAA"])
    assert bars.select("date", "open", "high", "low", "close", "volume").rows() == [
        (dt.datetime(2016, 1, 4), 10.0, 13.0, 8.0, 12.0, 400.0), (dt.datetime(2016, 1, 5), 12.0, 14.0, 11.0, 13.0, 120.0)]


def test_resample_daily_is_the_setting_ingest_resample(make_settings):
    from config.settings import read_settings
    from domain.sources import make_source

    cfg = make_settings(universe={"source": "folder"}, ingest={"resample": "daily", "strict": True})
    source = make_source(read_settings(cfg))
    assert (source.resample, source.sessions) == (True, "XNYS")
