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


def sync_symbols(instance: DagsterInstance, settings: Settings) -> list[str]:
    """Register every symbol the configured source has; return those added."""
    from domain.sources import make_source

    return register_symbols(instance, make_source(settings).symbols())
