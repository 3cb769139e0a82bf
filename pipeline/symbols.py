"""Registering symbols in the `symbols` dynamic partitions of a Dagster instance."""

from __future__ import annotations

from dagster import DagsterInstance

from config.partitions import SYMBOLS
from config.settings import Settings


def register_symbols(instance: DagsterInstance, names: list[str]) -> list[str]:
    """Add the names not yet registered (in the given order); return those added."""
    known = set(instance.get_dynamic_partitions(SYMBOLS))
    new = [n for n in dict.fromkeys(names) if n not in known]
    if new:
        instance.add_dynamic_partitions(SYMBOLS, new)
    return new


def remove_symbols(instance: DagsterInstance, names: list[str]) -> list[str]:
    """Unregister `names` (their stored data stays); an unknown name is an error."""
    known = set(instance.get_dynamic_partitions(SYMBOLS))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"symbols remove: {unknown} not registered; registered: {len(known)} (see `symbols list`)")
    for name in dict.fromkeys(names):
        instance.delete_dynamic_partition(SYMBOLS, name)
    return list(dict.fromkeys(names))


def sync_symbols(instance: DagsterInstance, settings: Settings, prune: bool = False) -> list[str]:
    """Register every symbol the configured source has; return those added. With `prune`,
    also unregister the symbols the source no longer has (see `prune_symbols`)."""
    from domain.sources import make_source

    names = make_source(settings).symbols()
    if prune:
        prune_symbols(instance, names)
    return register_symbols(instance, names)


def prune_symbols(instance: DagsterInstance, available: list[str]) -> list[str]:
    """Unregister the registered symbols not in `available`; return them."""
    gone = [n for n in instance.get_dynamic_partitions(SYMBOLS) if n not in set(available)]
    return remove_symbols(instance, gone) if gone else []


def name_summary(names: list[str], limit: int = 10) -> str:
    """`names` for one line: the count, and the names themselves when few
    (`3: A, B, C`; `2000: A, B, ... J ... and 1990 more`)."""
    shown = ", ".join(names[:limit])
    more = f" ... and {len(names) - limit} more" if len(names) > limit else ""
    return f"{len(names)}: {shown}{more}" if names else "0"
