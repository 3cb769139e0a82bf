"""The Delta Lake store: one Delta table per asset (deltalake / delta-rs), one commit per run.

Layout: `<root>/<asset>/` is a Delta table (`_delta_log/` plus `year=<Y>/part-*.zstd.parquet`),
partitioned by an Int32 `year` column. A frame without `year` gets it from `date` (the
year of the row's date; such tables drop `year` again on `read`); a year asset whose frame
has neither gets the year of its single key. Rows are sorted by symbol then date, zstd.
Unpartitioned assets are one unpartitioned table, overwritten whole (schema included).

Writes. A run's output is ONE commit: `mode="overwrite"` with a predicate built from the
run's keys, `(year = 2010 AND symbol IN ('AAA','BBB')) OR (year = 2011 AND symbol IN
('AAA'))` (symbol x year) or `year IN (2010, 2011)` (year assets). Re-materializing a key
replaces exactly its rows; a key without rows is left empty (its old rows are deleted).
Rows outside the run's keys are a ValueError naming them (delta-rs would also refuse rows
that do not match the predicate). Symbols are checked against SYMBOL_PATTERN before any
predicate is built, so no quote can reach the SQL text. The first write creates the table.

Which keys exist. Delta keeps rows, not "partitions": a key written with no rows leaves no
file behind. Every commit therefore records its keys in the commit's custom metadata
(`pipeline.keys`, atomic with the data); a key is materialized when it has rows or when a
commit recorded it. Tables are created with `delta.enableExpiredLogCleanup=false`, so the
commit history (and with it time travel) is never trimmed by checkpoints.

Concurrency (measured with delta-rs 1.6.6, local file system, real processes): two
processes creating the same table at once both succeed (delta-rs itself re-commits the
loser as version 1). Two processes overwriting different symbols of the SAME year conflict
when both must rewrite one file that holds rows of both symbols (as a multi-symbol run
writes them): the slower commit raises `CommitFailedError: ... a concurrent transaction
added new data` (about 40 % of simultaneous pairs). Symbols already in separate files, and
different years, did not conflict. Re-running the whole write on the new snapshot always
resolved it, so writes retry with jittered exponential backoff (`max_attempts`, default 10,
then `CommitConflictError` naming the asset); `Commit.attempts` reports the tries. Nothing
is lost: each retry re-reads the table and rewrites only its own keys.

Durability. delta-rs does NOT fsync data files or the commit JSON (object_store's local
backend writes, then renames the commit into place without fsync). A SIGKILLed writer is
safe: readers only see committed versions, so they get the previous version, and the next
write succeeds (tested with a real SIGKILL); it leaves uncommitted `part-*.parquet` (and
`*.parquet#N` staging) files that `vacuum` removes once older than the retention. A power
loss or kernel crash, however, can lose the last commits or leave a commit JSON whose data
files never reached the disk. Run on a file system with data=ordered journaling (ext4
default) and treat the data folder as rebuildable from the raw inputs.

Modes. delta-rs creates files with 0666 & ~umask and folders with 0777 & ~umask (0644 /
0755 under the usual umask 022), so the data folder is readable by the group as it is;
nothing is chmod-ed afterwards (tested).

Schema. A partial overwrite must carry the stored columns and dtypes (ValueError naming
the columns otherwise; delta-rs itself refuses other column names but silently casts other
dtypes). Two exceptions keep empty keys harmless: a frame without rows is written in the
stored schema (the key is recorded, nothing else changes), and a table that holds no rows
at all takes the schema of the first frame with rows (one full overwrite; the empty keys
recorded before stay materialized). Unpartitioned tables are overwritten with their schema.

Schema evolution (SCHEMA_EVOLVING: the `features` and `specialists` tables, whose columns
are those of the selected feature packs, and the `backtest` table, whose columns grow with the
code: a store written before a figure was added takes it on the next run). A partial overwrite may ADD columns: the table's
schema is merged (delta-rs `schema_mode="merge"` with the predicate, tested with 1.6.6), and
rows of other keys read the new column as null until they are rebuilt. A frame WITHOUT some
stored columns (a pack no longer selected) drops nothing: the stored values of those columns
are carried over for the rewritten (symbol, date) rows (null for rows that were not there).
Dtype changes are still refused. Other tables keep the rule above. A column of these tables
has one owner: `claim_columns` records each column's defining entry and definition hash in
the table folder (`_column_owners.json`, resources.column_owners) before a run writes, and
refuses another definition under a recorded name.

Checkpoints. Opening a table replays its commit log from the latest checkpoint: without
checkpoints every commit since the table's creation (50 versions of the demo's `features`:
16 ms an open against 3 ms after a checkpoint; a nightly store passes 300 versions in a year).
The store writes a checkpoint of every CHECKPOINT_EVERY-th version right after committing it
(inside the table's commit lock for partitioned writes; `_checkpoint_if_due`); the JSON commits stay
(`delta.enableExpiredLogCleanup=false`), so time travel and `repair-store` see every version.
A checkpoint that fails (a full disk) leaves the commit as it landed and says so once in the
log: readers then replay the JSON commits as before.

Vacuum commits. A vacuum that removes files adds two commits (VACUUM START, VACUUM END),
so `version()` moves without a data change; one that removes nothing adds none.

Types. Delta timestamps are microseconds: `Datetime("ns")` columns are stored as
`Datetime("us")` and cast back to `Datetime("ns")` on read/scan (the project stores only
ns dates; sub-microsecond parts are lost). `year` is stored as Int32.

Damage. A commit file that does not parse, or a data file the log references that is gone,
makes opening the table, `read`, `partitions`, `years` and writes raise DamagedTableError
(resources.delta_repair): one line naming the table and the damage, pointing at
`python -m pipeline.cli repair-store`. A LazyFrame from `scan` is checked when the table is
opened; a data file lost after that surfaces as polars' FileNotFoundError at collect.

Vacuum. `vacuum` removes files no longer referenced by the table and older than the
retention (default 168 h = delta-rs's enforced minimum `delta.deletedFileRetentionDuration`;
a shorter one raises unless `enforce_retention_duration=False`). It runs delta-rs's full
vacuum (which also finds files of killed writers, which the default "lite" vacuum misses)
and removes `*.parquet#N` staging files of killed writers older than the retention.
Readers of versions newer than the retention keep working; older versions may not be
readable afterwards.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from deltalake import CommitProperties, DeltaTable, WriterProperties, write_deltalake
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, DeltaError, SchemaMismatchError, TableNotFoundError

from config.partitions import SymbolYear
from config.settings import SYMBOL_PATTERN
from resources.commit_lock import commit_lock
from resources.delta_files import (DataFile, Replacement, linked_copy, plan_replacement, remove_action, snapshot_files,
                                  StagingWriter, to_arrow)
from resources.delta_repair import DamagedTableError, raise_if_damaged

YEAR = "year"
KEYS_METADATA = "pipeline.keys"
PREDICATE_METADATA = "pipeline.replaces"  # the rows a commit replaced, as the predicate of its keys
TABLE_CONFIGURATION = {"delta.enableExpiredLogCleanup": "false"}
CHECKPOINT_EVERY = 10  # versions between checkpoints (Delta's usual interval)
_log = logging.getLogger(__name__)
MIN_RETENTION_HOURS = 168
MAX_ATTEMPTS = 10
SHARED_COLUMNS = frozenset({"features", "specialists"})  # tables whose columns come from the selected packs
# tables whose columns may grow (see above): the shared ones, and `backtest`, whose columns grow
# with the code (a figure added later, such as `trades`, reads null in years not yet rebuilt)
SCHEMA_EVOLVING = SHARED_COLUMNS | {"backtest"}
_DERIVED = "derived"  # table description flag: `year` was added by the store (dropped on read)

Key = SymbolYear | int


def _committed_version(plan: dict) -> int:
    """The version a commit made on `plan` (under the commit lock it lands on the planned one)."""
    return 0 if plan["version"] is None else plan["version"] + 1


def _checkpoint_if_due(path: Path, version: int) -> None:
    """A checkpoint of `version` when it is a multiple of CHECKPOINT_EVERY (module doc,
    "Checkpoints"); a failure is logged, the commit stands."""
    if version <= 0 or version % CHECKPOINT_EVERY:
        return
    try:
        DeltaTable(str(path), version=version).create_checkpoint()
    except (OSError, DeltaError) as err:
        _log.warning("%s: no checkpoint of version %d (%s); readers replay its commits instead", path, version, err)


class _StaleSnapshot(RuntimeError):
    """Another commit landed between a write's plan and its commit: plan again."""


class CommitConflictError(RuntimeError):
    """A write that still conflicted with concurrent writers after every retry."""


@dataclass(frozen=True)
class Commit:
    """One write: the asset, the table version it produced, its rows and keys."""

    asset: str
    version: int
    rows: int
    keys: tuple[Key, ...]
    attempts: int = 1  # > 1 when concurrent commits made it retry


def _checked_symbol(symbol: str) -> str:
    if not isinstance(symbol, str) or not SYMBOL_PATTERN.fullmatch(symbol):
        raise ValueError(f"symbol {symbol!r} is not allowed: expected [A-Z0-9._-]{{1,16}}")
    return symbol


def _checked_asset(asset: str) -> str:
    if not isinstance(asset, str) or not asset or not asset.replace("_", "").isalnum():
        raise ValueError(f"asset name {asset!r}: expected letters, digits and underscores")
    return asset


def _checked_year(year) -> int:
    if isinstance(year, bool) or not isinstance(year, int) or not 1 <= year <= 9999:
        raise ValueError(f"year {year!r}: expected an integer year such as 2010")
    return year


def _checked_keys(keys: Iterable[Key]) -> list[Key]:
    out: list[Key] = []
    # a run's keys repeat each symbol once per year (13,000 keys at 500 x 26): each distinct
    # symbol and year is validated once
    symbols: dict[str, str] = {}
    years: dict = {}
    for k in dict.fromkeys(keys):
        if isinstance(k, tuple):
            s, y = k[0], k[1]
            sym = symbols.get(s) if isinstance(s, str) else None
            if sym is None:
                sym = symbols[s] = _checked_symbol(s)
            yr = years.get((type(y), y)) if isinstance(y, int) else None
            if yr is None:
                yr = years[(type(y), y)] = _checked_year(y)
            out.append(SymbolYear(sym, yr))
        else:
            out.append(_checked_year(k))
    if any(isinstance(k, tuple) for k in out) and any(not isinstance(k, tuple) for k in out):
        raise ValueError("keys mix SymbolYear and plain years")
    return out


def partition_predicate(keys: Iterable[Key]) -> str:
    """The overwrite predicate of a run's keys (validated here, so no quote gets through)."""
    keys = _checked_keys(keys)
    if not keys:
        raise ValueError("no partition keys: nothing to overwrite")
    if not isinstance(keys[0], tuple):
        return f"{YEAR} IN ({', '.join(str(y) for y in sorted(keys))})"
    by_year: dict[int, list[str]] = {}
    for k in sorted(keys):
        by_year.setdefault(k.year, []).append(k.symbol)
    return " OR ".join(
        f"({YEAR} = {y} AND symbol IN ({','.join(repr(s) for s in syms)}))" for y, syms in by_year.items()
    )


def _key_text(key: Key) -> str:
    return f"{key.symbol}|{key.year}" if isinstance(key, tuple) else str(key)


def _parse_key(text: str) -> Key:
    if "|" in text:
        s, y = text.split("|")
        return SymbolYear(s, int(y))
    return int(text)


def _is_conflict(exc: BaseException) -> bool:
    # A schema mismatch at write time is a concurrent writer's schema merge landing between
    # this attempt's conform (_conform_schema) and its write: a schema change of our own is
    # refused before the write, so the retry conforms again on the new snapshot.
    if isinstance(exc, (CommitFailedError, SchemaMismatchError, _StaleSnapshot)):
        return True
    text = str(exc).lower()
    return isinstance(exc, DeltaError) and ("concurrent" in text or "conflict" in text or "version already exists" in text)


def _ns_dates(frame: pl.DataFrame | pl.LazyFrame, schema: pl.Schema) -> pl.DataFrame | pl.LazyFrame:
    casts = [pl.col(c).dt.cast_time_unit("ns") for c, t in schema.items() if isinstance(t, pl.Datetime) and t.time_unit != "ns"]
    return frame.with_columns(casts) if casts else frame


class DeltaStore:
    """One Delta table per asset under `root`: one-commit writes, time travel, vacuum."""

    def __init__(self, root: Path | str, max_attempts: int = MAX_ATTEMPTS, backoff_seconds: float = 0.05,
                 target_file_size: int | None = None):
        self.root = Path(root)
        self.target_file_size = target_file_size  # bytes per data file (None: delta-rs's default)
        self.max_attempts = max_attempts
        self.backoff_seconds = backoff_seconds
        self._recorded: dict[tuple[str, int], frozenset] = {}

    # paths and table facts ---------------------------------------------------------------
    def asset_dir(self, asset: str) -> Path:
        return self.root / _checked_asset(asset)

    def exists(self, asset: str) -> bool:
        return (self.asset_dir(asset) / "_delta_log").is_dir() and any((self.asset_dir(asset) / "_delta_log").glob("*.json"))

    def table(self, asset: str, version: int | None = None) -> DeltaTable:
        """The asset's DeltaTable (at `version`); FileNotFoundError naming the asset if absent."""
        path = self.asset_dir(asset)
        try:
            return DeltaTable(str(path), version=version) if version is not None else DeltaTable(str(path))
        except TableNotFoundError:
            raise FileNotFoundError(f"{path}: asset {asset!r} has no Delta table yet; materialize {asset} first") from None
        except DeltaError:
            raise_if_damaged(path)
            raise

    @contextmanager
    def _guard(self, asset: str):
        """A read or write of `asset` that fails on a damaged table raises DamagedTableError
        instead (one line); other failures pass unchanged."""
        try:
            yield
        except DamagedTableError:
            raise
        except (OSError, DeltaError, pl.exceptions.ComputeError):
            raise_if_damaged(self.asset_dir(asset))
            raise

    def version(self, asset: str) -> int:
        """The table's current version (record it with a model to read the same data later)."""
        return self.table(asset).version()

    def versions(self, assets: Iterable[str]) -> dict[str, int | None]:
        """{asset: current version, None without a table}: what a model records as the
        `table_versions` it was trained on (read them back with `scan(..., version=v)`)."""
        return {a: self.version(a) if self.exists(a) else None for a in assets}

    def assets(self) -> list[str]:
        """Every asset with a Delta table under the root."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and (p / "_delta_log").is_dir())

    def claim_columns(self, asset: str, owners: dict[str, dict]) -> list[str]:
        """Record who defines each column of the shared (SHARED_COLUMNS) table `asset` before
        a run writes them; a different definition under a recorded name is a ColumnOwnerError
        of one line (resources.column_owners). Returns the columns newly recorded."""
        from resources.column_owners import claim_columns

        if asset not in SHARED_COLUMNS:
            raise ValueError(f"{asset}: columns are claimed in the shared tables only; expected one of "
                             f"{sorted(SHARED_COLUMNS)}")
        return claim_columns(self.asset_dir(asset), owners)

    # writes ------------------------------------------------------------------------------
    def write(self, asset: str, key: SymbolYear, df: pl.DataFrame) -> Commit:
        """Replace one symbol x year partition with `df` (one commit)."""
        return self.write_split(asset, [key], df)

    def write_split(self, asset: str, keys: Iterable[SymbolYear], df: pl.DataFrame) -> Commit:
        """Replace the partitions `keys` with the rows of `df` in one commit.

        Rows go to their `symbol` and the year of their `date` (or their `year` column); a
        key without rows is left empty. Rows outside `keys` are a ValueError naming them."""
        keys = _checked_keys(keys)
        if not keys or not all(isinstance(k, tuple) for k in keys):
            raise ValueError(f"{asset}: write_split needs SymbolYear keys, got {keys[:3]}")
        return self._overwrite(asset, keys, df)

    def write_year(self, asset: str, year: int, df: pl.DataFrame) -> Commit:
        """Replace one year of a year-partitioned asset (one commit)."""
        return self.write_years(asset, [year], df)

    def write_years(self, asset: str, years: Iterable[int], df: pl.DataFrame) -> Commit:
        """Replace several years of a year-partitioned asset in one commit."""
        keys = _checked_keys(years)
        if not keys or any(isinstance(k, tuple) for k in keys):
            raise ValueError(f"{asset}: write_years needs integer years, got {keys[:3]}")
        return self._overwrite(asset, keys, df)

    def write_unpartitioned(self, asset: str, df: pl.DataFrame) -> Commit:
        """Overwrite the whole (unpartitioned) table, schema included, in one commit."""
        path = self.asset_dir(asset)
        path.parent.mkdir(parents=True, exist_ok=True)
        df = self._sorted(df)

        def attempt(_: int) -> None:
            write_deltalake(
                str(path), df.to_arrow(), mode="overwrite", schema_mode="overwrite",
                configuration=TABLE_CONFIGURATION, writer_properties=_writer_properties(), target_file_size=self.target_file_size,
                commit_properties=CommitProperties(custom_metadata={KEYS_METADATA: "[]"}),
            )

        attempts = self._with_retries(asset, attempt)
        version = self.version(asset)
        # no commit lock here (delta-rs's own conflict check serialises whole overwrites): a
        # commit landing in between may take the due version's checkpoint with it (harmless)
        _checkpoint_if_due(path, version)
        return Commit(asset, version, df.height, (), attempts)

    def _overwrite(self, asset: str, keys: list[Key], df: pl.DataFrame, derived: bool | None = None) -> Commit:
        return self.write_stream(asset, keys, [df], derived=derived)

    def write_stream(self, asset: str, keys: Iterable[Key], frames: Iterable[pl.DataFrame | pl.LazyFrame],
                     derived: bool | None = None, drop_symbols: Callable[[], Iterable[str]] | None = None) -> Commit | None:
        """Replace the partitions `keys` (SymbolYear keys, or years) with the rows of `frames`,
        an iterable of chunks (e.g. one symbol group each, produced as they are consumed), in
        ONE commit. Each chunk is checked, conformed and written as its own Parquet files as
        it arrives and then dropped, so memory holds one chunk, never the run's whole output
        (resources.delta_files); the commit then replaces exactly the run's keys. Every rule of
        the whole-frame writes holds per chunk: rows outside `keys` are a ValueError naming
        them, a key without rows is left empty, schema rules as in the module doc.
        `drop_symbols`, asked once the frames are consumed, names symbols whose keys stay out
        of the commit (a stage's failed symbols: their stored rows are kept); None is
        returned when no key is left."""
        keys = _checked_keys(keys)
        if not keys:
            raise ValueError(f"{asset}: no partition keys: nothing to overwrite")
        path = self.asset_dir(asset)
        schema: pl.Schema | None = None  # of the rows as staged (with `year`)
        empty_schema: pl.Schema | None = None
        rows = 0
        path.mkdir(parents=True, exist_ok=True)
        with self._guard(asset):
            with StagingWriter(path) as writer:  # a chunk's files are written while the next is built
                for df in frames:
                    if isinstance(df, pl.LazyFrame):
                        df = df.collect()
                    if derived is None:
                        derived = YEAR not in df.columns
                    df = self._with_year(asset, keys, df)
                    self._refuse_stray_rows(asset, keys, df)
                    if df.height == 0:
                        empty_schema = empty_schema or df.schema
                        continue
                    df = self._sorted(df)
                    data, _, _ = self._conform_schema(asset, df, _keys_of(df, keys))
                    if schema is None:
                        schema = data.schema
                    elif data.schema != schema:
                        data = _like(asset, data, schema)
                    writer.submit(data)
                    rows += df.height
                    del df, data
            staged = writer.files
            if drop_symbols is not None:
                dropped = set(drop_symbols())
                keys = [k for k in keys if not (isinstance(k, tuple) and k.symbol in dropped)]
                if not keys:
                    return None
            if schema is None:  # no rows at all: the keys are recorded empty, in the stored schema
                schema = self._stored_schema(asset) or empty_schema
            meta = {KEYS_METADATA: json.dumps([_key_text(k) for k in keys]), PREDICATE_METADATA: partition_predicate(keys)}
            attempts = self._with_retries(
                asset, lambda n: self._commit_files(asset, keys, staged, schema, bool(derived), meta, locked_plan=n > 0))
        return Commit(asset, self.version(asset), rows, tuple(keys), attempts)

    def _stored_schema(self, asset: str) -> pl.Schema | None:
        if not self.exists(asset):
            return None
        lf = pl.scan_delta(self.table(asset))
        return _ns_dates(lf, lf.collect_schema()).collect_schema()

    def _commit_files(self, asset: str, keys: list[Key], staged: list[DataFile], schema: pl.Schema,
                      derived: bool, meta: dict, locked_plan: bool) -> None:
        """One commit of the staged files that replaces the rows of `keys`. The plan (which
        files to remove, the remainders to write) is made on the latest snapshot; the
        commit lands only if the table is still at that version (checked under the table's
        commit lock, resources.commit_lock), else _StaleSnapshot and the caller plans again,
        then inside the lock."""
        path = self.asset_dir(asset)
        if locked_plan:
            with commit_lock(path):
                plan = self._plan(asset, keys, schema)
                self._apply(asset, keys, staged, schema, derived, meta, plan)
                _checkpoint_if_due(path, _committed_version(plan))
            return
        plan = self._plan(asset, keys, schema)
        with commit_lock(path):
            now = self.table(asset).version() if self.exists(asset) else None
            if now != plan["version"]:
                raise _StaleSnapshot(f"{asset}: version {now} landed after planning on {plan['version']}")
            self._apply(asset, keys, staged, schema, derived, meta, plan)
            _checkpoint_if_due(path, _committed_version(plan))

    def _plan(self, asset: str, keys: list[Key], schema: pl.Schema) -> dict:
        """How to commit: `create` (no table), `append` (remove the key's files, add), `merge`
        (new columns: every file of the run's years replaced, the untouched ones re-added as
        hard links), `replace` (the table holds no rows: its schema is replaced whole)."""
        path = self.asset_dir(asset)
        if not self.exists(asset):
            return {"version": None, "mode": "create", "plan": Replacement([], [], [])}
        table = self.table(asset)
        files = snapshot_files(table)
        lf = pl.scan_delta(table)
        stored = dict(_ns_dates(lf, lf.collect_schema()).collect_schema())
        given = dict(_ns_dates(pl.DataFrame(schema=schema), schema).schema)
        years = sorted({k.year if isinstance(k, tuple) else k for k in keys})
        by_year: dict[int, list[str]] | None = None
        if isinstance(keys[0], tuple):
            by_year = {}
            for k in keys:
                by_year.setdefault(k.year, []).append(k.symbol)
        if stored == given or set(given) < set(stored):
            mode = "append"  # (fewer columns only when a concurrent run merged some since: they read null here)
        elif int(files.get_column("num_records").fill_null(1).sum()) == 0:
            mode = "replace"
        else:
            mode = "merge"
        plan = plan_replacement(path, files, by_year, years) if mode != "replace" else Replacement([], [], [])
        return {"version": table.version(), "mode": mode, "plan": plan, "years": years, "table": table}

    def _apply(self, asset: str, keys: list[Key], staged: list[DataFile], schema: pl.Schema, derived: bool,
               meta: dict, plan: dict) -> None:
        from deltalake.transaction import create_table_with_add_actions

        path = self.asset_dir(asset)
        repl: Replacement = plan["plan"]
        props = CommitProperties(custom_metadata=meta)
        arrow_schema = _arrow_schema(schema)
        adds = [f.add_action() for f in staged + repl.remainders]
        if plan["mode"] == "create":
            create_table_with_add_actions(
                str(path), DeltaSchema.from_arrow(arrow_schema), adds, mode="error", partition_by=[YEAR],
                description=json.dumps({YEAR: _DERIVED if derived else "column"}),
                configuration=TABLE_CONFIGURATION, commit_properties=props)
            return
        table: DeltaTable = plan["table"]
        if plan["mode"] == "append":
            actions = [remove_action(r) for r in repl.removed] + adds
            table.create_write_transaction(actions, mode="append", schema=table.schema(), partition_by=[YEAR],
                                           commit_properties=props)
        elif plan["mode"] == "merge":
            adds += [linked_copy(path, r).add_action() for r in repl.kept]
            table.create_write_transaction(adds, mode="overwrite", schema=arrow_schema, partition_by=[YEAR],
                                           partition_filters=[(YEAR, "in", [str(y) for y in plan["years"]])],
                                           commit_properties=props)
        else:  # replace: the table has no rows; its schema becomes the run's
            table.create_write_transaction(adds, mode="overwrite", schema=arrow_schema, partition_by=[YEAR],
                                           commit_properties=props)

    def _with_retries(self, asset: str, attempt) -> int:
        """Run `attempt(n)` (n: the attempt, from 0) until it commits; retry commit conflicts
        with jittered exponential backoff, at most `max_attempts` times. Returns the number
        of attempts."""
        last: BaseException | None = None
        for n in range(self.max_attempts):
            try:
                attempt(n)
                return n + 1
            except (CommitFailedError, DeltaError, _StaleSnapshot) as exc:
                if not _is_conflict(exc):
                    raise
                last = exc
                if n + 1 < self.max_attempts:
                    time.sleep(min(2.0, self.backoff_seconds * 2**n) * random.uniform(0.5, 1.5))
        raise CommitConflictError(
            f"{asset}: commit still conflicted with concurrent writers after {self.max_attempts} attempts; "
            f"last error: {last}"
        ) from last

    @staticmethod
    def _with_year(asset: str, keys: list[Key], df: pl.DataFrame) -> pl.DataFrame:
        if YEAR in df.columns:
            return df.with_columns(pl.col(YEAR).cast(pl.Int32))
        if "date" in df.columns:
            return df.with_columns(pl.col("date").dt.year().cast(pl.Int32).alias(YEAR))
        years = sorted({k.year if isinstance(k, tuple) else k for k in keys})
        if len(years) != 1:
            raise ValueError(f"{asset}: frame has neither `date` nor `year`, so its rows cannot be split over years {years}")
        return df.with_columns(pl.lit(years[0], pl.Int32).alias(YEAR))

    @staticmethod
    def _refuse_stray_rows(asset: str, keys: list[Key], df: pl.DataFrame) -> None:
        wanted = set(keys)
        if isinstance(keys[0], tuple):
            if "symbol" not in df.columns:
                raise ValueError(f"{asset}: a symbol x year asset needs a `symbol` column")
            stray = [f"{s}|{y}" for s, y in df.select("symbol", YEAR).unique().rows() if (s, y) not in wanted]
        else:
            stray = [str(y) for y in df.get_column(YEAR).unique().to_list() if y not in wanted]
        if stray:
            stray.sort()
            raise ValueError(f"{asset}: rows for partitions outside this run: {stray[:5]}{' ...' if len(stray) > 5 else ''}")

    def _conform_schema(self, asset: str, df: pl.DataFrame, keys: list[Key]) -> tuple[pl.DataFrame, bool, bool]:
        """(frame, replace_schema, merge). A frame with the stored schema goes as it is. Where
        the schemas differ: a frame without rows (an empty key, e.g. a year with nothing to
        train on) is written in the stored schema; a table that holds no rows at all (only
        empty keys so far) takes the frame's schema whole (replace_schema); a SCHEMA_EVOLVING
        table merges added columns and carries over the stored values of missing ones
        (`_evolve`); otherwise a ValueError (`_refuse_schema_change`)."""
        if not self.exists(asset):
            return df, False, False
        lf = pl.scan_delta(self.table(asset))
        raw = lf.collect_schema()
        stored = dict(_ns_dates(lf, raw).collect_schema())
        given = dict(_ns_dates(df.head(0), df.schema).schema)
        if stored == given:
            return df, False, False
        if df.height == 0:
            return pl.DataFrame(schema=raw), False, False
        if lf.select(pl.len()).collect().item() == 0:
            return df, True, False
        if asset in SCHEMA_EVOLVING and all(stored[c] == given[c] for c in stored.keys() & given.keys()):
            return self._evolve(asset, df, keys, stored, given)
        self._refuse_schema_change(asset, df)
        return df, False, False

    def _evolve(self, asset: str, df: pl.DataFrame, keys: list[Key], stored: dict, given: dict) -> tuple[pl.DataFrame, bool, bool]:
        """`df` in the stored column order plus its new columns (merge), with the stored
        values of the columns it lacks carried over by (symbol, date)."""
        missing = [c for c in stored if c not in given]
        if missing:
            on = [c for c in ("symbol", "date") if c in df.columns]
            kept = None
            if len(on) == 2:
                try:  # the chunk's keys that are stored (none stored: nothing to carry over)
                    kept = (self.scan(asset, keys, allow_missing=True).select(*on, *missing)
                            .with_columns(pl.col("date").cast(df.schema["date"])).collect())
                except FileNotFoundError:
                    kept = None
            if kept is not None:
                df = df.join(kept, on=on, how="left", maintain_order="left")
            else:
                df = df.with_columns(*[pl.lit(None, stored[c]).alias(c) for c in missing])
        added = [c for c in given if c not in stored]
        return df.select(*stored, *added), False, bool(added)

    def _refuse_schema_change(self, asset: str, df: pl.DataFrame) -> None:
        """A partial overwrite must match the stored columns: delta-rs would refuse other
        names and silently cast other dtypes (Float64 into a Float32 column)."""
        if not self.exists(asset):
            return
        lf = pl.scan_delta(self.table(asset))
        stored = dict(_ns_dates(lf, lf.collect_schema()).collect_schema())
        given = dict(_ns_dates(df.head(0), df.schema).schema)
        if stored != given:
            diff = sorted({c for c in stored.keys() | given.keys() if stored.get(c) != given.get(c)})
            raise ValueError(
                f"{asset}: the frame's columns differ from the stored table in {diff[:8]} "
                f"(stored {[str(stored.get(c)) for c in diff[:8]]}, given {[str(given.get(c)) for c in diff[:8]]}); "
                f"a partial overwrite cannot change the schema: remove {self.asset_dir(asset)} and materialize "
                f"every partition of {asset} again"
            )

    @staticmethod
    def _sorted(df: pl.DataFrame) -> pl.DataFrame:
        """`df` sorted by symbol then date (stable); a frame already in that order (as the
        stages produce it) is returned as it is, without the sort's copy."""
        by = [c for c in ("symbol", "date") if c in df.columns]
        if not by or df.height < 2:
            return df
        prev = [pl.col(c).shift(1) for c in by]
        if len(by) == 2:
            out_of_order = (pl.col("symbol") < prev[0]) | ((pl.col("symbol") == prev[0]) & (pl.col("date") < prev[1]))
        else:
            out_of_order = pl.col(by[0]) < prev[0]
        if not df.select(out_of_order.fill_null(False).any()).item():
            return df
        return df.sort(by, maintain_order=True)

    # reads -------------------------------------------------------------------------------
    def scan(self, asset: str, keys: Iterable[Key] | None = None, allow_missing: bool = False,
             version: int | None = None) -> pl.LazyFrame:
        """A lazy scan (with the `year` column) of some keys or the whole table, at `version`
        when given (time travel). Filters on year and symbol are pushed down to file pruning."""
        table = self.table(asset, version)
        lf = pl.scan_delta(table)
        lf = _ns_dates(lf, lf.collect_schema())
        if keys is None:
            return lf
        present = self._present(asset, table, _checked_keys(keys), allow_missing)
        return lf.filter(_key_filter(present))

    def read(self, asset: str, keys: Iterable[Key] | None = None, allow_missing: bool = False,
             version: int | None = None) -> pl.DataFrame:
        """The rows of `keys` (None: the whole table) as one frame sorted by symbol then date,
        without the `year` column when the store derived it."""
        table = self.table(asset, version)
        with self._guard(asset):
            df = self.scan(asset, keys, allow_missing, version=table.version()).collect()
        by = [c for c in ("symbol", YEAR, "date") if c in df.columns]
        df = df.sort(by, maintain_order=True) if by else df
        return df.drop(YEAR) if YEAR in df.columns and _year_derived(table) else df

    def partitions(self, asset: str) -> list[SymbolYear]:
        """Every materialized symbol x year key of `asset` (with rows, or recorded empty)."""
        table = self.table(asset)
        if "symbol" not in table.schema().to_arrow().names:
            return []
        with self._guard(asset):
            have = pl.scan_delta(table).select("symbol", YEAR).unique().collect().rows()
            keys = {SymbolYear(s, y) for s, y in have} | {k for k in self._recorded_keys(asset, table) if isinstance(k, tuple)}
        return sorted(keys)

    def years(self, asset: str) -> list[int]:
        """Every materialized year of a year-partitioned asset."""
        table = self.table(asset)
        with self._guard(asset):
            have = set(pl.scan_delta(table).select(YEAR).unique().collect().get_column(YEAR).to_list())
            return sorted(have | {k for k in self._recorded_keys(asset, table) if not isinstance(k, tuple)})

    def _present(self, asset: str, table: DeltaTable, keys: list[Key], allow_missing: bool) -> list[Key]:
        if not keys:
            raise ValueError(f"{asset}: no partitions requested")
        symbol_keys = isinstance(keys[0], tuple)
        lf = pl.scan_delta(table)
        years = sorted({k.year if symbol_keys else k for k in keys})
        if symbol_keys:
            rows = (lf.filter(pl.col(YEAR).is_in(years) & pl.col("symbol").is_in(sorted({k.symbol for k in keys})))
                    .select("symbol", YEAR).unique().collect().rows())
            with_rows = {SymbolYear(s, y) for s, y in rows}
        else:
            with_rows = set(lf.filter(pl.col(YEAR).is_in(years)).select(YEAR).unique().collect().get_column(YEAR).to_list())
        missing = [k for k in keys if k not in with_rows]
        if missing:
            recorded = self._recorded_keys(asset, table)
            missing = [k for k in missing if k not in recorded]
        if missing and not (allow_missing and len(missing) < len(keys)):
            shown = [_key_text(k) for k in sorted(missing)]
            raise FileNotFoundError(
                f"{self.asset_dir(asset)}: partition(s) not materialized yet: {shown[:5]}"
                f"{' ...' if len(shown) > 5 else ''}; materialize {asset} for them first"
            )
        return sorted(set(keys) - set(missing))

    def _recorded_keys(self, asset: str, table: DeltaTable) -> frozenset:
        """Keys recorded by the commits up to the table's version (cached per version)."""
        cache_key = (str(self.asset_dir(asset)), table.version())
        if cache_key not in self._recorded:
            out = set()
            for commit in table.history():
                if commit.get("version", 0) > table.version():
                    continue
                for text in json.loads(commit.get(KEYS_METADATA, "[]")):
                    out.add(_parse_key(text))
            self._recorded[cache_key] = frozenset(out)
        return self._recorded[cache_key]

    # maintenance -------------------------------------------------------------------------
    def vacuum(self, asset: str | None = None, retention_hours: int = MIN_RETENTION_HOURS,
               enforce_retention_duration: bool = True) -> list[str]:
        """Remove files no table version within the retention references (and files of
        killed writers) older than `retention_hours`; return them as `<asset>/<file>` paths.
        delta-rs refuses a retention under 168 h unless `enforce_retention_duration=False`."""
        removed: list[str] = []
        cutoff = time.time() - retention_hours * 3600
        for name in [asset] if asset is not None else self.assets():
            table = self.table(name)
            files = table.vacuum(retention_hours=retention_hours, dry_run=False,
                                 enforce_retention_duration=enforce_retention_duration, full=True)
            removed += [f"{name}/{f}" for f in files]
            base = self.asset_dir(name)
            for staging in base.glob("**/*.parquet#*"):
                if "_delta_log" not in staging.parts and staging.stat().st_mtime < cutoff:
                    staging.unlink(missing_ok=True)
                    removed.append(f"{name}/{staging.relative_to(base)}")
        return sorted(removed)


def _keys_of(df: pl.DataFrame, keys: list[Key]) -> list[Key]:
    """The keys of `keys` that rows of `df` (with `year`) belong to."""
    if isinstance(keys[0], tuple):
        return [SymbolYear(s, y) for s, y in df.select("symbol", YEAR).unique().sort("symbol", YEAR).rows()]
    return sorted(int(y) for y in df.get_column(YEAR).unique())


def _like(asset: str, df: pl.DataFrame, schema: pl.Schema) -> pl.DataFrame:
    """A later chunk in the first chunk's column order and dtypes (ValueError when its columns differ)."""
    if set(df.columns) != set(schema.names()):
        diff = sorted(set(df.columns) ^ set(schema.names()))
        raise ValueError(f"{asset}: a chunk of the run's rows has other columns than the first chunk: {diff[:8]}")
    return df.select([pl.col(c).cast(t) for c, t in schema.items()])


def _arrow_schema(schema: pl.Schema):
    """The Delta schema of frames with `schema` as written (ns datetimes in us)."""
    return to_arrow(pl.DataFrame(schema=schema)).schema


def _writer_properties() -> WriterProperties:
    return WriterProperties(compression="ZSTD")


def _year_derived(table: DeltaTable) -> bool:
    try:
        return json.loads(table.metadata().description or "{}").get(YEAR) == _DERIVED
    except (ValueError, AttributeError):
        return False


def _key_filter(keys: list[Key]) -> pl.Expr:
    """year/symbol filter of `keys`: coarse `is_in`s (pruned to files) then the exact pairs."""
    if not keys:
        return pl.lit(False)
    if not isinstance(keys[0], tuple):
        return pl.col(YEAR).is_in(sorted(keys))
    years = sorted({k.year for k in keys})
    symbols = sorted({k.symbol for k in keys})
    coarse = pl.col(YEAR).is_in(years) & pl.col("symbol").is_in(symbols)
    if len(keys) == len(years) * len(symbols):
        return coarse
    exact = pl.lit(False)
    for y in years:
        exact = exact | ((pl.col(YEAR) == y) & pl.col("symbol").is_in(sorted(k.symbol for k in keys if k.year == y)))
    return coarse & exact


def migrate_parquet_store(src_root: Path | str, dst_root: Path | str) -> dict[str, int]:
    """Convert a store written by the former Parquet store (hive `symbol=S/year=Y/part.parquet`,
    `year=Y/part.parquet` or `part.parquet` per asset) into Delta tables under `dst_root`,
    one commit per asset; return the rows written per asset. Empty partition files are
    recorded as materialized keys."""
    src, dst = Path(src_root), DeltaStore(dst_root)
    counts: dict[str, int] = {}
    for folder in sorted(p for p in Path(src).iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        asset = _checked_asset(folder.name)
        sy = sorted(folder.glob("symbol=*/year=*/part.parquet"))
        yr = sorted(folder.glob("year=*/part.parquet"))
        flat = folder / "part.parquet"
        if sy:
            keys = [SymbolYear(p.parent.parent.name.split("=", 1)[1], int(p.parent.name.split("=", 1)[1])) for p in sy]
            frames = [pl.read_parquet(p, hive_partitioning=False) for p in sy]
            df = pl.concat(frames, how="vertical_relaxed")
            if {"date", "symbol"} <= set(df.columns) and YEAR not in df.columns:
                commit = dst.write_split(asset, keys, df)
            else:  # rows carry their partition only in the path
                df = pl.concat([f.with_columns(pl.lit(k.symbol).alias("symbol"), pl.lit(k.year, pl.Int32).alias(YEAR))
                                for f, k in zip(frames, keys)], how="vertical_relaxed")
                commit = dst._overwrite(asset, keys, df, derived=YEAR not in frames[0].columns)
        elif yr:
            years = [int(p.parent.name.split("=", 1)[1]) for p in yr]
            frames = [pl.read_parquet(p, hive_partitioning=False) for p in yr]
            if all("date" in f.columns or YEAR in f.columns for f in frames):
                commit = dst.write_years(asset, years, pl.concat(frames, how="vertical_relaxed"))
            else:  # the year is only in the path: add it, and drop it again on read
                df = pl.concat([f.with_columns(pl.lit(y, pl.Int32).alias(YEAR)) for f, y in zip(frames, years)],
                               how="vertical_relaxed")
                commit = dst._overwrite(asset, years, df, derived=True)
        elif flat.is_file():
            commit = dst.write_unpartitioned(asset, pl.read_parquet(flat, hive_partitioning=False))
        else:
            continue
        counts[asset] = commit.rows
    return counts
