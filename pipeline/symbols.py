"""Registering symbols in the `symbols` dynamic partitions of a Dagster instance."""

from __future__ import annotations

from dataclasses import dataclass

from dagster import DagsterInstance

from config.partitions import ABSENT_SYMBOLS_KEY, SYMBOLS
from config.settings import Settings


def register_symbols(instance: DagsterInstance, names: list[str]) -> list[str]:
    """Add the names not yet registered (in the given order); return those added. With
    symbol groups, they also get their group (the last one while it has room): the
    membership first, then the registry, so a process killed in between leaves members
    that the next registration registers, never a registered symbol without a group."""
    from resources.partitions import GROUPED, register_in_groups

    known = set(instance.get_dynamic_partitions(SYMBOLS))
    new = [n for n in dict.fromkeys(names) if n not in known]
    if GROUPED and names:
        register_in_groups(instance, list(dict.fromkeys(names)))
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


SOURCE_KEY = "tradelab/source"  # instance key-value entry: the source the symbols were last synced from


@dataclass
class SyncResult:
    """What `sync_source` did: `added` and `removed` (pruned) names, `absent` (registered,
    not in the source, kept registered but out of every run), `registered` after the sync,
    `source` (its identity), whether it differs from the last sync's (`source_changed`), and
    the lines of the files skipped as unreadable (`skipped`)."""

    added: list[str]
    removed: list[str]
    absent: list[str]
    registered: int
    source: str
    source_changed: bool
    skipped: list[str]  # one line per file of the source that could not be read (the source's warnings)

    def line(self) -> str:
        """The one summary line of `symbols sync` (names only when few: `name_summary`)."""
        text = f"registered {len(self.added)} new symbol(s); {self.registered} in all"
        text += f": {name_summary(self.added)}" if self.added else ""
        if self.removed:
            why = f" (the source changed to {self.source})" if self.source_changed else ""
            text += f"; removed{why} {len(self.removed)}: {name_summary(self.removed)}"
        if self.absent:
            text += (f"; {len(self.absent)} registered symbol(s) not in source {self.source}, left out of every run: "
                     f"{name_summary(self.absent)} (`symbols sync --prune` unregisters them)")
        return text


def source_identity(settings: Settings) -> str:
    """`synthetic`, `packaged`, `folder:<absolute path>` or `qlib:<absolute path>:<market>`: a
    change of it is a change of source."""
    uni = settings.universe
    if uni.source == "qlib":
        return f"qlib:{settings.resolve(uni.qlib.provider_uri)}:{uni.qlib.market}"
    return f"folder:{settings.resolve(uni.folder.path)}" if uni.source == "folder" else uni.source


def sync_source(instance: DagsterInstance, settings: Settings, prune: bool = False) -> SyncResult:
    """Register every symbol the configured source has. Registered symbols the source lacks
    are unregistered with `prune`, or when the source is not the one of the last sync (the
    demo's synthetic names after switching to a folder); otherwise they stay registered but
    are recorded as absent (ABSENT_SYMBOLS_KEY), so no yearly stage reads them."""
    import warnings

    from domain.sources import make_source

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        names = make_source(settings).symbols()
    skipped = [str(w.message) for w in seen if str(w.message).startswith("skipped: ")]  # FolderSource's unreadable files
    for w in seen:
        if not str(w.message).startswith("skipped: "):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    source = source_identity(settings)
    previous = instance.run_storage.get_cursor_values({SOURCE_KEY}).get(SOURCE_KEY)
    changed = previous is not None and previous != source
    have = set(names)
    absent = [n for n in instance.get_dynamic_partitions(SYMBOLS) if n not in have]
    removed = remove_symbols(instance, absent) if absent and (prune or changed) else []
    absent = [n for n in absent if n not in removed]
    added = register_symbols(instance, names)
    record_absent(instance, absent)
    instance.run_storage.set_cursor_values({SOURCE_KEY: source})
    return SyncResult(added, removed, absent, len(instance.get_dynamic_partitions(SYMBOLS)), source, changed, skipped)


def record_absent(instance: DagsterInstance, absent: list[str]) -> None:
    """Record the registered symbols the source lacks (read by the IO manager)."""
    import json

    instance.run_storage.set_cursor_values({ABSENT_SYMBOLS_KEY: json.dumps(sorted(absent))})


def sync_symbols(instance: DagsterInstance, settings: Settings, prune: bool = False) -> list[str]:
    """`sync_source` for the commands that build (demo, build-all, build-features): returns
    the names added; on stderr, a line per skipped file and one when registered symbols were
    removed or left out."""
    import sys

    result = sync_source(instance, settings, prune)
    for line in result.skipped:
        print(f"warning: {line}", file=sys.stderr)
    if result.removed or result.absent:
        print(f"symbols: {result.line()}", file=sys.stderr)
    return result.added


def source_symbols(settings: Settings) -> list[str]:
    """The configured source's symbols for a command that ran `sync_symbols` just before:
    the files it skipped were printed there once, as `warning:` lines, not again here."""
    import warnings

    from domain.sources import make_source

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="skipped: ")
        return make_source(settings).symbols()


def name_summary(names: list[str], limit: int = 10) -> str:
    """`names` for one line: all of them when at most `limit`, else the first `limit` and
    "... and N more"."""
    more = f" ... and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def contiguous_blocks(registered: list[str], wanted: list[str]) -> list[list[str]]:
    """Split `wanted` into runs that are contiguous in the registration order
    (resources.partitions.contiguous_runs); unregistered symbols are refused."""
    from resources.partitions import contiguous_runs

    unknown = sorted(set(wanted) - set(registered))
    if unknown:
        raise ValueError(f"symbols not registered: {unknown}")
    return contiguous_runs(registered, set(wanted))
