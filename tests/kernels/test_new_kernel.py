"""A new indicator kernel is its core and its Spec: the cpu backend
compiles the core, the torch backend runs it as the CPU core, and the stream runs it over
its window (kernels.indicators.streaming.SpecWindowUpdater), with no edit of the backends, the
updaters or kernels.indicators.updaters.UPDATERS."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.indicators import cores
from kernels import indicators as K
from kernels.registry.features import Feature, compute_features
from kernels.registry.specialists import PANEL_COLUMNS
from kernels.indicators.streaming import replay_entry
from tests.kernels.test_streaming import RANDOM

HL = ("high", "low")


def hl_range_core(high, low, n, out):
    """A window-exact core: max(high) - min(low) over the last n bars."""
    t_len = high.shape[0]
    for i in range(min(n - 1, t_len)):
        out[i] = np.nan
    for i in range(n - 1, t_len):
        hi = -np.inf
        lo = np.inf
        for j in range(i - n + 1, i + 1):
            hi = max(hi, np.float64(high[j]))
            lo = min(lo, np.float64(low[j]))
        out[i] = hi - lo


@pytest.fixture
def new_kernel(monkeypatch):
    """The two edits: the core in kernels.indicators.cores, its Spec in kernels.indicators.SPECS."""
    monkeypatch.setattr(cores, "hl_range_core", hl_range_core, raising=False)
    monkeypatch.setitem(K.SPECS, "hl_range", K.Spec("hl_range_core", 2, 1, lambda n: n - 1))


def _bars(n=600):
    return {c: RANDOM[c][:n] for c in PANEL_COLUMNS}


def test_a_new_core_and_spec_run_on_cpu_and_torch_with_equal_values(new_kernel):
    bars = _bars()
    cpu = K.ragged("hl_range", [bars["high"], bars["low"]], np.array([0, 300, 600]), (5,))[0]
    want = np.full(600, np.nan, np.float32)
    for a in (0, 300):
        h, l = bars["high"][a:a + 300].astype(np.float64), bars["low"][a:a + 300].astype(np.float64)
        for i in range(4, 300):
            want[a + i] = h[i - 4:i + 1].max() - l[i - 4:i + 1].min()
    np.testing.assert_array_equal(cpu, want)
    torch_out = K.ragged("hl_range", [bars["high"], bars["low"]], np.array([0, 300, 600]), (5,), backend="torch")[0]
    np.testing.assert_array_equal(torch_out, cpu)


def test_a_new_core_streams_through_the_generic_window_updater_bit_for_bit(new_kernel):
    def call(f):
        return f("hl_range", HL, n=5)

    entry = Feature("my_range5", call, warmup_rows=4, stream=call, inputs=HL)
    bars = _bars()
    batch = compute_features(bars, entries=(entry,))["my_range5"]
    assert replay_entry(entry, bars).tobytes() == batch.tobytes()
    assert np.isnan(batch[:4]).all() and np.isfinite(batch[4:]).all()
