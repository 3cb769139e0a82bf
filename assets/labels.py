"""Stage `labels` (symbol x year): forward returns over H trading rows and their sign.

    label_ret_h{H}[t] = close[t+H] / close[t] - 1   (rows of the symbol's own series)
    label_bin_h{H}[t] = 1 if label_ret_h{H}[t] > tau_H else 0; null where the return is null

Where the future is not known yet (the last H rows of the known history) both are null,
never 0: the seed's `(fut > tau).astype(int8)` turns NaN into 0, which leaks. Computed
per symbol (never across symbols). Partition SYMBOL|Y reads raw_bars of Y and Y+1; a Y+1
not stored yet is a future not known yet (nulls), and the labels fill in when the stage runs
again after Y+1 arrives (the nightly schedule re-runs the previous year in January).
"""

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    Output,
)

from config.partitions import (
    ALLOW_MISSING,
    split_key,
    symbol_year_asset,
    year_halo_mapping,
)
from resources.project import ProjectResource


@symbol_year_asset(
    ins={"raw_bars": AssetIn(partition_mapping=year_halo_mapping(0, years_after=1), metadata={ALLOW_MISSING: True})},
    group_name="labels",
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
    from domain.observe import observe

    settings = project.settings()
    keys = [split_key(k) for k in context.partition_keys]
    thresholds = {h: settings.labels.thresholds[h] for h in settings.labels.horizons}
    with observe(context, settings.reports_dir, "labels", args={"thresholds": thresholds}) as obs:
        df = obs.record(build_labels(raw_bars, keys, thresholds))
    yield Output(df)
    # Null labels may only sit in the last H rows of each symbol's loaded history.
    bad = unexpected_nulls(raw_bars, df, thresholds)
    yield AssetCheckResult(check_name="unknown_future_is_null", passed=not any(bad.values()),
                           metadata={"unexpected_nulls": {str(h): v for h, v in bad.items()}})
