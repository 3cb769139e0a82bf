"""A daily bar's date is its exchange-session date, the wall-clock date the file shows.

- `wall_clock(col)`: date strings with a UTC offset (`2016-01-04T00:00:00+09:00`, `...Z`)
  lose the offset before parsing, and tz-aware datetimes keep their local wall time, so a
  bar is never moved to the previous or next day by a conversion to UTC.
- `intraday_rows(stamps)`: the first date that holds rows at different times of day (an
  intraday file), or None.
- `daily_bars(frame)`: intraday OHLCV rows as one bar per day (`ingest.resample: daily`).
- `non_sessions(dates, calendar)`: which dates are not sessions of an exchange calendar
  (`exchange_calendars`; weekends and the exchange's holidays).
"""

from __future__ import annotations

import datetime as dt
import functools

import polars as pl

# a time of day followed by a UTC offset or Z at the end of a date string
_OFFSET = r"(\d:\d\d(?::\d\d(?:[.,]\d+)?)?)\s*(?:Z|UTC|[+-]\d\d(?::?\d\d)?)$"
# dates outside these are not looked up in a calendar (the years check names them)
JUDGED = (dt.date(1900, 1, 1), dt.date(2100, 12, 31))


def strip_utc_offset(col: pl.Series) -> pl.Series:
    """Date strings without a trailing UTC offset (the wall-clock time is kept)."""
    return col.str.strip_chars().str.replace(_OFFSET, "${1}")


def wall_clock(col: pl.Series) -> pl.Series:
    """A tz-aware datetime column as the naive wall-clock time of its own time zone."""
    if isinstance(col.dtype, pl.Datetime) and col.dtype.time_zone is not None:
        return col.dt.replace_time_zone(None)
    return col


def session_day(stamps: pl.Series) -> pl.Series:
    """Datetimes (or dates) as the midnight of their calendar day."""
    return stamps.cast(pl.Datetime("ns")).dt.truncate("1d")


def intraday_rows(stamps: pl.Series) -> tuple[dt.date, list[int]] | None:
    """The first day (in input order) that holds rows at different times, with the 1-based
    rows of that day; None when every day has one time."""
    frame = pl.DataFrame({"t": stamps.cast(pl.Datetime("ns"))}).with_row_index("row", offset=1)
    frame = frame.with_columns(pl.col("t").dt.truncate("1d").alias("day"))
    mixed = frame.group_by("day", maintain_order=True).agg(pl.col("t").n_unique().alias("times"), pl.col("row"))
    mixed = mixed.filter(pl.col("times") > 1)
    if mixed.is_empty():
        return None
    first = mixed.row(0, named=True)
    return first["day"].date(), list(first["row"])


def daily_bars(frame: pl.DataFrame) -> pl.DataFrame:
    """OHLCV rows (any times of day) as one bar per wall-clock day at its midnight: the
    first open, the highest high, the lowest low, the last close and the summed volume (NaN
    when a row of the day has none); `__row`, when present, becomes the day's first row."""
    first_row = [pl.col("__row").min()] if "__row" in frame.columns else []
    return (frame.sort("date")
            .group_by(pl.col("date").dt.truncate("1d"), maintain_order=True)
            .agg(pl.col("open").first(), pl.col("high").max(), pl.col("low").min(), pl.col("close").last(),
                 pl.col("volume").sum(), *first_row))


@functools.lru_cache(maxsize=8)
def _sessions(calendar: str, first: dt.date, last: dt.date) -> frozenset[dt.date]:
    import exchange_calendars as xcals

    cal = xcals.get_calendar(calendar, start=first.isoformat(), end=last.isoformat())
    return frozenset(d.date() for d in cal.sessions)


def non_sessions(dates: pl.Series, calendar: str) -> pl.Series:
    """True where a date is not a session of `calendar` (a weekend or a holiday). Dates
    outside what the calendar covers are not judged (False)."""
    days = dates.cast(pl.Date)
    if days.is_empty():
        return pl.Series(dates.name, [], dtype=pl.Boolean)
    lo, hi = JUDGED
    inside = days.is_between(lo, hi)
    judged = days.filter(inside)
    if judged.is_empty():
        return inside & False
    # whole years, so consecutive runs of one symbol share the cached calendar
    sessions = _sessions(calendar, dt.date(judged.min().year, 1, 1), min(dt.date(judged.max().year, 12, 31), hi))
    return (inside & ~days.is_in(list(sessions))).alias(dates.name)


def describe(day: dt.date) -> str:
    """`2016-01-03 (Sunday)`."""
    return f"{day} ({day.strftime('%A')})"
