"""The batched SQLite event log: a single-run backfill's materializations, all recorded."""

from __future__ import annotations

from dagster import AssetKey, DagsterInstance

from assets.raw_bars import raw_bars
from pipeline.event_log import BatchedSqliteEventLogStorage
from pipeline.instance import ensure_dagster_home
from tests.conftest import run_assets


def test_batched_storage_records_every_partition_of_a_single_run_backfill(make_settings, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "1000")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    ensure_dagster_home()
    with DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.event_log_storage, BatchedSqliteEventLogStorage)
        assert instance.event_log_storage._base_dir == str(home / "history" / "runs")
        result = run_assets([raw_bars], make_settings(), instance, ["AAA", "BBB"], [2009, 2010, 2011])
        assert result.success
        done = instance.get_materialized_partitions(AssetKey("raw_bars"))
        assert done == {f"{s}|{y}" for s in ("AAA", "BBB") for y in (2009, 2010, 2011)}
        records = instance.fetch_materializations(AssetKey("raw_bars"), limit=100).records
        assert len(records) == 6 and all(r.asset_materialization.metadata["rows"] for r in records)


def test_the_generated_instance_file_names_an_absolute_event_log_folder(tmp_path, monkeypatch):
    """A process that opens the instance without DAGSTER_HOME set must not write elsewhere."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    home = ensure_dagster_home()
    monkeypatch.delenv("DAGSTER_HOME")
    monkeypatch.chdir(tmp_path)
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.event_log_storage._base_dir == str(home / "history" / "runs")
