"""AsyncWriter (domain.async_writer): writes never wait for the sink, close() loses nothing,
sink errors surface. No sleeps and no clocks: a sink that blocks until the test releases it
stands for a slow one."""

from __future__ import annotations

import json
import math
import threading

import numpy as np
import pytest

from domain.async_writer import AsyncWriter, WriterClosedError, json_safe


class RecordingSink:
    """Records every batch it is handed (in the writer's thread)."""

    def __init__(self):
        self.batches: list[list] = []

    def __call__(self, records):
        self.batches.append(list(records))

    @property
    def records(self):
        return [r for b in self.batches for r in b]


def closes_within(writer: AsyncWriter, seconds: float = 30.0) -> bool:
    """close() in a helper thread; False if it is still waiting after `seconds` (a hang)."""
    th = threading.Thread(target=writer.close, daemon=True)
    th.start()
    th.join(seconds)
    return not th.is_alive()


class GatedSink(RecordingSink):
    """A sink whose first call blocks until the test opens the gate: while it is blocked, nothing
    the writing loop does can depend on the sink's pace."""

    def __init__(self):
        super().__init__()
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, records):
        self.entered.set()
        assert self.gate.wait(30.0), "the test never opened the gate"
        super().__call__(records)


def test_a_blocked_sink_does_not_block_the_writing_loop():
    sink = GatedSink()
    writer = AsyncWriter(sink=sink, batch_size=1000)
    writer.write({"t": 0, "pnl": 0.0})
    assert sink.entered.wait(30.0)  # the writer's thread is now stuck inside the sink
    for t in range(1, 10_000):
        writer.write({"t": t, "pnl": t * 0.5})
    # the loop ended while the sink still held its first batch: write() never waited for it
    assert writer.records_written == 0 and sink.batches == []
    sink.gate.set()
    writer.close()
    assert [r["t"] for r in sink.records] == list(range(10_000))
    assert max(len(b) for b in sink.batches) <= 1000


def test_close_flushes_everything_in_order_in_batches_of_at_most_batch_size():
    sink = RecordingSink()
    writer = AsyncWriter(sink=sink, batch_size=64)
    expected = []
    for t in range(5_000):
        if t % 100 == 0:
            chunk = [{"t": t, "k": k} for k in range(250)]
            writer.write_many(chunk)
            expected.extend(chunk)
        writer.write({"t": t})
        expected.append({"t": t})
    writer.close()
    assert sink.records == expected
    assert max(len(b) for b in sink.batches) <= 64
    assert writer.records_written == len(expected)


def test_write_many_takes_a_snapshot_of_a_generator_or_reused_list():
    sink = RecordingSink()
    with AsyncWriter(sink=sink) as writer:
        buf = [1, 2, 3]
        writer.write_many(buf)
        buf.clear()
        writer.write_many(i for i in range(4, 6))
    assert sink.records == [1, 2, 3, 4, 5]


def test_close_is_idempotent_and_joins_the_thread():
    writer = AsyncWriter(sink=RecordingSink())
    writer.write({"a": 1})
    writer.close()
    writer.close()
    assert writer.closed and not writer._thread.is_alive()


@pytest.mark.parametrize("n", [0, 256, 512])
def test_close_returns_when_nothing_is_pending_at_a_multiple_of_batch_size(n):
    # the first sketch's writer hung here: it only left its loop when a batch was pending
    sink = RecordingSink()
    writer = AsyncWriter(sink=sink, batch_size=256)
    writer.write_many({"i": i} for i in range(n))
    assert closes_within(writer)
    assert len(sink.records) == n


def test_writing_after_close_raises():
    writer = AsyncWriter(sink=RecordingSink())
    writer.close()
    with pytest.raises(WriterClosedError):
        writer.write({"a": 1})
    with pytest.raises(WriterClosedError):
        writer.write_many([{"a": 1}])


def test_a_failing_sink_raises_on_close_once():
    calls = []

    def sink(records):
        calls.append(len(records))
        raise OSError("disk full")

    writer = AsyncWriter(sink=sink, batch_size=10)
    writer.write_many(range(100))
    with pytest.raises(OSError, match="disk full"):
        writer.close()
    assert isinstance(writer.error, OSError)
    assert len(calls) == 1  # later records are dropped, not retried against a dead sink
    assert writer.records_written == 0
    writer.close()  # reported once; a second close is a no-op


def test_context_manager_keeps_the_body_exception_and_notes_the_sink_error():
    def sink(records):
        raise OSError("disk full")

    with pytest.raises(KeyError) as info, AsyncWriter(sink=sink) as writer:
        writer.write({"a": 1})
        raise KeyError("body")
    assert any("disk full" in n for n in info.value.__notes__)


def test_context_manager_raises_the_sink_error_without_a_body_exception():
    def sink(records):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"), AsyncWriter(sink=sink) as writer:
        writer.write({"a": 1})


def test_json_lines_file_is_appended_in_order_and_its_folder_created(tmp_path):
    path = tmp_path / "logs" / "deep" / "backtest.jsonl"
    with AsyncWriter(path, batch_size=7) as writer:
        for t in range(50):
            writer.write({"t": t, "pnl": t / 3})
    with AsyncWriter(path) as writer:  # a second writer appends
        writer.write({"t": 50})
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["t"] for r in rows] == list(range(51))
    assert rows[3]["pnl"] == pytest.approx(1.0)


def test_nan_and_inf_become_null_and_numpy_values_become_json(tmp_path):
    path = tmp_path / "x.jsonl"
    with AsyncWriter(path) as writer:
        writer.write({"a": math.nan, "b": math.inf, "c": np.float32("nan"), "d": np.float64(1.5),
                      "e": np.int8(3), "f": np.array([1.0, np.nan]), "g": (-np.inf, 2), 7: "int key"})
    line = path.read_text().strip()
    assert "NaN" not in line and "Infinity" not in line
    assert json.loads(line) == {"a": None, "b": None, "c": None, "d": 1.5, "e": 3, "f": [1.0, None],
                                "g": [None, 2], "7": "int key"}


def test_json_safe_leaves_plain_values_alone():
    obj = {"s": "x", "i": 1, "f": 0.25, "b": True, "n": None, "l": [1, [2.0]]}
    assert json_safe(obj) == obj


def test_path_or_sink_exactly_one():
    with pytest.raises(ValueError, match="exactly one"):
        AsyncWriter()
    with pytest.raises(ValueError, match="exactly one"):
        AsyncWriter("x.jsonl", sink=print)
    with pytest.raises(ValueError, match="batch_size"):
        AsyncWriter(sink=print, batch_size=0)
