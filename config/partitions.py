"""The one partitions definition: symbol (dynamic, `symbols`) x year (yearly windows).

Leaf module (imports only settings), defined once and imported everywhere. Keys are
Dagster's multi-partition keys, dimension values joined by `|` in alphabetical order of the
dimension names: `GOOG|2010`. The year dimension runs from `years.start` to `years.end`
(the current year when unset; `end_offset=1` keeps the running year in the set).
"""

from __future__ import annotations

from typing import NamedTuple

from dagster import (
    DimensionPartitionMapping,
    DynamicPartitionsDefinition,
    IdentityPartitionMapping,
    MultiPartitionKey,
    MultiPartitionMapping,
    MultiPartitionsDefinition,
    TimeWindowPartitionMapping,
    TimeWindowPartitionsDefinition,
)

from config.settings import SYMBOL_PATTERN, Settings, load_settings

SYMBOLS = "symbols"
# Instance key-value entry (run storage cursor values): a JSON list of the registered symbols
# that the configured source does not hold (pipeline.symbols.sync_source). They stay
# registered until pruned, but no run reads them (resources.io_manager).
ABSENT_SYMBOLS_KEY = "tradelab/symbols_absent_from_source"


def year_partitions(settings: Settings) -> TimeWindowPartitionsDefinition:
    """Yearly windows keyed `YYYY` from the first configured year."""
    years = settings.years
    if years.end is None:
        return TimeWindowPartitionsDefinition(
            cron_schedule="0 0 1 1 *", start=f"{years.start}", fmt="%Y", end_offset=1
        )
    return TimeWindowPartitionsDefinition(
        cron_schedule="0 0 1 1 *", start=f"{years.start}", end=f"{years.end + 1}", fmt="%Y"
    )


symbol_partitions = DynamicPartitionsDefinition(name=SYMBOLS)
years_partitions = year_partitions(load_settings())

# Halos (years of upstream partitions read before Y), needed when the assets are decorated,
# so they live here rather than in domain/ (which loads the kernels).
FEATURE_HALO_YEARS = load_settings().halo.years  # features: recursive indicators' memory
REGIME_HALO_YEARS = 2  # regime: the tagger's windows span about 272 days (kernels.regime)
# specialists: a halo reaching the first configured year from the last, i.e. every stored year
# before Y. Not a huge constant: Dagster walks the halo one cron window at a time for every
# downstream year, so 500 cost ~45 s of partition mapping per run (and again for data
# versions); 10 spare years cover a code location that stays loaded across New Year.
ALL_HISTORY_YEARS = load_settings().years.last - load_settings().years.start + 10
symbol_year_partitions = MultiPartitionsDefinition(
    {"symbol": symbol_partitions, "year": years_partitions}
)


class SymbolYear(NamedTuple):
    symbol: str
    year: int


def split_key(key: str | MultiPartitionKey) -> SymbolYear:
    """`GOOG|2010` (or a MultiPartitionKey) -> SymbolYear('GOOG', 2010), validated."""
    if isinstance(key, MultiPartitionKey):
        dims = key.keys_by_dimension
        symbol, year = dims["symbol"], dims["year"]
    else:
        parts = str(key).split("|")
        if len(parts) != 2:
            raise ValueError(f"partition key {key!r}: expected SYMBOL|YEAR, e.g. GOOG|2010")
        symbol, year = parts
    if not SYMBOL_PATTERN.match(symbol):
        raise ValueError(f"partition key {key!r}: symbol must match [A-Z0-9._-]{{1,16}}")
    if not year.isdigit():
        raise ValueError(f"partition key {key!r}: year must be YYYY")
    return SymbolYear(symbol, int(year))


def make_key(symbol: str, year: int) -> MultiPartitionKey:
    return MultiPartitionKey({"symbol": symbol, "year": str(year)})


def year_halo_mapping(years_before: int, years_after: int = 0) -> MultiPartitionMapping:
    """Same symbol, years Y-years_before .. Y+years_after of the upstream asset.

    Years outside the configured range are dropped, so the first year reads only itself.
    """
    return MultiPartitionMapping(
        {
            "symbol": DimensionPartitionMapping("symbol", IdentityPartitionMapping()),
            "year": DimensionPartitionMapping(
                "year",
                TimeWindowPartitionMapping(
                    start_offset=-years_before,
                    end_offset=years_after,
                    allow_nonexistent_upstream_partitions=True,
                ),
            ),
        }
    )


# An input's metadata key: missing upstream partitions load as an empty frame, not an error
# (read by the store's IO manager).
ALLOW_MISSING = "allow_missing_partitions"


# An input's metadata key: the input maps to EVERY partition of its upstream (AllPartitionMapping);
# the IO manager then scans the table for the registered keys instead of listing them one by one.
EVERY_PARTITION = "reads_every_partition"


def every_year_of(*names: str, latest_only: tuple[str, ...] = ()) -> dict:
    """`ins` of a yearly (walk-forward) asset: every stored partition of each upstream in
    `names`, missing ones allowed; those in `latest_only` map partition to partition."""
    from dagster import AllPartitionMapping, AssetIn

    ins = {n: AssetIn(partition_mapping=AllPartitionMapping(), metadata={ALLOW_MISSING: True, EVERY_PARTITION: True})
           for n in names}
    ins.update({n: AssetIn(metadata={ALLOW_MISSING: True}) for n in latest_only})
    return ins


def yearly_asset(*, reads: tuple[str, ...], latest_only: tuple[str, ...] = (), **kwargs):
    """@asset for a stage partitioned by year that reads all years of its upstreams and runs
    a backfill as one run (the models are walk-forward over the whole stored history)."""
    from dagster import BackfillPolicy, asset

    return asset(partitions_def=years_partitions, backfill_policy=BackfillPolicy.single_run(),
                 ins=every_year_of(*reads, latest_only=latest_only), **kwargs)


def symbol_year_asset(**kwargs):
    """@asset for a stage partitioned by symbol x year, a backfill as one run."""
    from dagster import BackfillPolicy, asset

    return asset(partitions_def=symbol_year_partitions, backfill_policy=BackfillPolicy.single_run(), **kwargs)


def range_tags(first: str | MultiPartitionKey, last: str | MultiPartitionKey) -> dict[str, str]:
    """Run tags of a single-run backfill over the partition range first..last."""
    from dagster._core.storage.tags import (
        ASSET_PARTITION_RANGE_END_TAG,
        ASSET_PARTITION_RANGE_START_TAG,
    )

    return {ASSET_PARTITION_RANGE_START_TAG: str(first), ASSET_PARTITION_RANGE_END_TAG: str(last)}
