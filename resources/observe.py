"""Observability of every materialization: Dagster metadata and a JSON sidecar.

`observe(context, reports_dir, stage)` wraps a stage's work. On exit it records on the
output: rows, bytes (in memory), seconds, peak RSS MB, dtypes, partitions; and writes the
stage's sidecar (resources.sidecars). An input error (InputDataError) becomes a Dagster
Failure whose description is the user's one line. Dagster's side: domain imports no Dagster.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from config.errors import InputDataError
from resources.sidecars import Observation, partition_label, peak_rss_mb, write_sidecar


@contextmanager
def observe(context, reports_dir: Path, stage: str, args: dict[str, Any] | None = None) -> Iterator[Observation]:
    obs = Observation()
    t0 = time.perf_counter()
    try:
        yield obs
    except InputDataError as err:
        # The user's one line, first and alone: a Failure shows its description above any
        # stack in the UI, and the CLI prints it (pipeline.runs.failure_line).
        from dagster import Failure

        context.log.error(str(err))
        raise Failure(description=str(err), allow_retries=False) from None
    seconds = time.perf_counter() - t0
    label = partition_label(context)
    n_parts = len(context.partition_keys) if label != "all" else 0
    rss = round(peak_rss_mb(), 1)
    context.add_output_metadata(
        {
            "rows": obs.rows,
            "bytes": obs.bytes,
            "seconds": round(seconds, 4),
            "rows_per_second": round(obs.rows / seconds) if seconds > 0 else 0,
            "peak_rss_mb": rss,
            "dtypes": obs.dtypes,
            "partitions": n_parts,
            **obs.extra,
        },
        output_name="result",  # the asset's value; check results are outputs too
    )
    sidecar = write_sidecar(
        reports_dir,
        stage,
        label,
        args={"partitions": n_parts, **(args or {})},
        timings={"total_s": round(seconds, 4), **obs.timings},
        rss_mb=rss,
        rows=obs.rows,
        bytes=obs.bytes,
        **obs.extra,
    )
    context.log.info(f"{stage} {label}: {obs.rows} rows in {seconds:.2f}s, peak RSS {rss} MB, sidecar {sidecar}")
