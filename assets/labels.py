"""Stage `labels` (symbol x year): forward returns over H trading rows and their sign.

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.labels`, whose docstring states them.
"""

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    Output,
)

from config.partitions import ALLOW_MISSING
from resources.partitions import run_keys, symbol_year_asset, year_halo_mapping
from resources.project import ProjectResource


@symbol_year_asset(
    ins={"raw_bars": AssetIn(partition_mapping=year_halo_mapping(0, years_after=1), metadata={ALLOW_MISSING: True})},
    group_name="features",
    kinds={"polars"},
    check_specs=[
        AssetCheckSpec("unknown_future_is_null", asset="labels",
                       description="labels are null only in the last H rows of a symbol's known history"),
    ],
)
def labels(context: AssetExecutionContext, raw_bars: pl.DataFrame, project: ProjectResource):
    """Forward returns over 3/7/14 trading rows and their binary labels (null, never 0,
    where the future is unknown)."""
    from domain.labels import build_labels, unexpected_nulls
    from resources.delta_store import DeltaStore
    from resources.observe import observe
    from resources.output_stream import ChunkStream, observe_stream, write_stream

    settings = project.settings()
    keys = run_keys(context)
    thresholds = {h: settings.labels.thresholds[h] for h in settings.labels.horizons}
    bad = {h: 0 for h in thresholds}

    def check(chunk: pl.DataFrame, bars: pl.DataFrame) -> None:
        # Null labels may only sit in the last H rows of each symbol's loaded history.
        for h, n in unexpected_nulls(bars, chunk, thresholds).items():
            bad[h] += n

    bytes_per_row = 8 * len(thresholds) + 32
    with observe(context, settings.reports_dir, "labels", args={"thresholds": thresholds}) as obs:
        # computed and written a symbol group at a time, one commit (resources.output_stream)
        stream = ChunkStream(raw_bars, keys, lambda bars, ks: build_labels(bars, ks, thresholds),
                             settings.build.stream_rows(bytes_per_row), on_chunk=check)
        written = write_stream(context, DeltaStore(settings.data_dir), "labels", stream)
        observe_stream(obs, stream)
    yield Output(None, metadata=written)
    yield AssetCheckResult(check_name="unknown_future_is_null", passed=not any(bad.values()),
                           metadata={"unexpected_nulls_by_horizon": {f"h{h}": v for h, v in bad.items()}})
