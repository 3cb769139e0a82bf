"""An exclusive lock per table for the moment of a commit (flock on `<table>/_commit.lock`).

delta-rs's conflict check does not see a commit built from explicit file actions as having
read anything, so two runs rewriting the same keys could both commit. The store therefore
checks, under this lock, that the table is still at the version it planned on and commits
there (resources.delta_store). The lock covers the check and the commit only (milliseconds),
never the computing or the writing of a run's files. The kernel releases a flock when its
holder dies, so a killed run blocks nothing. The file name starts with `_`, which Delta
readers and vacuum leave alone (as `_delta_log`).
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = "_commit.lock"


@contextmanager
def commit_lock(table_dir: Path):
    """Hold the table's commit lock for the block (waits while another process holds it)."""
    table_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(table_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
