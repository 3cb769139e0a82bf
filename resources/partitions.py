"""The Dagster partitions of the project: symbol (or symbol group) x year, and year.

Built once from the settings at import (this is Dagster's side: config.partitions holds
the keys and the group membership without Dagster). The dynamic dimension is named
`symbol` whatever the group size; its keys are
- `partitions.symbols_per_group: 1`: the symbols (the dynamic partitions `symbols`);
- N > 1: symbol groups `G0000`, `G0001`, ... (the dynamic partitions `symbol_groups`), N
  symbols each in registration order. The symbols stay registered in `symbols` (the
  registry, and the partitions of the per-symbol assets); the membership is one instance
  key-value entry (GROUPS_KEY), written atomically under a lock, append-only.

A group x year partition stands for its registered symbols x the year (`expand`); a run
tagged SYMBOLS_TAG stands for the tagged symbols of its groups only, so a new symbol is
computed alone, not with its group.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from dagster import (
    DagsterInstance,
    DimensionPartitionMapping,
    DynamicPartitionsDefinition,
    IdentityPartitionMapping,
    MultiPartitionKey,
    MultiPartitionMapping,
    MultiPartitionsDefinition,
    TimeWindowPartitionMapping,
    TimeWindowPartitionsDefinition,
)

from config.partitions import (
    ALLOW_MISSING,
    EVERY_PARTITION,
    EXPERIMENTS,
    GROUPS,
    GROUPS_KEY,
    REGIME_HALO_YEARS,  # noqa: F401  (re-exported)
    SYMBOLS,
    SYMBOLS_TAG,
    SymbolGroups,
    SymbolYear,
    all_history_years,
    feature_halo_years,
    split_key,
)
from config.settings import Settings, load_settings
from resources import time_window_memo

time_window_memo.install()  # the halo mappings' window steps, remembered (resources/time_window_memo.py)


def year_partitions(settings: Settings) -> TimeWindowPartitionsDefinition:
    """Yearly windows keyed `YYYY` from the first configured year (`end_offset=1` keeps the
    running year in the set when `years.end` is unset)."""
    years = settings.years
    if years.end is None:
        return TimeWindowPartitionsDefinition(
            cron_schedule="0 0 1 1 *", start=f"{years.start}", fmt="%Y", end_offset=1
        )
    return TimeWindowPartitionsDefinition(
        cron_schedule="0 0 1 1 *", start=f"{years.start}", end=f"{years.end + 1}", fmt="%Y"
    )


_settings = load_settings()
SYMBOLS_PER_GROUP = _settings.partitions.symbols_per_group
GROUPED = SYMBOLS_PER_GROUP > 1
FEATURE_HALO_YEARS = feature_halo_years(_settings)
ALL_HISTORY_YEARS = all_history_years(_settings)

symbol_partitions = DynamicPartitionsDefinition(name=SYMBOLS)
group_partitions = DynamicPartitionsDefinition(name=GROUPS)
# The dynamic dimension of the symbol x year assets: symbols or groups.
dynamic_partitions = group_partitions if GROUPED else symbol_partitions
DYNAMIC = dynamic_partitions.name
years_partitions = year_partitions(_settings)
symbol_year_partitions = MultiPartitionsDefinition({"symbol": dynamic_partitions, "year": years_partitions})
# experiment_summary: one partition per experiment (its name), registered by `pipeline.cli
# report` and the experiment_summary_sensor (register_experiments)
experiment_partitions = DynamicPartitionsDefinition(name=EXPERIMENTS)


def register_experiments(instance: DagsterInstance, names: Iterable[str]) -> list[str]:
    """Add the experiment names not yet partitions of experiment_summary; the added ones."""
    have = set(instance.get_dynamic_partitions(EXPERIMENTS))
    new = [n for n in dict.fromkeys(names) if n not in have]
    if new:
        instance.add_dynamic_partitions(EXPERIMENTS, new)
    return new


def make_key(dim: str, year: int) -> MultiPartitionKey:
    """The key of a symbol (or, grouped, a group's key) and a year."""
    return MultiPartitionKey({"symbol": dim, "year": str(year)})


def year_halo_mapping(years_before: int, years_after: int = 0) -> MultiPartitionMapping:
    """Same symbol (group), years Y-years_before .. Y+years_after of the upstream asset.

    Years outside the configured range are dropped, so the first year reads only itself.
    """
    return MultiPartitionMapping(
        {
            "symbol": DimensionPartitionMapping("symbol", IdentityPartitionMapping()),
            "year": DimensionPartitionMapping(
                "year",
                TimeWindowPartitionMapping(
                    start_offset=-years_before,
                    end_offset=years_after,
                    allow_nonexistent_upstream_partitions=True,
                ),
            ),
        }
    )


def every_year_of(*names: str, latest_only: tuple[str, ...] = ()) -> dict:
    """`ins` of a yearly (walk-forward) asset: every stored partition of each upstream in
    `names`, missing ones allowed; those in `latest_only` map partition to partition."""
    from dagster import AllPartitionMapping, AssetIn

    ins = {n: AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True, EVERY_PARTITION: True})
           for n in names}
    ins.update({n: AssetIn(metadata={ALLOW_MISSING: True}) for n in latest_only})
    return ins


def yearly_asset(*, reads: tuple[str, ...], latest_only: tuple[str, ...] = (), **kwargs):
    """@asset for a stage partitioned by year that reads all years of its upstreams and runs
    a backfill as one run (the models are walk-forward over the whole stored history)."""
    from dagster import BackfillPolicy, asset

    return asset(partitions_def=years_partitions, backfill_policy=BackfillPolicy.single_run(),
                 ins=every_year_of(*reads, latest_only=latest_only), **kwargs)


def symbol_year_asset(**kwargs):
    """@asset for a stage partitioned by symbol (group) x year, a backfill as one run."""
    from dagster import BackfillPolicy, asset

    return asset(partitions_def=symbol_year_partitions, backfill_policy=BackfillPolicy.single_run(), **kwargs)


def range_tags(first, last) -> dict[str, str]:
    """Run tags of a single-run backfill over the partition range first..last."""
    from dagster._core.storage.tags import (
        ASSET_PARTITION_RANGE_END_TAG,
        ASSET_PARTITION_RANGE_START_TAG,
    )

    return {ASSET_PARTITION_RANGE_START_TAG: str(first), ASSET_PARTITION_RANGE_END_TAG: str(last)}


# --- group membership (stored in the instance) ---------------------------------------------

@contextlib.contextmanager
def _membership_lock(instance: DagsterInstance):
    """An exclusive lock around a read-modify-write of the membership: two registering
    processes must not both append to the last group from the same stored state. A file
    lock in the instance's folder (released by the OS if the process is killed)."""
    root = getattr(instance, "root_directory", None) or tempfile.gettempdir()
    Path(root).mkdir(parents=True, exist_ok=True)
    fd = os.open(os.path.join(root, ".tradelab-symbol-groups.lock"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_groups(instance: DagsterInstance, size: int | None = None) -> SymbolGroups:
    """The instance's membership (empty when none is stored); `size` defaults to the setting."""
    text = instance.run_storage.get_cursor_values({GROUPS_KEY}).get(GROUPS_KEY)
    if not text and (size or SYMBOLS_PER_GROUP) > 1 and instance.get_dynamic_partitions(SYMBOLS):
        raise ValueError(f"partitions.symbols_per_group is {size or SYMBOLS_PER_GROUP} but this instance's symbols have "
                         f"a partition key each: run `python -m pipeline.cli migrate-partitions` to group them")
    return SymbolGroups.from_json(text, size or SYMBOLS_PER_GROUP)


def write_groups(instance: DagsterInstance, groups: SymbolGroups | None) -> None:
    """Store the membership in one key-value write (one statement: all or nothing); None
    clears it. The group keys missing from the dynamic partitions are added after it, so a
    process killed in between leaves keys that the next registration adds."""
    instance.run_storage.set_cursor_values({GROUPS_KEY: groups.to_json() if groups else ""})
    if groups:
        have = set(instance.get_dynamic_partitions(GROUPS))
        missing = [k for k in groups.keys() if k not in have]
        if missing:
            instance.add_dynamic_partitions(GROUPS, missing)


def register_in_groups(instance: DagsterInstance, symbols: list[str], size: int | None = None) -> list[str]:
    """Give `symbols` (those not yet members) a group: the last one while it has room, then
    new ones. Returns the keys of the groups that received symbols."""
    with _membership_lock(instance):
        groups = read_groups(instance, size)
        touched = groups.assign(symbols)
        if touched or len(set(instance.get_dynamic_partitions(GROUPS))) < len(groups.groups):
            write_groups(instance, groups)
        return touched


def dynamic_key_of(instance: DagsterInstance, symbols: Iterable[str]) -> dict[str, str]:
    """symbol -> its key in the dynamic dimension (itself, or its group's key)."""
    symbols = list(symbols)
    if not GROUPED:
        return {s: s for s in symbols}
    groups = read_groups(instance)
    out = {s: groups.group_of(s) for s in symbols}
    missing = [s for s, g in out.items() if g is None]
    if missing:
        raise ValueError(f"symbols {missing[:10]} have no group: register them (`python -m pipeline.cli symbols sync`)")
    return out


def contiguous_runs(order: list[str], wanted: set[str]) -> list[list[str]]:
    """`wanted` split into runs of consecutive entries of `order` (a multi-partition range is
    a rectangle over the dynamic dimension's order: each run can be one run of Dagster)."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for key in order:
        if key in wanted:
            current.append(key)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def selection_blocks(instance: DagsterInstance, symbols: list[str]) -> list[tuple[str, str, dict[str, str], list[str]]]:
    """The runs that compute `symbols`: (first dynamic key, last dynamic key, extra run tags,
    the block's symbols) per block of keys contiguous in the dynamic dimension's order (a
    partition range is a rectangle over that order). Grouped, a block's tags name its
    symbols (SYMBOLS_TAG) unless they are every registered symbol of its groups."""
    registered = list(instance.get_dynamic_partitions(SYMBOLS))
    unknown = sorted(set(symbols) - set(registered))
    if unknown:
        raise ValueError(f"symbols not registered: {unknown}")
    if not GROUPED:
        return [(b[0], b[-1], {}, b) for b in contiguous_runs(registered, set(symbols))]
    groups = read_groups(instance)
    wanted = set(symbols)
    keyed = dynamic_key_of(instance, symbols)
    active = set(registered)
    out = []
    for block in contiguous_runs(groups.keys(), set(keyed.values())):
        members = [s for k in block for s in groups.members(k) if s in active]
        chosen = [s for s in members if s in wanted]
        out.append((block[0], block[-1], {} if len(chosen) == len(members) else {SYMBOLS_TAG: ",".join(chosen)}, chosen))
    return out


def all_keys_range(instance: DagsterInstance) -> tuple[str, str] | None:
    """The first and last key of the dynamic dimension (every registered symbol), or None."""
    keys = instance.get_dynamic_partitions(DYNAMIC)
    return (keys[0], keys[-1]) if keys else None


def tagged_symbols(tags: dict[str, str] | None) -> set[str] | None:
    """The symbols named by a run's SYMBOLS_TAG, or None (every symbol)."""
    value = (tags or {}).get(SYMBOLS_TAG)
    return {s for s in value.split(",") if s} if value else None


def expand(instance: DagsterInstance, keys: Iterable, tags: dict[str, str] | None = None) -> list[SymbolYear]:
    """The symbol x year keys that multi-partition `keys` stand for: a symbol's key itself,
    a group's key its registered members (minus those outside SYMBOLS_TAG), in order."""
    keys = [split_key(k) for k in keys]
    only = tagged_symbols(tags)
    if not GROUPED:
        return [k for k in keys if only is None or k.symbol in only]
    groups = read_groups(instance)
    registered = set(instance.get_dynamic_partitions(SYMBOLS))
    members: dict[str, list[str]] = {}
    out: list[SymbolYear] = []
    for key in keys:
        if key.symbol not in members:
            members[key.symbol] = [s for s in groups.members(key.symbol)
                                   if s in registered and (only is None or s in only)]
        out.extend(SymbolYear(s, key.year) for s in members[key.symbol])
    return out


# --- a failed symbol does not fail its group's other symbols -------------------------------

FAILED_SYMBOLS = "failed_symbols"  # output metadata: {symbol: error}, read by resources.io_manager


def build_per_symbol(keys: list[SymbolYear], build):
    """`build(keys)` -> (frame, ...) or frame. Grouped, when it raises on keys of several
    symbols, each symbol is built alone: returns (the result over the symbols that
    succeeded, {failed symbol: its error line}); the caller's output names the failed ones
    (FAILED_SYMBOLS) and the IO manager writes the others' rows, then fails the step naming
    them. One symbol, or symbols_per_group 1: the error propagates as before."""
    symbols = list(dict.fromkeys(k.symbol for k in keys))
    try:
        return build(keys), {}
    except Exception:
        if not GROUPED or len(symbols) < 2:
            raise
    results, failed, first = [], {}, None
    for sym in symbols:
        try:
            results.append(build([k for k in keys if k.symbol == sym]))
        except Exception as exc:  # noqa: BLE001  (named in the step's error)
            failed[sym] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            first = first or exc
    if not results:
        raise first
    return _concat(results), failed


def _concat(results: list):
    """One result from per-symbol results: frames concatenated (tuples: their first item)."""
    import polars as pl

    if isinstance(results[0], tuple):  # features: (frame, NaN counts per column, stats)
        rest = [{c: sum(r[i].get(c, 0) for r in results) for c in results[0][i]} if isinstance(results[0][i], dict)
                else results[0][i] for i in range(1, len(results[0]))]
        return (pl.concat([r[0] for r in results], how="diagonal_relaxed"), *rest)
    return pl.concat(results, how="diagonal_relaxed")


def run_keys(context) -> list[SymbolYear]:
    """The symbol x year keys an asset's step computes: its partition keys expanded
    (groups to their symbols, narrowed by the run's SYMBOLS_TAG)."""
    return expand(context.instance, context.partition_keys, context.run.tags)


def output_metadata(failed: dict[str, str]) -> dict:
    """The Output metadata that hands the failed symbols to the IO manager."""
    return {FAILED_SYMBOLS: failed} if failed else {}
