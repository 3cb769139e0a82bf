"""Files that may be deserialised only after they are verified (pickle, joblib, torch).

Unpickling runs code, so a model or cache file is only ever loaded through `load_verified`,
the one seam every loader shares:

- `write_verified(path, write)` writes the file atomically (temp file beside it, fsync,
  os.replace, mode 0644) and returns the sha256 of the bytes written. The writer records it
  (field `sha256`) in a JSON sidecar that it too writes atomically.
- `load_verified(path, sidecar, load)` opens the file and its sidecar and refuses, with one
  line (UnverifiedFileError, a ValueError: exit code 2 from the CLI), when either is owned by
  another user or writable by others (world-writable; group-writable is allowed: a shared
  folder under umask 002 gives it), when the sidecar is missing or has no sha256,
  or when the sha256 of the file's bytes differs from the recorded one. Only then does it
  call `load` on a file object over exactly the bytes it hashed (no second read that a swap
  could change).

A file without a sidecar, or written before hashes were recorded, is refused too: rebuild it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from config.errors import InputDataError

FILE_MODE = 0o644  # readable by the group (a shared models folder), writable by the owner alone


class UnverifiedFileError(InputDataError):
    """A file that must not be deserialised: wrong owner or mode, no recorded sha256, or a different one."""


def write_verified(path, write: Callable[[BinaryIO], Any]) -> str:
    """Write via `write(binary file)` to a temp file beside `path`, fsync, chmod 0644,
    os.replace; the sha256 (hex) of the bytes now at `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w+b") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
            fh.seek(0)
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return digest


def _trusted_bytes(path: Path, rebuild: str) -> bytes:
    """The bytes of `path` when it is ours (owner = this process's user) and not world-writable."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if st.st_uid != os.geteuid():
            raise UnverifiedFileError(str(path), f"owned by uid {st.st_uid}, not by this user (uid {os.geteuid()}); "
                                                 f"not loaded: delete it and {rebuild}")
        if st.st_mode & stat.S_IWOTH:
            raise UnverifiedFileError(str(path), f"mode {stat.S_IMODE(st.st_mode):04o} is writable by others; "
                                                 f"not loaded: delete it and {rebuild}")
        return fh.read()


def recorded_sha256(sidecar, rebuild: str, path=None) -> str:
    """The sha256 recorded in the JSON `sidecar` (checked like the file it vouches for)."""
    sidecar = Path(sidecar)
    origin = str(path if path is not None else sidecar)
    if not sidecar.is_file():
        raise UnverifiedFileError(origin, f"no sidecar {sidecar} records its sha256; not loaded: {rebuild}")
    text = _trusted_bytes(sidecar, rebuild)
    try:
        digest = json.loads(text).get("sha256")
    except (ValueError, AttributeError):
        digest = None
    if not isinstance(digest, str):
        raise UnverifiedFileError(origin, f"the sidecar {sidecar} records no sha256; not loaded: {rebuild}")
    return digest


def load_verified(path, sidecar, load: Callable[[BinaryIO], Any], rebuild: str = "rebuild it") -> Any:
    """`load(file object)` of `path` once its owner, mode and sha256 are verified (module
    docstring); `rebuild` ends the one-line refusal (how to make the file again)."""
    path = Path(path)
    expected = recorded_sha256(sidecar, rebuild, path)
    data = _trusted_bytes(path, rebuild)
    if hashlib.sha256(data).hexdigest() != expected:
        raise UnverifiedFileError(str(path), f"sha256 does not match the one recorded when it was written ({sidecar}); "
                                             f"not loaded: {rebuild}")
    return load(io.BytesIO(data))
