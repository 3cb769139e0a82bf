"""The partitioned Parquet store: hive layout, zstd, atomic writes.

Layout: `<root>/<asset>/symbol=<S>/year=<Y>/part.parquet` for symbol x year assets,
`<root>/<asset>/year=<Y>/part.parquet` for year assets and `<root>/<asset>/part.parquet`
for unpartitioned ones.

A write goes to a temporary file in the destination folder, is fsynced, then renamed over
the target (`os.replace`, atomic on POSIX): readers see the old file or the new one, never
a torn one, and a killed writer leaves the previous partition intact (a stray `.part-*.tmp`
is the only trace; readers ignore it and the next write of that partition removes it).
Symbols are validated before any path is built, so `../x` can never become a path.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from config.partitions import SymbolYear
from config.settings import SYMBOL_PATTERN

FILE_NAME = "part.parquet"
TMP_PREFIX = ".part-"
COMPRESSION = "zstd"


def _checked_symbol(symbol: str) -> str:
    if not isinstance(symbol, str) or not SYMBOL_PATTERN.match(symbol):
        raise ValueError(f"symbol {symbol!r} is not allowed in a path: expected [A-Z0-9._-]{{1,16}}")
    return symbol


def _checked_asset(asset: str) -> str:
    if not asset.replace("_", "").isalnum():
        raise ValueError(f"asset name {asset!r}: expected letters, digits and underscores")
    return asset


def atomic_write_parquet(df: pl.DataFrame, path: Path) -> int:
    """Write `df` to `path` atomically; return the file's size in bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f"{TMP_PREFIX}*.tmp"):
        if not _writer_alive(stale):  # a killed writer's leftover; a live writer's file is its own
            stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, shared_file_mode())  # mkstemp makes 0600; a shared data folder needs 0666 & ~umask
        with os.fdopen(fd, "wb") as fh:
            df.write_parquet(fh, compression=COMPRESSION, statistics=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path.stat().st_size


def _writer_alive(tmp: Path) -> bool:
    """Whether the process named in a temp file's name (`.part-<pid>-*.tmp`) still runs."""
    try:
        pid = int(tmp.name[len(TMP_PREFIX):].split("-", 1)[0])
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def shared_file_mode() -> int:
    """0666 & ~umask: the mode `open()` gives a new file (0644 under the usual umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class ParquetStore:
    """Paths, atomic writes and reads of one data root."""

    def __init__(self, root: Path | str):
        self.root = Path(root)

    # paths -----------------------------------------------------------------------------
    def asset_dir(self, asset: str) -> Path:
        return self.root / _checked_asset(asset)

    def partition_path(self, asset: str, symbol: str, year: int) -> Path:
        return self.asset_dir(asset) / f"symbol={_checked_symbol(symbol)}" / f"year={int(year)}" / FILE_NAME

    def year_path(self, asset: str, year: int) -> Path:
        return self.asset_dir(asset) / f"year={int(year)}" / FILE_NAME

    def unpartitioned_path(self, asset: str) -> Path:
        return self.asset_dir(asset) / FILE_NAME

    # writes ----------------------------------------------------------------------------
    def write(self, asset: str, key: SymbolYear, df: pl.DataFrame) -> int:
        return atomic_write_parquet(df, self.partition_path(asset, key.symbol, key.year))

    def write_split(self, asset: str, keys: Iterable[SymbolYear], df: pl.DataFrame) -> dict[SymbolYear, int]:
        """Write one file per key from a frame holding the rows of all keys.

        Rows go to the partition of their `symbol` and the year of their `date`; a key
        without rows gets an empty file with the frame's schema, so every materialized
        partition exists on disk. Rows outside the keys are an error (never dropped).
        """
        keys = list(dict.fromkeys(keys))
        year = pl.col("date").dt.year().alias("__year")
        groups = df.with_columns(year).partition_by(["symbol", "__year"], as_dict=True, maintain_order=True)
        parts = {SymbolYear(s, int(y)): g.drop("__year") for (s, y), g in groups.items()}
        stray = sorted(set(parts) - set(keys))
        if stray:
            raise ValueError(f"{asset}: rows for partitions outside this run: {stray[:5]}")
        empty = df.clear()
        return {key: self.write(asset, key, parts.get(key, empty)) for key in keys}

    def write_year(self, asset: str, year: int, df: pl.DataFrame) -> int:
        return atomic_write_parquet(df, self.year_path(asset, year))

    def write_unpartitioned(self, asset: str, df: pl.DataFrame) -> int:
        return atomic_write_parquet(df, self.unpartitioned_path(asset))

    # reads -----------------------------------------------------------------------------
    def paths_for(self, asset: str, keys: Iterable[SymbolYear | int], allow_missing: bool = False) -> list[Path]:
        """The files of `keys` (SymbolYear, or years for a year-partitioned asset), in order;
        a missing one is an error unless `allow_missing` (then it is skipped; all missing is
        still an error)."""
        ordered = sorted(set(keys))
        paths = [self.year_path(asset, k) if isinstance(k, int) else self.partition_path(asset, k.symbol, k.year)
                 for k in ordered]
        missing = [str(k) for k, p in zip(ordered, paths) if not p.is_file()]
        if allow_missing and len(missing) < len(paths):
            return [p for p in paths if p.is_file()]
        if missing:
            raise FileNotFoundError(
                f"{self.asset_dir(asset)}: partition(s) not materialized yet: {missing[:5]}"
                f"{' ...' if len(missing) > 5 else ''}; materialize {asset} for them first"
            )
        return paths

    def read(self, asset: str, keys: Iterable[SymbolYear], allow_missing: bool = False) -> pl.DataFrame:
        """The rows of `keys` as one frame, sorted by symbol then date (one key works too)."""
        paths = self.paths_for(asset, keys, allow_missing)
        if not paths:
            raise ValueError(f"{asset}: no partitions requested")
        frames = [pl.read_parquet(p) for p in paths]
        return pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]

    def scan(self, asset: str, keys: Iterable[SymbolYear] | None = None, allow_missing: bool = False) -> pl.LazyFrame:
        """A lazy scan with hive columns (`symbol`, `year`) of some keys or the whole asset."""
        if keys is None:
            if not self.asset_dir(asset).is_dir():
                raise FileNotFoundError(f"{self.asset_dir(asset)}: asset not materialized yet")
            pattern = self.asset_dir(asset) / "**" / FILE_NAME
            return pl.scan_parquet(str(pattern), hive_partitioning=True)
        paths = self.paths_for(asset, keys, allow_missing)
        return pl.scan_parquet([str(p) for p in paths], hive_partitioning=True)

    def partitions(self, asset: str) -> list[SymbolYear]:
        """Every symbol x year partition on disk for `asset`."""
        out = []
        for p in self.asset_dir(asset).glob(f"symbol=*/year=*/{FILE_NAME}"):
            out.append(SymbolYear(p.parent.parent.name.split("=", 1)[1], int(p.parent.name.split("=", 1)[1])))
        return sorted(out)
