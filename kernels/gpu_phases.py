"""Phase timing of the GPU paths: where a GPU call spends its time, and against what floor.

Each GPU engine wraps its steps in `phase(kind, name, ...)`, kind one of PHASES:

  host_prep   host work before the device sees the data (casts, layout, staging)
  h2d         host-to-device copies
  alloc       device allocations (outputs, scratch)
  kernel      one launch (or one device-side library call), named; with the bytes it must
              move, the operations it must do and its launch shape, for the roofline line
  d2h         device-to-host copies
  host_post   host work after the results are back (casts, tails, transposes)

Without an active recorder `phase` costs one global read (the library's normal calls).
Inside `recording()` every phase is timed: with CUDA events on the current stream when
CuPy sees a device (so asynchronous launches are timed where they run, not where Python
queued them), else with the host clock (CPU, numba's CUDA simulator, which is synchronous).
`scripts/gpu_profile.py` prints the result per path and per kernel.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

PHASES = ("host_prep", "h2d", "alloc", "kernel", "d2h", "host_post")


@dataclass
class Phase:
    """One timed step: its kind (PHASES), name, seconds, and the kernel's work figures."""

    kind: str
    name: str
    seconds: float = 0.0
    bytes: int = 0  # fewest device-memory bytes the step must move (inputs read once, outputs written once)
    ops: int = 0  # arithmetic operations it must do (flops or integer ops, as the kernel's docstring counts)
    blocks: int = 0
    threads: int = 0


@dataclass
class Recorder:
    """The phases recorded inside one `recording()` block, in order."""

    events: bool
    phases: list[Phase] = field(default_factory=list)
    _pending: list = field(default_factory=list)

    def resolve(self) -> list[Phase]:
        """Wait for the device and turn recorded event pairs into seconds."""
        if self._pending:
            import cupy

            cupy.cuda.runtime.deviceSynchronize()
            for ph, start, end in self._pending:
                ph.seconds = cupy.cuda.get_elapsed_time(start, end) / 1e3
            self._pending.clear()
        return self.phases

    def totals(self) -> dict[str, float]:
        """Seconds per phase kind (every kind of PHASES, 0.0 where none ran)."""
        out = dict.fromkeys(PHASES, 0.0)
        for ph in self.resolve():
            out[ph.kind] = out.get(ph.kind, 0.0) + ph.seconds
        return out


_active: Recorder | None = None


def _device_events() -> bool:
    try:
        from numba import config

        if config.ENABLE_CUDASIM:
            return False
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy or no device: host clock
        return False


@contextlib.contextmanager
def recording(events: bool | None = None):
    """Record every `phase` inside the block; yields the Recorder (call `.resolve()`)."""
    global _active
    previous = _active
    _active = Recorder(events=_device_events() if events is None else events)
    try:
        yield _active
    finally:
        _active.resolve()
        _active = previous


@contextlib.contextmanager
def phase(kind: str, name: str = "", *, bytes: int = 0, ops: int = 0, blocks: int = 0, threads: int = 0):  # noqa: A002
    """Time the block as one step of `kind` (PHASES) when a recorder is active."""
    rec = _active
    if rec is None:
        yield
        return
    if kind not in PHASES:
        raise ValueError(f"phase kind {kind!r}: expected one of {', '.join(PHASES)}")
    ph = Phase(kind, name or kind, bytes=int(bytes), ops=int(ops), blocks=int(blocks), threads=int(threads))
    rec.phases.append(ph)
    if rec.events:
        import cupy

        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        try:
            yield
        finally:
            end.record()
            rec._pending.append((ph, start, end))
    else:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            ph.seconds = time.perf_counter() - t0
