"""Ingress: turn a user's or a package's OHLCV table into RAW_BARS, or say exactly why not.

Contract of `conform_bars(df, origin, symbol)`:
- column names match case-insensitively after trimming; `date` may be called date,
  datetime, timestamp or time; `volume` may be missing (stored as NaN);
- dates parse from strings, dates or datetimes; a UTC offset or time zone is dropped, the
  wall-clock date kept (domain.sources.dates), and each bar is stored at its day's midnight;
- several rows on one day at different times are intraday data: refused, or with
  `resample` (`ingest.resample: daily`) built into one bar per day;
- with `sessions` (a calendar name, `ingest.strict`), a date that is not a session of that
  exchange is refused (otherwise the raw_bars check `exchange_sessions` warns);
- prices are finite numbers > 0, high >= low, volume finite and >= 0 where present;
- duplicate dates are an error; unsorted dates are sorted, not an error;
- one cast to the schema's dtypes at the end.
Rows in messages are 1-based in the order of the input, header excluded.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from config.errors import InputDataError
from config.settings import SYMBOL_PATTERN
from domain.schema import PRICE_COLUMNS, RAW_BARS, assert_no_object
from domain.sources.dates import (
    daily_bars,
    describe,
    intraday_rows,
    non_sessions,
    session_day,
    strip_utc_offset,
    wall_clock,
)

DATE_ALIASES = ("date", "datetime", "timestamp", "time")
REQUIRED = ("date",) + PRICE_COLUMNS
EXPECTED_COLUMNS = "date (or datetime/timestamp), open, high, low, close and optionally volume"


def validate_symbol(name: object, origin: str) -> str:
    if not isinstance(name, str) or not SYMBOL_PATTERN.fullmatch(name):
        raise InputDataError(origin, f"symbol {name!r} is not allowed", expected="a name matching [A-Z0-9._-]{1,16}")
    return name


def _first_row(mask: pl.Series) -> int | None:
    """1-based index of the first True in `mask`, or None."""
    idx = mask.arg_true()
    return int(idx[0]) + 1 if len(idx) else None


def _match_columns(df: pl.DataFrame, origin: str) -> dict[str, str]:
    """Map canonical name -> the input's column name."""
    lower: dict[str, str] = {}
    for col in df.columns:
        key = col.strip().lower()
        if key in lower:
            raise InputDataError(origin, f"columns {lower[key]!r} and {col!r} differ only in case", expected="unique column names")
        lower[key] = col
    found: dict[str, str] = {}
    for alias in DATE_ALIASES:
        if alias in lower:
            found["date"] = lower[alias]
            break
    for name in PRICE_COLUMNS + ("volume",):
        if name in lower:
            found[name] = lower[name]
    for name in REQUIRED:
        if name not in found:
            raise InputDataError(
                origin,
                f"missing required column '{name}' (found {df.columns})",
                column=name,
                expected=EXPECTED_COLUMNS,
            )
    return found


def _parse_dates(col: pl.Series, origin: str) -> pl.Series:
    if col.dtype == pl.String:
        parsed = strip_utc_offset(col).str.to_datetime(strict=False, time_unit="ns")
        bad = parsed.is_null() & col.is_not_null()
        if bad.any():
            row = _first_row(bad)
            raise InputDataError(origin, f"cannot parse date {col[row - 1]!r}", column=col.name, row=row, expected="a date such as 2010-01-04")
    elif col.dtype == pl.Date or isinstance(col.dtype, pl.Datetime):
        parsed = wall_clock(col)
    else:
        raise InputDataError(origin, f"dtype {col.dtype} is not a date", column=col.name, expected="dates or date strings")
    if parsed.is_null().any():
        row = _first_row(parsed.is_null())
        raise InputDataError(origin, "missing date", column=col.name, row=row, expected="a date on every row")
    return parsed.cast(pl.Datetime("ns"))


def _parse_numbers(col: pl.Series, name: str, origin: str) -> pl.Series:
    if col.dtype == pl.String:
        nums = col.str.strip_chars().cast(pl.Float64, strict=False)
        bad = nums.is_null() & col.is_not_null() & (col.str.strip_chars() != "")
        if bad.any():
            row = _first_row(bad)
            raise InputDataError(origin, f"non-numeric value {col[row - 1]!r}", column=col.name, row=row, expected="a number")
        return nums
    if col.dtype.is_numeric():
        return col.cast(pl.Float64)
    if col.dtype == pl.Null:
        return col.cast(pl.Float64)
    raise InputDataError(origin, f"dtype {col.dtype} is not numeric", column=col.name, expected="numbers")


FLOAT32_MAX = float(np.finfo(np.float32).max)
FLOAT32_TINY = float(np.finfo(np.float32).tiny)


def _check_stored_range(values: pl.Series, raw: pl.Series, origin: str, column: str, positive: bool) -> None:
    """Numbers are stored as float32: a value that becomes inf, or a positive one that
    becomes 0 or a denormal there, is refused here rather than stored as a wrong number."""
    stored = values.cast(pl.Float32)
    bad = stored.is_infinite() | ((values > 0) & (stored.abs() < FLOAT32_TINY) if positive else stored.is_infinite())
    if bad.any():
        row = _first_row(bad)
        raise InputDataError(origin, f"{raw[row - 1]!r} does not fit the stored float32", column=column, row=row,
                             expected=f"a number between {FLOAT32_TINY:.2e} and {FLOAT32_MAX:.2e}")


def conform_bars(df: pl.DataFrame, origin: str, symbol: str, row_numbers: pl.Series | None = None,
                 sessions: str | None = None, resample: bool = False) -> pl.DataFrame:
    """Validate and cast one symbol's bars to RAW_BARS (sorted by date).

    `row_numbers` (1-based) maps each row of `df` to its row in the source file when `df`
    is a slice of a longer table; errors then name the file's row. `sessions`: an
    exchange_calendars name whose sessions every date must be (None: not checked here).
    `resample`: intraday rows become one bar per day (domain.sources.dates.daily_bars).
    """
    try:
        return _conform(df, origin, symbol, sessions, resample)
    except InputDataError as err:
        if row_numbers is None or err.row is None:
            raise
        raise InputDataError(err.origin, err.problem, column=err.column, row=int(row_numbers[err.row - 1]), expected=err.expected) from None


def _check_one_time_per_day(stamps: pl.Series, origin: str, column: str) -> None:
    mixed = intraday_rows(stamps)
    if mixed is not None:
        day, rows = mixed
        times = ", ".join(stamps[r - 1].strftime("%H:%M") for r in rows[:4])
        raise InputDataError(origin, f"intraday data: {len(rows)} rows on {day} ({times})", column=column, row=rows[0],
                             expected="one bar per session date: resample to daily first (ingest.resample: daily)")


def _check_sessions(dates: pl.Series, rows: pl.Series, calendar: str, origin: str, column: str) -> None:
    bad = non_sessions(dates, calendar)
    if bad.any():
        at = _first_row(bad) - 1
        raise InputDataError(origin, f"date {describe(dates[at].date())} is not a session of {calendar} "
                             f"({int(bad.sum())} of {len(dates)} dates)", column=column, row=int(rows[at]),
                             expected=f"exchange-session dates (ingest.strict; ingest.calendar {calendar})")


def _conform(df: pl.DataFrame, origin: str, symbol: str, sessions: str | None = None,
             resample: bool = False) -> pl.DataFrame:
    validate_symbol(symbol, origin)
    if df.height == 0 or df.width == 0:
        raise InputDataError(origin, "the file has no data rows", expected="a header and at least one row of OHLCV data")
    assert_no_object(df, origin)
    cols = _match_columns(df, origin)
    stamps = _parse_dates(df[cols["date"]], origin)
    if not resample:
        _check_one_time_per_day(stamps, origin, cols["date"])
    out = {"date": stamps if resample else session_day(stamps)}
    for name in PRICE_COLUMNS:
        values = _parse_numbers(df[cols[name]], name, origin)
        bad = values.is_null() | values.is_nan() | values.is_infinite() | (values <= 0)
        if bad.any():
            row = _first_row(bad)
            got = df[cols[name]][row - 1]
            raise InputDataError(origin, f"price {got!r} is missing, not finite or not positive", column=cols[name], row=row, expected="a finite price > 0")
        _check_stored_range(values, df[cols[name]], origin, cols[name], positive=True)
        out[name] = values
    if "volume" in cols:
        vol = _parse_numbers(df[cols["volume"]], "volume", origin)
        bad = vol.is_not_null() & (vol.is_nan() | vol.is_infinite() | (vol < 0))
        if bad.any():
            row = _first_row(bad)
            raise InputDataError(origin, f"volume {vol[row - 1]!r} is negative or not finite", column=cols["volume"], row=row, expected="a volume >= 0")
        _check_stored_range(vol, df[cols["volume"]], origin, cols["volume"], positive=False)
        out["volume"] = vol.fill_null(float("nan"))
    else:
        out["volume"] = pl.Series("volume", [float("nan")] * df.height)
    frame = pl.DataFrame(out)
    bad = frame["high"] < frame["low"]
    if bad.any():
        row = _first_row(bad)
        raise InputDataError(
            origin,
            f"high {frame['high'][row - 1]} < low {frame['low'][row - 1]}",
            column=f"{cols['high']}/{cols['low']}",
            row=row,
            expected="high >= low",
        )
    for name in ("open", "close"):
        bad = (frame[name] < frame["low"]) | (frame[name] > frame["high"])
        if bad.any():
            row = _first_row(bad)
            raise InputDataError(
                origin,
                f"{name} {frame[name][row - 1]} outside [low {frame['low'][row - 1]}, high {frame['high'][row - 1]}]",
                column=cols[name],
                row=row,
                expected=f"low <= {name} <= high",
            )
    dup = frame["date"].is_duplicated()
    if dup.any():
        rows = (dup.arg_true() + 1).to_list()
        raise InputDataError(
            origin,
            f"duplicate date {frame['date'][rows[0] - 1]} on rows {rows[:6]}",
            column=cols["date"],
            row=rows[0],
            expected="one row per date",
        )
    frame = frame.with_row_index("__row", offset=1)
    if resample:
        frame = daily_bars(frame)
    if sessions is not None:
        _check_sessions(frame["date"], frame["__row"], sessions, origin, cols["date"])
    frame = frame.drop("__row").with_columns(pl.lit(symbol).alias("symbol")).sort("date")
    return RAW_BARS.cast(frame, origin)
