"""Jobs over the asset graph."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from pipeline.partitions import symbol_year_partitions

GRID_GROUP = "grid_search"

historical_build_and_train = define_asset_job(
    "historical_build_and_train",
    selection=AssetSelection.all() - AssetSelection.groups(GRID_GROUP),
    partitions_def=symbol_year_partitions,
    description="Every symbol x year stage of the graph, in dependency order, for the selected partitions.",
)

grid_search_job = define_asset_job(
    "grid_search_job",
    selection=AssetSelection.groups(GRID_GROUP),
    description="Trade-log grid search: market_data -> trade_log -> grid_search (settings: grid_search.*).",
)
