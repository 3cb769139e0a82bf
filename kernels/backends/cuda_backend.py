"""cuda backend: the cores compiled as numba.cuda device functions, one thread per series.

Arrays go to the device time-major ([time, series], C order) and each thread walks the
column of its series, so at every time step neighbouring threads read neighbouring
addresses (coalesced loads). Device memory comes from numba's memory manager, which is
RMM's pool when the compute resource set it up. Inputs may be NumPy arrays (copied to the
device and back) or CuPy/any `__cuda_array_interface__` arrays (kept on the device; the
results are CuPy arrays). Index arithmetic is int64 throughout (Python ints in numba).
Runs under the numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1) on tiny inputs in CI.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from kernels import cores

THREADS_PER_BLOCK = 128


@functools.cache
def device_function(core_name: str):
    return cuda.jit(device=True)(getattr(cores, core_name))


def _kernel_1in_1p_1out(dev):
    @cuda.jit
    def kernel(x, p, o):
        s = cuda.grid(1)
        if s < x.shape[1]:
            dev(x[:, s], p, o[:, s])

    return kernel


def _kernel_1in_1p_2out(dev):
    @cuda.jit
    def kernel(x, p, o1, o2):
        s = cuda.grid(1)
        if s < x.shape[1]:
            dev(x[:, s], p, o1[:, s], o2[:, s])

    return kernel


def _kernel_1in_2p_1out(dev):
    @cuda.jit
    def kernel(x, p, q, o):
        s = cuda.grid(1)
        if s < x.shape[1]:
            dev(x[:, s], p, q, o[:, s])

    return kernel


def _kernel_3in_1p_1out(dev):
    @cuda.jit
    def kernel(h, l, c, p, o):
        s = cuda.grid(1)
        if s < h.shape[1]:
            dev(h[:, s], l[:, s], c[:, s], p, o[:, s])

    return kernel


def _kernel_3in_2p_3out(dev):
    @cuda.jit
    def kernel(h, l, c, p, q, o1, o2, o3):
        s = cuda.grid(1)
        if s < h.shape[1]:
            dev(h[:, s], l[:, s], c[:, s], p, q, o1[:, s], o2[:, s], o3[:, s])

    return kernel


TEMPLATES = {
    (1, 1, 1): _kernel_1in_1p_1out,
    (1, 1, 2): _kernel_1in_1p_2out,
    (1, 2, 1): _kernel_1in_2p_1out,
    (3, 1, 1): _kernel_3in_1p_1out,
    (3, 2, 3): _kernel_3in_2p_3out,
}


@functools.cache
def kernel_for(core_name: str, arity: tuple[int, int, int]):
    return TEMPLATES[arity](device_function(core_name))


def _is_device_array(a) -> bool:
    return hasattr(a, "__cuda_array_interface__")


def _to_device_time_major(a):
    if _is_device_array(a):
        import cupy

        return cupy.ascontiguousarray(cupy.asarray(a).T)
    return cuda.to_device(np.ascontiguousarray(a.T))


def run(spec, inputs, params: tuple[int, ...], dtype) -> list:
    on_device = _is_device_array(inputs[0])
    n_series, t_len = inputs[0].shape
    d_in = [_to_device_time_major(a) for a in inputs]
    d_out = [cuda.device_array((t_len, n_series), dtype=dtype) for _ in range(spec.n_outputs)]
    kernel = kernel_for(spec.core, (spec.n_inputs, len(params), spec.n_outputs))
    blocks = max(1, math.ceil(n_series / THREADS_PER_BLOCK))
    kernel[blocks, THREADS_PER_BLOCK](*d_in, *params, *d_out)
    if on_device:
        import cupy

        return [cupy.ascontiguousarray(cupy.asarray(o).T) for o in d_out]
    return [np.ascontiguousarray(o.copy_to_host().T) for o in d_out]
