"""The live job is live: the day's new bars are built before inference, after the close on
exchange sessions, and the chain trades on them."""

from __future__ import annotations

import datetime as dt

import polars as pl
from dagster import DagsterRunStatus, RunRequest, SkipReason, build_schedule_context
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from config.settings import read_settings
from tests.conftest import LEARNED_SYMBOLS


def test_live_paper_trade_builds_the_new_bars_before_it_trades(learned_copy, instance, monkeypatch):
    """The learned store ends 2003-12-31; the source now has bars into January 2004. The live
    run must store them (raw_bars .. specialists of 2004) and trade on the latest of them."""
    import yaml

    from pipeline.live import run_live

    data = yaml.safe_load(learned_copy.read_text())
    data["years"] = {"start": 2000, "end": 2004}
    data["universe"]["synthetic"]["end_date"] = "2004-01-16"
    learned_copy.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("PIPELINE_CONFIG", str(learned_copy))
    from pipeline.symbols import register_symbols
    from resources.partitions import dynamic_key_of

    register_symbols(instance, LEARNED_SYMBOLS)
    summary, result = run_live(instance)
    keys = len(set(dynamic_key_of(instance, LEARNED_SYMBOLS).values()))  # 3 symbols, or their group
    assert {name: s.partitions for name, s in summary.items()} == {
        "raw_bars": keys, "features": keys, "labels": keys, "specialists": keys}
    assert summary["raw_bars"].rows > 0  # January 2004's bars of the three symbols
    assert result.success and isinstance(result.output_for_node("paper_trades"), pl.DataFrame)
    log = (read_settings(learned_copy).stage_reports_dir("paper_trades") / "orders.jsonl").read_text().splitlines()
    assert '"now": "2004-01-16 00:00:00"' in log[-1]  # the day traded on is the newest bar, just built


def test_the_schedule_runs_after_the_close_on_sessions_only(instance, make_settings, monkeypatch):
    from pipeline.chain import LIVE_TAG
    from pipeline.definitions import defs

    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings(years={"start": 2000, "end": 2024})))
    schedule = defs.resolve_schedule_def("live_after_close")
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("30 22 * * 1-5", "America/New_York")
    assert schedule.default_status.name == "STOPPED"
    from pipeline.symbols import register_symbols
    from resources.partitions import dynamic_key_of

    register_symbols(instance, ["AAA", "BBB"])
    first, last = (dynamic_key_of(instance, ["AAA", "BBB"])[s] for s in ("AAA", "BBB"))
    session = dt.datetime(2024, 3, 15, 22, 30)  # a Friday
    holiday = dt.datetime(2024, 7, 4, 22, 30)  # Independence Day, a Thursday
    with build_schedule_context(instance=instance, scheduled_execution_time=session) as ctx:
        request = schedule.evaluate_tick(ctx).run_requests[0]
    assert isinstance(request, RunRequest) and request.run_key == "live:2024-03-15"
    assert (request.tags[ASSET_PARTITION_RANGE_START_TAG], request.tags[ASSET_PARTITION_RANGE_END_TAG]) == (
        f"{first}|2024", f"{last}|2024")
    assert request.tags[LIVE_TAG] == "1"
    with build_schedule_context(instance=instance, scheduled_execution_time=holiday) as ctx:
        skipped = schedule.evaluate_tick(ctx)
    assert not skipped.run_requests and "not a session of XNYS" in skipped.skip_message


def test_a_live_build_is_followed_by_paper_trades_alone(instance):
    from dagster import build_run_status_sensor_context

    from pipeline.chain import LIVE_TAG
    from pipeline.definitions import defs
    from pipeline.sensors import build_chain_sensor

    from pipeline.symbols import register_symbols
    from resources.partitions import dynamic_key_of

    register_symbols(instance, ["AAA"])
    key = f"{dynamic_key_of(instance, ['AAA'])['AAA']}|2024"  # the symbol's, or its group's
    busy = instance.create_run_for_job(defs.resolve_job_def("historical_build_and_train"), status=DagsterRunStatus.STARTED)
    run = instance.create_run_for_job(
        defs.resolve_job_def("historical_build_and_train"), status=DagsterRunStatus.SUCCESS,
        tags={ASSET_PARTITION_RANGE_START_TAG: key, ASSET_PARTITION_RANGE_END_TAG: key, LIVE_TAG: "1"})
    instance.report_run_failed(run)  # gives the context an event; the sensor reads statuses from the instance
    event = next(r.event_log_entry.dagster_event for r in instance.get_records_for_run(run.run_id).records
                 if r.event_log_entry.dagster_event is not None)
    ctx = build_run_status_sensor_context(sensor_name="build_chain_sensor", dagster_event=event,
                                          dagster_instance=instance, dagster_run=run)
    requests = build_chain_sensor(ctx)
    assert not isinstance(requests, SkipReason) and busy.run_id  # another build in flight does not hold it back
    assert [r.job_name for r in requests] == ["live_paper_trade"]
