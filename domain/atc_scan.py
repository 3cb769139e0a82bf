"""The ATC scanner (the Pine script's Adaptive Trend Classification): the current Adaptive Trend Classification state of every
symbol, and the `atc_scan` asset (latest date, all symbols).

Each symbol's last `bars` closes are scanned in chunks of `chunk_symbols` symbols (memory
bounded by the chunk, whatever the universe), symbols of equal length batched as
[symbols, bars]. A cost model routes each chunk: the GPU backend (cuda, or torch on ROCm)
only when the chunk reaches the `atc` break-even of `kernels.backends.routing` (a
measurement: on an H100 the CPU path won at every chunk size tried, so no chunk gets there
until a new measurement says otherwise); otherwise, or when the GPU call fails, the CPU path, whose numba kernel runs the symbols of
a chunk in parallel threads (no pickling, unlike a process pool). MA results can be cached by (series hash, MA type, length)
(kernels.atc.MACache: hits and misses are reported).

`scan_store` is the entry point for a stored universe: it reads a lazy scan of the store
READ_SYMBOLS symbols at a time (a filter on the symbol column that polars pushes down to
the reader), so the process holds one chunk of bars at a time, never the whole frame; the
table equals `scan_universe` of the whole frame, bit for bit (each symbol's values depend
on its own closes only).
"""

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from domain.symbol_chunks import symbol_offsets
from kernels import atc, backends
from kernels.backends import routing

STATES = {1: "long", -1: "short", 0: "neutral"}
# Symbols per read of `scan_store`. Measured on a 5,000 x 2,000 Delta table partitioned by
# year (benchmarks/bench_atc.py): a 512-symbol read grows RSS by ~100 MB (the reader decodes
# whole row groups of every year file before filtering, and its allocator keeps the pages),
# 128 by ~60 MB, at about the same total time; the scan's own arrays are a few MB a chunk.
READ_SYMBOLS = 128


def route(n_symbols: int, n_bars: int, device_backend: str) -> str:
    """The backend for a chunk of n_symbols x n_bars on a machine whose device runs `device_backend`:
    a non-cpu backend of the `atc` family when the chunk's symbol-bars reach the `atc`
    break-even (`kernels.backends.routing`), else cpu."""
    if device_backend not in backends.backends("atc"):
        return "cpu"
    return routing.route("atc", n_symbols * n_bars, device_backend)


@dataclass
class ScanStats:
    chunks: int = 0
    backends: dict = field(default_factory=dict)
    chunk_backends: list = field(default_factory=list)  # per chunk, in scan order: the backend that ran it
    fallbacks: int = 0
    cache: dict = field(default_factory=dict)


def _compute(closes: np.ndarray, backend: str, stats: ScanStats, **params):
    """(families, final, the backend that ran): a failing GPU call falls back to the CPU."""
    try:
        return (*atc.compute(closes, backend=backend, dtype=np.float64, **params), backend)
    except Exception:
        if backend == "cpu":
            raise
        stats.fallbacks += 1
        return (*atc.compute(closes, backend="cpu", dtype=np.float64, **params), "cpu (fallback)")


def _symbol_runs(sym: pl.Series) -> tuple[np.ndarray, pl.Series]:
    """(start offsets of the runs of equal symbols plus the end, the symbol of each run).
    Run-length encoding reads the strings in place; `symbol_offsets`' compare-with-shift
    builds a new String column when the frame comes in chunks (+160 MB, 0.18 s on 10M
    rows in 81 chunks), so it serves only frames with null symbols (its runs differ there)."""
    if sym.null_count():
        offsets = symbol_offsets(sym)
        return offsets, sym.gather(offsets[:-1])
    runs = sym.rle()
    lengths = runs.struct.field("len").to_numpy()
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), runs.struct.field("value")


class _RowReader:
    """[symbols, bars] blocks of a column read in place: one zero-copy NumPy view per chunk
    of the column (a frame from a store comes in row-group chunks; `to_numpy()` on the
    whole column would copy it), a symbol's rows copied straight into the block (from two
    or more chunks where its rows cross a chunk border)."""

    def __init__(self, column: pl.Series):
        self.chunks = [c.to_numpy() for c in column.get_chunks()]
        self.bounds = np.cumsum([0] + [len(c) for c in self.chunks])

    def stack(self, starts: np.ndarray, n: int) -> np.ndarray:
        if len(self.chunks) == 1:
            x = self.chunks[0]
            return np.stack([x[a : a + n] for a in starts])
        out = np.empty((len(starts), n), dtype=np.result_type(*self.chunks))
        first = np.searchsorted(self.bounds, starts, side="right") - 1
        for r, (a, k) in enumerate(zip(starts, first)):
            done = 0
            while done < n:
                lo = a + done - self.bounds[k]
                take = min(n - done, len(self.chunks[k]) - lo)
                out[r, done : done + take] = self.chunks[k][lo : lo + take]
                done += take
                k += 1
        return out


def _offsets_in_order(frame: pl.DataFrame) -> tuple[np.ndarray, bool]:
    """(symbol offsets, whether the frame is sorted by symbol and, within each symbol, by
    strictly increasing date). Sorted by symbol iff the symbols starting the runs are
    strictly increasing; the dates are compared as NumPy integers, one chunk of the column
    at a time (zero-copy views, a bool per row of the chunk), not with a
    `diff().over("symbol")` (a duration column and a group-by: ~400 MB and 0.5 s on 10M
    rows)."""
    sym = frame["symbol"]
    if len(sym) == 0:
        return np.zeros(1, dtype=np.int64), True
    offsets, firsts = _symbol_runs(sym)
    if not (firsts.is_sorted() and firsts.n_unique() == len(firsts)) or frame["date"].null_count():
        return offsets, False
    starts = np.zeros(len(sym), dtype=np.bool_)  # True where a symbol's run begins: no comparison with the row before
    starts[offsets[:-1]] = True
    pos, prev = 0, None
    for chunk in frame["date"].to_physical().get_chunks():
        d = chunk.to_numpy()
        if len(d) == 0:
            continue
        if prev is not None and not starts[pos] and not d[0] > prev:
            return offsets, False
        if not np.all((d[1:] > d[:-1]) | starts[pos + 1 : pos + len(d)]):
            return offsets, False
        pos, prev = pos + len(d), d[-1]
    return offsets, True


def scan_universe(bars: pl.DataFrame, *, n_bars: int = 2000, chunk_symbols: int = 512, device_backend: str = "cpu",
                  robustness: str = "Medium", length: int = 28, lam: float = 0.02, decay: float = 0.03, cutout: int = 0,
                  cache: bool = False) -> tuple[pl.DataFrame, ScanStats]:
    """One row per symbol: last date, ATC value, state (long/short/neutral), family signals.

    Closes are read in place from the column's chunks by symbol offsets (no copies beyond
    the chunk being scanned, kept in the store's dtype: the kernels widen each element to
    float64 themselves); symbols with the same number of bars form [symbols, bars] chunks.
    Only the last bar of each result is asked for (`atc.compute(..., tail=1)`), and the
    table is filled in symbol order, so nothing is sorted or concatenated at the end.
    """
    frame = bars.select("symbol", "date", "close")
    offsets, in_order = _offsets_in_order(frame)
    if not in_order:  # sorting copies the frame: skip it when the store already gave it in order
        frame = frame.sort("symbol", "date")
        offsets = _symbol_runs(frame["symbol"])[0]
    rows = _RowReader(frame["close"])
    ends = offsets[1:]
    starts = np.maximum(offsets[:-1], ends - n_bars)
    lengths = ends - starts
    n_sym = len(ends)
    stats = ScanStats()
    if n_sym == 0:
        return pl.DataFrame(), stats
    last = np.empty(n_sym, dtype=np.float64)
    fam_last = np.empty((len(atc.FAMILIES), n_sym), dtype=np.float32)
    for n in np.unique(lengths):
        members = np.flatnonzero(lengths == n)
        for lo in range(0, len(members), chunk_symbols):
            idx = members[lo : lo + chunk_symbols]
            closes = rows.stack(starts[idx], int(n))
            backend = route(len(idx), int(n), device_backend)
            fams, final, used = _compute(closes, backend, stats, robustness=robustness, length=length, lam=lam, decay=decay,
                                         cutout=cutout, cache=cache, tail=1)
            stats.chunks += 1
            stats.backends[used] = stats.backends.get(used, 0) + 1
            stats.chunk_backends.append(f"{len(idx)}x{int(n)}:{used}")
            last[idx] = np.asarray(final)[:, -1]
            for f, name in enumerate(atc.FAMILIES):
                fam_last[f, idx] = np.asarray(fams[name])[:, -1]
    if cache:
        stats.cache = atc.ma_cache.stats()
    out = pl.DataFrame({
        "symbol": frame["symbol"].gather(ends - 1), "date": frame["date"].gather(ends - 1),
        "bars": lengths.astype(np.int32), "atc": last.astype(np.float32), "state": atc.classify(last),
        **{f"atc_{f.lower()}": fam_last[k] for k, f in enumerate(atc.FAMILIES)},
    })
    return out, stats


def _merge(total: ScanStats, part: ScanStats) -> None:
    total.chunks += part.chunks
    for used, k in part.backends.items():
        total.backends[used] = total.backends.get(used, 0) + k
    total.chunk_backends += part.chunk_backends
    total.fallbacks += part.fallbacks
    total.cache = part.cache or total.cache  # the MA cache's counters are cumulative


def _distinct_symbols(bars: pl.LazyFrame) -> list[str]:
    """The distinct symbols of a lazy scan; one `year` partition at a time where the scan
    has that column (the store's tables do): listing the whole symbol column at once decodes
    every file in parallel (+110-160 MB at 10M rows, 5,000 x 2,000), one year's files +95."""
    if "year" not in bars.collect_schema().names():
        return bars.select(pl.col("symbol").unique()).collect()["symbol"].drop_nulls().to_list()
    found: set[str] = set()
    for year in bars.select(pl.col("year").unique()).collect()["year"].drop_nulls().to_list():
        found.update(bars.filter(pl.col("year") == year).select(pl.col("symbol").unique()).collect()["symbol"]
                     .drop_nulls().to_list())
    return sorted(found)


def _symbol_major(frame: pl.DataFrame, symbols: list[str]) -> pl.DataFrame:
    """`frame` (rows of the sorted, distinct `symbols` only) in (symbol, date) order, or as
    it is where that order would still not be strict (a repeated date: scan_universe then
    sorts it as before). A read of a year-partitioned store gives each year's rows in turn,
    so a chunk is never in symbol order; a NumPy lexsort on the symbol's rank in `symbols`
    (an Enum code) and the date, then one gather, costs about a quarter of scan_universe's
    sort on the String column (which took 2.0 of 7.0 s at 5,000 x 2,000 in 40 reads)."""
    if frame.height < 2:
        return frame
    rank = frame["symbol"].cast(pl.Enum(symbols)).to_physical().to_numpy()
    ordered = frame[np.lexsort((frame["date"].to_physical().to_numpy(), rank))]
    return ordered if _offsets_in_order(ordered)[1] else frame


def scan_store(bars: pl.LazyFrame, *, symbols: list[str] | None = None, read_symbols: int | None = None,
               **params) -> tuple[pl.DataFrame, ScanStats, list[str]]:
    """`scan_universe` over a lazy scan of stored bars (columns symbol, date, close), read
    `read_symbols` (default READ_SYMBOLS) symbols at a time: (the table, the scan's stats,
    the symbols it found rows for).

    `symbols`: the symbols to read (the asset's registered ones, a superset of what its
    input holds: a symbol without rows gets no row), else the scan's distinct symbols
    (`_distinct_symbols`). They are
    read in sorted order with `is_in` filters and each chunk is scanned and dropped; the
    tables are concatenated in that order, so the result is `scan_universe(bars.collect())`
    row for row and bit for bit, at the memory of one chunk instead of the whole frame.
    Rows without a symbol are not scanned (the store holds none). `params`:
    scan_universe's keywords (n_bars, chunk_symbols, device_backend, the ATC parameters,
    cache).
    """
    if symbols is None:
        symbols = _distinct_symbols(bars)
    symbols, step = sorted(set(symbols)), read_symbols or READ_SYMBOLS
    stats, tables, read = ScanStats(), [], []
    for lo in range(0, len(symbols), step):
        chunk = symbols[lo : lo + step]
        frame = bars.filter(pl.col("symbol").is_in(chunk)).select("symbol", "date", "close").collect()
        table, part_stats = scan_universe(_symbol_major(frame, chunk), **params)
        _merge(stats, part_stats)
        if table.height:
            tables.append(table)
            read += table["symbol"].to_list()
    return (pl.concat(tables) if tables else pl.DataFrame()), stats, read


def scan_table_markdown(table: pl.DataFrame, limit: int = 50) -> str:
    lines = ["| symbol | date | ATC | state | " + " | ".join(atc.FAMILIES) + " |", "|" + "---|" * (4 + len(atc.FAMILIES))]
    for r in table.sort(pl.col("atc").abs(), descending=True).head(limit).iter_rows(named=True):
        fams = " | ".join(f"{r[f'atc_{f.lower()}']:+.2f}" for f in atc.FAMILIES)
        lines.append(f"| {r['symbol']} | {r['date']:%Y-%m-%d} | {r['atc']:+.3f} | {STATES[int(r['state'])]} | {fams} |")
    return "\n".join(lines)


def scan_summary(table: pl.DataFrame) -> tuple[str, str]:
    """The scan as a markdown table (strongest first) and the count of symbols per state."""
    counts = table["state"].value_counts().sort("state")
    states = ", ".join(f"{STATES[int(s)]} {n}" for s, n in counts.iter_rows())
    return scan_table_markdown(table), states
