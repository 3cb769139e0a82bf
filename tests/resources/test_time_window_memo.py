"""resources.time_window_memo: Dagster's window steps answered from a table, same answers."""

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from dagster import TimeWindowPartitionMapping, TimeWindowPartitionsDefinition

import resources.partitions  # noqa: F401  (installs the memo, as the code location does)
from resources import time_window_memo

YEARS = TimeWindowPartitionsDefinition(cron_schedule="0 0 1 1 *", start="2000", end="2027", fmt="%Y")
METHODS = ("get_prev_partition_window", "get_next_partition_window")


@pytest.fixture
def dagster_own_methods(monkeypatch):
    """The class with Dagster's undecorated methods (the memo's __wrapped__)."""
    for name in METHODS:
        monkeypatch.setattr(TimeWindowPartitionsDefinition, name,
                            getattr(TimeWindowPartitionsDefinition, name).__wrapped__)


def _upstream_years(mapping: TimeWindowPartitionMapping, years: list[str]) -> list[list[str]]:
    return [sorted(mapping.get_upstream_mapped_partitions_result_for_partitions(
        YEARS.subset_with_partition_keys([y]), YEARS, YEARS).partitions_subset.get_partition_keys()) for y in years]


def test_the_memo_is_in_use_with_the_installed_dagster():
    assert time_window_memo.installed()
    assert time_window_memo.install()  # a second install changes nothing and says it is in use


HALOS = [(-1, 0), (-3, 0), (0, 1), (-26, 0), (-2, 2)]


@pytest.mark.parametrize(("start_offset", "end_offset"), HALOS)
def test_halo_mappings_give_dagster_own_upstream_years(start_offset, end_offset, request):
    mapping = TimeWindowPartitionMapping(start_offset=start_offset, end_offset=end_offset,
                                         allow_nonexistent_upstream_partitions=True)
    years = [str(y) for y in range(2000, 2027)]
    remembered = _upstream_years(mapping, years)
    remembered_again = _upstream_years(mapping, years)  # answered from the table this time
    request.getfixturevalue("dagster_own_methods")
    assert remembered == remembered_again == _upstream_years(mapping, years)
    assert remembered[5] == [str(y) for y in range(max(2000, 2005 + start_offset), min(2026, 2005 + end_offset) + 1)]


def test_the_same_instant_in_another_time_zone_gets_the_same_window():
    utc = datetime(2010, 1, 1, tzinfo=timezone.utc)
    elsewhere = utc.astimezone(timezone(timedelta(hours=-5)))
    assert YEARS.get_prev_partition_window(utc, respect_bounds=False) == \
        YEARS.get_prev_partition_window(elsewhere, respect_bounds=False)
    assert YEARS.get_prev_partition_window(utc, respect_bounds=False).start.year == 2009


def test_calls_with_bounds_still_apply_the_bounds():
    first = datetime(2000, 1, 1, tzinfo=timezone.utc)
    assert YEARS.get_prev_partition_window(first, respect_bounds=False).start.year == 1999
    assert YEARS.get_prev_partition_window(first) is None  # before the first partition
    last = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert YEARS.get_next_partition_window(last, respect_bounds=False).start.year == 2026
    assert YEARS.get_next_partition_window(datetime(2027, 1, 1, tzinfo=timezone.utc)) is None


def test_a_dagster_whose_methods_take_other_parameters_is_left_alone(monkeypatch):
    def other(self, start_dt, respect_bounds=True, current_time=None):
        return None

    monkeypatch.setattr(TimeWindowPartitionsDefinition, "get_prev_partition_window", other)
    assert not time_window_memo.install()
    assert TimeWindowPartitionsDefinition.get_prev_partition_window is other
    assert not time_window_memo.installed()


def test_a_repeated_step_is_answered_from_the_table_and_bounded_or_keyword_calls_are_not():
    calls = []

    def dagster_method(self, start_dt, respect_bounds=True):
        calls.append((start_dt, respect_bounds))
        return ("window of", start_dt.timestamp())

    remembered = time_window_memo._remembering(dagster_method)
    dt = datetime(2010, 1, 1, tzinfo=timezone.utc)
    assert remembered(YEARS, dt, respect_bounds=False) == remembered(YEARS, dt, False) == ("window of", dt.timestamp())
    assert len(calls) == 1
    remembered(YEARS, dt)
    remembered(YEARS, dt, respect_bounds=True)
    remembered(YEARS, start_dt=dt, respect_bounds=False)  # by keyword: Dagster's code, unremembered
    assert len(calls) == 4


def test_definitions_that_differ_keep_their_own_answers_for_one_instant():
    new_york = TimeWindowPartitionsDefinition(cron_schedule="0 0 1 1 *", start="2000", end="2027", fmt="%Y",
                                              timezone="America/New_York")
    instant = datetime(2010, 1, 1, 2, tzinfo=timezone.utc)  # 2009-12-31 21:00 in New York
    utc_window = YEARS.get_prev_partition_window(instant, respect_bounds=False)
    ny_window = new_york.get_prev_partition_window(instant, respect_bounds=False)
    assert utc_window.start == datetime(2009, 1, 1, tzinfo=ZoneInfo("UTC"))
    assert ny_window.start == datetime(2008, 1, 1, tzinfo=ZoneInfo("America/New_York"))
    assert YEARS.get_prev_partition_window(instant, respect_bounds=False) == utc_window  # from the table
