"""ATC on CUDA: the cores of `kernels.atc.cores` (with the TA-Lib MA cores of
`kernels.indicators.cores` that `cores.ma` dispatches to) compiled as numba.cuda device functions, one
thread per symbol.

Contract: `run(x, lens, weights, growth, d, cutout, tail=None)`: x NumPy [S, T]
float32/float64 -> (families [S, 6, k], final [S, k]) float64 NumPy, the cpu backend's values
of the last k = min(tail, T) bars (every bar when `tail` is None). The tail is applied on the
device: the kernel writes only the last k bars of each family (layer 1's numerator lives in a
[T, S] scratch reused by every family), the outputs are transposed on the device
(`kernels.backends.device_io`) and only [S, 6, k] + [S, k] come back, through pinned memory
(tail=1 at 5,000 x 2,000: 56 KB instead of the 560 MB families array).

Arrays are time-major ([bars, symbols], C order) so neighbouring threads touch neighbouring
addresses at every bar. The close goes to the device as it is and is transposed there.
Each thread computes its 54 MAs one at a time into its column of a [bars, symbols] scratch
array and folds each into layer 1 at once (no [54, bars, symbols] bank), then runs layer 2. Arithmetic float64; results equal the cpu backend's bit for bit
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
from kernels.backends import device_io
from kernels.cuda_build import no_fma
from kernels.gpu_phases import phase

no_fma(__name__)  # -fma=0: bit for bit with the CPU (kernels.cuda_build)

THREADS_PER_BLOCK = 128


def _device(fn):
    return cuda.jit(device=True)(fn)


_ma = _device(cores.ma)
_returns = _device(cores.returns_core)
_layer1 = _device(cores.layer1_core)
_finish = _device(cores.family_finish_core)
_layer2 = _device(cores.layer2_core)
_final = _device(cores.final_core)


@cuda.jit(device=True)
def _family_curve(f, xs, rs, lens, d, cutout, ms, dn, nm):
    """Family f's curve of one symbol into nm: layer 1 summed over its nine MAs (each into the
    scratch ms, denominators in dn), then the finish; the one statement of it that the fused
    and the split kernels both run."""
    for t in range(xs.shape[0]):
        nm[t] = 0.0
        dn[t] = 0.0
    for j in range(lens.shape[1]):
        _ma(f, xs, lens[f, j], ms)
        _layer1(xs, ms, rs, d, cutout, nm, dn)
    _finish(nm, dn, nm)


@cuda.jit
def _atc_kernel(x, growth, lens, weights, d, cutout, r, ma, den, nom, fnom, fden, fam_tail, final):
    """x [T, S]; lens [6, 9]; weights [6]; scratch r, ma, den, nom (layer 1's numerator, then
    the family's curve), fnom, fden [T, S]; outputs fam_tail [6, k, S] (each family's last k
    bars), final [T, S]."""
    s = cuda.grid(1)
    if s < x.shape[1]:
        t_len = x.shape[0]
        k = fam_tail.shape[1]
        xs = x[:, s]
        rs = r[:, s]
        ms = ma[:, s]
        dn = den[:, s]
        nm = nom[:, s]
        fn = fnom[:, s]
        fd = fden[:, s]
        _returns(xs, growth, rs)
        for t in range(t_len):
            fn[t] = 0.0
            fd[t] = 0.0
        for f in range(lens.shape[0]):
            _family_curve(f, xs, rs, lens, d, cutout, ms, dn, nm)
            for j in range(k):
                fam_tail[f, j, s] = nm[t_len - k + j]
            _layer2(nm, rs, d, cutout, weights[f], fn, fd)
        _final(fn, fd, final[:, s])


@cuda.jit
def _atc_returns_kernel(x, growth, r):
    """The split scan's first step: r [T, S] = each symbol's growth-scaled returns."""
    s = cuda.grid(1)
    if s < x.shape[1]:
        _returns(x[:, s], growth, r[:, s])


@cuda.jit
def _atc_family_kernel(x, r, lens, d, cutout, ma, den, fam):
    """The split scan's second step, one thread per (family, symbol), symbols fastest (six
    times the threads of the fused kernel): fam [6, T, S] = each family's curve (layer 1
    then its finish), with scratch ma, den [6, T, S]."""
    i = cuda.grid(1)
    n_series = x.shape[1]
    if i < n_series * lens.shape[0]:
        f = i // n_series
        s = i - f * n_series
        xs = x[:, s]
        rs = r[:, s]
        ms = ma[f, :, s]
        dn = den[f, :, s]
        _family_curve(f, xs, rs, lens, d, cutout, ms, dn, fam[f, :, s])


@cuda.jit
def _atc_combine_kernel(fam, r, weights, d, cutout, fnom, fden, final):
    """The split scan's last step, one thread per symbol: layer 2 over the six families in
    their fixed order (the fused kernel's sums, bit for bit), then the final signal."""
    s = cuda.grid(1)
    if s < r.shape[1]:
        t_len = r.shape[0]
        rs = r[:, s]
        fn = fnom[:, s]
        fd = fden[:, s]
        for t in range(t_len):
            fn[t] = 0.0
            fd[t] = 0.0
        for f in range(fam.shape[0]):
            _layer2(fam[f, :, s], rs, d, cutout, weights[f], fn, fd)
        _final(fn, fd, final[:, s])


# float64 operations per bar and symbol, roughly: 54 MAs (~6 each), their layer-1 folds (~10
# each), six layer-2 folds and the final (~10 each): a roofline figure, not an exact count
OPS_PER_BAR = 54 * 16 + 7 * 10
# the split scan (a thread per family and symbol) while its three [6, T, S] float64 arrays fit
SPLIT_MAX_BYTES = 8 << 30
SPLIT_MAX_SERIES = 100_000  # past this many symbols the fused kernel alone fills the device


def use_split(n_series: int, t_len: int) -> bool:
    """Whether `run` picks the split scan: few symbols for the device (the fused kernel's one
    thread per symbol leaves SMs idle) and its [6, T, S] arrays within SPLIT_MAX_BYTES."""
    return n_series < SPLIT_MAX_SERIES and 3 * 6 * 8 * t_len * n_series <= SPLIT_MAX_BYTES


def run(x, lens: np.ndarray, weights: np.ndarray, growth: np.ndarray, d: float, cutout: int,
        tail: int | None = None, split: bool | None = None):
    """x: NumPy [S, T] float32/float64 (or a device array) -> (families [S, 6, k], final [S, k])
    float64 NumPy, k = min(tail, T) (every bar when `tail` is None); only they come back
    (transposed on the device). `split` (None: `use_split`): three kernels, a thread per
    (family, symbol) for layer 1, else the fused kernel, a thread per symbol, which keeps only
    the last k bars of each family. Both give the same bits."""
    n_series, t_len = x.shape
    n_fam = lens.shape[0]
    k = t_len if tail is None else min(int(tail), t_len)
    split = use_split(n_series, t_len) if split is None else split
    d_x = device_io.to_device_time_major(x, name="atc close")
    with phase("h2d", "atc parameters"):
        d_growth = cuda.to_device(np.ascontiguousarray(growth, dtype=np.float64))
        d_lens = cuda.to_device(np.ascontiguousarray(lens, dtype=np.int64))
        d_w = cuda.to_device(np.ascontiguousarray(weights, dtype=np.float64))
    threads = min(THREADS_PER_BLOCK, n_series)  # small batches (the simulator): no idle threads
    blocks = max(1, math.ceil(n_series / threads))
    x_bytes = np.dtype(d_x.dtype).itemsize * t_len * n_series
    plane = 8 * t_len * n_series  # one [T, S] float64 array
    if split:
        with phase("alloc", "atc scratch and outputs"):
            r, fnom, fden, d_final = (cuda.device_array((t_len, n_series), dtype=np.float64) for _ in range(4))
            ma, den, d_fam = (cuda.device_array((n_fam, t_len, n_series), dtype=np.float64) for _ in range(3))
        with phase("kernel", "atc returns", bytes=x_bytes + plane, ops=3 * t_len * n_series, blocks=blocks,
                   threads=threads):
            _atc_returns_kernel[blocks, threads](d_x, d_growth, r)
        fam_threads = min(THREADS_PER_BLOCK, n_fam * n_series)
        fam_blocks = max(1, math.ceil(n_fam * n_series / fam_threads))
        with phase("kernel", "atc families", bytes=x_bytes + plane + n_fam * plane,
                   ops=(OPS_PER_BAR - 60) * t_len * n_series, blocks=fam_blocks, threads=fam_threads):
            _atc_family_kernel[fam_blocks, fam_threads](d_x, r, d_lens, float(d), int(cutout), ma, den, d_fam)
        with phase("kernel", "atc combine", bytes=(n_fam + 2) * plane, ops=60 * t_len * n_series, blocks=blocks,
                   threads=threads):
            _atc_combine_kernel[blocks, threads](d_fam, r, d_w, float(d), int(cutout), fnom, fden, d_final)
    else:
        with phase("alloc", "atc scratch and outputs"):
            scratch = [cuda.device_array((t_len, n_series), dtype=np.float64) for _ in range(6)]
            d_fam = cuda.device_array((n_fam, k, n_series), dtype=np.float64)
            d_final = cuda.device_array((t_len, n_series), dtype=np.float64)
        nbytes = x_bytes + plane + 8 * n_fam * k * n_series
        with phase("kernel", "atc scan", bytes=nbytes, ops=OPS_PER_BAR * t_len * n_series, blocks=blocks,
                   threads=threads):
            _atc_kernel[blocks, threads](d_x, d_growth, d_lens, d_w, float(d), int(cutout), *scratch, d_fam, d_final)
    with phase("alloc", "atc tail outputs"):
        d_fam_sm = cuda.device_array((n_series, n_fam, k), dtype=np.float64)
    first = d_fam.shape[1] - k
    for f in range(n_fam):
        device_io.transpose(d_fam[f, first:], d_fam_sm[:, f, :], name=f"transpose atc family {f}")
    final_sm = device_io.transpose(d_final[t_len - k:], name="transpose atc final")
    return device_io.to_host(d_fam_sm, "atc families"), device_io.to_host(final_sm, "atc final")


def compute(close, p, dtype, cache: bool, tail: int | None):
    """The `atc` family's cuda entry: every bar on the device, only the last `tail` back
    (`cache` is cpu only)."""
    from kernels.atc.params import prepare_numpy

    x, was_1d = prepare_numpy(close)
    fam, final = run(x, p.lens, p.weights, p.growth(x.shape[1]), p.d, p.cutout, tail)
    with phase("host_post", "atc cast"):
        return fam.astype(dtype, copy=False), final.astype(dtype, copy=False), was_1d
