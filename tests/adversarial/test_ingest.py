"""Daily-bar files that would be stored shifted, doubled or as something else than daily
bars: each row is one file and the exact line it must produce."""

from __future__ import annotations

import pytest

from config.errors import InputDataError
from config.settings import SettingsError, parse_settings
from domain.sources.folder import FolderSource

HEADER = "date,open,high,low,close,volume\n"
STRICT = {"sessions": "XNYS"}


def _csv(*dates: str) -> str:
    return HEADER + "".join(f"{d},10,11,9,10,100\n" for d in dates)


FILES_REFUSED = [
    ("intraday_rows_0930_and_1530", _csv("2016-01-04 09:30", "2016-01-04 15:30", "2016-01-05 09:30", "2016-01-05 15:30"),
     {}, "column 'date', row 1: intraday data: 2 rows on 2016-01-04 (09:30, 15:30); "
     "expected one bar per session date: resample to daily first (ingest.resample: daily)"),
    ("intraday_rows_with_utc_offsets", _csv("2016-01-05T09:30:00-05:00", "2016-01-05T15:30:00-05:00"),
     {}, "column 'date', row 1: intraday data: 2 rows on 2016-01-05 (09:30, 15:30); "
     "expected one bar per session date: resample to daily first (ingest.resample: daily)"),
    ("intraday_rows_not_adjacent", _csv("2016-01-04 16:00", "2016-01-05 16:00", "2016-01-04 09:30"),
     {}, "column 'date', row 1: intraday data: 2 rows on 2016-01-04 (16:00, 09:30); "
     "expected one bar per session date: resample to daily first (ingest.resample: daily)"),
    ("same_wall_date_twice_with_two_offsets", _csv("2016-01-04T00:00:00-05:00", "2016-01-04T00:00:00+01:00"),
     {}, "column 'date', row 1: duplicate date 2016-01-04 00:00:00 on rows [1, 2]; expected one row per date"),
    ("sunday_under_strict", _csv("2016-01-04", "2016-01-03", "2016-01-05"),
     STRICT, "column 'date', row 2: date 2016-01-03 (Sunday) is not a session of XNYS (1 of 3 dates); "
     "expected exchange-session dates (ingest.strict; ingest.calendar XNYS)"),
    ("new_year_holiday_under_strict", _csv("2016-01-01", "2016-01-04"),
     STRICT, "column 'date', row 1: date 2016-01-01 (Friday) is not a session of XNYS (1 of 2 dates); "
     "expected exchange-session dates (ingest.strict; ingest.calendar XNYS)"),
    ("plus_0900_offset_read_as_utc_would_be_sunday_under_strict", _csv("2016-01-04T00:00:00+09:00", "2016-01-09T00:00:00+09:00"),
     STRICT, "column 'date', row 2: date 2016-01-09 (Saturday) is not a session of XNYS (1 of 2 dates); "
     "expected exchange-session dates (ingest.strict; ingest.calendar XNYS)"),
    ("resampled_saturday_names_its_first_intraday_row_under_strict",
     _csv("2016-01-08 09:30", "2016-01-08 15:30", "2016-01-09 09:30", "2016-01-09 15:30"), {**STRICT, "resample": True},
     "column 'date', row 3: date 2016-01-09 (Saturday) is not a session of XNYS (1 of 2 dates); "
     "expected exchange-session dates (ingest.strict; ingest.calendar XNYS)"),
    ("same_minute_twice_when_resampling", _csv("2016-01-08 09:30", "2016-01-08 09:30"), {"resample": True},
     "column 'date', row 1: duplicate date 2016-01-08 09:30:00 on rows [1, 2]; expected one row per date"),
]


@pytest.mark.parametrize("text, options, line", [r[1:] for r in FILES_REFUSED], ids=[r[0] for r in FILES_REFUSED])
def test_daily_bar_files_that_are_not_one_bar_per_session_are_refused(tmp_path, text, options, line):
    path = tmp_path / "AAA.csv"
    path.write_text(text)
    with pytest.raises(InputDataError) as err:
        FolderSource(tmp_path, **options).history(["AAA"])
    assert str(err.value) == f"{path}: {line}"


SETTINGS_REFUSED = [
    ("unknown_calendar", {"ingest": {"calendar": "NYSE-ISH"}},
     "ingest.calendar: Value error, 'NYSE-ISH' is not an exchange_calendars name (e.g. XNYS, XLON, XTKS) (got 'NYSE-ISH')"),
    ("max_move_that_flags_every_day", {"ingest": {"max_move": 1.0}},
     "ingest.max_move: Input should be greater than 1 (got 1.0)"),
]


@pytest.mark.parametrize("data, line", [r[1:] for r in SETTINGS_REFUSED], ids=[r[0] for r in SETTINGS_REFUSED])
def test_ingest_settings_that_cannot_work_are_refused_at_load(data, line):
    with pytest.raises(SettingsError) as err:
        parse_settings(data, "f.yaml")
    assert str(err.value).splitlines() == ["f.yaml: invalid settings", f"  {line}"]
