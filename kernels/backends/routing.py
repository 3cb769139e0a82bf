"""Where a GPU backend pays: the measured break-evens of every routed family, in one place.

A stage that holds a GPU backend (the device's, `backend_for`) asks `route(family, work,
backend)` for each batch: the GPU backend when the batch's work reaches the family's
break-even, else "cpu". So `device: auto` (or `cuda`) never sends a batch to a device that
lost to the CPU on that size when it was measured.

`BREAK_EVEN[family].min_work` is in the family's unit of work (`unit`); None means the GPU
lost at every size measured, so every batch runs on the CPU until a new measurement says
otherwise (`benchmarks/atc_gpu_break_even.py`, `scripts/gpu_profile.py`, recorded in
benchmarks/RESULTS.md "GPU"). A family with no entry is not routed: its backend is used as
asked. `measured` says on what, when and with which command the figure was taken.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BreakEven:
    """The work from which a family's GPU backend beats the CPU (None: it never did)."""

    unit: str
    min_work: int | None
    measured: str


BREAK_EVEN: dict[str, BreakEven] = {
    # the ATC scanner's chunks (domain.atc_scan)
    "atc": BreakEven("symbol-bars", 1_024_000, (
        "one H100 against a 16-core Xeon, 2026-11-27 (the device-resident scan: tail applied on the device, a thread per "
        "family and symbol), benchmarks/gpu_break_even.py --families atc: cuda 1.06x the CPU at 512 x 2,000 and "
        "1.22x at 2,048 x 500, 3.3-3.7x from 4.1M symbol-bars; 0.12-0.65x below 256,000 (the kernel before it "
        "lost at every size)")),
    # the feature stage's indicator kernels over a frame (domain.features)
    "indicators": BreakEven("symbol-bars", None, (
        "one H100 against a 16-core Xeon, 2026-11-27, benchmarks/gpu_break_even.py --families indicators: "
        "ema/rsi/kama/atr/adx in float64, NumPy in and out, 16 x 2,000 to 1,024 x 10,000: cuda 0.09-0.87x the CPU "
        "(warm pinned buffers: 3.68x at 1,024 x 10,000, far above the stage's 131,072-row chunks)")),
    # the population backtest (kernels.strategy, backend "auto")
    "strategy": BreakEven("individual-bars", None, (
        "one H100 against a 16-core Xeon, 2026-11-27, benchmarks/gpu_break_even.py --families strategy: 128 to "
        "8,192 individuals x 21,480 bars, cuda 0.27-0.73x the CPU (one thread per individual walks every bar)")),
}


def route(family: str, work: int, backend: str) -> str:
    """`backend` when it is "cpu", when `family` has no break-even, or when `work` reaches
    the family's `min_work`; else "cpu"."""
    if backend == "cpu":
        return "cpu"
    even = BREAK_EVEN.get(family)
    if even is None:
        return backend
    return backend if even.min_work is not None and work >= even.min_work else "cpu"


def min_work(family: str) -> int | None:
    """The family's break-even (None: the GPU is never chosen); KeyError for an unrouted family."""
    return BREAK_EVEN[family].min_work
