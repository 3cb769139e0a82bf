"""PartitionedParquetIOManager: Dagster <-> ParquetStore (hive layout, atomic writes).

Outputs (a polars DataFrame or LazyFrame):
- symbol x year assets: one frame may hold the rows of every partition in the run (a
  single-run backfill); rows go to their `symbol` and `date` year, and a partition without
  rows gets an empty file. Rows outside the run's partitions are an error.
- year assets: rows go to the year of their `date` (or of a `year` column).
- unpartitioned assets: one file. `None` means the asset wrote its own files.

Inputs, by the input's annotation:
- `pl.DataFrame`: the requested upstream partitions as one frame sorted by symbol then
  date: the halo years of a partition mapping, or a single partition. A missing upstream
  partition is an error naming it, unless the input's metadata sets
  `allow_missing_partitions` (labels: a next year not stored yet is a future not known yet;
  for a year-partitioned upstream with nothing stored at all, an empty frame).
- `pl.LazyFrame`: a lazy scan with hive columns; an unpartitioned downstream asset scans
  the whole upstream dataset.
"""

from __future__ import annotations

import time

import polars as pl
from dagster import (
    ConfigurableIOManager,
    InputContext,
    MultiPartitionsDefinition,
    OutputContext,
)

from config.partitions import (
    ALLOW_MISSING,  # noqa: E402  (re-exported for readers)
    split_key,
)
from resources.parquet_store import ParquetStore


def _asset_name(context: InputContext | OutputContext) -> str:
    return context.asset_key.path[-1]


def _is_multi(context: InputContext | OutputContext) -> bool:
    return isinstance(context.asset_partitions_def, MultiPartitionsDefinition)


class PartitionedParquetIOManager(ConfigurableIOManager):
    base_dir: str

    @property
    def store(self) -> ParquetStore:
        return ParquetStore(self.base_dir)

    def handle_output(self, context: OutputContext, obj: pl.DataFrame | pl.LazyFrame | None) -> None:
        if obj is None:
            return
        if isinstance(obj, pl.LazyFrame):
            obj = obj.collect()
        if not isinstance(obj, pl.DataFrame):
            raise TypeError(f"{_asset_name(context)}: expected a polars DataFrame, got {type(obj).__name__}")
        asset, store = _asset_name(context), self.store
        t0 = time.perf_counter()
        if not context.has_asset_partitions:
            sizes = [store.write_unpartitioned(asset, obj)]
        elif _is_multi(context):
            keys = [split_key(k) for k in context.asset_partition_keys]
            sizes = list(store.write_split(asset, keys, obj).values())
        else:
            year_col = pl.col("year") if "year" in obj.columns else pl.col("date").dt.year()
            sizes = [
                store.write_year(asset, int(key), obj.filter(year_col == int(key)))
                for key in context.asset_partition_keys
            ]
        context.add_output_metadata(
            {
                "path": str(store.asset_dir(asset)),
                "files_written": len(sizes),
                "bytes_on_disk": int(sum(sizes)),
                "write_seconds": round(time.perf_counter() - t0, 4),
            }
        )

    def load_input(self, context: InputContext) -> pl.DataFrame | pl.LazyFrame:
        asset, store = _asset_name(context), self.store
        lazy = context.dagster_type.typing_type is pl.LazyFrame
        if not context.has_asset_partitions:
            path = store.unpartitioned_path(asset)
            return pl.scan_parquet(path) if lazy else pl.read_parquet(path)
        allow_missing = bool((context.definition_metadata or {}).get(ALLOW_MISSING))
        if not _is_multi(context):
            try:
                paths = store.paths_for(asset, [int(k) for k in context.asset_partition_keys], allow_missing)
            except FileNotFoundError:
                if not allow_missing:
                    raise
                return pl.LazyFrame() if lazy else pl.DataFrame()  # nothing stored yet: an optional input
            scan = pl.scan_parquet([str(p) for p in paths], hive_partitioning=True)
            return scan if lazy else scan.collect()
        if lazy and not context.has_partition_key:
            # An unpartitioned downstream asset reads the whole dataset.
            return store.scan(asset)
        keys = [split_key(k) for k in context.asset_partition_keys]
        return store.scan(asset, keys, allow_missing) if lazy else store.read(asset, keys, allow_missing)
