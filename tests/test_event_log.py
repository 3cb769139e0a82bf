"""The batched SQLite event log: a single-run backfill's materializations, all recorded."""

from __future__ import annotations

from dagster import AssetKey, DagsterInstance

from assets.raw_bars import raw_bars
from pipeline.event_log import BatchedSqliteEventLogStorage
from pipeline.instance import DAGSTER_YAML
from tests.conftest import run_assets


def test_batched_storage_records_every_partition_of_a_single_run_backfill(make_settings, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "1000")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.event_log_storage, BatchedSqliteEventLogStorage)
        assert instance.event_log_storage._base_dir == str(home / "history" / "runs")
        result = run_assets([raw_bars], make_settings(), instance, ["AAA", "BBB"], [2009, 2010, 2011])
        assert result.success
        done = instance.get_materialized_partitions(AssetKey("raw_bars"))
        assert done == {f"{s}|{y}" for s in ("AAA", "BBB") for y in (2009, 2010, 2011)}
        records = instance.fetch_materializations(AssetKey("raw_bars"), limit=100).records
        assert len(records) == 6 and all(r.asset_materialization.metadata["rows"] for r in records)
