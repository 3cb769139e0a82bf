"""Stage `regime` (year): the causal market-regime tag of every trading day.

The index is equal-weight (each day's mean simple return over the symbols that traded that
day and the day before, compounded) or, with `regime.index_symbol` set, that symbol's close.
Partition Y reads raw_bars of every symbol for years Y-2..Y (the tagger's windows span
about 272 days: kernels.regime) and stores the days of Y: 1 bull, -1 bear, 0 consolidate,
2 oscillate, null during the warm-up of the first years. The check reads every stored year:
no class under 5% or over 80% (a tagger that is "not degenerate").
"""

from pathlib import Path

import polars as pl

from config.partitions import REGIME_HALO_YEARS as HALO_YEARS
from domain.schema import REGIME
from kernels.regime import NO_TAG, tag_regime
from resources.delta_store import DeltaStore

CLASS_BOUNDS = (0.05, 0.80)


def equal_weight_index(bars: pl.DataFrame) -> pl.DataFrame:
    """date, index_close (compounded mean daily return), members (symbols that day)."""
    rets = (
        bars.sort("symbol", "date")
        .with_columns((pl.col("close").cast(pl.Float64) / pl.col("close").cast(pl.Float64).shift(1).over("symbol") - 1.0).alias("r"))
        .group_by("date")
        .agg(pl.col("r").mean().alias("r"), pl.col("r").is_not_null().sum().cast(pl.Int32).alias("members"))
        .sort("date")
    )
    return rets.with_columns((1.0 + pl.col("r").fill_null(0.0)).cum_prod().alias("index_close")).drop("r")


def symbol_index(bars: pl.DataFrame, symbol: str) -> pl.DataFrame:
    """date, index_close (the symbol's own close), members (1)."""
    own = bars.filter(pl.col("symbol") == symbol).sort("date")
    if own.height == 0:
        raise ValueError(f"regime.index_symbol {symbol!r} has no raw_bars in these years; register and ingest it first")
    return own.select("date", pl.col("close").cast(pl.Float64).alias("index_close"), pl.lit(1, dtype=pl.Int32).alias("members"))


def build_regime(bars: pl.DataFrame, years: list[int], index_symbol: str | None = None) -> pl.DataFrame:
    idx = symbol_index(bars, index_symbol) if index_symbol else equal_weight_index(bars)
    tags = tag_regime(idx["index_close"].to_numpy())
    out = idx.with_columns(pl.Series("regime", tags).replace(NO_TAG, None).cast(pl.Int8))
    out = out.filter(pl.col("date").dt.year().is_in(years))
    return REGIME.cast(out)


def class_shares(regime: pl.Series) -> dict[int, float]:
    tagged = regime.drop_nulls()
    n = max(len(tagged), 1)
    return {k: float((tagged == k).sum()) / n for k in (1, -1, 0, 2)}


def regime_years(raw_bars: pl.LazyFrame, years: list[int], index_symbol: str | None = None) -> pl.DataFrame:
    """The regime of the days of `years` from the stored raw_bars (read with their halo)."""
    lo, hi = min(years) - HALO_YEARS, max(years)
    bars = raw_bars.filter(pl.col("year").is_between(lo, hi)).select("date", "symbol", "close").collect()
    return build_regime(bars, years, index_symbol)


def degeneracy_check(data_dir: Path, years: list[int], df: pl.DataFrame) -> tuple[bool, dict[int, float]]:
    """The `not_degenerate` check over every stored year (the stored partitions of other
    years and `df` for `years`): no class under CLASS_BOUNDS[0] or over CLASS_BOUNDS[1]."""
    store = DeltaStore(data_dir)
    stored = (store.scan("regime").filter(~pl.col("year").is_in(years)).select("regime").collect()
              if store.exists("regime") else df.select("regime").clear())
    shares = class_shares(pl.concat([stored, df.select("regime")], how="vertical_relaxed")["regime"])
    ok = all(CLASS_BOUNDS[0] <= v <= CLASS_BOUNDS[1] for v in shares.values())
    return ok, shares
