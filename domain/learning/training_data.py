"""Training matrices across symbols, from the partitioned assets (one lazy scan each).

A row is (symbol, date): the specialist scores of that day, the labels, and for each
horizon H the label interval [t0, t1_h{H}]: t0 = the row's date, t1 = the date H trading
rows later in the same symbol's series (what the label looks at). Rows are sorted by t0
(then symbol), as the purged splitter expects. Walk-forward: the matrix for year Y keeps
only what was known at the end of Y, the rows whose label ends (t1) within years <= Y.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from kernels.registry.specialists import SPECIALIST_COLUMNS


def label_ends(labels: pl.LazyFrame, horizons: list[int]) -> pl.LazyFrame:
    """t1_h{H}: the date H rows later in the symbol's own series (null past its end)."""
    return labels.sort("symbol", "date").with_columns(
        [pl.col("date").shift(-h).over("symbol").alias(f"t1_h{h}") for h in horizons]
    )


def training_frame(specialists: pl.LazyFrame, labels: pl.LazyFrame, horizons: list[int], known_by_year: int,
                   regime: pl.LazyFrame | None = None) -> pl.DataFrame:
    """Scores + labels + label intervals (+ regime) of the rows known by the end of `known_by_year`."""
    cutoff = dt.datetime(known_by_year + 1, 1, 1)
    labs = label_ends(labels.select("symbol", "date", *[f"label_bin_h{h}" for h in horizons],
                                    *[f"label_ret_h{h}" for h in horizons]), horizons)
    frame = specialists.select("symbol", "date", *SPECIALIST_COLUMNS).join(labs, on=["symbol", "date"], how="inner")
    if regime is not None and "regime" in regime.collect_schema().names():  # empty when none is stored yet
        frame = frame.join(regime.select("date", "regime"), on="date", how="left")
    return _known_by(frame, horizons, cutoff).sort("date", "symbol").collect()


def _known_by(frame, horizons: list[int], cutoff: dt.datetime):
    frame = frame.filter(pl.col("date") < cutoff)
    for h in horizons:  # a label not known by the cutoff is not a training label yet
        known = pl.col(f"t1_h{h}").is_not_null() & (pl.col(f"t1_h{h}") < cutoff)
        frame = frame.with_columns(
            pl.when(known).then(pl.col(f"label_bin_h{h}")).otherwise(None).alias(f"label_bin_h{h}"),
            pl.when(known).then(pl.col(f"t1_h{h}")).otherwise(None).alias(f"t1_h{h}"),
        )
    return frame


def known_by(frame: pl.DataFrame, horizons: list[int], known_by_year: int) -> pl.DataFrame:
    """training_frame(..., known_by_year) cut from a training_frame of the same tables known by
    a LATER year (read once, cut per year): the rows before the cutoff, each label and t1 kept
    where t1 falls before it. The same frame (rows, order, values): a label known by the
    earlier cutoff was known by the later one, and the rows stay in their (date, symbol) order."""
    cutoff = dt.datetime(known_by_year + 1, 1, 1)
    return _known_by(frame.lazy(), horizons, cutoff).collect()


def one_class(labels: pl.Series) -> int | None:
    """The only class of a label column (nulls aside), or None when it has both (or none):
    a one-class label leaves nothing to learn or calibrate."""
    classes = labels.drop_nulls().unique()
    return int(classes[0]) if classes.len() == 1 else None
