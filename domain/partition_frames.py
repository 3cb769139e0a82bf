"""Selecting the rows of a run's partitions from a frame that also holds halo years."""

from __future__ import annotations

from itertools import groupby

import polars as pl

from config.partitions import SymbolYear


def keep_partitions(frame: pl.DataFrame, keys: list[SymbolYear]) -> pl.DataFrame:
    """Rows of `frame` whose (symbol, year of date) is one of `keys`, order kept.

    Runs cover rectangles, so each symbol's years are usually one contiguous range: that
    case is a join of the symbol and date columns alone on symbol and a range test, and a
    frame whose every row is kept (no halo rows in the run) is returned as it is, not copied
    (a single-run backfill's features frame: 2.3 GB at 3.3M rows x 177 columns); any other
    set of keys takes a semi join.
    """
    year = pl.col("date").dt.year()
    ranges = {}
    for sym, group in groupby(sorted(set(keys)), key=lambda k: k.symbol):
        years = [k.year for k in group]
        if years != list(range(years[0], years[-1] + 1)):
            break
        ranges[sym] = (years[0], years[-1])
    else:
        bounds = pl.DataFrame(
            {"symbol": list(ranges), "__lo": [r[0] for r in ranges.values()], "__hi": [r[1] for r in ranges.values()]},
            schema={"symbol": pl.String, "__lo": pl.Int32, "__hi": pl.Int32},
        )
        keep = (
            frame.select("symbol", "date")
            .join(bounds, on="symbol", how="left", maintain_order="left")
            .select(year.is_between(pl.col("__lo"), pl.col("__hi")).fill_null(False))
            .to_series()
        )
        return frame if keep.all() else frame.filter(keep)
    wanted = pl.DataFrame(
        {"symbol": [k.symbol for k in keys], "__year": [k.year for k in keys]},
        schema={"symbol": pl.String, "__year": pl.Int32},
    )
    return frame.with_columns(year.alias("__year")).join(wanted, on=["symbol", "__year"], how="semi", maintain_order="left").drop("__year")
