"""Partition keys without Dagster: symbol x year keys, symbol groups, halos.

Pure helpers, no Dagster and no work at import (the Dagster definitions built from them are
in resources.partitions). A symbol x year asset's key is `DIM|YEAR` (Dagster's
multi-partition key: dimension values joined by `|` in the alphabetical order of the
dimension names `symbol`, `year`). DIM is the symbol itself with
`partitions.symbols_per_group: 1`, or the key of a symbol group (`G0007`) with a larger
group size: groups hold the symbols in registration order (SymbolGroups).
"""

from __future__ import annotations

import json
from typing import NamedTuple

from config.settings import SYMBOL_PATTERN, Settings

SYMBOLS = "symbols"  # the dynamic partitions that register symbols (whatever the group size)
GROUPS = "symbol_groups"  # the dynamic partitions of the groups (symbols_per_group > 1)
EXPERIMENTS = "experiments"  # the dynamic partitions of experiment_summary: the experiment names
# Instance key-value entry (run storage cursor values): a JSON list of the registered symbols
# that the configured source does not hold (pipeline.symbols.sync_source). They stay
# registered until pruned, but no run reads them (resources.io_manager).
ABSENT_SYMBOLS_KEY = "tradelab/symbols_absent_from_source"
# Instance key-value entry: the group membership (SymbolGroups.to_json), written by
# resources.partitions.register_in_groups.
GROUPS_KEY = "tradelab/symbol_groups"
# Run tag: the symbols a run over group partitions computes and overwrites (comma
# separated); without it, every registered symbol of its groups.
SYMBOLS_TAG = "tradelab/symbols"

REGIME_HALO_YEARS = 2  # regime: the tagger's windows span about 272 days (kernels.regime)

# An input's metadata key: missing upstream partitions load as an empty frame, not an error
# (read by the store's IO manager).
ALLOW_MISSING = "allow_missing_partitions"
# An input's metadata key: the input maps to EVERY partition of its upstream (AllPartitionMapping);
# the IO manager then scans the table for the registered symbols instead of listing keys.
EVERY_PARTITION = "reads_every_partition"


def feature_halo_years(settings: Settings) -> int:
    """features: the years before Y read for the recursive indicators' memory."""
    return settings.halo.years


def all_history_years(settings: Settings) -> int:
    """specialists: a halo reaching the first configured year from the last, i.e. every
    stored year before Y. Not a huge constant: Dagster walks the halo one cron window at a
    time for every downstream year (500 cost ~45 s of partition mapping per run); 10 spare
    years cover a code location that stays loaded across New Year."""
    return settings.years.last - settings.years.start + 10


class SymbolYear(NamedTuple):
    symbol: str
    year: int


def split_key(key) -> SymbolYear:
    """`GOOG|2010` (or a Dagster MultiPartitionKey) -> SymbolYear('GOOG', 2010), validated.
    With groups, the first part is the group's key (`G0007`), which matches the same pattern."""
    dims = getattr(key, "keys_by_dimension", None)
    if dims is not None:
        symbol, year = dims["symbol"], dims["year"]
    else:
        parts = str(key).split("|")
        if len(parts) != 2:
            raise ValueError(f"partition key {key!r}: expected SYMBOL|YEAR, e.g. GOOG|2010")
        symbol, year = parts
    if not SYMBOL_PATTERN.fullmatch(symbol):
        raise ValueError(f"partition key {key!r}: symbol must match [A-Z0-9._-]{{1,16}}")
    if not year.isdigit():
        raise ValueError(f"partition key {key!r}: year must be YYYY")
    return SymbolYear(symbol, int(year))


def key_text(dim: str, year: int) -> str:
    """The multi-partition key of a symbol (or group) and a year: `GOOG|2010`."""
    return f"{dim}|{year}"


def group_key(index: int) -> str:
    """The key of the index-th group: G0000, G0001, ..."""
    return f"G{index:04d}"


class SymbolGroups:
    """Group membership: symbols in registration order, `size` to a group.

    Append-only: a symbol keeps its group for good (a removed symbol keeps its slot, so
    no group is ever re-shuffled); new symbols fill the last group, then open new ones.
    """

    def __init__(self, size: int, groups: list[list[str]] | None = None):
        if size < 1:
            raise ValueError(f"symbols_per_group is {size}: expected 1 or more")
        self.size = size
        self.groups: list[list[str]] = [list(g) for g in groups or []]
        self._of = {s: group_key(i) for i, g in enumerate(self.groups) for s in g}

    def keys(self) -> list[str]:
        return [group_key(i) for i in range(len(self.groups))]

    def members(self, key: str) -> list[str]:
        """The symbols of group `key`, in registration order (removed ones included)."""
        index = int(key[1:]) if key[:1] == "G" and key[1:].isdigit() else -1
        if not 0 <= index < len(self.groups):
            raise KeyError(f"partition key {key!r} is not a symbol group of this instance ({len(self.groups)} groups)")
        return list(self.groups[index])

    def group_of(self, symbol: str) -> str | None:
        return self._of.get(symbol)

    def assign(self, symbols: list[str]) -> list[str]:
        """Append the symbols not yet in a group; return the keys of the groups they went to."""
        touched: list[str] = []
        for sym in dict.fromkeys(symbols):
            if sym in self._of:
                continue
            if not self.groups or len(self.groups[-1]) >= self.size:
                self.groups.append([])
            self.groups[-1].append(sym)
            self._of[sym] = group_key(len(self.groups) - 1)
            if self._of[sym] not in touched:
                touched.append(self._of[sym])
        return touched

    def to_json(self) -> str:
        return json.dumps({"size": self.size, "groups": self.groups}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None, size: int) -> "SymbolGroups":
        """The stored membership, or an empty one of `size` when nothing is stored. A stored
        size other than `size` is an error: the instance must be migrated first."""
        if not text:
            return cls(size)
        data = json.loads(text)
        if data["size"] != size:
            raise ValueError(f"the instance's symbol groups hold {data['size']} symbols each but "
                             f"partitions.symbols_per_group is {size}: run `python -m pipeline.cli "
                             f"migrate-partitions` to regroup")
        return cls(data["size"], data["groups"])
