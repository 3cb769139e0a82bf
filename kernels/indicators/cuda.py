"""cuda backend: the cores compiled as numba.cuda device functions, one thread per series.

The kernels read time-major arrays ([time, series], C order) and each thread walks the
column of its series, so at every time step neighbouring threads read neighbouring
addresses (coalesced loads). The caller's [series, time] layout is changed on the device
(`kernels.backends.device_io`: tiled transposes through shared memory), never on the host.
Device memory comes from numba's memory manager, which is RMM's pool when the compute
resource set it up (CuPy's allocator is the same pool then). Inputs may be NumPy arrays
(through pinned staging to the device, results back through pinned memory), CuPy/any
`__cuda_array_interface__` arrays (kept on the device; the results are CuPy arrays) or
numba device arrays (results are numba device arrays; the simulator's path). Each step is
timed by `kernels.gpu_phases.phase` inside a recording. Index arithmetic is int64 throughout (Python ints in numba).
Runs under the numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1) on tiny inputs in CI.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from kernels.indicators import cores
from kernels.backends import device_io
from kernels.cuda_build import no_fma
from kernels.gpu_phases import phase

no_fma(__name__)  # -fma=0: bit for bit with the CPU (kernels.cuda_build)

THREADS_PER_BLOCK = 128
OPS_PER_ELEMENT = 10  # a rough count of float64 operations per bar of a core (roofline figure only)


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


def run(spec, inputs, params: tuple[int, ...], dtype) -> list:
    """inputs [series, time] (NumPy, CuPy or numba device arrays) -> outputs [series, time]
    of the same kind. Layout changes happen on the device (`device_io.transpose`): NumPy
    goes in and out through pinned memory, device arrays never leave the device."""
    like = inputs[0]
    n_series, t_len = like.shape
    d_in = [device_io.to_device_time_major(a, name=f"{spec.core} in{i}") for i, a in enumerate(inputs)]
    with phase("alloc", f"{spec.core} outputs"):
        d_out = [cuda.device_array((t_len, n_series), dtype=dtype) for _ in range(spec.n_outputs)]
    kernel = kernel_for(spec.core, (spec.n_inputs, len(params), spec.n_outputs))
    blocks = max(1, math.ceil(n_series / THREADS_PER_BLOCK))
    in_bytes = sum(np.dtype(a.dtype).itemsize for a in d_in) * n_series * t_len
    out_bytes = spec.n_outputs * np.dtype(dtype).itemsize * n_series * t_len
    with phase("kernel", spec.core, bytes=in_bytes + out_bytes, ops=OPS_PER_ELEMENT * n_series * t_len,
               blocks=blocks, threads=THREADS_PER_BLOCK):
        kernel[blocks, THREADS_PER_BLOCK](*d_in, *params, *d_out)
    outs = []
    for i, o in enumerate(d_out):
        series_major = device_io.transpose(o, name=f"transpose {spec.core} out{i}")
        outs.append(device_io.to_caller(series_major, like, name=f"{spec.core} out{i}"))
    return outs
