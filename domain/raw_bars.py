"""Stage `raw_bars` (symbol x year): OHLCV from the configured source, validated, stored.

`build_raw_bars(source, keys)` is the stage logic; the @asset is a thin wrapper. One run
may cover many partitions (single-run backfill): each symbol's history is read or
generated once and split by year.
"""


import polars as pl

from config.partitions import SymbolYear
from domain.partition_frames import keep_partitions
from domain.schema import RAW_BARS
from domain.sources import BarSource


def build_raw_bars(source: BarSource, keys: list[SymbolYear], years: tuple[int, int] | None = None,
                   outside: list[pl.DataFrame] | None = None) -> pl.DataFrame:
    """The rows of `keys` from `source`, in RAW_BARS schema, sorted by symbol then date.

    With `years` (first, last: the configured years) and an `outside` list, the symbols'
    rows dated outside those years, which no partition stores, are appended to `outside`
    as one (symbol, date) frame (check inside_configured_years names them)."""
    if not keys:
        return RAW_BARS.empty()
    symbols = sorted({k.symbol for k in keys})
    history = source.history(symbols)
    if years is not None and outside is not None:
        year = pl.col("date").dt.year()
        outside.append(history.filter(~year.is_between(*years)).select("symbol", "date"))
    out = keep_partitions(history, keys).sort("symbol", "date")
    RAW_BARS.check(out)
    return out
