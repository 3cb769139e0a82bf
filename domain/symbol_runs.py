"""Cheap facts about a bars frame's symbol runs, so the feature stage can skip work that
would change nothing: sorting a frame that is already sorted by (symbol, date), and
filtering a frame whose every row belongs to one of the run's partitions.

Both answer from O(rows) vector comparisons (no sort, no join): on 3.3M rows they cost
about a tenth of the sort and of the partition join they spare.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from config.partitions import SymbolYear


def run_starts(symbols: pl.Series) -> np.ndarray:
    """Row offsets where the symbol changes (each run's first row), plus the length."""
    if len(symbols) == 0:
        return np.zeros(1, dtype=np.int64)
    starts = (symbols != symbols.shift(1)).fill_null(True).arg_true().to_numpy()
    return np.concatenate([starts, [len(symbols)]]).astype(np.int64)


def is_sorted_by_symbol_date(frame: pl.DataFrame, offsets: np.ndarray) -> bool:
    """True when `frame` (`offsets`: its run_starts) is in the order
    `frame.sort("symbol", "date")` gives: each symbol in one run, the runs in increasing
    symbol order, dates strictly increasing inside a run (a repeated date or a null answers
    False: the caller sorts, as before)."""
    if frame.height < 2:
        return True
    if frame["symbol"].null_count() or frame["date"].null_count():
        return False
    firsts = frame["symbol"].gather(offsets[:-1]).to_list()
    if any(a >= b for a, b in zip(firsts, firsts[1:])):
        return False
    dates = frame["date"].to_physical().to_numpy()
    rises = dates[1:] > dates[:-1]
    rises[offsets[1:-1] - 1] = True  # a run's first date may be below the previous run's last
    return bool(rises.all())


def keeps_every_row(frame: pl.DataFrame, offsets: np.ndarray, keys: list[SymbolYear]) -> bool:
    """True when every row of `frame` (sorted by symbol, date; `offsets` its symbol runs)
    has its (symbol, year of date) among `keys`: the years between each run's first and
    last date are all keys of that symbol."""
    if frame.height == 0:
        return True
    wanted: dict[str, set[int]] = {}
    for k in keys:
        wanted.setdefault(k.symbol, set()).add(k.year)
    symbols = frame["symbol"].gather(offsets[:-1]).to_list()
    first = frame["date"].gather(offsets[:-1]).dt.year().to_list()
    last = frame["date"].gather(offsets[1:] - 1).dt.year().to_list()
    return all(set(range(lo, hi + 1)) <= wanted.get(sym, set()) for sym, lo, hi in zip(symbols, first, last))
