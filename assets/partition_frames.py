"""Selecting the rows of a run's partitions from a frame that also holds halo years."""

from __future__ import annotations

import polars as pl

from pipeline.partitions import SymbolYear


def keep_partitions(frame: pl.DataFrame, keys: list[SymbolYear]) -> pl.DataFrame:
    """Rows of `frame` whose (symbol, year of date) is one of `keys`, order kept."""
    wanted = pl.DataFrame(
        {"symbol": [k.symbol for k in keys], "__year": [k.year for k in keys]},
        schema={"symbol": pl.String, "__year": pl.Int32},
    )
    return (
        frame.with_columns(pl.col("date").dt.year().alias("__year"))
        .join(wanted, on=["symbol", "__year"], how="semi", maintain_order="left")
        .drop("__year")
    )
