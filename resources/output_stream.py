"""A symbol x year stage's output computed and written chunk by chunk, committed once.

`ChunkStream(bars, keys, build, rows_per_chunk)` cuts the run's symbols into groups whose
input bars hold about `rows_per_chunk` rows (whole symbols, in symbol order), and yields
`build(bars of the group, keys of the group)` one group at a time. `write_stream(context,
store, asset, stream)` hands those frames to `DeltaStore.write_stream`, which writes each as
Parquet files as it arrives and makes ONE commit for the run's keys: peak memory is one
group's input and output, not the universe's (issue 43).

A group whose build raises is built again symbol by symbol (resources.partitions.
build_per_symbol): the symbols that fail are left out of the commit and named in the step's
Failure once the others' rows are committed, as the whole-frame path did. `build` may return
`(frame, *extras)`: each chunk's extras go to `on_extras` (a stage's check counts, summed
as it likes); `on_chunk(frame, bars)` sees each chunk's output with its input bars (checks
that need both). `rows`, `bytes` and `dtypes` describe what was yielded, for the stage's
observation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import polars as pl

from config.partitions import SymbolYear
from resources.partitions import build_per_symbol

COMPUTE_PARTS = 4  # compute groups per written chunk


def symbol_groups(bars: pl.DataFrame, keys: list[SymbolYear], rows_per_chunk: int) -> list[list[str]]:
    """The run's symbols (sorted) in consecutive groups of about `rows_per_chunk` input rows
    (a symbol is never split; a symbol with more rows is a group of its own)."""
    counts = dict(bars.group_by("symbol").len().rows()) if bars.height else {}
    groups: list[list[str]] = [[]]
    rows = 0
    for symbol in sorted({k.symbol for k in keys}):
        n = counts.get(symbol, 0)
        if groups[-1] and rows + n > rows_per_chunk:
            groups.append([])
            rows = 0
        groups[-1].append(symbol)
        rows += n
    return [g for g in groups if g]


class ChunkStream:
    """The frames of a run, one symbol group at a time (see the module doc)."""

    def __init__(self, bars: pl.DataFrame, keys: list[SymbolYear], build: Callable, rows_per_chunk: int,
                 on_extras: Callable | None = None, on_chunk: Callable[[pl.DataFrame, pl.DataFrame], None] | None = None):
        self.bars, self.keys, self.build = bars, keys, build
        self.rows_per_chunk = max(1, int(rows_per_chunk))
        self.on_extras, self.on_chunk = on_extras, on_chunk
        self.failed: dict[str, str] = {}
        self.rows = self.bytes = self.chunks = 0
        self.dtypes: dict[str, str] = {}
        self.build_seconds = 0.0

    def _bars_of(self, symbols: list[str]) -> pl.DataFrame:
        return self.bars.filter(pl.col("symbol").is_in(symbols)) if self.bars.height else self.bars

    def _built(self) -> Iterator[pl.DataFrame]:
        """Each compute group's output, built (a quarter of a chunk's rows: the build's
        temporaries, a few times its output, stay small)."""
        for group in symbol_groups(self.bars, self.keys, max(1, self.rows_per_chunk // COMPUTE_PARTS)):
            members = set(group)
            keys = [k for k in self.keys if k.symbol in members]
            bars = self._bars_of(group)
            t0 = time.perf_counter()
            result, failed = build_per_symbol(keys, lambda ks, b=bars: self.build(b, ks))
            self.build_seconds += time.perf_counter() - t0
            self.failed.update(failed)
            frame, *extras = result if isinstance(result, tuple) else (result,)
            if extras and self.on_extras is not None:
                self.on_extras(*extras)
            if self.on_chunk is not None:
                self.on_chunk(frame, bars)
            self.rows += frame.height
            self.bytes += int(frame.estimated_size())
            self.dtypes = self.dtypes or {c: str(t) for c, t in frame.schema.items()}
            del bars, result, extras
            yield frame

    def __iter__(self) -> Iterator[pl.DataFrame]:
        """The outputs of COMPUTE_PARTS compute groups at a time, as one chunk (no copy): the
        files it is written as hold a chunk's rows per year, since a file's cost is mostly per
        column, not per row (177 columns: ~12 ms per file of 1,200 rows, measured)."""
        pending: list[pl.DataFrame] = []
        for frame in self._built():
            pending.append(frame)
            if len(pending) == COMPUTE_PARTS:
                self.chunks += 1
                yield pl.concat(pending, how="vertical", rechunk=False)
                pending = []
        if pending:
            self.chunks += 1
            yield pl.concat(pending, how="vertical", rechunk=False)


def write_stream(context, store, asset: str, stream: ChunkStream) -> dict:
    """Write `stream` as the run's ONE commit of `asset` and return the output metadata the
    IO manager gives a whole-frame write (path, table_version, rows_written,
    commit_attempts, write_seconds: here the time outside the build; the stage's own
    `seconds` then include the write, and `stream_chunks` marks such a stage). Symbols that failed are
    left out of the commit; then a Failure names them after the others' rows are committed."""
    from dagster import Failure

    t0 = time.perf_counter()
    keys = stream.keys
    commit = store.write_stream(asset, keys, stream, drop_symbols=lambda: stream.failed)
    if stream.failed:
        written = sorted({k.symbol for k in keys} - set(stream.failed))
        raise Failure(description=f"{asset}: symbol(s) {', '.join(sorted(stream.failed))} failed ("
                                  f"{'; '.join(f'{s}: {e}' for s, e in sorted(stream.failed.items()))}); "
                                  f"the rows of the other {len(written)} symbol(s) of the partition were "
                                  f"written: {', '.join(written) or 'none'}")
    return {
        "path": str(store.asset_dir(asset)),
        "table_version": commit.version if commit else -1,
        "rows_written": commit.rows if commit else 0,
        "commit_attempts": commit.attempts if commit else 0,
        "write_seconds": round(time.perf_counter() - t0 - stream.build_seconds, 4),
    }


def observe_stream(obs, stream: ChunkStream) -> None:
    """What a stage's observation records of a streamed output (rows, bytes, dtypes, build time)."""
    obs.timings["build_s"] = round(stream.build_seconds, 4)
    obs.rows, obs.bytes, obs.dtypes = stream.rows, stream.bytes, stream.dtypes
    obs.extra["stream_chunks"] = stream.chunks
