"""Jobs over the asset graph."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from resources.partitions import experiment_partitions, symbol_partitions, symbol_year_partitions, years_partitions

# Jobs select assets by name, not by group: the groups (ingest, features, learning, evaluation,
# live, search) are for reading the lineage page, and one group may span several jobs.
GRID_ASSETS = ("market_data", "trade_log", "grid_search")  # trade-log grid search, unpartitioned
YEAR_ASSETS = ("regime", "cv_report", "meta_model", "predictions", "backtest", "evaluation")  # one partitions definition
LSTM_ASSETS = ("lstm_model",)  # year-partitioned too, in its own job: training is slow on a CPU
SCAN_ASSETS = ("atc_scan",)  # unpartitioned: latest date, all symbols
LIVE_ASSETS = ("paper_trades",)  # unpartitioned: today's bars -> paper orders
STRATEGY_ASSETS = ("strategy_search",)  # partitioned by symbol alone: one NSGA-II search per symbol
SUMMARY_ASSETS = ("experiment_summary",)  # partitioned by experiment: reads every experiment's reports

historical_build_and_train = define_asset_job(
    "historical_build_and_train",
    selection=AssetSelection.all() - AssetSelection.assets(*GRID_ASSETS, *LSTM_ASSETS, *LIVE_ASSETS, *STRATEGY_ASSETS,
                                                             *YEAR_ASSETS, *SCAN_ASSETS, *SUMMARY_ASSETS),
    partitions_def=symbol_year_partitions,
    description="Every symbol x year stage of the graph, in dependency order, for the selected partitions; "
                "on success build_chain_sensor runs the yearly stages of the same years (pipeline.chain).",
)

yearly_stages = define_asset_job(
    "yearly_stages",
    selection=AssetSelection.assets(*YEAR_ASSETS),
    partitions_def=years_partitions,
    description="The year-partitioned stages of the selected years: regime, cv_report, meta_model, predictions, "
                "backtest, evaluation.",
)

lstm_job = define_asset_job(
    "lstm_job",
    selection=AssetSelection.assets(*LSTM_ASSETS),
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
    selection=AssetSelection.assets(*GRID_ASSETS),
    description="Trade-log grid search: market_data -> trade_log -> grid_search (settings: grid_search.*).",
)

live_paper_trade = define_asset_job(
    "live_paper_trade",
    selection=AssetSelection.assets(*LIVE_ASSETS),
    description="Latest bars -> incremental features -> specialists -> meta -> paper orders -> log.",
)

strategy_search_job = define_asset_job(
    "strategy_search_job",
    selection=AssetSelection.assets(*STRATEGY_ASSETS),
    partitions_def=symbol_partitions,
    description="NSGA-II over seller-exhaustion parameter sets, one run per selected symbol, on its whole stored "
                "history (after raw_bars; settings: strategy_search.*).",
)

experiment_summary_job = define_asset_job(
    "experiment_summary_job",
    selection=AssetSelection.assets(*SUMMARY_ASSETS),
    partitions_def=experiment_partitions,
    description="The headline figures and the HTML report of the selected experiments (`pipeline.cli report`; "
                "the partitions are the experiment names).",
)
