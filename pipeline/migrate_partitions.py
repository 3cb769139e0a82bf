"""`migrate-partitions`: move a Dagster instance between per-symbol keys and symbol groups.

The Delta tables do not change (their rows carry `symbol` and `year` whatever the keys).
What moves is the instance's side:
- the membership (config.partitions.SymbolGroups, GROUPS_KEY) and the `symbol_groups`
  dynamic partitions: written for a group size N > 1 (the registered symbols in registration
  order, N to a group), cleared for 1;
- the status of the symbol x year assets: a new key is reported materialized (a runless
  materialization naming the migration) when the table holds every registered symbol it
  stands for in that year (rows, or recorded empty: DeltaStore.partitions, the truth of
  what was built whatever the old keys said), so nothing built shows as missing.
The `symbols` registry is kept as it is. Run it after changing `partitions.symbols_per_group`
(the code location's definitions follow the setting).
"""

from __future__ import annotations

from dataclasses import dataclass

from dagster import AssetMaterialization, DagsterInstance

from config.partitions import GROUPS, GROUPS_KEY, SYMBOLS, SymbolGroups, key_text
from resources.delta_store import DeltaStore
from resources.partitions import write_groups

SYMBOL_YEAR_ASSETS = ("raw_bars", "features", "labels", "specialists")


@dataclass
class Migration:
    """What `migrate` did: the group sizes, the groups written, the keys reported per asset."""

    old_size: int
    new_size: int
    groups: int
    reported: dict[str, int]

    def line(self) -> str:
        if self.old_size == self.new_size:
            return f"migrate-partitions: the instance already has symbols_per_group {self.new_size}; nothing to do"
        keys = ", ".join(f"{a} {n}" for a, n in self.reported.items())
        return (f"migrate-partitions: symbols_per_group {self.old_size} -> {self.new_size}: {self.groups} group(s); "
                f"materialized keys carried over: {keys}; the Delta tables are unchanged")


def stored_size(instance: DagsterInstance) -> int:
    """The group size the instance is in: the stored membership's, 1 when none is stored."""
    import json

    text = instance.run_storage.get_cursor_values({GROUPS_KEY}).get(GROUPS_KEY)
    return json.loads(text)["size"] if text else 1


def migrate(instance: DagsterInstance, size: int, store: DeltaStore) -> Migration:
    """Move `instance` to groups of `size` (1: a key per symbol), the status read from
    `store`'s tables. Idempotent: a second call with the same size does nothing."""
    old_size = stored_size(instance)
    if old_size == size:
        return Migration(old_size, size, 0, {})
    registered = list(instance.get_dynamic_partitions(SYMBOLS))
    active = set(registered)
    old = SymbolGroups.from_json(instance.run_storage.get_cursor_values({GROUPS_KEY}).get(GROUPS_KEY), old_size) \
        if old_size > 1 else None
    order = [s for g in old.groups for s in g if s in active] if old else []
    order += [s for s in registered if s not in set(order)]
    new = SymbolGroups(size) if size > 1 else None
    if new:
        new.assign(order)

    def symbols_of(dim: str, groups: SymbolGroups | None) -> list[str]:
        return [s for s in groups.members(dim) if s in active] if groups else [dim] if dim in active else []

    new_keys = new.keys() if new else registered
    reported: dict[str, int] = {}
    for asset in SYMBOL_YEAR_ASSETS:
        built = {(k.symbol, k.year) for k in store.partitions(asset)} if store.exists(asset) else set()
        years = sorted({y for _, y in built})
        count = 0
        for dim in new_keys:
            members = symbols_of(dim, new)
            for year in years:
                if members and all((s, year) in built for s in members):
                    instance.report_runless_asset_event(AssetMaterialization(
                        asset_key=asset, partition=key_text(dim, year),
                        metadata={"migrated": f"symbols_per_group {old_size} -> {size}", "symbols": len(members)}))
                    count += 1
        reported[asset] = count
    if new:
        write_groups(instance, new)
    else:
        instance.run_storage.set_cursor_values({GROUPS_KEY: ""})
        for key in instance.get_dynamic_partitions(GROUPS):
            instance.delete_dynamic_partition(GROUPS, key)
    if old and new:  # regrouped: keys beyond the new number of groups stand for nothing any more
        for key in instance.get_dynamic_partitions(GROUPS)[len(new.groups):]:
            instance.delete_dynamic_partition(GROUPS, key)
    return Migration(old_size, size, len(new.groups) if new else 0, reported)
