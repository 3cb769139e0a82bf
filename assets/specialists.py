"""Stage `specialists` (symbol x year): the specialist registry over each symbol's panel.

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.specialists`, whose docstring states them.
"""

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    Output,
)

from resources.partitions import (
    ALL_HISTORY_YEARS,
    run_keys,
    symbol_year_asset,
    year_halo_mapping,
)
from config.settings import load_settings
from resources.delta_store import DeltaStore
from resources.project import ProjectResource


def _code_version() -> str:
    """A hash of the selected packs' specialists (names, versions) and the `atc` settings they
    run with: changing packs, plugins or `atc` marks the stored partitions stale
    (config.pack_versions: resolved without importing the kernels here)."""
    from config.pack_versions import pack_code_versions

    settings = load_settings()
    return pack_code_versions(settings.features, settings.atc.specialist_params(), settings.plugin_folders())["specialists"]


@symbol_year_asset(
    code_version=_code_version(),
    ins={"raw_bars": AssetIn(partition_mapping=year_halo_mapping(ALL_HISTORY_YEARS))},
    group_name="features",
    kinds={"numba", "polars"},
    check_specs=[AssetCheckSpec("scores_in_range", asset="specialists",
                                description="every score is float32 in [-1, 1] (NaN only in warm-up)")],
)
def specialists(context: AssetExecutionContext, raw_bars: pl.DataFrame, project: ProjectResource):
    """Rule-based specialist scores in [-1, 1]: mean reversion, RSI, Adaptive Trend
    Classification and seller exhaustion, from one zero-copy panel per symbol."""
    from resources.observe import observe
    from resources.output_stream import ChunkStream, observe_stream, write_stream
    from domain.feature_packs import claim_owners, feature_selection
    from domain.specialists import build_specialists, score_range_report

    settings = project.settings()
    selection = feature_selection(settings)
    claim_owners(DeltaStore(settings.data_dir), "specialists", selection)  # before computing: a clash costs nothing
    keys = run_keys(context)
    kw = {"workers": settings.build.worker_count(), "chunk_rows": settings.build.chunk_rows,
          "executor": settings.build.executor}
    bad: dict[str, int] = {}
    nan: dict[str, int] = {}

    def check(chunk: pl.DataFrame, _bars: pl.DataFrame) -> None:
        for total, counts in zip((bad, nan), score_range_report(chunk)):
            for c, n in counts.items():
                total[c] = total.get(c, 0) + n

    bytes_per_row = 4 * max(1, len(selection.specialist_columns)) + 32
    with observe(context, settings.reports_dir, "specialists", args=kw) as obs:
        # computed and written a symbol group at a time, one commit (resources.output_stream)
        stream = ChunkStream(raw_bars, keys, lambda bars, ks: build_specialists(bars, ks, **kw, selection=selection),
                             settings.build.stream_rows(bytes_per_row), on_chunk=check)
        written = write_stream(context, DeltaStore(settings.data_dir), "specialists", stream)
        observe_stream(obs, stream)
    yield Output(None, metadata=written)
    yield AssetCheckResult(check_name="scores_in_range", passed=not any(bad.values()),
                           metadata={"out_of_range": bad, "nan": nan})
