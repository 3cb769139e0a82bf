"""Stage `features` (symbol x year): the feature registry over raw_bars, halo-exact.

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.features`, whose docstring states them.
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
    FEATURE_HALO_YEARS,
    run_keys,
    symbol_year_asset,
    year_halo_mapping,
)
from config.settings import load_settings
from resources.compute import ComputeResource
from resources.delta_store import DeltaStore
from resources.project import ProjectResource


def _code_version() -> str:
    """A hash of the selected packs' entries (names, versions, columns): changing packs or
    plugins marks the stored partitions stale (config.pack_versions: resolved without
    importing the kernels here)."""
    from config.pack_versions import pack_code_versions

    settings = load_settings()
    return pack_code_versions(settings.features, paths=settings.plugin_folders())["features"]


@symbol_year_asset(
    code_version=_code_version(),
    ins={"raw_bars": AssetIn(partition_mapping=year_halo_mapping(FEATURE_HALO_YEARS))},
    group_name="features",
    kinds={"numba", "polars"},
    check_specs=[
        AssetCheckSpec("dtypes", asset="features", description="columns and dtypes follow the feature registry"),
        AssetCheckSpec("no_nan_after_warmup", asset="features", description="every feature is finite after its warm-up"),
        AssetCheckSpec("halo_spot_check", asset="features", description="one boundary from its halo only equals it from all stored history"),
    ],
)
def features(context: AssetExecutionContext, raw_bars: pl.DataFrame, project: ProjectResource, compute: ComputeResource):
    """Technical features of one symbol and year from the feature registry (TA-Lib-exact
    kernels), computed over the year and its halo, stored for the year only."""
    from domain.feature_packs import claim_owners, feature_selection
    from domain.checks import no_nan_after_warmup
    from domain.features import FeatureChecks, build_features, halo_spot_check
    from resources.output_stream import ChunkStream, observe_stream, write_stream
    from resources.observe import observe

    settings = project.settings()
    selection = feature_selection(settings)
    claim_owners(DeltaStore(settings.data_dir), "features", selection)  # before computing: a clash costs nothing
    keys = run_keys(context)
    kw = {"backend": compute.backend, "precision": settings.precision, "workers": settings.build.worker_count(),
          "chunk_rows": settings.build.chunk_rows, "executor": settings.build.executor}
    store = DeltaStore(settings.data_dir)
    acc = FeatureChecks(settings.precision, selection)
    bytes_per_row = (8 if settings.precision == "float64" else 4) * len(selection.feature_columns) + 32
    with observe(context, settings.reports_dir, "features", args={**kw, "halo_years": FEATURE_HALO_YEARS}) as obs:
        # computed and written a chunk of symbols at a time, one commit (resources.output_stream)
        stream = ChunkStream(raw_bars, keys, lambda bars, ks: acc.take(*build_features(bars, ks, **kw, selection=selection)),
                             settings.build.stream_rows(bytes_per_row))
        written = write_stream(context, store, "features", stream)
        observe_stream(obs, stream)
        obs.extra.update({"input_rows": raw_bars.height, "chunks": acc.chunks, "workers": acc.workers,
                          "max_chunk_input_mb": round(acc.max_chunk_input_mb, 2),
                          "max_worker_rss_growth_mb": round(acc.max_worker_rss_growth_mb, 2)})
    yield Output(None, metadata=written)
    passed, meta = acc.dtypes_result()
    yield AssetCheckResult(check_name="dtypes", passed=passed, metadata=meta)
    passed, meta = no_nan_after_warmup(acc.nan_after_warmup)
    yield AssetCheckResult(check_name="no_nan_after_warmup", passed=passed, metadata=meta)
    spot = halo_spot_check(DeltaStore(settings.data_dir), keys, settings.years.start, FEATURE_HALO_YEARS,
                           **{**kw, "workers": 1},
                           selection=selection)
    yield AssetCheckResult(check_name="halo_spot_check", passed=spot.pop("passed"), metadata=spot)
