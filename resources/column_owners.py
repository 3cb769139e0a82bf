"""A column has one owner: who defined each column of a shared table, recorded with the table.

The shared `features` and `specialists` tables hold the columns of every experiment's
selected packs. Each column is recorded, the first time a run writes it, in
`<table>/_column_owners.json`: {column: {"owner": "<module>:<pack>/<entry>",
"source_sha256": the hash of its definition (domain.feature_packs.definition_hash; null
for a built-in pack's entry, whose changes the project's code versions cover)}}.

`claim_columns(table_dir, owners)` is called before a run computes and writes: it records the
run's columns not recorded yet and refuses (ColumnOwnerError, one line) a column recorded
with another owner, or with the same owner and another definition (the table still holds
the old definition's values: Delta cannot drop them from the rows not rewritten), naming the
column, both owners and what to do. It also refuses a column name that is not letters,
digits and underscores starting with a letter (COLUMN_PATTERN), so nothing else reaches a
shared table.

Concurrent writers: the read, the check and the write happen under an exclusive `flock` on
`<table>/_column_owners.lock` (POSIX advisory lock; local file systems and NFSv4), and the
record is replaced atomically (a complete temporary file, fsync, rename), so two processes
claiming one column with different definitions at once get one winner and one refusal
(tests/resources/test_column_owners.py, real processes). A claim is made before the data
is written: a run that then fails leaves its columns claimed (its own definition writes
them later; another one is refused until the table folder is removed).

Files whose names start with `_` are not data files to delta-rs: `vacuum` leaves them (tested).
Columns stored before this record existed are claimed by the first run that writes them.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import uuid
from contextlib import contextmanager
from pathlib import Path

from config.settings import SettingsError

OWNERS_FILE = "_column_owners.json"
LOCK_FILE = "_column_owners.lock"
COLUMN_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # as kernels.registry.packs.COLUMN_PATTERN
KEY_COLUMNS = frozenset({"date", "symbol", "year"})


class ColumnOwnerError(SettingsError):
    """A column claimed by another definition than the one recorded with the table (the
    user's plugin settings: exit code 2 from the CLI)."""


def read_owners(table_dir: Path | str) -> dict[str, dict]:
    """The recorded owners of the table in `table_dir` ({} when none is recorded)."""
    path = Path(table_dir) / OWNERS_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ColumnOwnerError(f"{path}: the column owners record cannot be read ({exc}); expected the JSON the "
                               "pipeline writes (restore it, or remove the table folder and rebuild it)") from None
    return data.get("columns", {}) if isinstance(data, dict) else {}


def claim_columns(table_dir: Path | str, owners: dict[str, dict]) -> list[str]:
    """Record `owners` ({column: {"owner", "source_sha256"}}) with the table in `table_dir`
    and return the columns newly recorded; ColumnOwnerError (one line) for a bad column name
    or a column recorded with another definition, recording nothing then. Safe against
    concurrent claimers (see the module doc)."""
    table_dir = Path(table_dir)
    for column, owner in owners.items():
        _check_name(table_dir, column, owner)
    table_dir.mkdir(parents=True, exist_ok=True)
    with _locked(table_dir):
        recorded = read_owners(table_dir)
        for column, owner in owners.items():
            _check_owner(table_dir, column, recorded.get(column), owner)
        new = [c for c in owners if c not in recorded]
        if new:
            _write(table_dir, {**recorded, **{c: _record(owners[c]) for c in new}})
        return new


def _check_name(table_dir: Path, column: str, owner: dict) -> None:
    if not isinstance(column, str) or not COLUMN_PATTERN.fullmatch(column) or column in KEY_COLUMNS:
        raise ColumnOwnerError(f"{table_dir.name}: column {column!r} of {owner.get('owner')} is not a column name; "
                               "expected letters, digits and _, starting with a letter (not date, symbol or year)")


def _check_owner(table_dir: Path, column: str, recorded: dict | None, claimed: dict) -> None:
    if recorded is None or _record(recorded) == _record(claimed):
        return
    same_entry = recorded.get("owner") == claimed.get("owner")
    what = (f"its definition changed (source sha256 {_short(recorded)} recorded, {_short(claimed)} now)" if same_entry
            else f"it is already made by {recorded.get('owner')} (source sha256 {_short(recorded)})")
    raise ColumnOwnerError(
        f"{table_dir.name}: column {column!r} of {claimed.get('owner')} (source sha256 {_short(claimed)}) is refused: "
        f"{what} and {table_dir} holds its values; rename the new definition's column (e.g. {column}_v2), or "
        f"remove {table_dir} and rebuild every partition")


def _record(owner: dict) -> dict:
    return {"owner": owner.get("owner"), "source_sha256": owner.get("source_sha256")}


def _short(owner: dict) -> str:
    sha = owner.get("source_sha256")
    return sha[:12] if sha else "none (built-in pack)"


@contextmanager
def _locked(table_dir: Path):
    # read-only is enough for flock: a reader of the table who may not write it can still check
    fd = os.open(table_dir / LOCK_FILE, os.O_RDONLY | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _write(table_dir: Path, columns: dict[str, dict]) -> None:
    """Replace the record atomically: a complete temporary file (mode 0666 less the umask,
    as delta-rs creates the table's files), fsync, rename."""
    tmp = table_dir / f"_column_owners-{os.getpid()}-{uuid.uuid4().hex}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump({"format": 1, "columns": columns}, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, table_dir / OWNERS_FILE)
    finally:
        Path(tmp).unlink(missing_ok=True)
