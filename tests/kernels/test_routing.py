"""kernels.backends.routing: a GPU backend only from its family's measured break-even."""

from __future__ import annotations

import pytest

from kernels.backends import routing
from kernels.backends.routing import BREAK_EVEN, BreakEven, route


def test_every_routed_family_says_what_its_break_even_was_measured_on():
    assert set(BREAK_EVEN) >= {"atc", "indicators", "strategy"}
    for even in BREAK_EVEN.values():
        assert even.unit and "H100" in even.measured and (even.min_work is None or even.min_work > 0)


def test_a_break_even_of_none_keeps_every_batch_on_the_cpu(monkeypatch):
    monkeypatch.setitem(BREAK_EVEN, "atc", BreakEven("symbol-bars", None, "test"))
    assert route("atc", 10**12, "cuda") == "cpu"


def test_the_gpu_backend_runs_from_the_break_even_on_and_the_cpu_below_it(monkeypatch):
    monkeypatch.setitem(BREAK_EVEN, "strategy", BreakEven("individual-bars", 5000, "test"))
    assert route("strategy", 4999, "cuda") == "cpu"
    assert route("strategy", 5000, "cuda") == "cuda"
    assert route("strategy", 5000, "torch") == "torch"


def test_the_cpu_stays_the_cpu_and_an_unrouted_family_keeps_the_backend_asked_for():
    assert route("atc", 10**12, "cpu") == "cpu"
    assert route("gridsearch.cube", 1, "cuda") == "cuda"


def test_min_work_names_an_unrouted_family_as_a_key_error():
    with pytest.raises(KeyError):
        routing.min_work("no-such-family")
