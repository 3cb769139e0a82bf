"""kernels.gpu_phases: phases are recorded only inside recording(), timed, and named."""

from __future__ import annotations

import pytest

from kernels import gpu_phases
from kernels.gpu_phases import PHASES, phase, recording


def test_phase_outside_recording_records_nothing_and_runs_the_block():
    ran = []
    with phase("kernel", "ema"):
        ran.append(1)
    assert ran == [1] and gpu_phases._active is None


def test_recording_on_the_host_clock_times_each_phase_in_order_with_its_work_figures():
    with recording(events=False) as rec:
        with phase("h2d", bytes=800):
            sum(range(10_000))
        with phase("kernel", "ema", bytes=1600, ops=300, blocks=8, threads=128):
            sum(range(10_000))
    kinds = [(p.kind, p.name) for p in rec.phases]
    assert kinds == [("h2d", "h2d"), ("kernel", "ema")]
    assert all(p.seconds > 0 for p in rec.phases)
    assert (rec.phases[1].bytes, rec.phases[1].ops, rec.phases[1].blocks, rec.phases[1].threads) == (1600, 300, 8, 128)
    totals = rec.totals()
    assert set(totals) == set(PHASES) and totals["alloc"] == 0.0 and totals["kernel"] > 0


def test_recordings_nest_and_restore_the_outer_recorder():
    with recording(events=False) as outer:
        with recording(events=False) as inner:
            with phase("d2h"):
                pass
        with phase("host_post"):
            pass
    assert [p.kind for p in inner.phases] == ["d2h"] and [p.kind for p in outer.phases] == ["host_post"]
    assert gpu_phases._active is None


def test_an_unknown_phase_kind_is_refused_with_the_kinds_named():
    with recording(events=False), pytest.raises(ValueError, match="host_prep, h2d, alloc, kernel, d2h, host_post"):
        with phase("upload"):
            pass
