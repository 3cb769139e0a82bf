"""Asynchronous batched writer: a hot loop hands records over, a background thread writes them.

`AsyncWriter(path)` appends JSON lines to `path` (its parent folder is created); `AsyncWriter(
sink=callable)` hands batches (lists of records) to any callable instead, e.g. a slow network or
database sink, or a list's `extend` in tests.

Contract
- `write(obj)` / `write_many(objs)` never block: they put onto an unbounded queue
  (`put_nowait`) and return. The records are serialised later, in the background thread, so
  pass records you do not mutate afterwards (a fresh dict per call).
- The thread takes what is queued, up to `batch_size` records per sink call, in order (one
  consumer, FIFO): the sink sees the records in the order they were written.
- JSON lines sink: one `json.dumps` line per record; NaN and +-inf floats (Python or NumPy)
  become null, NumPy scalars and arrays become numbers and lists, so every line is valid JSON.
  Each batch is written with one `write` call and flushed.
- `close()` drains the queue, hands every record to the sink, closes the sink (when it has a
  `close` method), joins the thread. It is idempotent. The first exception raised by the sink
  is kept and re-raised by the first `close()` (records after a failure are dropped, not
  written, so the queue cannot grow without bound while nobody is listening); `error` shows it
  earlier. As a context manager, an exception in the body wins: a sink error is attached to it
  as a note instead of replacing it.
- `write` after `close` raises `WriterClosedError`.

Improvements on the first sketch's AsyncWriter (a thread flushing batches): its `close()` hangs forever when
the queue is empty at the stop marker (`if self.batch: self._flush(); break` only breaks when a
batch is pending, e.g. after a multiple of batch_size records); an exception in the thread killed
it silently (later records lost, close() returned as if all was well); NaN produced invalid JSON
(`NaN` tokens); the file was reopened per batch; the sink could not be replaced.
Thread safety: one producer thread per writer (or external locking around write and close).
"""

from __future__ import annotations

import json
import math
import queue
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Self

import numpy as np

_STOP = object()


class WriterClosedError(RuntimeError):
    """write() after close()."""


def json_safe(obj: Any) -> Any:
    """A copy of `obj` that json.dumps(allow_nan=False) accepts: non-finite floats -> None,
    NumPy scalars -> Python scalars, NumPy arrays and tuples -> lists, dict keys -> str."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if isinstance(obj, dict):
        return {k if isinstance(k, str) else str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        return json_safe(obj.item())
    return str(obj)  # dates, paths, enums: their text


def _json_line(obj: Any) -> str:
    """One JSON line; plain JSON types go straight through, the rest via json_safe."""
    try:
        return json.dumps(obj, allow_nan=False) + "\n"
    except (ValueError, TypeError):  # NaN/inf, NumPy values, other objects
        return json.dumps(json_safe(obj), allow_nan=False) + "\n"


class JsonLinesSink:
    """Appends records as JSON lines to `path` (parent created; file opened on first batch)."""

    def __init__(self, path):
        self.path = Path(path)
        self._fh = None

    def __call__(self, records: list) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")
        self._fh.write("".join(_json_line(r) for r in records))
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class AsyncWriter:
    """Non-blocking record writer with a background batching thread (module docstring)."""

    def __init__(self, path=None, *, sink: Callable[[list], Any] | None = None, batch_size: int = 256):
        if (path is None) == (sink is None):
            raise ValueError("give exactly one of path (JSON lines file) or sink (a callable taking a list)")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.path = None if path is None else Path(path)
        self.sink = JsonLinesSink(path) if sink is None else sink
        self.batch_size = int(batch_size)
        self.records_written = 0  # records handed to the sink without error
        self.batches_written = 0
        self._error: BaseException | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="AsyncWriter", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------ caller side

    def write(self, obj: Any) -> None:
        """Queue one record; never blocks."""
        if self._closed:
            raise WriterClosedError("write() after close()")
        self._q.put_nowait(obj)

    def write_many(self, objs: Iterable[Any]) -> None:
        """Queue several records (in order) as one queue item; never blocks."""
        if self._closed:
            raise WriterClosedError("write_many() after close()")
        self._q.put_nowait(_Many(objs))

    @property
    def error(self) -> BaseException | None:
        """The sink's first exception, if any (re-raised by close())."""
        return self._error

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Write everything queued, close the sink, join the thread; re-raise a sink error once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._q.put_nowait(_STOP)
        self._thread.join()
        close_sink = getattr(self.sink, "close", None)
        if callable(close_sink):
            try:
                close_sink()
            except Exception as e:  # noqa: BLE001 - reported like a write error
                if self._error is None:
                    self._error = e
        if self._error is not None:
            raise self._error

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is None:
            self.close()
            return
        try:
            self.close()
        except Exception as e:  # noqa: BLE001 - keep the body's exception, note the sink's
            exc.add_note(f"AsyncWriter sink also failed: {e!r}")

    # ------------------------------------------------------------ background thread

    def _emit(self, batch: list) -> None:
        if self._error is not None:
            return  # the sink failed: drop (close() reports the failure)
        for i in range(0, len(batch), self.batch_size):
            part = batch[i:i + self.batch_size]
            try:
                self.sink(part)
            except BaseException as e:  # noqa: BLE001 - kept for close()
                self._error = e
                return
            self.records_written += len(part)
            self.batches_written += 1

    def _run(self) -> None:
        q = self._q
        stop = False
        while not stop:
            batch: list = []
            item = q.get()  # wait for work
            while True:
                if item is _STOP:
                    stop = True
                    break
                if isinstance(item, _Many):
                    batch.extend(item.items)
                else:
                    batch.append(item)
                if len(batch) >= self.batch_size:
                    break
                try:
                    item = q.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self._emit(batch)


class _Many:
    __slots__ = ("items",)

    def __init__(self, objs: Iterable[Any]):
        self.items = list(objs)  # a snapshot: a generator or a list the caller reuses is safe
