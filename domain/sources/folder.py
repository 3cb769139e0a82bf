"""A folder of the user's OHLCV files, CSV or Parquet.

Each file is either one symbol's bars (the symbol is the file name's stem, upper-cased:
`goog.csv` -> GOOG) or one long table with a `symbol` (or `ticker`) column holding many
symbols. Column names match case-insensitively (see `conform`). CSV cells are read as text
and parsed by `conform`, so a bad cell is reported with its row and column.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl

from config.errors import InputDataError
from domain.schema import RAW_BARS
from domain.sources.conform import conform_bars, validate_symbol

SUFFIXES = (".csv", ".parquet", ".pq")
SYMBOL_COLUMNS = ("symbol", "ticker")


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
        raise InputDataError(origin, f"cannot be read: {err}", expected="a CSV or Parquet file") from None


def _symbol_column(df: pl.DataFrame) -> str | None:
    for col in df.columns:
        if col.strip().lower() in SYMBOL_COLUMNS:
            return col
    return None


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

    def _symbols_of(self, path: Path) -> list[str]:
        if path.stat().st_size == 0:
            raise InputDataError(str(path), "the file is empty", expected="a header and at least one row of OHLCV data")
        try:
            if path.suffix.lower() == ".csv":
                header = pl.read_csv(path, n_rows=0, infer_schema=False).columns
            else:
                header = list(pl.read_parquet_schema(path))
        except (pl.exceptions.PolarsError, OSError) as err:
            raise InputDataError(str(path), f"cannot be read: {err}", expected="a CSV or Parquet file") from None
        col = next((c for c in header if c.strip().lower() in SYMBOL_COLUMNS), None)
        if col is None:
            return [validate_symbol(path.stem.upper(), str(path))]
        values = read_table(path)[col].drop_nulls().unique(maintain_order=True).to_list()
        return [validate_symbol(v, str(path)) for v in values]

    def symbol_files(self, errors: list[InputDataError] | None = None) -> dict[str, list[Path]]:
        """Symbol -> the files that hold its rows.

        With an `errors` list, a file whose symbols cannot be read is recorded there and
        skipped; without one, it raises.
        """
        out: dict[str, list[Path]] = {}
        for path in self.files(errors):
            try:
                names = self._symbols_of(path)
            except InputDataError as err:
                if errors is None:
                    raise
                errors.append(err)
                continue
            for sym in names:
                out.setdefault(sym, []).append(path)
        return out

    def symbols(self) -> list[str]:
        """Every symbol a readable file holds; unreadable files are warnings, not errors."""
        errors: list[InputDataError] = []
        names = sorted(self.symbol_files(errors))
        _warn(errors)
        return names

    def fingerprints(self, errors: list[InputDataError] | None = None) -> dict[str, str]:
        """Symbol -> a token that changes when any of its files changes."""
        out = {}
        for sym, paths in self.symbol_files(errors).items():
            out[sym] = ";".join(f"{p.name}:{p.stat().st_mtime_ns}:{p.stat().st_size}" for p in paths)
        return out

    def history(self, symbols: list[str]) -> pl.DataFrame:
        """All rows of `symbols`, validated, in RAW_BARS schema, sorted by symbol then date."""
        wanted = set(symbols)
        errors: list[InputDataError] = []
        files = self.symbol_files(errors)
        unknown = sorted(wanted - set(files))
        if unknown:
            hint = f" (unreadable here: {'; '.join(str(e) for e in errors[:3])})" if errors else ""
            raise InputDataError(str(self.path), f"no file holds symbol(s) {unknown}{hint}",
                                 expected="one file per symbol or a symbol column; a symbol whose file was deleted "
                                          "is removed with `python -m pipeline.cli symbols remove NAME`")
        _warn(errors)  # files of other symbols that cannot be read do not stop these
        frames = []
        for path in sorted({p for s in wanted for p in files[s]}):
            df = read_table(path)
            col = _symbol_column(df)
            if col is None:
                frames.append(conform_bars(df, str(path), path.stem.upper(), sessions=self.sessions,
                                           resample=self.resample))
                continue
            df = df.with_row_index("__row", offset=1)
            for (sym,), part in df.partition_by(col, as_dict=True, maintain_order=True).items():
                if sym in wanted:
                    frames.append(conform_bars(part.drop("__row", col), str(path), sym, row_numbers=part["__row"],
                                               sessions=self.sessions, resample=self.resample))
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
