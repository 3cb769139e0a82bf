"""Jobs over the asset graph."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from pipeline.partitions import symbol_year_partitions

historical_build_and_train = define_asset_job(
    "historical_build_and_train",
    selection=AssetSelection.all(),
    partitions_def=symbol_year_partitions,
    description="Every stage of the graph, in dependency order, for the selected symbol x year partitions.",
)
