"""A SQLite event log that stores a batch of asset events in two transactions.

A single-run backfill emits one materialization event per partition. Dagster's SQLite
storage writes each one separately (a new engine and two transactions per event, about
17 ms here), which dominates a rebuild of thousands of partitions. With
`DAGSTER_EVENT_BATCH_SIZE` set (`pipeline/__init__.py` sets 1000 unless already set),
Dagster hands a partitioned output's materializations to `store_event_batch` together;
this storage then writes them with the same statements as `store_event`, in one
transaction on the run's shard and one on the index shard (for the asset events that the
stock storage indexes; planned materializations live in the run shard only). Anything else
(events of several runs, check or run-status events) is stored event by event, exactly as the stock
storage does.

Connections are the stock ones (a new SQLite connection per use, NullPool), but the SQLAlchemy
engine of a shard is kept (the last few) instead of being built and disposed for every event.

`make`, the CLI and the demo create `DAGSTER_HOME/dagster.yaml` selecting this class;
an instance with the stock storage still works (then batches are stored one by one).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from dagster._core.errors import DagsterInvariantViolationError
from dagster._core.events import (
    ASSET_CHECK_EVENTS,
    ASSET_EVENTS,
    EVENT_TYPE_TO_PIPELINE_RUN_STATUS,
)
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._serdes import ConfigurableClassData
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool


def _synchronous_normal(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


class BatchedSqliteEventLogStorage(SqliteEventLogStorage):
    ENGINES_KEPT = 8  # the index shard's and the most recently used run shards' engines

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()  # before: the stock __init__ connects
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> "BatchedSqliteEventLogStorage":
        """A relative `base_dir` is relative to $DAGSTER_HOME, so the folder can move."""
        config = dict(config_value)
        base = Path(config["base_dir"])
        if not base.is_absolute():
            config["base_dir"] = str(Path(os.environ.get("DAGSTER_HOME", ".")) / base)
        return cls(inst_data=inst_data, **config)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        """The stock `_connect` (a new SQLite connection per use, under the storage's lock, the
        schema created on a shard's first use) without building a SQLAlchemy engine each time:
        with NullPool an engine holds no connection, only its set-up (a few ms, paid on every
        stored event before). The engines of the last few shards are kept, so a long-lived
        process that reads many runs does not collect one per run."""
        with self._db_lock:
            engine = self._engines.pop(shard, None) or self._engine(shard)
            self._engines[shard] = engine
            while len(self._engines) > self.ENGINES_KEPT:
                self._engines.popitem(last=False)[1].dispose()
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def _engine(self, shard: str) -> Engine:
        """NullPool as the stock storage; each connection with `synchronous=NORMAL`: in WAL mode
        (Dagster's) a commit then appends to the log without an fsync, so a crash of the process
        or the machine never corrupts the file and never loses a transaction half-way; a power
        loss may roll back the last commits (the Delta tables do not fsync either: README)."""
        engine = create_engine(
            self.conn_string_for_shard(shard),
            poolclass=NullPool,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
        )
        sqlalchemy_event.listen(engine, "connect", _synchronous_normal)
        return engine

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        events = list(events)
        if not events:
            return
        if len({e.run_id for e in events}) != 1:
            for event in events:
                self.store_event(event)
            return
        # Events that the stock store_event writes to the run shard, plus the index shard for
        # asset events, are written in groups; check and run-status events need its other
        # branches and are stored one by one, in order. A run's planning batch mixes the
        # planned materializations of every partition with a few planned check evaluations:
        # without the split it was stored event by event (tens of ms each).
        special = ASSET_CHECK_EVENTS | set(EVENT_TYPE_TO_PIPELINE_RUN_STATUS)
        group: list[EventLogEntry] = []
        for event in events:
            if event.is_dagster_event and event.dagster_event_type not in special:
                group.append(event)
                continue
            self._store_group(group)
            group = []
            self.store_event(event)
        self._store_group(group)

    def _store_group(self, events: list[EventLogEntry]) -> None:
        """Events of one run, none of them check or run-status events: one transaction on the
        run's shard, one on the index shard for the asset events. The rows are the stock
        storage's (`_event_to_row`), inserted with ONE compiled statement each (executemany;
        on the index shard with RETURNING, in parameter order, for the new ids): a statement
        per event cost as much to compile as the insert itself."""
        if not events:
            return
        if len(events) == 1:
            self.store_event(events[0])
            return
        rows = [self._event_to_row(e) for e in events]
        with self.run_connection(events[0].run_id) as conn:
            conn.execute(SqlEventLogStorageTable.insert(), rows)
        indexed = [(e, row) for e, row in zip(events, rows) if e.dagster_event_type in ASSET_EVENTS]
        if not indexed:
            return
        insert_returning_id = SqlEventLogStorageTable.insert().returning(
            SqlEventLogStorageTable.c.id, sort_by_parameter_order=True
        )
        with self.index_transaction() as conn:
            event_ids = [row[0] for row in conn.execute(insert_returning_id, [row for _, row in indexed])]
            if len(event_ids) != len(indexed) or None in event_ids:
                raise DagsterInvariantViolationError("the index shard returned no id for some asset events")
            self._store_asset_event_tags(conn, [e for e, _ in indexed], event_ids)
            # The asset-key row holds "last event" values: within a batch, the newest event
            # per (asset key, event type) decides its final state, so one upsert each.
            newest = {}
            for (event, _), event_id in zip(indexed, event_ids):
                newest[(event.dagster_event.asset_key, event.dagster_event_type)] = (event, event_id)
            for event, event_id in newest.values():
                self._store_asset_event(conn, event, event_id)
