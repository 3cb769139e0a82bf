"""The CLI's failure path (pipeline.cli.main): which failures are the user's, which the
environment's, and what the console shows of a command's processes.

- `user_cause`: an InputDataError or SettingsError anywhere in an exception's chain (exit 2).
- `environment_line`: disk full, read-only, no permission, or DAGSTER_HOME's database on
  such a disk, as one line naming the path (exit 1).
- `Fd2ToFile` / `keep_fd2_output`: output written straight to file descriptor 2 (Rust
  panics, step workers) goes to a file under DAGSTER_HOME/logs, not before the error line.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import sys
import tempfile
from pathlib import Path

from config.errors import InputDataError
from config.settings import SettingsError, load_settings
from pipeline.run_report import ENV_ERRNOS, env_errno


def user_cause(err: BaseException) -> str | None:
    """The message of an InputDataError or SettingsError that caused `err` (e.g. a step of a
    run started with raise_on_error, which Dagster wraps), or None."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, (InputDataError, SettingsError)):
            return str(err)
        err = err.__cause__ or err.__context__
    return None


def unwritable_place() -> tuple[str, int] | None:
    """The first of DAGSTER_HOME and the settings' folders whose file system is full or
    read-only, with that errno: where an error that names no path was writing."""
    places = [os.environ.get("DAGSTER_HOME")]
    try:
        s = load_settings()
        places += [str(s.data_dir), str(s.reports_dir), str(s.models_dir)]
    except Exception:  # the settings may be what failed
        pass
    for place in filter(None, places):
        existing = next((p for p in (Path(place), *Path(place).parents) if p.exists()), None)
        if existing is None:
            continue
        st = os.statvfs(existing)
        if st.f_flag & os.ST_RDONLY:
            return place, errno.EROFS
        if st.f_bavail == 0:
            return place, errno.ENOSPC
    return None


def environment_line(err: BaseException) -> str | None:
    """One line for a failure of the machine, not of the input: disk full, read-only, no
    permission, naming the path (the error's own, else the place found full or read-only);
    also DAGSTER_HOME's database failing on such a disk. None: not the environment."""
    code = err.errno if isinstance(err, OSError) and err.errno in ENV_ERRNOS else env_errno(str(err))
    is_db = type(err).__module__.startswith("sqlalchemy")
    if code is None and not is_db:
        return None
    if isinstance(err, OSError) and err.filename:
        return f"{err.filename}: {ENV_ERRNOS[code]} ({err.strerror})"
    place = unwritable_place()
    if place is None:
        return None if code is None else f"{ENV_ERRNOS[code]}: {str(err).splitlines()[0]} (path not given)"
    path, found = place
    what = "DAGSTER_HOME, the Dagster instance's storage," if path == os.environ.get("DAGSTER_HOME") else "the folder"
    detail = str(getattr(err, "orig", None) or err).splitlines()[0]
    return f"{path}: {ENV_ERRNOS[code or found]}: {what} cannot be written ({detail})"


class Fd2ToFile:
    """While a command runs, what is written straight to file descriptor 2 (the panics of
    deltalake's Rust runtime, step worker processes) goes to an unnamed temp file, and
    Python's sys.stderr (this command's own lines, progress bars, warnings) to the console.
    Nothing is redirected when sys.stderr is not fd 2 (e.g. captured by a test)."""

    def __init__(self) -> None:
        self.file = None
        try:
            if sys.stderr.fileno() != 2:
                return
            self.file = tempfile.TemporaryFile()
        except (OSError, ValueError, AttributeError):  # no fd, or no room for a temp file: leave fd 2 alone
            return
        sys.stderr.flush()
        self.saved, self.console = sys.stderr, os.dup(2)
        os.dup2(self.file.fileno(), 2)
        sys.stderr = open(self.console, "w", buffering=1, encoding=self.saved.encoding, errors="backslashreplace",
                          closefd=False)

    def restore(self) -> bytes:
        """fd 2 back on the console; returns what was written to it meanwhile."""
        if self.file is None:
            return b""
        sys.stderr.flush()
        os.dup2(self.console, 2)
        os.close(self.console)
        sys.stderr = self.saved
        self.file.seek(0)
        data = self.file.read()
        self.file.close()
        self.file = None
        return data


def keep_fd2_output(data: bytes) -> None:
    """The raw output a command's processes wrote to fd 2, kept in DAGSTER_HOME/logs and named
    in one line (it is no part of the answer, but may help a bug report)."""
    if not data.strip():
        return
    home = os.environ.get("DAGSTER_HOME")
    name = f"cli-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S}-{os.getpid()}.stderr.log"
    for folder in filter(None, [Path(home) / "logs" if home else None, Path(tempfile.gettempdir())]):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        except OSError:
            continue
        print(f"(other output of this command's processes: {folder / name})", file=sys.stderr)
        return
