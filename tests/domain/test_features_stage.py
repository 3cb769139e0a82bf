"""domain.features (stage compute): the no-NaN-after-warm-up count, taken as all NaN less the
warm-up's, must equal the row-by-row rule (`__pos` >= warm-up) wherever the NaN and nulls lie;
and bars in any row order give the features of the sorted bars."""

import datetime as dt

import numpy as np
import polars as pl

from config.partitions import SymbolYear
from domain.features import _nan_after_warmup, build_features
from domain.sources.synthetic import SyntheticMarket


def test_nan_after_warmup_counts_nan_and_null_after_the_warmup_only():
    pos = [0, 1, 2, 3, 4, 0, 1, 2]  # two symbols' rows; the second starts again at 0
    frame = pl.DataFrame({
        "__pos": pos,
        "a": [np.nan, np.nan, 1.0, np.nan, 2.0, np.nan, 3.0, 4.0],  # warm-up 2: one NaN after it (pos 3)
        "b": [None, 1.0, None, 2.0, np.nan, None, None, 5.0],  # warm-up 1: null at pos 2 and 1, NaN at 4
        "c": [1.0] * 8,  # warm-up 0: clean
    }, schema={"__pos": pl.Int64, "a": pl.Float32, "b": pl.Float32, "c": pl.Float32})
    warmups = {"a": 2, "b": 1, "c": 0}
    row_by_row = {n: int(frame.select(((pl.col(n).is_nan() | pl.col(n).is_null()) & (pl.col("__pos") >= w)).sum()).item())
                  for n, w in warmups.items()}
    assert _nan_after_warmup(frame, warmups) == row_by_row == {"a": 1, "b": 3, "c": 0}
    assert _nan_after_warmup(frame, {}) == {}


def test_build_features_unsorted_bars_give_the_sorted_bars_features():
    bars = SyntheticMarket(3, dt.date(2001, 1, 1), dt.date(2002, 12, 31)).generate(["BBB", "AAA"])
    keys = [SymbolYear(s, y) for s in ("AAA", "BBB") for y in (2001, 2002)]
    shuffled = bars.sample(fraction=1.0, shuffle=True, seed=5)
    halo = [k for k in keys if k.year == 2002]  # 2001 rows are halo: dropped
    for ks in (keys, halo):
        expected = build_features(bars.sort("symbol", "date"), ks)[0]
        assert build_features(shuffled, ks)[0].equals(expected)
        assert expected["date"].dt.year().min() == min(k.year for k in ks)
