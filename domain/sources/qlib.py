"""A Qlib data folder read as it is (`universe.source: qlib`), so that a Qlib user brings
the data they already have. Nothing of Qlib is imported: its bin layout is read directly.

Under `universe.qlib.provider_uri`:
- `calendars/day.txt`: one date a line (`YYYY-MM-DD`), ascending; line i is calendar day i;
- `instruments/<market>.txt`: `SYMBOL<TAB>start<TAB>end` a line; a symbol may have several
  lines (the spans it belonged to the market): its bars are kept inside them only;
- `features/<symbol, lower case>/<field>.day.bin`: little-endian float32, the first value the
  calendar index of the field's first day, then one value per calendar day from there (NaN
  on a day without data: Qlib's layout is dense).

Fields read: `$open $high $low $close $volume`, and `$factor` with `adjusted: false`. Qlib
stores adjusted values (adjusted price = traded price x `$factor`, adjusted volume = traded
volume / `$factor`): `adjusted: true` keeps them, `false` turns them back into traded prices
and volumes. A day whose four prices are NaN (a suspension, a gap) is no bar: its row is
dropped, as the other sources have no row for a day without a bar; a day with some prices
NaN and not others is refused. A NaN volume is a missing volume (null, as in `conform`).
The rest is validated by `conform_bars` like every source's rows; its messages name the bin
file (the field's) and the date.

A layout that cannot be read (no calendar, no instruments file, a bad line, a bin whose
length runs past the calendar, a missing field) is one InputDataError line naming the file
and what was expected. An instrument name that is not a symbol of this project
(`[A-Z0-9._-]{1,16}` once upper-cased, e.g. Qlib's `^GSPC`) is skipped with a
`skipped: ...` warning, as the folder source skips a file it cannot read.
"""

from __future__ import annotations

import datetime as dt
import warnings
from pathlib import Path

import numpy as np
import polars as pl

from config.errors import InputDataError
from config.settings import SYMBOL_PATTERN
from domain.schema import PRICE_COLUMNS, RAW_BARS
from domain.sources.conform import conform_bars

FIELDS = PRICE_COLUMNS + ("volume",)
BIN = "little-endian float32: the start index into calendars/day.txt, then one value per calendar day"


def _date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text) if len(text) == 10 else dt.datetime.fromisoformat(text).date()
    except ValueError:
        return None


def _lines(path: Path, what: str) -> list[tuple[int, str]]:
    """(1-based line, stripped text) of the non-blank lines of a layout text file."""
    if not path.is_file():
        raise InputDataError(str(path), "not found", expected=what)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputDataError(str(path), f"cannot be read: {err}", expected=what) from None
    return [(i, line.strip()) for i, line in enumerate(text.splitlines(), 1) if line.strip()]


class QlibSource:
    name = "qlib"

    def __init__(self, root: Path, market: str = "all", adjusted: bool = True, sessions: str | None = None):
        self.root, self.market, self.adjusted = Path(root), market, adjusted
        self.sessions = sessions  # conform_bars: a calendar name whose non-sessions are refused
        self.fields = FIELDS if adjusted else FIELDS + ("factor",)
        self._cache: dict[str, tuple[tuple, object]] = {}

    # -- the layout -------------------------------------------------------------------------

    @property
    def calendar_path(self) -> Path:
        return self.root / "calendars" / "day.txt"

    @property
    def instruments_path(self) -> Path:
        return self.root / "instruments" / f"{self.market}.txt"

    def _check_root(self) -> None:
        if not self.root.is_dir():
            raise InputDataError(str(self.root), "folder not found", expected="a Qlib data folder holding calendars/, "
                                 "instruments/ and features/ (universe.qlib.provider_uri)")

    def _cached(self, key: str, path: Path, read):
        st = path.stat() if path.is_file() else None
        stamp = (st.st_mtime_ns, st.st_size) if st else None
        if key not in self._cache or self._cache[key][0] != stamp:
            self._cache[key] = (stamp, read())
        return self._cache[key][1]

    def calendar(self) -> np.ndarray:
        """The days of calendars/day.txt (datetime64[D], ascending)."""
        self._check_root()
        return self._cached("calendar", self.calendar_path, self._read_calendar)

    def _read_calendar(self) -> np.ndarray:
        path = self.calendar_path
        expected = "Qlib's daily calendar: one date (YYYY-MM-DD) a line, ascending (calendars/day.txt)"
        days = []
        for row, text in _lines(path, expected):
            day = _date(text)
            if day is None:
                raise InputDataError(str(path), f"cannot parse date {text!r}", row=row, expected=expected)
            if days and day <= days[-1]:
                raise InputDataError(str(path), f"date {day} does not come after {days[-1]}", row=row, expected=expected)
            days.append(day)
        if not days:
            raise InputDataError(str(path), "the calendar has no date", expected=expected)
        return np.array(days, dtype="datetime64[D]")

    def instruments(self) -> tuple[dict[str, list[tuple[np.datetime64, np.datetime64]]], list[InputDataError]]:
        """(symbol -> its spans, the instrument names that are not symbols here)."""
        self._check_root()
        return self._cached("instruments", self.instruments_path, self._read_instruments)

    def _read_instruments(self):
        path = self.instruments_path
        found = sorted(p.stem for p in (self.root / "instruments").glob("*.txt")) if (self.root / "instruments").is_dir() else []
        expected = (f"one line per instrument, SYMBOL<TAB>start<TAB>end (universe.qlib.market {self.market!r}; "
                    f"instruments files here: {found or 'none'})")
        spans: dict[str, list] = {}
        skipped: list[InputDataError] = []
        for row, text in _lines(path, expected):
            parts = text.split()
            start, end = (_date(p) for p in parts[1:3]) if len(parts) >= 3 else (None, None)
            if start is None or end is None or end < start:
                raise InputDataError(str(path), f"cannot read instrument line {text!r}", row=row,
                                     expected="SYMBOL<TAB>start<TAB>end with dates YYYY-MM-DD, start <= end")
            symbol = parts[0].strip().upper()
            if not SYMBOL_PATTERN.fullmatch(symbol):
                skipped.append(InputDataError(str(path), f"instrument {parts[0]!r} is not a symbol here", row=row,
                                              expected="a name matching [A-Z0-9._-]{1,16} once upper-cased"))
                continue
            spans.setdefault(symbol, []).append((np.datetime64(start, "D"), np.datetime64(end, "D")))
        if not spans:
            raise InputDataError(str(path), "no usable instrument" + (f" ({len(skipped)} skipped: {skipped[0].problem})"
                                                                      if skipped else ""), expected=expected)
        return spans, skipped

    def _folder(self, symbol: str) -> Path:
        return self.root / "features" / symbol.lower()  # Qlib's own convention: lower-case folders

    def _bin_path(self, symbol: str, field: str) -> Path:
        path = self._folder(symbol) / f"{field}.day.bin"
        if not path.is_file():
            raise InputDataError(str(path), f"not found: the field ${field} of {symbol}",
                                 expected=f"features/{symbol.lower()}/<field>.day.bin for each of "
                                          f"{', '.join('$' + f for f in self.fields)} ({BIN})")
        return path

    def _read_bin(self, symbol: str, field: str, calendar: np.ndarray) -> tuple[int, np.ndarray]:
        """(start index into the calendar, the values from there)."""
        path = self._bin_path(symbol, field)
        size = path.stat().st_size
        if size < 4 or size % 4:
            raise InputDataError(str(path), f"{size} bytes is not a start index followed by float32 values", expected=BIN)
        raw = np.fromfile(path, dtype="<f4")
        first, values, days = float(raw[0]), raw[1:], len(calendar)
        if not (np.isfinite(first) and first == int(first) and 0 <= first < days):
            raise InputDataError(str(path), f"start index {first!r} is not a day of calendars/day.txt ({days} days)",
                                 expected=BIN)
        start = int(first)
        if start + len(values) > days:
            raise InputDataError(str(path), f"{len(values)} values from calendar day {start} ({calendar[start]}) run "
                                 f"{start + len(values) - days} day(s) past the calendar's last day {calendar[-1]}",
                                 expected=f"at most {days - start} values after the start index {start} (one per day "
                                          "of calendars/day.txt: the calendar and the bins written together)")
        return start, values

    # -- the BarSource protocol --------------------------------------------------------------

    def symbols(self) -> list[str]:
        """The symbols of the instruments file; names that are not symbols here are
        `skipped: ...` warnings."""
        spans, skipped = self.instruments()
        for err in skipped:
            warnings.warn(f"skipped: {err}", stacklevel=2)
        return sorted(spans)

    def fingerprints(self, errors: list[InputDataError] | None = None) -> dict[str, str]:
        """Symbol -> a token of the calendar file, the symbol's spans, each bin read (size,
        mtime) and `adjusted`: an update of one symbol's bins changes its token alone. A
        symbol whose bin is missing is recorded in `errors` and left out (raised without
        a list)."""
        spans, skipped = self.instruments()
        cal = self.calendar_path.stat()
        head = f"qlib:{'adjusted' if self.adjusted else 'traded'}:day.txt:{cal.st_mtime_ns}:{cal.st_size}"
        if errors is not None:
            errors.extend(skipped)
        out = {}
        for symbol, ranges in sorted(spans.items()):
            try:
                stats = {f: self._bin_path(symbol, f).stat() for f in self.fields}
            except InputDataError as err:
                if errors is None:
                    raise
                errors.append(err)
                continue
            spans_text = ",".join(f"{a}..{b}" for a, b in ranges)
            out[symbol] = ";".join([head, spans_text] + [f"{f}:{s.st_mtime_ns}:{s.st_size}" for f, s in stats.items()])
        return out

    def history(self, symbols: list[str]) -> pl.DataFrame:
        """All bars of `symbols` inside their instrument spans, validated, in RAW_BARS schema,
        sorted by symbol then date."""
        spans, _ = self.instruments()
        wanted = sorted(set(symbols))
        unknown = [s for s in wanted if s not in spans]
        if unknown:
            raise InputDataError(str(self.instruments_path), f"no instrument {unknown}",
                                 expected="symbols listed in the instruments file (universe.qlib.market); a symbol no "
                                          "longer there is removed with `python -m pipeline.cli symbols remove NAME`")
        calendar = self.calendar()
        frames = [f for f in (self._bars(s, spans[s], calendar) for s in wanted) if f.height]
        return pl.concat(frames).sort("symbol", "date") if frames else RAW_BARS.empty()

    def _bars(self, symbol: str, ranges: list, calendar: np.ndarray) -> pl.DataFrame:
        parts = {f: self._read_bin(symbol, f, calendar) for f in self.fields}
        lo = min(start for start, _ in parts.values())
        hi = max(start + len(values) for start, values in parts.values())
        cols = {}
        for f, (start, values) in parts.items():
            col = np.full(hi - lo, np.nan)
            col[start - lo:start - lo + len(values)] = values
            cols[f] = col
        dates = calendar[lo:hi]
        inside = np.zeros(hi - lo, dtype=bool)
        for a, b in ranges:
            inside |= (dates >= a) & (dates <= b)
        missing = np.isnan(np.stack([cols[f] for f in PRICE_COLUMNS]))
        gap = missing.all(axis=0)  # a day without a bar in Qlib's dense layout
        partial = inside & missing.any(axis=0) & ~gap
        if partial.any():
            i = int(np.argmax(partial))
            field = PRICE_COLUMNS[int(np.argmax(missing[:, i]))]
            raise InputDataError(str(self._folder(symbol) / f"{field}.day.bin"),
                                 f"${field} is NaN on {dates[i]} while other prices of the day are not",
                                 expected="all four of $open $high $low $close on a day, or none (a day without a bar)")
        keep = inside & ~gap
        if not self.adjusted:
            factor = cols["factor"]
            bad = keep & ~(np.isfinite(factor) & (factor > 0))
            if bad.any():
                i = int(np.argmax(bad))
                raise InputDataError(str(self._folder(symbol) / "factor.day.bin"),
                                     f"$factor {factor[i]!r} on {dates[i]} is missing or not positive",
                                     expected="a finite $factor > 0 on every day with prices (universe.qlib.adjusted: "
                                              "false divides the prices by it)")
            for f in PRICE_COLUMNS:
                cols[f] = cols[f] / factor
            cols["volume"] = cols["volume"] * factor
        kept = dates[keep]
        frame = pl.DataFrame({"date": pl.Series(kept.astype("datetime64[ms]")).cast(pl.Date),
                              **{f: pl.Series(f, cols[f][keep], nan_to_null=f == "volume") for f in FIELDS}})
        if frame.height == 0:
            return frame
        try:
            return conform_bars(frame, str(self._folder(symbol)), symbol, sessions=self.sessions)
        except InputDataError as err:
            if err.row is None:
                raise
            origin = self._folder(symbol) / f"{err.column}.day.bin" if err.column in FIELDS else Path(err.origin)
            raise InputDataError(str(origin), f"on {kept[err.row - 1]}: {err.problem}", expected=err.expected) from None
