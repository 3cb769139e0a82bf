"""Jobs over the asset graph."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from config.partitions import symbol_partitions, symbol_year_partitions, years_partitions

GRID_GROUP = "grid_search"
YEAR_GROUPS = ("regime", "learning", "evaluation")  # year-partitioned stages: a job holds one partitions definition
LSTM_GROUP = "lstm"  # year-partitioned too, in its own job: training is slow on a CPU
SCAN_ASSETS = ("atc_scan",)  # unpartitioned: latest date, all symbols
LIVE_GROUP = "live"  # unpartitioned: today's bars -> paper orders
STRATEGY_GROUP = "strategy_search"  # partitioned by symbol alone: one NSGA-II search per symbol

historical_build_and_train = define_asset_job(
    "historical_build_and_train",
    selection=AssetSelection.all() - AssetSelection.groups(GRID_GROUP, LSTM_GROUP, LIVE_GROUP, STRATEGY_GROUP, *YEAR_GROUPS)
    - AssetSelection.assets(*SCAN_ASSETS),
    partitions_def=symbol_year_partitions,
    description="Every symbol x year stage of the graph, in dependency order, for the selected partitions; "
                "on success build_chain_sensor runs the yearly stages of the same years (pipeline.chain).",
)

yearly_stages = define_asset_job(
    "yearly_stages",
    selection=AssetSelection.groups(*YEAR_GROUPS),
    partitions_def=years_partitions,
    description="The year-partitioned stages of the selected years: regime, cv_report, meta_model, predictions, "
                "backtest, evaluation.",
)

lstm_job = define_asset_job(
    "lstm_job",
    selection=AssetSelection.groups(LSTM_GROUP),
    partitions_def=years_partitions,
    description="The LSTM specialist of the selected years (walk-forward; after features and labels).",
)

atc_scan_job = define_asset_job(
    "atc_scan_job",
    selection=AssetSelection.assets(*SCAN_ASSETS),
    description="The current ATC state of every symbol (after raw_bars).",
)

grid_search_job = define_asset_job(
    "grid_search_job",
    selection=AssetSelection.groups(GRID_GROUP),
    description="Trade-log grid search: market_data -> trade_log -> grid_search (settings: grid_search.*).",
)

live_paper_trade = define_asset_job(
    "live_paper_trade",
    selection=AssetSelection.groups(LIVE_GROUP),
    description="Latest bars -> incremental features -> specialists -> meta -> paper orders -> log.",
)

strategy_search_job = define_asset_job(
    "strategy_search_job",
    selection=AssetSelection.groups(STRATEGY_GROUP),
    partitions_def=symbol_partitions,
    description="NSGA-II over seller-exhaustion parameter sets, one run per selected symbol, on its whole stored "
                "history (after raw_bars; settings: strategy_search.*).",
)
