"""Stage `features` (symbol x year): the feature registry over raw_bars, halo-exact.

Partition SYMBOL|Y reads raw_bars of years Y-k..Y (k = `halo.years`) and writes the rows
of Y only. Recursive indicators (EMA, RSI, ATR, ADX, KAMA) remember all history; the halo
makes a partition equal the whole-history result within float32 tolerance
(tests/assets/test_features_labels.py measures it for every feature). A single-run backfill reads
every year of its rectangle once and computes each symbol's series once.

Checks (yielded with the output): dtypes; no NaN after each feature's warm-up; a halo spot
check that computes one boundary from its halo only and from all stored history.
"""

import numpy as np
import polars as pl

from config.partitions import FEATURE_HALO_YEARS, SymbolYear, make_key
from domain.partition_frames import keep_partitions
from domain.schema import features_schema
from domain.symbol_chunks import ChunkStats, map_symbol_chunks
from kernels.registry.features import FEATURE_NAMES, FEATURES, compute_features
from resources.delta_store import DeltaStore

HALO_YEARS = FEATURE_HALO_YEARS
INPUT_COLUMNS = ["high", "low", "close"]
SPOT_RTOL, SPOT_ATOL = 1e-4, 1e-5


def features_by_symbol(arrays: dict[str, np.ndarray], offsets: np.ndarray, *, backend: str, dtype) -> dict[str, np.ndarray]:
    """Worker: the registry over the symbols of a chunk, stored back to back."""
    return compute_features(arrays, offsets, backend=backend, dtype=dtype)


def build_features(
    bars: pl.DataFrame,
    keys: list[SymbolYear],
    *,
    backend: str = "cpu",
    precision: str = "float32",
    workers: int = 1,
    chunk_rows: int = 131_072,
    executor: str = "thread",
) -> tuple[pl.DataFrame, dict[str, int], ChunkStats]:
    """Features of the rows of `keys` from `bars` (which may hold halo years before them).

    Returns the frame in the features schema, the count of NaN values after warm-up per
    feature (all zero when healthy), and the chunk statistics.
    """
    dtype = np.float64 if precision == "float64" else np.float32
    bars = bars.sort("symbol", "date")
    feats, stats = map_symbol_chunks(
        features_by_symbol, bars, INPUT_COLUMNS, workers=workers, chunk_rows=chunk_rows, executor=executor,
        backend=backend, dtype=dtype,
    )
    frame = bars.select("date", "symbol").with_columns(
        *[pl.Series(name, feats.get(name, np.empty(0, dtype))) for name in FEATURE_NAMES],
        pl.int_range(pl.len()).over("symbol").alias("__pos"),
    )
    frame = keep_partitions(frame, keys)
    nan_after_warmup = {
        f.name: int(frame.select(((pl.col(f.name).is_nan() | pl.col(f.name).is_null()) & (pl.col("__pos") >= f.warmup)).sum()).item())
        for f in FEATURES
    }
    out = frame.drop("__pos")
    features_schema(precision).check(out)
    return out, nan_after_warmup, stats


def halo_spot_check(store: DeltaStore, keys: list[SymbolYear], first_year: int, **kw) -> dict:
    """The halo assumption, measured on one boundary: the latest key of the run that has
    more history than its halo is computed from its halo only (years Y-k..Y) and from all
    stored years since `first_year`; the rows of Y must agree within float32 tolerance."""
    for key in sorted(keys, key=lambda k: (-k.year, k.symbol)):
        if key.year - HALO_YEARS <= first_year:
            continue
        try:
            full = store.read("raw_bars", [SymbolYear(key.symbol, y) for y in range(first_year, key.year + 1)])
        except FileNotFoundError:
            continue
        halo_only = full.filter(pl.col("date").dt.year() >= key.year - HALO_YEARS)
        a = build_features(halo_only, [key], **kw)[0].select(FEATURE_NAMES).to_numpy().astype(np.float64)
        b = build_features(full, [key], **kw)[0].select(FEATURE_NAMES).to_numpy().astype(np.float64)
        if not a.size:
            continue
        diff = np.nan_to_num(np.abs(a - b), nan=0.0)
        worst = int(np.argmax(diff.max(axis=0)))
        return {
            "passed": bool(np.all(np.isclose(a, b, rtol=SPOT_RTOL, atol=SPOT_ATOL, equal_nan=True))),
            "partition": str(make_key(key.symbol, key.year)),
            "halo_years": HALO_YEARS,
            "history_years": key.year - first_year,
            "max_abs_diff": float(diff.max()),
            "worst_feature": FEATURE_NAMES[worst],
        }
    return {"passed": True, "skipped": "no partition in this run has stored history beyond its halo"}


def dtypes_check(df: pl.DataFrame, precision: str = "float32") -> tuple[bool, dict]:
    """The `dtypes` check: `df` against the features schema of `precision` (columns, order
    and dtypes). Returns (passed, metadata: the column count, and the differences if any)."""
    diff = features_schema(precision).mismatches(df)
    return not diff, {"columns": len(df.columns), **({"mismatches": diff} if diff else {})}
