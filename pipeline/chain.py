"""The whole graph in dependency order: one chain of jobs, two drivers.

A Dagster job holds one partitions definition, so "everything" is a chain:

    historical_build_and_train (symbol x year: raw_bars, features, labels, specialists)
      -> yearly_stages (year: regime, cv_report, meta_model, predictions, backtest, evaluation)
      -> atc_scan_job (unpartitioned: the latest ATC state of every symbol)
    lstm_job (year) is optional: slow on a CPU, so the chain runs it only when asked.

`FOLLOW_UPS` is the one statement of that order. Its drivers:
- `build_chain_sensor` (pipeline.sensors, with the daemon): when a run of a chained job
  succeeds, it requests the next jobs for the years that run covered.
- `pipeline.runs.run_graph` (in process: the CLI and `make demo`): runs the chain for symbols x years.
"""

from __future__ import annotations

from dataclasses import dataclass

from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    PARTITION_NAME_TAG,
)

from config.partitions import split_key
from resources.partitions import range_tags

FOLLOW_UPS: dict[str, tuple[str, ...]] = {
    "historical_build_and_train": ("yearly_stages", "atc_scan_job"),
    "lstm_job": ("yearly_stages",),
}
YEAR_JOBS = ("yearly_stages", "lstm_job")
# A build run carrying this tag brought in the day's bars for the live path
# (pipeline.live): it is followed by live_paper_trade alone, not by a retraining.
LIVE_TAG = "tradelab/live"
LIVE_FOLLOW_UP = "live_paper_trade"


def run_years(tags: dict[str, str]) -> list[int]:
    """The years a run covered, from its partition tag or its partition-range tags."""
    def year_of(key: str) -> int:
        return split_key(key).year if "|" in key else int(key)

    if ASSET_PARTITION_RANGE_START_TAG in tags and ASSET_PARTITION_RANGE_END_TAG in tags:
        y0, y1 = year_of(tags[ASSET_PARTITION_RANGE_START_TAG]), year_of(tags[ASSET_PARTITION_RANGE_END_TAG])
        return list(range(min(y0, y1), max(y0, y1) + 1))
    if PARTITION_NAME_TAG in tags:
        return [year_of(tags[PARTITION_NAME_TAG])]
    return []


def year_range_tags(years: list[int]) -> dict[str, str]:
    """Tags that make one run over the years min..max of a year-partitioned job."""
    return range_tags(str(min(years)), str(max(years)))


@dataclass(frozen=True)
class FollowUp:
    job: str
    tags: dict[str, str]


def follow_ups(job_name: str, tags: dict[str, str]) -> list[FollowUp]:
    """The runs that continue the chain after a successful run of `job_name` with `tags`."""
    if tags.get(LIVE_TAG) and job_name == "historical_build_and_train":
        return [FollowUp(LIVE_FOLLOW_UP, {})]
    years = run_years(tags)
    out = []
    for nxt in FOLLOW_UPS.get(job_name, ()):
        if nxt in YEAR_JOBS:
            if years:
                out.append(FollowUp(nxt, year_range_tags(years)))
        else:
            out.append(FollowUp(nxt, {}))
    return out
