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

The SQLAlchemy engine of a shard is kept (the last few), and with it ONE open SQLite
connection (a pool of one, used under the storage's lock): the stock storage opens and closes
a connection per use, and closing the last connection of a WAL database checkpoints and
deletes its WAL file (about 17 ms here, against 0.2 ms for a statement on an open
connection): a run paid that several times per event. An idle connection holds no lock (WAL),
so other processes read and write as before; a killed process leaves nothing locked. A forked
child drops the inherited connections without closing them (os.register_at_fork); a run's
shard deleted or wiped drops its connection first.

`make`, the CLI and the demo create `DAGSTER_HOME/dagster.yaml` selecting this class;
an instance with the stock storage still works (then batches are stored one by one).
"""

from __future__ import annotations

import os
import weakref
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
from sqlalchemy.pool import QueuePool


def _synchronous_normal(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


_STORAGES: weakref.WeakSet = weakref.WeakSet()  # this process's storages (their engines), for after a fork


def _forget_inherited_connections() -> None:
    """In a forked child: the parent's open SQLite connections must not be used (nor closed:
    that would checkpoint the parent's WAL under it); the child opens its own."""
    for storage in list(_STORAGES):
        for engine in storage._engines.values():
            engine.dispose(close=False)
        storage._engines = OrderedDict()


os.register_at_fork(after_in_child=_forget_inherited_connections)


class BatchedSqliteEventLogStorage(SqliteEventLogStorage):
    ENGINES_KEPT = 8  # the index shard's and the most recently used run shards' engines (one connection each)

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()  # before: the stock __init__ connects
        _STORAGES.add(self)
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
        """The stock `_connect` (under the storage's lock, the schema created on a shard's first
        use) on the shard's kept engine and connection instead of a new engine and connection
        per use. The engines of the last few shards are kept, so a long-lived process that
        reads many runs does not hold a connection per run."""
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
        """A pool of one kept connection (see the module doc; more only if a use nests), each
        connection with `synchronous=NORMAL`: in WAL mode
        (Dagster's) a commit then appends to the log without an fsync, so a crash of the process
        or the machine never corrupts the file and never loses a transaction half-way; a power
        loss may roll back the last commits (the Delta tables do not fsync either: docs/storage.md)."""
        engine = create_engine(
            self.conn_string_for_shard(shard),
            poolclass=QueuePool,
            pool_size=1,
            max_overflow=-1,
            # used from whichever thread holds the storage's lock (the stock storage's threads)
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
        )
        sqlalchemy_event.listen(engine, "connect", _synchronous_normal)
        return engine

    def _drop_engine(self, shard: str) -> None:
        with self._db_lock:
            engine = self._engines.pop(shard, None)
        if engine is not None:
            engine.dispose()

    def delete_events(self, run_id: str) -> None:
        super().delete_events(run_id)
        self._drop_engine(run_id)  # pipeline.maintenance then deletes the shard's files

    def wipe(self) -> None:
        for shard in list(self._engines):
            self._drop_engine(shard)
        super().wipe()

    def dispose(self) -> None:
        for shard in list(self._engines):
            self._drop_engine(shard)
        super().dispose()

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
