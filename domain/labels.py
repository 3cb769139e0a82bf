"""Stage `labels` (symbol x year): forward returns over H trading rows and their sign.

    label_ret_h{H}[t] = close[t+H] / close[t] - 1   (rows of the symbol's own series)
    label_bin_h{H}[t] = 1 if label_ret_h{H}[t] > tau_H else 0; null where the return is null

Where the future is not known yet (the last H rows of the known history) both are null,
never 0: `(fut > tau).astype(int8)` would turn NaN into 0, which leaks. Computed
per symbol (never across symbols). Partition SYMBOL|Y reads raw_bars of Y and Y+1; a Y+1
not stored yet is a future not known yet (nulls), and the labels fill in when the stage runs
again after Y+1 arrives (the nightly schedule re-runs the previous year in January).
"""

import numpy as np
import polars as pl

from config.partitions import SymbolYear
from domain.partition_frames import keep_partitions
from domain.schema import labels_schema
from domain.symbol_chunks import symbol_offsets


def forward_returns(close: np.ndarray, offsets: np.ndarray, h: int) -> np.ndarray:
    """close[t+h]/close[t] - 1 within each symbol (rows offsets[k]:offsets[k+1]); NaN where
    t+h falls beyond the symbol's last row."""
    close = close.astype(np.float64)
    out = np.full(close.shape[0], np.nan)
    if close.shape[0] > h:
        out[:-h] = close[h:] / close[:-h] - 1.0
    for end in offsets[1:]:
        out[max(end - h, 0) : end] = np.nan
    return out


def build_labels(bars: pl.DataFrame, keys: list[SymbolYear], thresholds: dict[int, float]) -> pl.DataFrame:
    """Labels of the rows of `keys` from `bars` (which may hold the following year)."""
    horizons = list(thresholds)
    bars = bars.sort("symbol", "date")
    offsets = symbol_offsets(bars["symbol"])
    close = bars["close"].to_numpy()
    cols = {}
    for h in horizons:
        ret = forward_returns(close, offsets, h)
        cols[f"label_ret_h{h}"] = pl.Series(ret).fill_nan(None)
        cols[f"label_bin_h{h}"] = pl.Series(np.where(np.isnan(ret), 0, ret > thresholds[h]).astype(np.int8)).set(
            pl.Series(np.isnan(ret)), None
        )
    frame = bars.select("date", "symbol").with_columns(**cols)
    return labels_schema(horizons).cast(keep_partitions(frame, keys))


def unexpected_nulls(raw_bars: pl.DataFrame, df: pl.DataFrame, horizons) -> dict[int, int]:
    """The `unknown_future_is_null` check: per horizon H, the null labels that are not in
    the last H rows of their symbol's loaded history (`raw_bars`), which must be none."""
    known = raw_bars.group_by("symbol").agg(pl.len().alias("n"))
    pos = raw_bars.sort("symbol", "date").select("symbol", "date", pl.int_range(pl.len()).over("symbol").alias("pos"))
    joined = df.join(pos, on=["symbol", "date"]).join(known, on="symbol")
    return {h: int(joined.filter(pl.col(f"label_bin_h{h}").is_null() & (pl.col("pos") < pl.col("n") - h)).height)
            for h in horizons}
