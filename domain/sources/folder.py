"""A folder of the user's OHLCV files, CSV or Parquet.

Each file is either one symbol's bars (the symbol is the file name's stem, upper-cased:
`goog.csv` -> GOOG) or one long table with a `symbol` (or `ticker`) column holding many
symbols. Symbol values of a long table are normalised like file-name stems (trimmed,
upper-cased: ` goog ` -> GOOG); an empty symbol is an error naming the row, never a row
dropped in silence. Column names match case-insensitively (see `conform`). CSV cells are
read as text and parsed by `conform`, so a bad cell is reported with its row and column.

Long tables are read lazily (polars scans): `history` filters the scan on the wanted
symbols, so one symbol of a 10M-row file costs one streaming pass, not the whole file in
memory; the symbols and fingerprints of a long table come from one streaming group-by,
kept per file version (name, mtime, size) for the life of the process.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl

from config.errors import InputDataError
from config.settings import SYMBOL_PATTERN
from domain.schema import RAW_BARS
from domain.sources.conform import conform_bars, validate_symbol

SUFFIXES = (".csv", ".parquet", ".pq")
SYMBOL_COLUMNS = ("symbol", "ticker")
ROW = "__row"  # 1-based row of the file, header excluded (the convention of every message)
SYMBOL_NAME = "the symbol: a name matching [A-Z0-9._-]{1,16} (lower case is upper-cased)"

# (path, mtime_ns, size) -> {symbol: token} of a long table; a changed file gets a new key.
_LONG_INDEX: dict[tuple[str, int, int], dict[str, str]] = {}


def normalise_symbol(name: str) -> str:
    """A symbol as stored: trimmed and upper-cased, as a file-name stem is."""
    return name.strip().upper()


def _separator(path: Path) -> str | None:
    """The name of the separator of a CSV whose header has no comma but a ';' or a tab
    (a European spreadsheet's export), else None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.readline()
    except OSError:
        return None
    return next((name for sep, name in ((";", "';'"), ("\t", "a tab")) if sep in head and "," not in head), None)


def unreadable(path: Path, err: Exception) -> InputDataError:
    """The one-line error of a file the parser refused: the parser's message with its hints
    folded into the line; a CSV separated by ';' or tabs is named as such (the parser's
    hint, about its own options, is left out then)."""
    sep = _separator(path) if path.suffix.lower() == ".csv" else None
    if sep is None:
        return InputDataError(str(path), f"cannot be read: {err}", expected="a CSV or Parquet file")
    first = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
    return InputDataError(str(path), f"cannot be read: {first}",
                          expected=f"a comma-separated CSV with '.' decimals (this file's header is separated by {sep})")


def read_table(path: Path) -> pl.DataFrame:
    """One file as a frame (CSV cells as strings); an empty or unreadable file is an error."""
    origin = str(path)
    if path.stat().st_size == 0:
        raise InputDataError(origin, "the file is empty", expected="a header and at least one row of OHLCV data")
    try:
        if path.suffix.lower() == ".csv":
            return pl.read_csv(path, infer_schema=False)
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as err:
        raise unreadable(path, err) from None


def _header(path: Path) -> list[str]:
    if path.stat().st_size == 0:
        raise InputDataError(str(path), "the file is empty", expected="a header and at least one row of OHLCV data")
    try:
        if path.suffix.lower() == ".csv":
            return pl.read_csv(path, n_rows=0, infer_schema=False).columns
        return list(pl.read_parquet_schema(path))
    except (pl.exceptions.PolarsError, OSError) as err:
        raise unreadable(path, err) from None


def _symbol_column(columns: list[str]) -> str | None:
    return next((c for c in columns if c.strip().lower() in SYMBOL_COLUMNS), None)


def _scan(path: Path) -> pl.LazyFrame:
    """The file as a lazy frame with its 1-based row number in ROW (CSV cells as strings)."""
    if path.suffix.lower() == ".csv":
        return pl.scan_csv(path, infer_schema=False, row_index_name=ROW, row_index_offset=1)
    return pl.scan_parquet(path, row_index_name=ROW, row_index_offset=1)


def _symbol_expr(col: str) -> pl.Expr:
    return pl.col(col).cast(pl.String).str.strip_chars().str.to_uppercase()


def _collect(lf: pl.LazyFrame, path: Path) -> pl.DataFrame:
    try:
        return lf.collect(engine="streaming")
    except (pl.exceptions.PolarsError, OSError) as err:
        raise unreadable(path, err) from None


def _check_names(found: pl.DataFrame, path: Path, col: str) -> None:
    """`found` has ROW, `raw` and `sym` (normalised) for some rows of a long table: an empty
    or malformed symbol among them is an error naming its row."""
    bad = found.filter(pl.col("sym").is_null() | (pl.col("sym") == "")).sort(ROW)
    if bad.height:
        raise InputDataError(str(path), "empty symbol", column=col, row=int(bad[ROW][0]), expected=SYMBOL_NAME)
    for row in found.sort(ROW).iter_rows(named=True):
        if not SYMBOL_PATTERN.fullmatch(row["sym"]):
            raise InputDataError(str(path), f"symbol {row['raw']!r} is not allowed", column=col, row=int(row[ROW]),
                                 expected=SYMBOL_NAME)


def _long_index(path: Path, col: str) -> dict[str, str]:
    """Symbol -> a token of its rows in the long table `path` (row count and an
    order-free sum of row hashes): appending one bar to one symbol changes that symbol's
    token only. One streaming pass, cached per file version."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _LONG_INDEX:
        lf = _scan(path)
        values = [c for c in lf.collect_schema().names() if c not in (ROW, col)]
        per_symbol = _collect(
            lf.select(pl.col(ROW), pl.col(col).cast(pl.String).alias("raw"), _symbol_expr(col).alias("sym"),
                      pl.struct(pl.col(values).cast(pl.String)).hash(seed=0).alias("h"))
            .group_by("sym", "raw").agg(pl.col(ROW).min(), pl.len().alias("n"), pl.col("h").sum()), path)
        _check_names(per_symbol, path, col)
        merged = per_symbol.group_by("sym").agg(pl.col("n").sum(), pl.col("h").sum())  # " aaa" and "AAA" are one symbol
        for old in [k for k in _LONG_INDEX if k[0] == key[0]]:  # one version per file: the daemon lives for weeks
            del _LONG_INDEX[old]
        _LONG_INDEX[key] = {s: f"{path.name}:{n}:{h:016x}" for s, n, h in merged.sort("sym").iter_rows()}
    return _LONG_INDEX[key]


class FolderSource:
    name = "folder"

    def __init__(self, path: Path, sessions: str | None = None, resample: bool = False):
        self.path = Path(path)
        # conform_bars: a calendar name whose non-sessions are refused; intraday rows to daily bars
        self.sessions, self.resample = sessions, resample

    def files(self, errors: list[InputDataError] | None = None) -> list[Path]:
        """The data files of the folder. A link that leads out of the folder is refused
        (recorded in `errors`, or raised without a list)."""
        if not self.path.is_dir():
            raise InputDataError(str(self.path), "folder not found", expected="a folder of CSV or Parquet files (universe.folder.path)")
        root = self.path.resolve()
        out = []
        for p in sorted(self.path.iterdir()):
            if not (p.is_file() and p.suffix.lower() in SUFFIXES):
                continue
            if p.is_symlink() and root not in p.resolve().parents:
                err = InputDataError(str(p), f"is a link to {p.resolve()}, outside the folder", expected="files inside the folder")
                if errors is None:
                    raise err
                errors.append(err)
                continue
            out.append(p)
        return out

    def _classify(self, errors: list[InputDataError] | None) -> tuple[dict[str, Path], dict[Path, str]]:
        """(stem symbol -> its one-symbol file, long table -> its symbol column), from the
        headers only. A file whose header cannot be read is recorded in `errors` (raised
        without a list)."""
        single: dict[str, Path] = {}
        long: dict[Path, str] = {}
        for path in self.files(errors):
            try:
                col = _symbol_column(_header(path))
                if col is None:
                    single[validate_symbol(normalise_symbol(path.stem), str(path))] = path
                else:
                    long[path] = col
            except InputDataError as err:
                if errors is None:
                    raise
                errors.append(err)
        return single, long

    def _tokens(self, errors: list[InputDataError] | None) -> dict[str, list[str]]:
        """Symbol -> one token per file that holds its rows."""
        single, long = self._classify(errors)
        out: dict[str, list[str]] = {}
        for sym, path in single.items():
            st = path.stat()
            out.setdefault(sym, []).append(f"{path.name}:{st.st_mtime_ns}:{st.st_size}")
        for path, col in long.items():
            try:
                index = _long_index(path, col)
            except InputDataError as err:
                if errors is None:
                    raise
                errors.append(err)
                continue
            for sym, token in index.items():
                out.setdefault(sym, []).append(token)
        return out

    def symbols(self) -> list[str]:
        """Every symbol a readable file holds; unreadable files are warnings (`skipped: ...`),
        not errors, as long as one file is usable. A folder with no usable file is an
        InputDataError of one line naming each file skipped and why (no_usable_file)."""
        errors: list[InputDataError] = []
        names = sorted(self._tokens(errors))
        if not names:
            raise self.no_usable_file(errors)
        _warn(errors)
        return names

    def no_usable_file(self, errors: list[InputDataError], limit: int = 10) -> InputDataError:
        """The error of a folder none of whose files holds a symbol: each file skipped and
        why (`errors`, then the files that are not CSV or Parquet), the first `limit` of them."""
        def why(err: InputDataError) -> str:
            text = str(err).removesuffix(f"; expected {err.expected}" if err.expected else "")
            return text.removeprefix(f"{self.path}/")

        reasons = [why(e) for e in errors] + [
            f"{p.name}: not a {', '.join(SUFFIXES[:-1])} or {SUFFIXES[-1]} file" for p in sorted(self.path.iterdir())
            if p.is_file() and p.suffix.lower() not in SUFFIXES and not p.name.startswith(".")]
        if not reasons:
            problem = "no usable file: the folder has no file"
        else:
            more = f"; ... and {len(reasons) - limit} more" if len(reasons) > limit else ""
            problem = f"no usable file: {len(reasons)} skipped ({'; '.join(reasons[:limit])}{more})"
        return InputDataError(str(self.path), problem, expected="one CSV or Parquet file per symbol (named by its "
                              "symbol, e.g. AAPL.csv) or a table with a symbol column (universe.folder.path)")

    def fingerprints(self, errors: list[InputDataError] | None = None) -> dict[str, str]:
        """Symbol -> a token that changes when its rows change: a one-symbol file's name,
        mtime and size; in a long table, that symbol's row count and row hashes, so a bar
        appended for one symbol changes that symbol's token alone."""
        return {sym: ";".join(tokens) for sym, tokens in sorted(self._tokens(errors).items())}

    def history(self, symbols: list[str]) -> pl.DataFrame:
        """All rows of `symbols`, validated, in RAW_BARS schema, sorted by symbol then date.

        A long table is scanned with a filter on the wanted symbols (and on empty or
        malformed ones, an error naming the row, as in `symbols`): the rows of other symbols
        are never held. Files that cannot be read and hold none of `symbols` are passed over
        in silence here (`symbols` names them)."""
        wanted = sorted(set(symbols))
        errors: list[InputDataError] = []
        single, long = self._classify(errors)
        frames = [conform_bars(read_table(single[s]), str(single[s]), s, sessions=self.sessions, resample=self.resample)
                  for s in wanted if s in single]
        found = {s for s in wanted if s in single}
        for path, col in long.items():
            raw = pl.col(col).cast(pl.String)
            canonical = raw.str.contains(SYMBOL_PATTERN.pattern).fill_null(False)
            # Rows already spelled as stored and not wanted are dropped before any string is
            # rebuilt (most rows of a long table); the others are normalised, then filtered.
            part = _collect(_scan(path).filter(raw.is_in(wanted) | ~canonical)
                            .with_columns(_symbol_expr(col).alias("__sym"), raw.alias("__raw"))
                            .filter(pl.col("__sym").is_in(wanted) | ~pl.col("__sym").str.contains(SYMBOL_PATTERN.pattern)
                                    .fill_null(False)), path)
            _check_names(part.select(ROW, pl.col("__raw").alias("raw"), pl.col("__sym").alias("sym")), path, col)
            for (name,), rows in part.partition_by("__sym", as_dict=True, maintain_order=True).items():
                frames.append(conform_bars(rows.drop(ROW, col, "__sym", "__raw"), str(path), name, row_numbers=rows[ROW],
                                           sessions=self.sessions, resample=self.resample))
                found.add(name)
        unknown = sorted(set(wanted) - found)
        if unknown:
            hint = f" (unreadable here: {'; '.join(str(e) for e in errors[:3])})" if errors else ""
            raise InputDataError(str(self.path), f"no file holds symbol(s) {unknown}{hint}",
                                 expected="one file per symbol or a symbol column; a symbol whose file was deleted "
                                          "is removed with `python -m pipeline.cli symbols remove NAME`")
        # files of other symbols that cannot be read do not stop these; listing the folder
        # (`symbols`, run by every command before a run) reported them once
        if not frames:
            return RAW_BARS.empty()
        out = pl.concat(frames)
        dup = out.select("symbol", "date").is_duplicated()
        if dup.any():
            row = out.filter(dup).row(0, named=True)
            raise InputDataError(str(self.path), f"symbol {row['symbol']} has date {row['date']} in more than one file", expected="each symbol's rows in one file")
        return out.sort("symbol", "date")


def _warn(errors: list[InputDataError]) -> None:
    for err in errors:
        warnings.warn(f"skipped: {err}", stacklevel=3)
