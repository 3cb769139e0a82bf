"""Per-symbol work over a frame sorted by symbol then date, in chunks, over a pool.

A frame holding many symbols is cut at symbol boundaries into chunks of about
`chunk_rows` rows (whole symbols: recursive indicators need each series from its start).
`executor="thread"` runs chunks on threads sharing the arrays (the numba kernels release
the GIL); `executor="process"` sends each chunk's columns to worker processes as NumPy
arrays (for work that holds the GIL). With one worker or one chunk everything runs here.

Memory: each chunk's result is copied into one preallocated array per output column as
soon as it is taken, and dropped, so the outputs are held once (plus the chunks in flight),
not twice (every chunk's results and then their concatenation): at 3.3M rows x 177 float32
columns that is 2.3 GB less at the peak.

Process workers pin BLAS/OpenMP threads to 1, warm up (numba loads its compiled code)
and then report their peak RSS growth over that baseline, so the stage can show memory
per worker against the chunk's input bytes.
"""

from __future__ import annotations

import resource
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np
import polars as pl

from resources.threads import pin_worker_threads


@dataclass
class ChunkStats:
    chunks: int = 0
    workers: int = 1
    max_chunk_input_mb: float = 0.0
    max_worker_rss_growth_mb: float = 0.0  # process executor only

    @property
    def rss_growth_over_input(self) -> float:
        return self.max_worker_rss_growth_mb / self.max_chunk_input_mb if self.max_chunk_input_mb else 0.0


def symbol_offsets(symbols: pl.Series) -> np.ndarray:
    """Start offsets of each symbol's run in a symbol-sorted column, plus the end."""
    if len(symbols) == 0:
        return np.zeros(1, dtype=np.int64)
    starts = (symbols != symbols.shift(1)).fill_null(True).arg_true().to_numpy()
    return np.concatenate([starts, [len(symbols)]]).astype(np.int64)


def plan_chunks(offsets: np.ndarray, chunk_rows: int) -> list[tuple[int, int]]:
    """Index ranges [symbol_lo, symbol_hi) covering about chunk_rows rows each."""
    chunks, lo = [], 0
    n_sym = len(offsets) - 1
    for hi in range(1, n_sym + 1):
        if offsets[hi] - offsets[lo] >= chunk_rows or hi == n_sym:
            chunks.append((lo, hi))
            lo = hi
    return chunks


_BASELINE_RSS_MB = 0.0


def _worker_init(fn: Callable, kwargs: dict) -> None:
    """Pin threads, run `fn` once on a tiny input (numba loads its compiled code), then
    record the RSS that the chunks' growth is measured from."""
    global _BASELINE_RSS_MB
    pin_worker_threads(1)
    tiny = {c: np.ones(64, dtype=np.float32) for c in ("open", "high", "low", "close", "volume")}
    fn(tiny, np.array([0, 64], dtype=np.int64), **kwargs)
    _BASELINE_RSS_MB = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _run_chunk(fn: Callable, arrays: dict[str, np.ndarray], offsets: np.ndarray, kwargs: dict):
    result = fn(arrays, offsets, **kwargs)
    growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0 - _BASELINE_RSS_MB
    return result, max(growth, 0.0)


def map_symbol_chunks(
    fn: Callable[..., dict[str, np.ndarray]],
    frame: pl.DataFrame,
    columns: list[str],
    *,
    workers: int = 1,
    chunk_rows: int = 131_072,
    executor: str = "thread",
    **kwargs,
) -> tuple[dict[str, np.ndarray], ChunkStats]:
    """Apply `fn(arrays, offsets, **kwargs)` to symbol chunks of `frame`; its results, one
    array per column over all of `frame`'s rows in frame order (as if concatenated).

    `fn` receives the chunk's columns and the offsets of its symbols within the chunk, and
    returns a dict of arrays of the chunk's length. The outputs are preallocated and filled
    chunk by chunk (see the module doc: memory).
    """
    offsets = symbol_offsets(frame["symbol"])
    chunks = plan_chunks(offsets, chunk_rows)
    stats = ChunkStats(chunks=len(chunks), workers=max(1, min(workers, len(chunks))))
    cols = {c: frame[c].rechunk().to_numpy() for c in columns}
    jobs = []
    for lo, hi in chunks:
        a, b = offsets[lo], offsets[hi]
        arrays = {c: v[a:b] for c, v in cols.items()}
        stats.max_chunk_input_mb = max(stats.max_chunk_input_mb, sum(v.nbytes for v in arrays.values()) / 2**20)
        jobs.append((arrays, offsets[lo : hi + 1] - a))
    out: dict[str, np.ndarray] = {}

    def place(i: int, result: dict[str, np.ndarray]) -> None:
        """Chunk i's result into its rows of the output arrays (the first chunk fixes the
        columns and dtypes; an array of another length than its chunk raises)."""
        if not out:
            out.update({k: np.empty(int(offsets[-1]), dtype=np.asarray(v).dtype) for k, v in result.items()})
        lo, hi = chunks[i]
        for k, buf in out.items():
            buf[offsets[lo] : offsets[hi]] = result[k]

    if stats.workers == 1:
        for i, (arrays, offs) in enumerate(jobs):
            place(i, fn(arrays, offs, **kwargs))
    elif executor == "thread":
        with ThreadPoolExecutor(max_workers=stats.workers) as pool:
            # map yields in order and drops each future as it yields: a result lives until placed
            for i, r in enumerate(pool.map(lambda job: fn(job[0], job[1], **kwargs), jobs)):
                place(i, r)
    elif executor == "process":
        with ProcessPoolExecutor(max_workers=stats.workers, initializer=_worker_init, initargs=(fn, kwargs)) as pool:
            futures = [pool.submit(_run_chunk, fn, arrays, offs, kwargs) for arrays, offs in jobs]
            for i in range(len(futures)):
                result, growth = futures[i].result()
                futures[i] = None  # the future holds the result: release it once placed
                place(i, result)
                stats.max_worker_rss_growth_mb = max(stats.max_worker_rss_growth_mb, growth)
    else:
        raise ValueError(f"executor must be 'thread' or 'process', got {executor!r}")
    return out, stats
