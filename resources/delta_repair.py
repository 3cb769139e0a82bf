"""Damaged Delta tables: find the damage, say it in one line, repair what can be repaired.

Two kinds of damage happen by hand or by a crash (delta-rs does not fsync, see
resources.delta_store):

- a commit file `_delta_log/<version>.json` that does not parse (truncated, garbage, or
  empty: delta-rs reads an empty commit as "nothing happened" and silently loses its rows);
- a data file the log still references that is gone from the disk.

`find_damage` names the first of them; `DamagedTableError` (a RuntimeError: the CLI exits 1)
carries it as one line naming the table and pointing at `python -m pipeline.cli repair-store`.

`repair_store` (the `repair-store` command) covers every Delta table under paths.data
(`find_tables`: any folder holding `_delta_log`, `experiments/<name>/<asset>` included, named
by its path relative to paths.data). For each damaged table it
1. rolls the log back to the last good version: the first unreadable commit and every later
   commit (and checkpoints of those versions, and `_last_checkpoint` when it points at one)
   are MOVED into `<data>/_quarantine/<table>/<UTC time>/`, never deleted: checkpoints first,
   then commits newest first, so that a reader at any moment sees a damaged log (refused) or
   a prefix of it;
2. runs delta-rs's `DeltaTable.repair()` (FSCK): one commit removing the log entries of the
   missing data files;
and reports the partition keys to rebuild: the keys recorded by the moved commits
(`pipeline.keys` of their commitInfo, read even from a truncated commit where its first line
survived) and the keys of the commits that added the missing files, in those files' years.
Re-materializing those keys restores the table.

Crash safety. Before its first change `repair_store` writes its plan (per table: the files to
move, the quarantine folder, the version left, the keys to rebuild, and the missing files once
known) to the journal `<data>/_quarantine/repair-journal.json` (temp file, fsync, os.replace).
A rerun after a kill reads that journal first and finishes it (each move and the FSCK are
resumable), so it reports every key, also those of commits the killed run had already moved.
A finished journal is marked `"state": "done"` and then kept as a record,
`<data>/_quarantine/journal-<started>.json` (one killed in between is finished again: every
step is a no-op by then, and the rerun still reports its keys). Test hook: TRADELAB_REPAIR_KILL_AT (`_changed`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

LOG = "_delta_log"
QUARANTINE = "_quarantine"
KEYS_METADATA = "pipeline.keys"  # as resources.delta_store.KEYS_METADATA
COMMIT = re.compile(r"^(\d{20})\.json$")
CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d+\.\d+)?\.parquet$")
REPAIR_HINT = "run `python -m pipeline.cli repair-store`, then rebuild the partitions it lists"
WHOLE_TABLE = "(the whole table)"
JOURNAL = "repair-journal.json"
STAMP = re.compile(r"^\d{8}T\d{6}\.\d{6}Z$")  # a quarantine folder's name: its UTC time


class DamagedTableError(RuntimeError):
    """A Delta table whose log or data files are damaged; the message is one line."""

    def __init__(self, table: Path, damage: str):
        self.table, self.damage = Path(table), damage
        super().__init__(f"{table}: damaged Delta table: {damage}; {REPAIR_HINT}")


class JournalError(RuntimeError):
    """The journal of an unfinished repair cannot be read (one line; the CLI exits 1)."""


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
    """What `repair_table` did (or, with dry_run, would do) to one table; also one table's
    entry of the repair journal (`to_json`/`from_json`)."""

    table: Path
    name: str = ""                              # the table's path relative to paths.data
    rolled_back_to: int | None = None           # the version the log now ends at, when rolled back
    quarantined: list[str] = field(default_factory=list)  # log files moved aside, in the order of the moves
    quarantine_dir: Path | None = None
    files_removed: list[str] = field(default_factory=list)  # missing data files dropped from the log
    rebuild: list[str] = field(default_factory=list)        # partition keys to re-materialize
    fsck_planned: bool = False                  # files_removed is known (before the FSCK commit)
    resumed: bool = False                       # planned by an earlier run that was killed (its journal)

    def __post_init__(self):
        self.table = Path(self.table)
        self.name = self.name or self.table.name

    @property
    def damaged(self) -> bool:
        return bool(self.quarantined or self.files_removed)

    @property
    def pending(self) -> bool:
        """Whether the repair has something to do (and so goes into the journal)."""
        return bool(self.quarantined or self.files_removed or not self.fsck_planned)

    def line(self, dry_run: bool = False) -> str:
        """One line for the command's output."""
        name = self.name
        if not self.damaged:
            return f"{name}: no damage"
        verb = "would " if dry_run else ""
        parts = []
        if self.quarantined:
            where = "" if dry_run else f" into {self.quarantine_dir}"
            parts.append(f"{verb}roll back to version {self.rolled_back_to} (move {', '.join(self.quarantined)}{where})")
        if self.files_removed:
            parts.append(f"{verb}remove {len(self.files_removed)} missing data file(s) from the log")
        resumed = " (finishing the repair a killed repair-store began)" if self.resumed else ""
        return f"{name}: " + "; ".join(parts) + f"; rebuild: {', '.join(self.rebuild) or 'nothing'}{resumed}"

    def to_json(self, root: Path) -> dict:
        """The journal entry: paths relative to `root` (paths.data)."""
        qdir = self.quarantine_dir.relative_to(root).as_posix() if self.quarantine_dir else None
        return {"table": self.name, "rolled_back_to": self.rolled_back_to, "moves": self.quarantined,
                "quarantine_dir": qdir, "rebuild": self.rebuild,
                "files_removed": self.files_removed if self.fsck_planned else None}

    @classmethod
    def from_json(cls, root: Path, entry: dict) -> TableRepair:
        qdir = entry.get("quarantine_dir")
        files = entry.get("files_removed")
        return cls(root / entry["table"], name=entry["table"], rolled_back_to=entry.get("rolled_back_to"),
                   quarantined=list(entry.get("moves") or []), quarantine_dir=root / qdir if qdir else None,
                   files_removed=list(files or []), rebuild=list(entry.get("rebuild") or []),
                   fsck_planned=files is not None, resumed=True)


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
    """`_last_checkpoint` when it points at a version >= first_bad, then the checkpoint files
    of those versions: moved before the commits, so that no checkpoint outlives its commits."""
    out = []
    last = log / "_last_checkpoint"
    if last.is_file():
        try:
            version = int(json.loads(last.read_text())["version"])
        except (ValueError, KeyError, TypeError):
            version = first_bad  # unreadable: it cannot help a reader either
        if version >= first_bad:
            out.append(last)
    return out + sorted(p for p in log.iterdir() if (m := CHECKPOINT.fullmatch(p.name)) and int(m.group(1)) >= first_bad)


def find_tables(root: Path | str) -> list[Path]:
    """Every Delta table under `root` (a folder holding `_delta_log`) at any depth, sorted:
    `<asset>` and `experiments/<name>/<asset>` alike. The quarantine is no table, and the
    folders inside a table (its `year=` partitions) are not searched."""
    root = Path(root)
    if not root.is_dir():
        return []
    found: list[Path] = []
    for folder, subdirs, _ in os.walk(root):
        here = Path(folder)
        if here != root and (here / LOG).is_dir():
            found.append(here)
            subdirs[:] = []  # a table's own folders hold data files, not tables
        else:
            subdirs[:] = sorted(d for d in subdirs if d not in (QUARANTINE, LOG))
    return sorted(found)


def _stamp() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


def _plan_fsck(report: TableRepair) -> None:
    """Fill `files_removed` and their keys from delta-rs's dry-run FSCK of the table as it is now."""
    from deltalake import DeltaTable

    if not _commits(report.table):  # no version left (a whole-table rollback): nothing to check
        report.fsck_planned = True
        return
    removed = sorted(DeltaTable(str(report.table)).repair(dry_run=True)["files_removed"])
    report.files_removed = removed
    report.rebuild = sorted(set(report.rebuild) | _keys_of_missing_files(report.table, removed))
    report.fsck_planned = True


def plan_table(table: Path | str, quarantine_dir: Path | str, name: str = "") -> TableRepair:
    """What repairing `table` takes, changing nothing: the log files to move into
    `quarantine_dir` (in the order of the moves), the version left, the keys to rebuild; and,
    when no commit needs to move, the missing data files FSCK will drop (otherwise those
    depend on the rolled-back version and are planned after the moves)."""
    table = Path(table)
    report = TableRepair(table, name=name)
    bad = damaged_commits(table)
    if not bad:
        _plan_fsck(report)
        return report
    first = bad[0][0]
    later = [(v, p) for v, p in _commits(table) if v >= first]
    report.rolled_back_to = first - 1
    # checkpoints first, then commits newest first: at every moment the log is either still
    # damaged (its first bad commit is the last to go) or a prefix a reader can open
    moving = _checkpoint_files(table / LOG, first) + [p for _, p in sorted(later, reverse=True)]
    report.quarantined = [p.name for p in moving]
    report.quarantine_dir = Path(quarantine_dir)
    rebuild: set[str] = set()
    for version, path in later:
        keys = _keys_of(path)
        rebuild.update([f"(the keys of version {version}: unreadable)"] if keys is None else keys or [WHOLE_TABLE])
    report.rebuild = sorted(rebuild)
    if report.rolled_back_to < 0:
        report.fsck_planned = True  # no version left: the table is rebuilt whole
    return report


# test hook ---------------------------------------------------------------------------------
KILL_AT = "TRADELAB_REPAIR_KILL_AT"
_changes = 0


def _changed() -> None:
    """Count one change (the journal's first write, a move, an FSCK commit, the journal marked
    done). Test hook: with the environment variable TRADELAB_REPAIR_KILL_AT=N the process
    SIGKILLs itself right after its Nth change, so a test can kill repair-store at every step (tests/resources/test_delta_repair.py).
    Unset (always, outside tests) it does nothing."""
    global _changes
    _changes += 1
    at = os.environ.get(KILL_AT)
    if at and _changes == int(at):
        os.kill(os.getpid(), signal.SIGKILL)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _move_aside(report: TableRepair) -> None:
    """Move the planned log files into the quarantine folder; idempotent: a file already moved
    (by a killed run) is skipped, so a rerun finishes the moves."""
    if not report.quarantined:
        return
    log, dest = report.table / LOG, report.quarantine_dir
    dest.mkdir(parents=True, exist_ok=True)
    for name in report.quarantined:
        if not (log / name).exists():
            continue  # moved before a kill
        os.replace(log / name, dest / name)
        _fsync_dir(log)
        _fsync_dir(dest)
        _changed()


def _fsck(report: TableRepair, save: Callable[[], None]) -> None:
    """Drop the missing data files from the log (one delta-rs FSCK commit). The files and their
    keys are planned (and journaled by `save`) before the commit, as the commit makes them
    invisible to a rerun; a rerun after the commit finds nothing left to remove."""
    from deltalake import DeltaTable

    if not report.fsck_planned:
        _plan_fsck(report)
        save()
    if report.files_removed and _commits(report.table):
        if DeltaTable(str(report.table)).repair(dry_run=False)["files_removed"]:
            _changed()


def repair_table(table: Path | str, quarantine_root: Path | str, dry_run: bool = False) -> TableRepair:
    """Roll back unreadable commits and drop missing data files from the log (see the module
    docstring) of ONE table, without a journal (`repair_store` journals); with `dry_run`, only
    report what would be done."""
    table = Path(table)
    report = plan_table(table, Path(quarantine_root) / table.name / _stamp())
    if not dry_run:
        _move_aside(report)
        _fsck(report, save=lambda: None)
    return report


# the journal -------------------------------------------------------------------------------
def journal_path(root: Path | str) -> Path:
    """The journal of an unfinished repair: `<data>/_quarantine/repair-journal.json`."""
    return Path(root) / QUARANTINE / JOURNAL


def _write_json(path: Path, data: dict) -> None:
    """Write `data` atomically: a temp file, fsync, os.replace, fsync of the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _read_journal(root: Path) -> tuple[str | None, dict[str, TableRepair]]:
    """(started stamp, {table name: its planned repair}) of an unfinished repair; (None, {}) without one."""
    path = journal_path(root)
    if not path.is_file():
        return None, {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data["started"], {e["table"]: TableRepair.from_json(root, e) for e in data["tables"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise JournalError(f"{path}: unreadable repair journal ({type(exc).__name__}: {exc}); it holds the plan "
                           "of an unfinished repair-store: fix it or move it aside, then run repair-store again") from None


def quarantine_folders(root: Path | str) -> list[Path]:
    """Every quarantine folder under `<data>/_quarantine` (`<table>/<UTC time>/`), this run's
    and earlier runs', oldest table path first."""
    q = Path(root) / QUARANTINE
    return sorted(p for p in q.rglob("*") if p.is_dir() and STAMP.match(p.name)) if q.is_dir() else []


def repair_store(root: Path | str, dry_run: bool = False) -> list[TableRepair]:
    """Repair every Delta table under `root` (`find_tables`), crash-safe:

    1. an unfinished repair's journal (`journal_path`, left by a killed run) is read first: its
       tables keep the plan it holds (commits already moved are no longer in their logs);
    2. every other table is planned (`plan_table`, quarantine `<root>/_quarantine/<table>/<UTC time>/`);
    3. the plan of every damaged table is written to the journal (atomically) BEFORE any change;
    4. each table's log files are moved (`_move_aside`, resumable) and its missing files dropped
       (`_fsck`; their keys are journaled before the FSCK commit);
    5. the journal is marked done and kept as a record: renamed `_quarantine/journal-<started>.json`.

    So a rerun after a kill at any step finishes the repair and reports every key to rebuild.
    With `dry_run` nothing is written; an unfinished journal's plan is reported as it stands."""
    global _changes
    root = Path(root)
    if not root.is_dir():
        return []
    started, planned = _read_journal(root)
    stamp = _stamp()
    reports = []
    for table in find_tables(root):
        name = table.relative_to(root).as_posix()
        reports.append(planned.pop(name, None) or plan_table(table, root / QUARANTINE / name / stamp, name))
    reports = sorted(reports + list(planned.values()), key=lambda r: r.name)  # a journaled table gone since: still reported
    if dry_run:
        return reports
    todo = [r for r in reports if r.pending]
    if not todo:
        return reports
    journal = {"format": 1, "state": "pending", "started": started or stamp, "finished": None,
               "tables": [r.to_json(root) for r in todo]}

    def save() -> None:
        journal["tables"] = [r.to_json(root) for r in todo]
        _write_json(journal_path(root), journal)

    _changes = 0
    save()
    _changed()
    for report in todo:
        _move_aside(report)
        _fsck(report, save)
    journal.update(state="done", finished=_stamp())
    save()
    _changed()
    os.replace(journal_path(root), root / QUARANTINE / f"journal-{journal['started']}.json")
    return reports
