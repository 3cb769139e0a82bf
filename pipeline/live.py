"""The live path, really live: bring in the new bars, then infer and trade.

`run_live(instance, now=None)` (the CLI's `live-paper-trade`, `make demo`):
1. one single-run backfill of `historical_build_and_train` over every registered symbol x
   the current year (the year of `now`, within the configured years): raw_bars, features,
   labels and specialists take in the bars that arrived since the last build;
2. the `live_paper_trade` job: inference on those bars and the paper orders of the day.

From the daemon the same two steps are a schedule and the chain: `live_after_close`
(pipeline.schedules, off by default) requests step 1 with the LIVE_TAG at 22:30 New York
time on sessions of the exchange calendar, and `build_chain_sensor` answers a successful
run carrying that tag with step 2 (pipeline.chain).
"""

from __future__ import annotations

import datetime as dt

from config.partitions import SYMBOLS
from pipeline.chain import LIVE_TAG
from pipeline.schedules import latest_year


def run_live(instance, now: str | None = None, log_level: str = "WARNING", settings_path: str | None = None):
    """Build the current year of every registered symbol, then run live_paper_trade, with the
    settings in force (or `settings_path`). Returns (the build's per-asset summary, the
    paper_trades result)."""
    from dagster import Definitions

    from config.experiments import experiment_tags
    from config.settings import config_path, load_settings
    from pipeline.definitions import ALL_ASSETS, build_resources
    from pipeline.jobs import historical_build_and_train, live_paper_trade
    from pipeline.run_report import console_run_config
    from pipeline.runs import raise_if_failed, run_rectangle

    defs = Definitions(assets=ALL_ASSETS, jobs=[historical_build_and_train, live_paper_trade],
                       resources=build_resources(str(settings_path or config_path())))

    symbols = list(instance.get_dynamic_partitions(SYMBOLS))
    if not symbols:
        raise ValueError("live-paper-trade: no symbols registered: run `python -m pipeline.cli symbols sync` first")
    year = latest_year((dt.datetime.fromisoformat(now) if now else dt.datetime.now()).year)
    tags = experiment_tags(load_settings(settings_path))
    summary = run_rectangle(defs.resolve_job_def("historical_build_and_train"), instance, symbols, [year],
                            tags={LIVE_TAG: "1", **tags}, log_level=log_level)
    config = {**console_run_config("INFO"), **({"ops": {"paper_trades": {"config": {"now": now}}}} if now else {})}
    result = defs.resolve_job_def("live_paper_trade").execute_in_process(instance=instance, run_config=config,
                                                                          raise_on_error=False, tags=tags)
    raise_if_failed(result, "live_paper_trade")
    return summary, result
