"""DeltaTableIOManager: Dagster <-> DeltaStore (a Delta Lake table per asset, one commit per run).

Outputs (a polars DataFrame or LazyFrame), each run's output ONE commit (resources.delta_store):
- symbol x year assets: one frame may hold the rows of every partition in the run (a
  single-run backfill): `DeltaStore.write_split` over the run's symbol x year keys (a group
  key stands for its symbols, or the run's tagged ones: resources.partitions.expand), an
  overwrite with the predicate of those keys. Symbols the output names as failed
  (FAILED_SYMBOLS) are left out of the write, and the step then fails naming them. Rows go to their `symbol` and `date` year; a partition without
  rows is recorded empty (its old rows are deleted). Rows outside the run's partitions are
  an error.
- year assets: `DeltaStore.write_years` over the run's years; rows go to the year of their
  `date` (or of a `year` column), rows of other years are dropped (as before).
- unpartitioned assets: `DeltaStore.write_unpartitioned` (the whole table, schema included).
  `None` means the asset wrote its own tables.
Output metadata: `path` (the table), `table_version` (the commit's version: read it again
with `pl.scan_delta(path, version=...)`), `rows_written`, `commit_attempts` (> 1 when
concurrent commits made it retry) and `write_seconds`.

Inputs, by the input's annotation, read with scans filtered on year and symbol:
- `pl.DataFrame`: the requested upstream partitions as one frame sorted by symbol then
  date: the halo years of a partition mapping, or a single partition (symbol x year
  upstreams come without the `year` column the store derived; year upstreams keep it). A
  missing upstream partition is an error naming it, unless the input's metadata sets
  `allow_missing_partitions` (ALLOW_MISSING): then missing partitions are skipped (labels:
  a next year not stored yet is a future not known yet); all of them missing is still an
  error, except for a year-partitioned upstream, which then gives an empty frame (an
  optional input).
- `pl.LazyFrame`: a lazy scan with the `year` column; an unpartitioned downstream asset
  scans the whole upstream table; an input that reads every partition of a symbol x year
  upstream (EVERY_PARTITION: the yearly stages) scans the table for the registered symbols that
  the configured source holds (not those recorded under ABSENT_SYMBOLS_KEY)
  and the defined years instead of listing each key.
"""

from __future__ import annotations

import json
import time

import polars as pl
from dagster import (
    ConfigurableIOManager,
    Failure,
    InputContext,
    MultiPartitionsDefinition,
    OutputContext,
)

from config.partitions import (
    ABSENT_SYMBOLS_KEY,
    ALLOW_MISSING,  # noqa: E402  (re-exported for readers)
    EVERY_PARTITION,
    SYMBOLS,
)
from config.settings import EXPERIMENT_TABLES
from resources.delta_store import YEAR, DeltaStore
from resources.partitions import FAILED_SYMBOLS, expand


def _run_tags(context: InputContext | OutputContext) -> dict[str, str]:
    """The tags of the run (SYMBOLS_TAG narrows a group to some symbols); {} outside a run."""
    try:
        return dict(context.step_context.dagster_run.tags)
    except Exception:  # noqa: BLE001  (a context built by hand, as in unit tests)
        return {}


def _instance(context: InputContext | OutputContext):
    try:
        return context.step_context.instance
    except Exception:  # noqa: BLE001
        return getattr(context, "instance", None)


def _failed(context: OutputContext) -> dict[str, str]:
    value = (context.output_metadata or {}).get(FAILED_SYMBOLS)
    value = getattr(value, "value", value) or {}
    return json.loads(value) if isinstance(value, str) else dict(value)


def _asset_name(context: InputContext | OutputContext) -> str:
    return context.asset_key.path[-1]


def _is_multi(context: InputContext | OutputContext) -> bool:
    return isinstance(context.asset_partitions_def, MultiPartitionsDefinition)


def _sorted(df: pl.DataFrame) -> pl.DataFrame:
    by = [c for c in ("symbol", YEAR, "date") if c in df.columns]
    return df.sort(by, maintain_order=True) if by else df


def _every_partition(store: DeltaStore, asset: str, context: InputContext) -> pl.LazyFrame:
    """Every stored partition of a symbol x year upstream (an EVERY_PARTITION input, missing
    partitions allowed): the table filtered to the registered symbols and the defined years,
    the same rows as filtering on each key, without listing symbols x years keys (135,000 at
    5,000 symbols: seconds). Symbols unregistered with `symbols remove` keep their rows in the
    table and stay out, as before; so do registered symbols that the configured source does
    not hold (ABSENT_SYMBOLS_KEY, recorded by `symbols sync` and the new-symbol sensor): the
    yearly stages read only the source's symbols."""
    if not store.exists(asset):
        return pl.LazyFrame()  # nothing stored yet: an optional input
    parts = context.asset_partitions_def
    dims = {d.name: d.partitions_def for d in parts.partitions_defs}
    absent = set(json.loads(context.instance.run_storage.get_cursor_values({ABSENT_SYMBOLS_KEY}).get(ABSENT_SYMBOLS_KEY) or "[]"))
    # the registry, not the dynamic dimension (whose keys may be groups)
    symbols = [s for s in context.instance.get_dynamic_partitions(SYMBOLS) if s not in absent]
    years = [int(y) for y in dims["year"].get_partition_keys()]
    return store.scan(asset).filter(pl.col("symbol").is_in(symbols), pl.col(YEAR).is_in(years))


class DeltaTableIOManager(ConfigurableIOManager):
    """`base_dir`: the shared tables; `experiment_dir` (when set): the tables of
    config.settings.EXPERIMENT_TABLES, which belong to one experiment."""

    base_dir: str
    experiment_dir: str | None = None

    @property
    def store(self) -> DeltaStore:
        return DeltaStore(self.base_dir)

    def store_of(self, asset: str) -> DeltaStore:
        if self.experiment_dir and asset in EXPERIMENT_TABLES:
            return DeltaStore(self.experiment_dir)
        return self.store

    def handle_output(self, context: OutputContext, obj: pl.DataFrame | pl.LazyFrame | None) -> None:
        if obj is None:
            return
        if isinstance(obj, pl.LazyFrame):
            obj = obj.collect()
        if not isinstance(obj, pl.DataFrame):
            raise TypeError(f"{_asset_name(context)}: expected a polars DataFrame, got {type(obj).__name__}")
        asset = _asset_name(context)
        store = self.store_of(asset)
        t0 = time.perf_counter()
        if not context.has_asset_partitions:
            commit = store.write_unpartitioned(asset, obj)
        elif _is_multi(context):
            keys = expand(_instance(context), context.asset_partition_keys, _run_tags(context))
            failed = _failed(context)
            if failed:
                keys = [k for k in keys if k.symbol not in failed]
                obj = obj.filter(~pl.col("symbol").is_in(list(failed)))
            commit = store.write_split(asset, keys, obj) if keys else None
            if failed:
                written = sorted({k.symbol for k in keys})
                raise Failure(description=f"{asset}: symbol(s) {', '.join(sorted(failed))} failed ("
                                          f"{'; '.join(f'{s}: {e}' for s, e in sorted(failed.items()))}); "
                                          f"the rows of the other {len(written)} symbol(s) of the partition were "
                                          f"written: {', '.join(written) or 'none'}")
            if commit is None:  # a group whose symbols are all unregistered or outside the run's tag
                context.add_output_metadata({"path": str(store.asset_dir(asset)), "rows_written": 0})
                return
        else:
            years = sorted(int(k) for k in context.asset_partition_keys)
            if YEAR in obj.columns or "date" in obj.columns:  # rows of other years are not this run's: dropped
                year_col = pl.col(YEAR) if YEAR in obj.columns else pl.col("date").dt.year()
                obj = obj.filter(year_col.is_in(years))
            commit = store.write_years(asset, years, obj)
        context.add_output_metadata(
            {
                "path": str(store.asset_dir(asset)),
                "table_version": commit.version,
                "rows_written": commit.rows,
                "commit_attempts": commit.attempts,
                "write_seconds": round(time.perf_counter() - t0, 4),
            }
        )

    def load_input(self, context: InputContext) -> pl.DataFrame | pl.LazyFrame:
        asset = _asset_name(context)
        store = self.store_of(asset)
        lazy = context.dagster_type.typing_type is pl.LazyFrame
        if not context.has_asset_partitions:
            return store.scan(asset) if lazy else store.read(asset)
        meta = context.definition_metadata or {}
        allow_missing = bool(meta.get(ALLOW_MISSING))
        if lazy and allow_missing and meta.get(EVERY_PARTITION) and _is_multi(context):
            return _every_partition(store, asset, context)
        if not _is_multi(context):
            years = [int(k) for k in context.asset_partition_keys]
            try:
                scan = store.scan(asset, years, allow_missing)
            except FileNotFoundError:
                if not allow_missing:
                    raise
                return pl.LazyFrame() if lazy else pl.DataFrame()  # nothing stored yet: an optional input
            return scan if lazy else _sorted(scan.collect())
        if lazy and not context.has_partition_key:
            # An unpartitioned downstream asset reads the whole table.
            return store.scan(asset)
        keys = expand(_instance(context), context.asset_partition_keys, _run_tags(context))
        if not keys:  # groups of no registered (or tagged) symbol
            return pl.LazyFrame() if lazy else pl.DataFrame()
        try:
            return store.scan(asset, keys, allow_missing) if lazy else store.read(asset, keys, allow_missing)
        except FileNotFoundError:
            if not allow_missing:
                raise
            return pl.LazyFrame() if lazy else pl.DataFrame()  # nothing stored yet: an optional input
