"""Sidecars and atomic report files, without Dagster: what `resources.observe.observe`
records of a materialization (Observation), written as
`reports/<experiment>/<stage>/runs/<partition>.json` (runs/: apart from the stage's own
reports) with git_sha, cmd, args, timings, rss_mb, rows and partition. Written atomically,
like the data. `partition_label` reads a Dagster context it is given, and imports nothing of
Dagster.
"""

from __future__ import annotations

import functools
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import polars as pl

from config.redact import redact
from resources.files import shared_file_mode

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=1)
def git_sha() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def peak_rss_mb() -> float:
    """Peak resident set size of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Write `data` to `path` via a temp file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        os.fchmod(fd, shared_file_mode())  # mkstemp makes 0600: a shared reports folder needs the umask's mode
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: Path, payload: dict[str, Any]) -> Path:
    """A JSON report, credentials masked (config.redact) wherever they appear."""
    text = json.dumps(payload, indent=2, default=str)
    return write_bytes_atomic(path, (redact(text) + "\n").encode())


def write_sidecar(reports_dir: Path, stage: str, partition: str, **fields: Any) -> Path:
    """reports/<experiment>/<stage>/runs/<partition>.json with the repro fields every report carries."""
    payload = {
        "stage": stage,
        "partition": partition,
        "git_sha": git_sha(),
        "cmd": " ".join(sys.argv),
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **fields,
    }
    return write_json_atomic(reports_dir / stage / "runs" / f"{safe_name(partition)}.json", payload)


def safe_name(label: str) -> str:
    """A partition label as a file name: `GOOG|2010...GOOG|2012` -> `GOOG_2010--GOOG_2012`."""
    label = label.replace("...", "--").replace("|", "_")
    return re.sub(r"[^A-Za-z0-9._=-]", "_", label) or "all"


def partition_label(context) -> str:
    """`GOOG|2010`, a range `GOOG|2010...GOOG|2012`, or `all` when unpartitioned."""
    if not context.has_partition_key and not getattr(context, "has_partition_key_range", False):
        return "all"
    keys = context.partition_keys
    return str(keys[0]) if len(keys) == 1 else f"{keys[0]}...{keys[-1]}"


@dataclass
class Observation:
    rows: int = 0
    bytes: int = 0
    dtypes: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def record(self, df: pl.DataFrame) -> pl.DataFrame:
        self.rows, self.bytes = df.height, int(df.estimated_size())
        self.dtypes = {c: str(t) for c, t in df.schema.items()}
        return df

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        self.timings[name] = round(time.perf_counter() - t0, 4)
