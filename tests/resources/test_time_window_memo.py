"""resources.time_window_memo: Dagster's window steps answered from a table, same answers."""

from datetime import datetime, timedelta, timezone

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
