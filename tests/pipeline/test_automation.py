"""The new-symbol sensor and the nightly schedule, evaluated against a test instance."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from dagster import (
    DefaultScheduleStatus,
    DefaultSensorStatus,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
)
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from pipeline.definitions import defs
from config.partitions import SYMBOLS
from pipeline.schedules import nightly_rebuild
from pipeline.sensors import new_symbol_sensor
from pipeline.symbols import register_symbols
from tests.conftest import SYMBOLS_PER_GROUP

# These tests state the per-symbol layout's keys (`AAA|2008`, registered with
# add_dynamic_partitions): with TRADELAB_TEST_SYMBOLS_PER_GROUP > 1 the grouped layout's sensor,
# schedule and tags are specified by tests/pipeline/test_symbol_groups.py instead.
per_symbol_keys = pytest.mark.skipif(SYMBOLS_PER_GROUP != 1, reason="states the per-symbol layout's partition keys")

CSV = "Date,Open,High,Low,Close\n2010-01-04,1,2,0.5,1.5\n"


@pytest.fixture
def folder_config(make_settings, tmp_path, monkeypatch):
    folder = tmp_path / "incoming"
    folder.mkdir()
    cfg = make_settings(years={"start": 2008, "end": 2011}, universe={"source": "folder", "folder": {"path": str(folder)}})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    return folder


def tick(instance, cursor=None):
    return new_symbol_sensor(build_sensor_context(instance=instance, cursor=cursor))


@per_symbol_keys
def test_new_files_register_symbols_and_request_one_run_for_all_of_them(folder_config, instance):
    (folder_config / "aaa.csv").write_text(CSV)
    (folder_config / "bbb.csv").write_text(CSV)
    result = tick(instance)
    assert [r.partitions_def_name for r in result.dynamic_partitions_requests] == [SYMBOLS]
    assert list(result.dynamic_partitions_requests[0].partition_keys) == ["AAA", "BBB"]
    ranges = [(r.tags[ASSET_PARTITION_RANGE_START_TAG], r.tags[ASSET_PARTITION_RANGE_END_TAG]) for r in result.run_requests]
    assert ranges == [("AAA|2008", "BBB|2011")]


@per_symbol_keys
def test_known_unchanged_symbols_request_nothing_and_new_ones_do(folder_config, instance):
    (folder_config / "aaa.csv").write_text(CSV)
    first = tick(instance)
    instance.add_dynamic_partitions(SYMBOLS, ["AAA"])
    second = tick(instance, first.cursor)
    assert second.run_requests == [] and second.dynamic_partitions_requests == []
    (folder_config / "ccc.csv").write_text(CSV)
    third = tick(instance, second.cursor)
    assert [r.tags[ASSET_PARTITION_RANGE_START_TAG] for r in third.run_requests] == ["CCC|2008"]


@per_symbol_keys
def test_a_changed_file_reruns_its_symbol(folder_config, instance):
    path = folder_config / "aaa.csv"
    path.write_text(CSV)
    first = tick(instance)
    instance.add_dynamic_partitions(SYMBOLS, ["AAA"])
    path.write_text(CSV + "2010-01-05,1,2,0.5,1.6\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    second = tick(instance, first.cursor)
    assert [r.tags[ASSET_PARTITION_RANGE_START_TAG] for r in second.run_requests] == ["AAA|2008"]
    assert second.dynamic_partitions_requests == []


@per_symbol_keys
def test_an_unreadable_file_is_skipped_and_the_others_go_on(folder_config, instance):
    (folder_config / "aaa.csv").write_text(CSV)
    (folder_config / "empty.csv").write_text("")
    result = tick(instance)
    assert list(result.dynamic_partitions_requests[0].partition_keys) == ["AAA"]


@per_symbol_keys
def test_schedule_requests_one_run_over_the_latest_year_of_every_symbol_with_a_run_key(instance, monkeypatch, make_settings):
    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings(years={"start": 2000, "end": None})))
    instance.add_dynamic_partitions(SYMBOLS, ["AAA", "BBB", "CCC"])
    when = dt.datetime(2024, 3, 5, 2, 0, tzinfo=dt.timezone.utc)
    request = nightly_rebuild(build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert request.run_key == "nightly:2024-03-05"
    assert request.tags[ASSET_PARTITION_RANGE_START_TAG] == "AAA|2024"
    assert request.tags[ASSET_PARTITION_RANGE_END_TAG] == "CCC|2024"


@per_symbol_keys
def test_schedule_in_january_also_reruns_the_previous_year(instance, monkeypatch, make_settings):
    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings(years={"start": 2000, "end": None})))
    instance.add_dynamic_partitions(SYMBOLS, ["AAA"])
    when = dt.datetime(2024, 1, 3, 2, 0, tzinfo=dt.timezone.utc)
    request = nightly_rebuild(build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert (request.tags[ASSET_PARTITION_RANGE_START_TAG], request.tags[ASSET_PARTITION_RANGE_END_TAG]) == ("AAA|2023", "AAA|2024")


def test_schedule_without_symbols_skips_with_a_hint(instance):
    result = nightly_rebuild(build_schedule_context(instance=instance, scheduled_execution_time=dt.datetime(2024, 1, 2, 2)))
    assert isinstance(result, SkipReason) and "symbols sync" in result.skip_message


def test_definitions_load_with_jobs_schedule_and_sensor_off_by_default():
    job = defs.resolve_job_def("historical_build_and_train")
    assert job.partitions_def is not None
    schedule = defs.resolve_schedule_def("nightly_rebuild")
    assert schedule.cron_schedule == "0 2 * * *"
    assert schedule.default_status == DefaultScheduleStatus.STOPPED
    assert defs.resolve_sensor_def("new_symbol_sensor").default_status == DefaultSensorStatus.STOPPED
    assert {"project", "compute", "io_manager"} <= set(defs.resources)


def test_chain_sensor_requests_the_yearly_stages_of_the_years_a_successful_build_covered(instance):
    from dagster import build_run_status_sensor_context

    from pipeline.sensors import build_chain_sensor

    register_symbols(instance, ["AAA", "BBB"])
    run = instance.create_run_for_job(
        defs.resolve_job_def("historical_build_and_train"),
        tags={ASSET_PARTITION_RANGE_START_TAG: _layout_key(instance, "AAA|2001"),
              ASSET_PARTITION_RANGE_END_TAG: _layout_key(instance, "BBB|2003")},
    )
    instance.report_run_failed(run)  # any finished run will do for the context; the status is given below
    ctx = build_run_status_sensor_context(sensor_name="build_chain_sensor", dagster_event=_success_event(instance, run),
                                          dagster_instance=instance, dagster_run=run,
                                          repository_def=defs.get_repository_def())
    requests = build_chain_sensor(ctx)
    by_job = {r.job_name: r for r in requests}
    assert set(by_job) == {"yearly_stages", "atc_scan_job"}
    assert by_job["yearly_stages"].tags[ASSET_PARTITION_RANGE_START_TAG] == "2001"
    assert by_job["yearly_stages"].tags[ASSET_PARTITION_RANGE_END_TAG] == "2003"
    assert len({r.run_key for r in requests}) == 2 and all(run.run_id in r.run_key for r in requests)
    assert defs.resolve_sensor_def("build_chain_sensor").default_status == DefaultSensorStatus.RUNNING


def _success_event(instance, run):

    records = instance.get_records_for_run(run.run_id).records
    return next(r.event_log_entry.dagster_event for r in records if r.event_log_entry.dagster_event is not None)


def test_run_years_reads_single_keys_ranges_and_year_keys():
    from dagster._core.storage.tags import PARTITION_NAME_TAG

    from pipeline.chain import run_years

    assert run_years({PARTITION_NAME_TAG: "AAA|2005"}) == [2005]
    assert run_years({PARTITION_NAME_TAG: "2005"}) == [2005]
    assert run_years({ASSET_PARTITION_RANGE_START_TAG: "AAA|2003", ASSET_PARTITION_RANGE_END_TAG: "CCC|2001"}) == [2001, 2002, 2003]
    assert run_years({}) == []


def _layout_key(instance, key: str) -> str:
    """`AAA|2001` in this session's layout: the symbol's key, or its group's."""
    from resources.partitions import dynamic_key_of

    symbol, year = key.split("|")
    return f"{dynamic_key_of(instance, [symbol])[symbol]}|{year}"


def _build_run(instance, start, end, status):
    from dagster import DagsterRunStatus  # noqa: F401

    return instance.create_run_for_job(
        defs.resolve_job_def("historical_build_and_train"),
        tags={ASSET_PARTITION_RANGE_START_TAG: _layout_key(instance, start),
              ASSET_PARTITION_RANGE_END_TAG: _layout_key(instance, end)}, status=status)


def _chain_tick(instance, run):
    from dagster import build_run_status_sensor_context

    from pipeline.sensors import build_chain_sensor

    ctx = build_run_status_sensor_context(sensor_name="build_chain_sensor", dagster_event=_success_event(instance, run),
                                          dagster_instance=instance, dagster_run=run,
                                          repository_def=defs.get_repository_def())
    return build_chain_sensor(ctx)


def test_chain_sensor_waits_while_other_build_runs_are_in_flight(instance):
    from dagster import DagsterRunStatus

    register_symbols(instance, ["AAA", "BBB"])
    _build_run(instance, "AAA|2001", "AAA|2003", DagsterRunStatus.STARTED)
    done = _build_run(instance, "BBB|2001", "BBB|2003", DagsterRunStatus.SUCCESS)
    instance.report_run_failed(done)  # gives the context an event; the sensor reads statuses from the instance
    result = _chain_tick(instance, done)
    assert isinstance(result, SkipReason) and "still in flight" in result.skip_message


def test_chain_sensor_requests_the_yearly_stages_once_over_every_build_since_the_last_chain(instance):
    from dagster import DagsterRunStatus

    register_symbols(instance, ["AAA", "BBB"])
    _build_run(instance, "AAA|2001", "AAA|2002", DagsterRunStatus.SUCCESS)
    last = _build_run(instance, "BBB|2004", "BBB|2005", DagsterRunStatus.SUCCESS)
    instance.report_run_failed(last)
    requests = _chain_tick(instance, last)
    yearly = next(r for r in requests if r.job_name == "yearly_stages")
    assert (yearly.tags[ASSET_PARTITION_RANGE_START_TAG], yearly.tags[ASSET_PARTITION_RANGE_END_TAG]) == ("2001", "2005")
    assert yearly.tags["tradelab/chain"] == "1"


def test_the_weekly_vacuum_is_off_by_default_and_its_job_vacuums_every_table(make_settings, instance):
    import datetime as dt

    import polars as pl

    from config.partitions import SymbolYear
    from pipeline.definitions import build_resources
    from pipeline.maintenance import vacuum_job
    from resources.delta_store import DeltaStore

    schedule = defs.resolve_schedule_def("weekly_vacuum")
    assert schedule.cron_schedule == "0 3 * * 0" and schedule.default_status == DefaultScheduleStatus.STOPPED
    assert schedule.job_name == "vacuum_job" and defs.resolve_job_def("vacuum_job") is not None
    cfg = make_settings(storage={"vacuum_retention_hours": 0})
    store = DeltaStore(cfg.parent / "data")
    key = SymbolYear("AAA", 2010)
    for close in (1.0, 2.0):  # the second write leaves the first one's file unreferenced
        store.write("raw_bars", key, pl.DataFrame({"date": [dt.datetime(2010, 1, 4)], "symbol": ["AAA"], "close": [close]}))
    store.write_unpartitioned("atc_scan", pl.DataFrame({"symbol": ["AAA"]}))
    files = lambda: sorted(p.name for p in store.root.rglob("*.parquet") if "_delta_log" not in p.parts)  # noqa: E731
    before = files()
    res = vacuum_job.execute_in_process(instance=instance, resources=build_resources(str(cfg)))
    assert res.success
    assert len(files()) == len(before) - 1  # the first write's file of raw_bars; atc_scan's one file stays
    logs = [e.message for e in instance.all_logs(res.run_id) if "vacuum (0 h retention)" in (e.message or "")]
    assert logs and "1 file(s) removed from 2 table(s)" in logs[0]
    assert store.read("raw_bars", [key])["close"].to_list() == [2.0]


@per_symbol_keys
def test_a_bar_appended_to_one_symbol_of_a_long_table_requests_one_run_of_that_symbol(folder_config, instance):
    rows = "".join(f"S{i:03d},2010-01-0{d},1,2,0.5,1.5\n" for i in range(50) for d in (4, 5))
    path = folder_config / "universe.csv"
    path.write_text("symbol,date,open,high,low,close\n" + rows)
    first = tick(instance)
    assert len(first.run_requests) == 1  # 50 new symbols: one run, not 50
    assert (first.run_requests[0].tags[ASSET_PARTITION_RANGE_START_TAG],
            first.run_requests[0].tags[ASSET_PARTITION_RANGE_END_TAG]) == ("S000|2008", "S049|2011")
    instance.add_dynamic_partitions(SYMBOLS, [f"S{i:03d}" for i in range(50)])
    with path.open("a") as f:
        f.write("S017,2010-01-06,1,2,0.5,1.5\n")
    second = tick(instance, first.cursor)
    assert [(r.tags[ASSET_PARTITION_RANGE_START_TAG], r.tags[ASSET_PARTITION_RANGE_END_TAG]) for r in second.run_requests] \
        == [("S017|2008", "S017|2011")]
    assert second.dynamic_partitions_requests == []


@per_symbol_keys
def test_changed_symbols_apart_in_the_registration_order_never_rerun_the_ones_between(folder_config, instance):
    for name in ("aaa", "bbb", "ccc"):
        (folder_config / f"{name}.csv").write_text(CSV)
    first = tick(instance)
    instance.add_dynamic_partitions(SYMBOLS, ["AAA", "BBB", "CCC"])
    for name in ("aaa", "ccc"):
        path = folder_config / f"{name}.csv"
        path.write_text(CSV + "2010-01-05,1,2,0.5,1.6\n")
    second = tick(instance, first.cursor)
    assert sorted((r.tags[ASSET_PARTITION_RANGE_START_TAG], r.tags[ASSET_PARTITION_RANGE_END_TAG]) for r in second.run_requests) \
        == [("AAA|2008", "AAA|2011"), ("CCC|2008", "CCC|2011")]


YEARLY_ASSETS = ["regime", "cv_report", "meta_model", "predictions", "backtest", "evaluation"]


def _failed_yearly_run(make_settings, instance, first, last):
    """A real yearly-stages run over first..last that fails (no bars stored): Dagster marks
    every partition it planned as failed."""
    from dagster import materialize

    from pipeline.definitions import ALL_ASSETS, build_resources

    cfg = make_settings(years={"start": 2000, "end": 2020})
    result = materialize(ALL_ASSETS, selection=YEARLY_ASSETS, instance=instance, resources=build_resources(str(cfg)),
                         tags={ASSET_PARTITION_RANGE_START_TAG: str(first), ASSET_PARTITION_RANGE_END_TAG: str(last)},
                         raise_on_error=False)
    assert not result.success


def test_chain_sensor_requests_again_the_years_of_a_failed_yearly_run_after_a_build_of_2020(make_settings, instance):
    from dagster import AssetKey, AssetMaterialization, DagsterRunStatus

    from pipeline.sensors import RETRIED_TAG

    register_symbols(instance, ["AAA"])
    _failed_yearly_run(make_settings, instance, 2016, 2020)
    build = _build_run(instance, "AAA|2020", "AAA|2020", DagsterRunStatus.SUCCESS)
    instance.report_run_failed(build)
    yearly = next(r for r in _chain_tick(instance, build) if r.job_name == "yearly_stages")
    assert (yearly.tags[ASSET_PARTITION_RANGE_START_TAG], yearly.tags[ASSET_PARTITION_RANGE_END_TAG]) == ("2016", "2020")
    assert yearly.tags[RETRIED_TAG] == "2016,2017,2018,2019"
    for name in YEARLY_ASSETS:  # the retried run succeeded: nothing failed is left to ask for
        for year in range(2016, 2021):
            instance.report_runless_asset_event(AssetMaterialization(AssetKey(name), partition=str(year)))
    again = _build_run(instance, "AAA|2020", "AAA|2020", DagsterRunStatus.SUCCESS)
    instance.report_run_failed(again)
    yearly = next(r for r in _chain_tick(instance, again) if r.job_name == "yearly_stages")
    assert (yearly.tags[ASSET_PARTITION_RANGE_START_TAG], yearly.tags[ASSET_PARTITION_RANGE_END_TAG]) == ("2020", "2020")
    assert RETRIED_TAG not in yearly.tags


@per_symbol_keys
def test_a_registered_symbol_whose_file_is_gone_is_recorded_absent_by_the_sensor(folder_config, instance):
    import json

    from config.partitions import ABSENT_SYMBOLS_KEY

    (folder_config / "aaa.csv").write_text(CSV)
    instance.add_dynamic_partitions(SYMBOLS, ["AAA", "ZZZ"])  # ZZZ: a symbol of another source, or a deleted file
    tick(instance)
    absent = instance.run_storage.get_cursor_values({ABSENT_SYMBOLS_KEY})[ABSENT_SYMBOLS_KEY]
    assert json.loads(absent) == ["ZZZ"]  # the yearly stages leave it out (resources.io_manager)
