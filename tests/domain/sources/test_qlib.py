"""`universe.source: qlib`: a Qlib data folder read in Qlib's bin layout (domain.sources.qlib),
on fixtures written by the Alpha158 fixture script's `write_qlib_bins` (the layout Qlib itself
was fed): the values read back exactly, `$factor` applied or not, the instruments file's date
ranges, NaN rows of missing days, and each bad layout refused in one line naming the file."""

from __future__ import annotations

import datetime as dt
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from config.errors import InputDataError
from config.settings import parse_settings
from domain.schema import RAW_BARS
from domain.sources import make_source
from domain.sources.qlib import QlibSource
from scripts.alpha158_fixture import fixture_series, write_qlib_bins

CALENDAR = ["2020-01-02", "2020-01-03", "2020-01-06", "2020-01-07", "2020-01-08", "2020-01-09", "2020-01-10",
            "2020-01-13"]


def _bars(close, factor=None):
    close = np.asarray(close, dtype=np.float32)
    out = {"open": close, "high": close + 1, "low": close - 1, "close": close,
           "volume": np.arange(1, len(close) + 1, dtype=np.float32) * 100}
    if factor is not None:
        out["factor"] = np.full(len(close), factor, dtype=np.float32)
    return out


@pytest.fixture
def small(tmp_path) -> Path:
    """AAA from day 1 with a missing day (NaN row) and $factor 2; BBB from day 0, factor 0.5."""
    root = tmp_path / "qlib_data"
    write_qlib_bins(root, CALENDAR, {"AAA": (1, _bars([10, 11, np.nan, 13, 14], factor=2.0)),
                                     "BBB": (0, _bars([20, 21, 22, 23, 24, 25, 26, 27], factor=0.5))})
    return root


def _one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


def test_the_alpha158_fixture_reads_back_exactly(tmp_path):
    calendar, symbols = fixture_series()  # GOOG from day 0; SYN from day 50 with a 3-day gap, missing volumes
    write_qlib_bins(tmp_path, calendar, symbols)
    source = QlibSource(tmp_path)
    assert source.symbols() == ["GOOG", "SYN"]
    df = source.history(["SYN", "GOOG"])
    RAW_BARS.check(df)
    for name, (start, arrays) in symbols.items():
        part = df.filter(pl.col("symbol") == name)
        close = arrays["close"]
        present = ~np.isnan(close)  # the gap's NaN rows are days without a bar
        days = [dt.datetime.fromisoformat(d) for d in calendar[start:start + len(close)]]
        assert part["date"].to_list() == [d for d, keep in zip(days, present) if keep]
        for field in ("open", "high", "low", "close"):
            np.testing.assert_array_equal(part[field].to_numpy(), arrays[field][present])
        volume = arrays["volume"][present]
        np.testing.assert_array_equal(part["volume"].to_numpy(), volume)  # NaN where the volume alone is missing
    assert df.filter(pl.col("symbol") == "SYN").height == 300 - 3


def test_factor_off_keeps_qlibs_prices_and_on_gives_the_traded_ones(small):
    adjusted = QlibSource(small).history(["AAA"])
    assert adjusted["close"].to_list() == [10, 11, 13, 14] and adjusted["volume"].to_list() == [100, 200, 400, 500]
    assert adjusted["date"].dt.date().to_list() == [dt.date(2020, 1, 3), dt.date(2020, 1, 6), dt.date(2020, 1, 8),
                                                    dt.date(2020, 1, 9)]  # 2020-01-07: a NaN row, no bar
    traded = QlibSource(small, adjusted=False).history(["AAA", "BBB"])
    aaa, bbb = (traded.filter(pl.col("symbol") == s) for s in ("AAA", "BBB"))
    assert aaa["close"].to_list() == [5, 5.5, 6.5, 7] and aaa["high"].to_list() == [5.5, 6, 7, 7.5]
    assert aaa["volume"].to_list() == [200, 400, 800, 1000]  # traded volume = Qlib's volume x $factor
    assert bbb["open"].to_list()[:2] == [40, 42] and bbb["volume"].to_list()[:2] == [50, 100]


def test_adjusted_reads_no_factor_and_traded_prices_need_it(small):
    for path in small.glob("features/*/factor.day.bin"):
        path.unlink()
    assert QlibSource(small).history(["AAA"]).height == 4
    with pytest.raises(InputDataError) as err:
        QlibSource(small, adjusted=False).history(["AAA"])
    assert _one_line(err).startswith(f"{small}/features/aaa/factor.day.bin: not found: the field $factor of AAA")


def test_bars_are_kept_inside_the_instrument_date_ranges(small):
    (small / "instruments" / "all.txt").write_text(
        "AAA\t2020-01-03\t2020-01-13\nBBB\t2020-01-02\t2020-01-03\nbbb\t2020-01-09\t2020-01-10\n")
    df = QlibSource(small).history(["BBB"])
    assert df["date"].dt.day().to_list() == [2, 3, 9, 10]  # two spans of one (lower-case) instrument name
    (small / "instruments" / "csi.txt").write_text("AAA\t2020-01-06\t2020-01-08\n")
    source = QlibSource(small, market="csi")
    assert source.symbols() == ["AAA"]
    assert source.history(["AAA"])["close"].to_list() == [11, 13]
    with pytest.raises(InputDataError, match=r"csi.txt: no instrument \['BBB'\]"):
        source.history(["BBB"])


def test_fingerprints_change_with_one_symbols_bins_alone(small):
    source = QlibSource(small)
    before = source.fingerprints()
    assert sorted(before) == ["AAA", "BBB"]
    path = small / "features" / "aaa" / "close.day.bin"
    path.write_bytes(path.read_bytes() + np.float32(15).tobytes())
    after = source.fingerprints()
    assert after["AAA"] != before["AAA"] and after["BBB"] == before["BBB"]
    assert QlibSource(small, adjusted=False).fingerprints()["BBB"] != before["BBB"]


def test_an_instrument_that_is_no_symbol_here_is_skipped_with_a_warning(small):
    with open(small / "instruments" / "all.txt", "a") as f:
        f.write("^GSPC\t2020-01-02\t2020-01-13\n")
    with pytest.warns(UserWarning, match=r"skipped: .*all.txt: row 3: instrument '\^GSPC' is not a symbol here"):
        assert QlibSource(small).symbols() == ["AAA", "BBB"]
    errors: list = []
    assert sorted(QlibSource(small).fingerprints(errors)) == ["AAA", "BBB"] and len(errors) == 1


def _bad_layouts(root: Path):
    """(name, how to break `root`, the start of the one-line message after `root/`)."""
    aaa = root / "features" / "aaa"
    yield "no calendar", lambda: (root / "calendars" / "day.txt").unlink(), "calendars/day.txt: not found; expected Qlib's daily calendar"
    yield "bad calendar line", lambda: (root / "calendars" / "day.txt").write_text("2020-01-02\nJan 3\n"), \
        "calendars/day.txt: row 2: cannot parse date 'Jan 3'"
    yield "unsorted calendar", lambda: (root / "calendars" / "day.txt").write_text("2020-01-03\n2020-01-02\n"), \
        "calendars/day.txt: row 2: date 2020-01-02 does not come after 2020-01-03"
    yield "no instruments file", lambda: (root / "instruments" / "all.txt").rename(root / "instruments" / "sp500.txt"), \
        "instruments/all.txt: not found; expected one line per instrument, SYMBOL<TAB>start<TAB>end " \
        "(universe.qlib.market 'all'; instruments files here: ['sp500'])"
    yield "bad instrument line", lambda: (root / "instruments" / "all.txt").write_text("AAA 2020-01-03\n"), \
        "instruments/all.txt: row 1: cannot read instrument line 'AAA 2020-01-03'"
    yield "bin longer than the calendar", \
        lambda: (aaa / "close.day.bin").write_bytes((aaa / "close.day.bin").read_bytes() + np.zeros(3, "<f4").tobytes()), \
        "features/aaa/close.day.bin: 8 values from calendar day 1 (2020-01-03) run 1 day(s) past the calendar's last " \
        "day 2020-01-13; expected at most 7 values"
    yield "start index off the calendar", \
        lambda: (aaa / "open.day.bin").write_bytes(np.array([9, 1, 2], "<f4").tobytes()), \
        "features/aaa/open.day.bin: start index 9.0 is not a day of calendars/day.txt (8 days)"
    yield "truncated bin", lambda: (aaa / "low.day.bin").write_bytes(b"\x00\x00"), \
        "features/aaa/low.day.bin: 2 bytes is not a start index followed by float32 values"
    yield "missing field", lambda: (aaa / "volume.day.bin").unlink(), \
        "features/aaa/volume.day.bin: not found: the field $volume of AAA; expected features/aaa/<field>.day.bin " \
        "for each of $open, $high, $low, $close, $volume"
    yield "missing features folder", lambda: [p.unlink() for p in aaa.iterdir()] and aaa.rmdir(), \
        "features/aaa/open.day.bin: not found: the field $open of AAA"
    yield "a price NaN on a day with prices", \
        lambda: (aaa / "high.day.bin").write_bytes(np.array([1, 11, np.nan, np.nan, 14, 15], "<f4").tobytes()), \
        "features/aaa/high.day.bin: $high is NaN on 2020-01-06 while other prices of the day are not"
    yield "a bad price", \
        lambda: (aaa / "low.day.bin").write_bytes(np.array([1, 9, 10, np.nan, 12, -1], "<f4").tobytes()), \
        "features/aaa/low.day.bin: on 2020-01-09: price -1.0 is missing, not finite or not positive"


@pytest.mark.parametrize("case", [name for name, _, _ in _bad_layouts(Path("."))])
def test_a_bad_layout_is_refused_in_one_line_naming_the_file(small, case):
    _, breaks, message = next(item for item in _bad_layouts(small) if item[0] == case)
    breaks()
    with pytest.raises(InputDataError) as err:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            QlibSource(small).history(["AAA"])
    assert _one_line(err).startswith(f"{small}/{message}"), str(err.value)


def test_a_missing_provider_folder_names_the_setting(tmp_path):
    with pytest.raises(InputDataError) as err:
        QlibSource(tmp_path / "nowhere").symbols()
    assert _one_line(err) == (f"{tmp_path}/nowhere: folder not found; expected a Qlib data folder holding calendars/, "
                              "instruments/ and features/ (universe.qlib.provider_uri)")


def test_the_settings_select_the_source(small, tmp_path):
    settings = parse_settings({"universe": {"source": "qlib", "qlib": {"provider_uri": str(small), "adjusted": False}}},
                              root=tmp_path)
    source = make_source(settings)
    assert source.name == "qlib" and source.root == small and source.market == "all" and not source.adjusted
    assert source.history(["AAA"])["close"].to_list() == [5, 5.5, 6.5, 7]
    from config.settings import SettingsError

    with pytest.raises(SettingsError, match="universe.qlib.market"):
        parse_settings({"universe": {"qlib": {"market": "../all"}}}, root=tmp_path)


def test_a_leading_tilde_is_the_home_folder_as_in_qlib(tmp_path):
    settings = parse_settings({"universe": {"qlib": {"provider_uri": "~/.qlib/qlib_data/cn_data"}}}, root=tmp_path)
    assert settings.resolve(settings.universe.qlib.provider_uri) == Path.home() / ".qlib" / "qlib_data" / "cn_data"
