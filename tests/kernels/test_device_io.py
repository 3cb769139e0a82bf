"""kernels.backends.device_io and the cuda indicators backend with device arrays in and out
(CUDA simulator in CI: its device arrays come from cuda.to_device)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from kernels import indicators as K
from kernels.backends import device_io
from kernels.indicators import cuda as cuda_backend
from kernels.gpu_phases import recording
from tests.gpu import assert_engine_equal, gpu
from tests.kernel_data import walk_ohlc

pytestmark = gpu

BATCH = np.stack([walk_ohlc(50, seed=s)[1:] for s in range(3)], axis=1)  # [3 fields, 3 series, T]
HIGH, LOW, CLOSE = BATCH


@pytest.mark.parametrize("shape", [(3, 50), (1, 1), (33, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transpose_on_the_device_is_exact(shape, dtype):
    a = np.arange(np.prod(shape), dtype=dtype).reshape(shape) * 1.25
    out = device_io.transpose(cuda.to_device(a)).copy_to_host()
    np.testing.assert_array_equal(out, a.T)


def test_transpose_into_a_strided_view():
    a = np.arange(12.0).reshape(3, 4)
    d = cuda.to_device(np.zeros((4, 2, 3)))
    device_io.transpose(cuda.to_device(a), d[:, 1, :])
    out = d.copy_to_host()
    np.testing.assert_array_equal(out[:, 1, :], a.T)
    assert not out[:, 0, :].any()


def test_device_arrays_in_device_arrays_out_equal_numpy_in_numpy_out():
    spec = K.SPECS["dmi"]  # three inputs, three outputs
    host = cuda_backend.run(spec, [HIGH, LOW, CLOSE], (5, 0), np.float64)
    dev = cuda_backend.run(spec, [cuda.to_device(a) for a in (HIGH, LOW, CLOSE)], (5, 0), np.float64)
    assert all(device_io.is_device_array(d) for d in dev)
    cpu = K.dmi(HIGH, LOW, CLOSE, 5, dtype=np.float64)
    for h, d, c in zip(host, dev, cpu):
        assert isinstance(h, np.ndarray) and h.shape == HIGH.shape
        np.testing.assert_array_equal(d.copy_to_host(), h)
        assert_engine_equal(h, c)


def test_numpy_in_numpy_out_equals_cpu_and_is_timed_by_phase():
    cpu = K.ema(CLOSE, 5, dtype=np.float64)
    with recording(events=False) as rec:
        gpu_out = K.ema(CLOSE, 5, backend="cuda", dtype=np.float64)
    assert_engine_equal(gpu_out, cpu)
    kinds = {ph.kind for ph in rec.resolve()}
    # host staging is its own phase without CuPy; with it (a device) it overlaps the copies inside h2d
    staged = {"host_prep"} if device_io.cupy_or_none() is None else set()
    assert {"h2d", "alloc", "kernel", "d2h"} | staged <= kinds
    assert not any(ph.kind == "host_post" for ph in rec.phases)  # no host transposes


def test_pipelined_host_to_device_copy_moves_every_chunk(monkeypatch):
    """The CuPy path's chunking (run here with stand-ins for CuPy: NumPy arrays, a stream
    whose events are always done): every element lands once, in place, whatever the chunk,
    with the chunks staged by several host threads."""
    import sys
    import types

    class Dev(np.ndarray):
        def set(self, arr, stream=None):
            order.append("copy")
            self[...] = arr

    order = []  # what the side stream was asked to do, in order

    class Stream:
        def __init__(self, non_blocking=False):
            pass

        def record(self):
            return types.SimpleNamespace(synchronize=lambda: None)

        def wait_event(self, event):
            order.append("wait")

        def synchronize(self):
            pass

    class Device:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    cp = types.SimpleNamespace(empty=lambda shape, dtype: np.full(shape, np.nan, dtype).view(Dev),
                               cuda=types.SimpleNamespace(Stream=Stream, Device=Device,
                                                          get_current_stream=lambda: Stream()))
    monkeypatch.setitem(sys.modules, "cupyx", types.SimpleNamespace(empty_pinned=lambda n, dtype: np.empty(n, dtype)))
    a = np.arange(3 * 37, dtype=np.float64).reshape(3, 37)
    for chunk_bytes in (8, 8 * 5, 8 * 37, 8 * 111, 1 << 20):
        monkeypatch.setattr(device_io, "H2D_CHUNK_BYTES", chunk_bytes)
        order.clear()
        np.testing.assert_array_equal(np.asarray(device_io._h2d_pipelined(cp, a)), a)
        assert order[0] == "wait" and order.count("wait") == 1  # after the current stream's work, before any chunk
