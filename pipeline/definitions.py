"""The code location: `dagster dev -w workspace.yaml` or `-m pipeline.definitions`."""

from __future__ import annotations

from pipeline.startup import prepare_process

prepare_process()  # before anything loads NumPy: thread variables, event batching

from dagster import Definitions  # noqa: E402

from assets.atc_scan import atc_scan
from assets.backtest import backtest
from assets.cv_report import cv_report
from assets.evaluation import evaluation
from assets.experiment_summary import experiment_summary
from assets.features import features
from assets.grid_search import grid_search, market_data, trade_log
from assets.labels import labels
from assets.lstm_model import lstm_model
from assets.meta_model import meta_model
from assets.paper_trade import paper_trades
from assets.predictions import predictions
from assets.raw_bars import raw_bars
from assets.regime import regime
from assets.specialists import specialists
from assets.strategy_search import strategy_search
from config.settings import config_path, load_settings
from pipeline.executors import build_executor
from pipeline.jobs import (
    atc_scan_job,
    experiment_summary_job,
    grid_search_job,
    historical_build_and_train,
    live_paper_trade,
    lstm_job,
    strategy_search_job,
    yearly_stages,
)
from pipeline.maintenance import daily_prune_runs, prune_runs_job, vacuum_job, weekly_vacuum
from pipeline.results_sensor import results_sensor
from pipeline.schedules import live_after_close, nightly_rebuild
from pipeline.sensors import build_chain_sensor, new_symbol_sensor
from resources.compute import ComputeResource
from resources.io_manager import DeltaTableIOManager
from resources.project import ProjectResource, ReportsResource

ALL_ASSETS = [raw_bars, features, labels, specialists, regime, cv_report, meta_model, predictions, backtest, evaluation, paper_trades, lstm_model, atc_scan, market_data, trade_log, grid_search, strategy_search, experiment_summary]


def build_resources(settings_path: str | None = None, overrides: str | None = None) -> dict:
    """The resources of the settings file `settings_path` (default: the one in force), with
    `overrides` (JSON, config.settings.derive_settings) applied when given."""
    project = ProjectResource(config_path=str(settings_path or config_path()), overrides=overrides)
    settings = project.settings()
    return {
        "project": project,
        "reports": ReportsResource(config_path=str(settings_path or config_path()), overrides=overrides),
        "compute": ComputeResource(device=settings.device, threads_per_worker=settings.threads_per_worker),
        "io_manager": DeltaTableIOManager(base_dir=str(settings.data_dir), experiment_dir=str(settings.experiment_data_dir)),
    }


defs = Definitions(
    assets=ALL_ASSETS,
    jobs=[historical_build_and_train, yearly_stages, lstm_job, atc_scan_job, grid_search_job, strategy_search_job,
          live_paper_trade, vacuum_job, prune_runs_job, experiment_summary_job],
    schedules=[nightly_rebuild, live_after_close, weekly_vacuum, daily_prune_runs],
    sensors=[new_symbol_sensor, build_chain_sensor, results_sensor],
    resources=build_resources(),
    executor=build_executor(load_settings()),
)
