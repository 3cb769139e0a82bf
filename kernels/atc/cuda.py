"""ATC on CUDA: the cores of `kernels.atc.cores` (with the TA-Lib MA cores of
`kernels.cores` that `cores.ma` dispatches to) compiled as numba.cuda device functions, one
thread per symbol.

Contract: `run(x, lens, weights, growth, d, cutout)`: x NumPy [S, T] float32/float64 ->
(families [S, 6, T], final [S, T]) float64 NumPy, the cpu backend's values.

Arrays are time-major ([bars, symbols], C order) so neighbouring threads touch neighbouring
addresses at every bar. Each thread computes its 54 MAs one at a time into its column of a
[bars, symbols] scratch array and folds each into layer 1 at once (no [54, bars, symbols]
bank), then runs layer 2. Arithmetic float64; results equal the cpu backend's bit for bit
under the simulator (on hardware, FMA contraction may move last bits). Runs under the numba
CUDA simulator (NUMBA_ENABLE_CUDASIM=1) on tiny inputs in CI; `from numba import cuda` must
stay at module level for that. Imported on demand by the dispatch; imports the cores, never
the cpu module.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from kernels.atc import cores

THREADS_PER_BLOCK = 128


def _device(fn):
    return cuda.jit(device=True)(fn)


_ma = _device(cores.ma)
_returns = _device(cores.returns_core)
_layer1 = _device(cores.layer1_core)
_finish = _device(cores.family_finish_core)
_layer2 = _device(cores.layer2_core)
_final = _device(cores.final_core)


@cuda.jit
def _atc_kernel(x, growth, lens, weights, d, cutout, r, ma, den, fnom, fden, fam, final):
    """x [T, S]; lens [6, 9]; weights [6]; scratch r, ma, den, fnom, fden [T, S];
    outputs fam [6, T, S] (also layer 1's numerator before rounding), final [T, S]."""
    s = cuda.grid(1)
    if s < x.shape[1]:
        t_len = x.shape[0]
        xs = x[:, s]
        rs = r[:, s]
        ms = ma[:, s]
        dn = den[:, s]
        fn = fnom[:, s]
        fd = fden[:, s]
        _returns(xs, growth, rs)
        for t in range(t_len):
            fn[t] = 0.0
            fd[t] = 0.0
        for f in range(lens.shape[0]):
            nom = fam[f, :, s]
            for t in range(t_len):
                nom[t] = 0.0
                dn[t] = 0.0
            for i in range(lens.shape[1]):
                _ma(f, xs, lens[f, i], ms)
                _layer1(xs, ms, rs, d, cutout, nom, dn)
            _finish(nom, dn, nom)
            _layer2(nom, rs, d, cutout, weights[f], fn, fd)
        _final(fn, fd, final[:, s])


def run(x: np.ndarray, lens: np.ndarray, weights: np.ndarray, growth: np.ndarray, d: float, cutout: int):
    """x: NumPy [S, T] float32/float64 -> (families [S, 6, T], final [S, T]) float64 NumPy."""
    n_series, t_len = x.shape
    n_fam = lens.shape[0]
    d_x = cuda.to_device(np.ascontiguousarray(x.T))
    d_growth = cuda.to_device(np.ascontiguousarray(growth, dtype=np.float64))
    d_lens = cuda.to_device(np.ascontiguousarray(lens, dtype=np.int64))
    d_w = cuda.to_device(np.ascontiguousarray(weights, dtype=np.float64))
    scratch = [cuda.device_array((t_len, n_series), dtype=np.float64) for _ in range(5)]
    d_fam = cuda.device_array((n_fam, t_len, n_series), dtype=np.float64)
    d_final = cuda.device_array((t_len, n_series), dtype=np.float64)
    threads = min(THREADS_PER_BLOCK, n_series)  # small batches (the simulator): no idle threads
    blocks = max(1, math.ceil(n_series / threads))
    _atc_kernel[blocks, threads](d_x, d_growth, d_lens, d_w, float(d), int(cutout), *scratch, d_fam, d_final)
    fam = np.ascontiguousarray(d_fam.copy_to_host().transpose(2, 0, 1))
    final = np.ascontiguousarray(d_final.copy_to_host().T)
    return fam, final


def compute(close, p, dtype, cache: bool, tail: int | None):
    """The `atc` family's cuda entry: every bar on the device, then the last `tail` (`cache` is cpu only)."""
    from kernels.atc.params import keep_tail, prepare_numpy

    x, was_1d = prepare_numpy(close)
    fam, final = run(x, p.lens, p.weights, p.growth(x.shape[1]), p.d, p.cutout)
    return keep_tail(fam.astype(dtype, copy=False), tail), keep_tail(final.astype(dtype, copy=False), tail), was_1d
