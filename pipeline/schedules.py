"""The nightly rebuild: at 02:00 every day, the latest year of every registered symbol
(in January also the previous year, whose last labels need the new year's first rows).

One RunRequest: a single-run backfill over every registered symbol x those years (the
partition-range tags; the symbols are contiguous because all of them are in it), with a
run_key (the date) so a tick that is evaluated twice launches nothing twice. When it
succeeds, `build_chain_sensor` runs the yearly stages of the same years (pipeline.chain). Off by default; `automation.nightly_schedule:
true` in the settings starts it with the daemon, or switch it on in the UI.
"""

from __future__ import annotations

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from config.experiments import experiment_tags
from resources.partitions import all_keys_range, make_key, range_tags
from config.settings import load_settings
from pipeline.chain import LIVE_TAG
from pipeline.jobs import historical_build_and_train

_settings = load_settings()


def latest_year(scheduled_year: int) -> int:
    years = load_settings().years
    return max(years.start, min(scheduled_year, years.last))


@schedule(
    name="nightly_rebuild",
    job=historical_build_and_train,
    cron_schedule="0 2 * * *",
    default_status=DefaultScheduleStatus.RUNNING if _settings.automation.nightly_schedule else DefaultScheduleStatus.STOPPED,
)
def nightly_rebuild(context: ScheduleEvaluationContext):
    span = all_keys_range(context.instance)  # every symbol (or group): first..last
    if not span:
        return SkipReason("no symbols registered: run `python -m pipeline.cli symbols sync` or enable the sensor")
    when = context.scheduled_execution_time
    year = latest_year(when.year)
    years = [year - 1, year] if when.month == 1 and year - 1 >= load_settings().years.start else [year]
    return RunRequest(
        run_key=f"nightly:{when:%Y-%m-%d}",
        tags={**range_tags(make_key(span[0], years[0]), make_key(span[1], years[-1])),
              **experiment_tags(load_settings())},
    )


@schedule(
    name="live_after_close",
    job=historical_build_and_train,
    cron_schedule="30 22 * * 1-5",
    execution_timezone="America/New_York",
    default_status=DefaultScheduleStatus.RUNNING if _settings.automation.live_schedule else DefaultScheduleStatus.STOPPED,
    description="22:30 New York time on sessions of the exchange calendar: the current year's partitions of every "
                "registered symbol take in the day's bars; build_chain_sensor then runs live_paper_trade.",
)
def live_after_close(context: ScheduleEvaluationContext):
    when = context.scheduled_execution_time
    calendar = exchange_calendar()
    if not calendar.is_session(when.date()):
        return SkipReason(f"{when:%Y-%m-%d} is not a session of {calendar.name}: no new bars to trade on")
    span = all_keys_range(context.instance)
    if not span:
        return SkipReason("no symbols registered: run `python -m pipeline.cli symbols sync` or enable the sensor")
    year = latest_year(when.year)
    return RunRequest(run_key=f"live:{when:%Y-%m-%d}",
                      tags={**range_tags(make_key(span[0], year), make_key(span[1], year)), LIVE_TAG: "1",
                            **experiment_tags(load_settings())})


def exchange_calendar():
    """The calendar of the bars' exchange (XNYS, as the synthetic market's)."""
    import exchange_calendars

    return exchange_calendars.get_calendar("XNYS")
