"""The batched SQLite event log: a single-run backfill's materializations, all recorded."""

from __future__ import annotations

from dagster import AssetKey, DagsterEventType, DagsterInstance

from assets.raw_bars import raw_bars
from pipeline.event_log import BatchedSqliteEventLogStorage
from pipeline.instance import ensure_dagster_home
from resources.partitions import dynamic_key_of
from tests.conftest import SYMBOLS_PER_GROUP, run_assets


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
        dims = set(dynamic_key_of(instance, ["AAA", "BBB"]).values())  # the symbols, or their group
        assert done == {f"{d}|{y}" for d in dims for y in (2009, 2010, 2011)}
        records = instance.fetch_materializations(AssetKey("raw_bars"), limit=100).records
        assert len(records) == 3 * len(dims) and all(r.asset_materialization.metadata["rows"] for r in records)


def test_the_generated_instance_file_names_an_absolute_event_log_folder(tmp_path, monkeypatch):
    """A process that opens the instance without DAGSTER_HOME set must not write elsewhere."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    home = ensure_dagster_home()
    monkeypatch.delenv("DAGSTER_HOME")
    monkeypatch.chdir(tmp_path)
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.event_log_storage._base_dir == str(home / "history" / "runs")


def _index_view(instance: DagsterInstance) -> dict:
    """What readers of the index shard see for raw_bars: partitions, per-partition storage ids
    resolved back to their events, tags by event id, the asset record's last events."""
    key = AssetKey("raw_bars")
    storage = instance.event_log_storage
    latest = storage.get_latest_storage_id_by_partition(key, DagsterEventType.ASSET_MATERIALIZATION)
    by_id = {r.storage_id: r for r in instance.fetch_materializations(key, limit=1000).records}
    tags = storage.get_event_tags_for_asset(key, filter_tags={"dagster/partition/symbol": "BBB"})
    tagged = {}  # each event's partition -> the partition its tag rows (stored by event id) name
    for storage_id, rec in by_id.items():
        (t,) = storage.get_event_tags_for_asset(key, filter_event_id=storage_id)
        tagged.setdefault(rec.partition_key, set()).add(f"{t['dagster/partition/symbol']}|{t['dagster/partition/year']}")
    record = instance.get_asset_records([key])[0].asset_entry
    return {
        "materialized": instance.get_materialized_partitions(key),
        "latest_event_partition": {p: by_id[i].partition_key for p, i in latest.items()},
        "tags_by_event_id": tagged,
        "bbb_tags": sorted((t["dagster/partition/symbol"], t["dagster/partition/year"]) for t in tags),
        "last_materialization_partition": record.last_materialization.dagster_event.partition,
        "planned": storage.get_latest_storage_id_by_partition(key, DagsterEventType.ASSET_MATERIALIZATION_PLANNED).keys(),
    }


def test_batched_storage_indexes_exactly_like_the_stock_storage(make_settings, tmp_path, monkeypatch):
    """Same backfill on a stock SQLite instance and on ours: the index shard answers the same
    (ids from the batched insert point at the right events, tags and last-event rows agree)."""
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "1000")
    views = {}
    for kind in ("stock", "batched"):
        home = tmp_path / kind
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        if kind == "batched":
            ensure_dagster_home()
        else:
            home.mkdir()
        with DagsterInstance.from_config(str(home)) as instance:
            assert isinstance(instance.event_log_storage, BatchedSqliteEventLogStorage) == (kind == "batched")
            settings = make_settings()
            assert run_assets([raw_bars], settings, instance, ["AAA", "BBB"], [2009, 2010, 2011]).success
            assert run_assets([raw_bars], settings, instance, ["BBB"], [2010, 2011]).success  # newer events
            views[kind] = _index_view(instance)
    assert views["batched"] == views["stock"]
    assert views["batched"]["latest_event_partition"] == {p: p for p in views["batched"]["materialized"]}
    assert views["batched"]["tags_by_event_id"] == {p: {p} for p in views["batched"]["materialized"]}
    # the newest run's events (their order within the run is Dagster's, not the keys')
    bbb = next(iter(views["batched"]["materialized"])).split("|")[0] if SYMBOLS_PER_GROUP > 1 else "BBB"  # its group
    assert views["batched"]["last_materialization_partition"] in {f"{bbb}|2010", f"{bbb}|2011"}


def test_a_run_opens_one_sqlite_connection_per_shard_not_one_per_event(make_settings, tmp_path, monkeypatch):
    """Closing the last connection of a WAL database checkpoints it (about 17 ms here): the
    storage keeps one connection per shard instead of opening one per stored event."""
    from sqlite3 import dbapi2  # SQLAlchemy's pysqlite DBAPI

    opened: list[str] = []
    real_connect = dbapi2.connect

    def counting_connect(database, *args, **kwargs):
        opened.append(str(database))
        return real_connect(database, *args, **kwargs)

    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "1000")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    ensure_dagster_home()
    with DagsterInstance.from_config(str(home)) as instance:
        settings = make_settings()
        assert run_assets([raw_bars], settings, instance, ["AAA"], [2009]).success  # shards and schemas exist
        monkeypatch.setattr(dbapi2, "connect", counting_connect)
        result = run_assets([raw_bars], settings, instance, ["AAA", "BBB"], [2009, 2010])
        assert result.success
        events = instance.get_records_for_run(result.run_id).records
        per_shard = {}
        for name in opened:
            per_shard[name] = per_shard.get(name, 0) + 1
        shard = str(home / "history" / "runs" / f"{result.run_id}.db")
        assert len(events) > 20 and 1 <= per_shard.get(shard, 0) <= 2, (len(events), per_shard)


def test_a_forked_child_does_not_reuse_the_parents_sqlite_connections(make_settings, tmp_path, monkeypatch):
    """A process forked while the storage holds open connections starts with none of them (it
    opens its own), and the parent's stay usable."""
    import os

    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    ensure_dagster_home()
    with DagsterInstance.from_config(str(home)) as instance:
        assert run_assets([raw_bars], make_settings(), instance, ["AAA"], [2009]).success
        storage = instance.event_log_storage
        assert storage._engines
        stored = {f"{dynamic_key_of(instance, ['AAA'])['AAA']}|2009"}
        pid = os.fork()
        if pid == 0:  # the child: no inherited engine; reads through a connection of its own
            ok = not storage._engines and instance.get_materialized_partitions(AssetKey("raw_bars")) == stored
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert instance.get_materialized_partitions(AssetKey("raw_bars")) == stored
