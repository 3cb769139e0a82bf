"""Damaged Delta tables: find the damage, say it in one line, repair what can be repaired.

Two kinds of damage happen by hand or by a crash (delta-rs does not fsync, see
resources.delta_store):

- a commit file `_delta_log/<version>.json` that does not parse (truncated, garbage, or
  empty: delta-rs reads an empty commit as "nothing happened" and silently loses its rows);
- a data file the log still references that is gone from the disk.

`find_damage` names the first of them; `DamagedTableError` (a RuntimeError: the CLI exits 1)
carries it as one line naming the table and pointing at `python -m pipeline.cli repair-store`.

`repair_table` then
1. rolls the log back to the last good version: the first unreadable commit and every later
   commit (and checkpoints of those versions, and `_last_checkpoint` when it points at one)
   are MOVED into `<data>/_quarantine/<asset>/<UTC time>/`, never deleted, newest first so
   that a reader at any moment sees a prefix of the log;
2. runs delta-rs's `DeltaTable.repair()` (FSCK): one commit removing the log entries of the
   missing data files;
and reports the partition keys to rebuild: the keys recorded by the moved commits
(`pipeline.keys` of their commitInfo, read even from a truncated commit where its first line
survived) and the keys of the commits that added the missing files, in those files' years.
Re-materializing those keys restores the table.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

LOG = "_delta_log"
QUARANTINE = "_quarantine"
KEYS_METADATA = "pipeline.keys"  # as resources.delta_store.KEYS_METADATA
COMMIT = re.compile(r"^(\d{20})\.json$")
CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d+\.\d+)?\.parquet$")
REPAIR_HINT = "run `python -m pipeline.cli repair-store`, then rebuild the partitions it lists"
WHOLE_TABLE = "(the whole table)"


class DamagedTableError(RuntimeError):
    """A Delta table whose log or data files are damaged; the message is one line."""

    def __init__(self, table: Path, damage: str):
        self.table, self.damage = Path(table), damage
        super().__init__(f"{table}: damaged Delta table: {damage}; {REPAIR_HINT}")


def _commits(table: Path) -> list[tuple[int, Path]]:
    log = Path(table) / LOG
    found = [(int(m.group(1)), p) for p in log.iterdir() if (m := COMMIT.fullmatch(p.name))] if log.is_dir() else []
    return sorted(found)


def _actions(path: Path) -> list[dict] | None:
    """The actions of one commit file, or None when it does not parse (or holds none)."""
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        actions = [json.loads(line) for line in lines]
    except (ValueError, UnicodeDecodeError):
        return None
    return actions if actions and all(isinstance(a, dict) for a in actions) else None


def damaged_commits(table: Path) -> list[tuple[int, Path]]:
    """Commit files of `table` that cannot be read, oldest first."""
    return [(v, p) for v, p in _commits(table) if _actions(p) is None]


def missing_files(table: Path) -> list[str]:
    """Data files the table's current version references that are not on the disk."""
    from deltalake import DeltaTable

    return sorted(DeltaTable(str(table)).repair(dry_run=True)["files_removed"])


def find_damage(table: Path) -> str | None:
    """What is damaged in `table`, as a phrase; None when nothing is."""
    from deltalake.exceptions import DeltaError

    bad = damaged_commits(table)
    if bad:
        more = f" (and {len(bad) - 1} later one(s))" if len(bad) > 1 else ""
        return f"commit file {LOG}/{bad[0][1].name} cannot be read{more}"
    try:
        gone = missing_files(table)
    except (DeltaError, OSError):
        return None
    if gone:
        more = f" and {len(gone) - 1} more" if len(gone) > 1 else ""
        return f"{len(gone)} data file(s) it references are missing: {gone[0]}{more}"
    return None


def raise_if_damaged(table: Path) -> None:
    """DamagedTableError when `table` is damaged (called after a read or write failed)."""
    damage = find_damage(table)
    if damage:
        raise DamagedTableError(table, damage) from None


@dataclass
class TableRepair:
    """What `repair_table` did (or, with dry_run, would do) to one table."""

    table: Path
    rolled_back_to: int | None = None           # the version the log now ends at, when rolled back
    quarantined: list[str] = field(default_factory=list)  # log files moved aside
    quarantine_dir: Path | None = None
    files_removed: list[str] = field(default_factory=list)  # missing data files dropped from the log
    rebuild: list[str] = field(default_factory=list)        # partition keys to re-materialize

    @property
    def damaged(self) -> bool:
        return bool(self.quarantined or self.files_removed)

    def line(self, dry_run: bool = False) -> str:
        """One line for the command's output."""
        name = self.table.name
        if not self.damaged:
            return f"{name}: no damage"
        verb = "would " if dry_run else ""
        parts = []
        if self.quarantined:
            where = "" if dry_run else f" into {self.quarantine_dir}"
            parts.append(f"{verb}roll back to version {self.rolled_back_to} (move {', '.join(self.quarantined)}{where})")
        if self.files_removed:
            parts.append(f"{verb}remove {len(self.files_removed)} missing data file(s) from the log")
        return f"{name}: " + "; ".join(parts) + f"; rebuild: {', '.join(self.rebuild) or 'nothing'}"


def _keys_of(path: Path) -> list[str] | None:
    """`pipeline.keys` of a commit file, also from a damaged one whose text still holds it."""
    actions = _actions(path)
    if actions is not None:
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        return json.loads(info[KEYS_METADATA]) if KEYS_METADATA in info else None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r'"pipeline\.keys":("(?:[^"\\]|\\.)*")', text)
    try:
        return json.loads(json.loads(m.group(1))) if m else None
    except ValueError:
        return None


def _year_of(data_file: str) -> int | None:
    m = re.search(r"(?:^|/)year=(\d+)/", data_file)
    return int(m.group(1)) if m else None


def _keys_of_missing_files(table: Path, files: list[str]) -> set[str]:
    """The keys of the commits that added `files`, limited to each file's year."""
    wanted, out = set(files), set()
    for _, path in _commits(table):
        actions = _actions(path) or []
        added = [a["add"]["path"] for a in actions if "add" in a and a["add"].get("path") in wanted]
        if not added:
            continue
        keys = _keys_of(path)
        for f in added:
            year = _year_of(f)
            if not keys:
                out.add(WHOLE_TABLE)
            else:
                out.update(k for k in keys if year is None or k.rsplit("|", 1)[-1] == str(year))
    return out


def _checkpoint_files(log: Path, first_bad: int) -> list[Path]:
    """Checkpoint files of versions >= first_bad, and `_last_checkpoint` when it points at one."""
    out = [p for p in log.iterdir() if (m := CHECKPOINT.fullmatch(p.name)) and int(m.group(1)) >= first_bad]
    last = log / "_last_checkpoint"
    if last.is_file():
        try:
            version = int(json.loads(last.read_text())["version"])
        except (ValueError, KeyError, TypeError):
            version = first_bad  # unreadable: it cannot help a reader either
        if version >= first_bad:
            out.append(last)
    return out


def repair_table(table: Path | str, quarantine_root: Path | str, dry_run: bool = False) -> TableRepair:
    """Roll back unreadable commits and drop missing data files from the log (see the module
    docstring); with `dry_run`, only report what would be done."""
    from deltalake import DeltaTable

    table = Path(table)
    report = TableRepair(table)
    rebuild: set[str] = set()
    bad = damaged_commits(table)
    if bad:
        first = bad[0][0]
        later = [(v, p) for v, p in _commits(table) if v >= first]
        log = table / LOG
        moving = [p for _, p in sorted(later, reverse=True)] + _checkpoint_files(log, first)
        report.rolled_back_to = first - 1
        report.quarantined = [p.name for p in moving]
        for _, path in later:
            keys = _keys_of(path)
            if keys is None:
                rebuild.add(f"(the keys of version {int(path.stem)}: unreadable)")
            else:
                rebuild.update(keys or [WHOLE_TABLE])
        if not dry_run:
            stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
            dest = Path(quarantine_root) / table.name / stamp
            dest.mkdir(parents=True, exist_ok=True)
            # newest first: at every moment the log is a prefix a reader can open
            for path in moving:
                os.replace(path, dest / path.name)
            report.quarantine_dir = dest
    if report.rolled_back_to is not None and report.rolled_back_to < 0:
        report.rebuild = sorted(rebuild)  # no version left: the table is gone, rebuild it whole
        return report
    if bad and dry_run:  # the files FSCK would remove depend on the rolled-back version
        report.rebuild = sorted(rebuild)
        return report
    delta = DeltaTable(str(table))
    removed = sorted(delta.repair(dry_run=dry_run)["files_removed"])
    report.files_removed = removed
    rebuild |= _keys_of_missing_files(table, removed)
    report.rebuild = sorted(rebuild)
    return report


def repair_store(root: Path | str, dry_run: bool = False) -> list[TableRepair]:
    """`repair_table` for every Delta table under `root` (quarantine: `<root>/_quarantine`)."""
    root = Path(root)
    if not root.is_dir():
        return []
    tables = sorted(p for p in root.iterdir() if p.is_dir() and p.name != QUARANTINE and (p / LOG).is_dir())
    return [repair_table(t, root / QUARANTINE, dry_run=dry_run) for t in tables]
