"""Device staging for the CUDA engines: host arrays in and out through pinned memory, layout
changes on the device, device arrays kept on the device.

- `is_device_array(a)`: a CuPy / `__cuda_array_interface__` array or a numba device array
  (the simulator's arrays have no interface but have `copy_to_host`).
- `as_numba(a)`: a numba device view of a device array (zero copy).
- `transpose(src, dst=None)`: dst[c, r] = src[r, c] on the device by 32 x 32 tiles through
  shared memory (reads and writes coalesced); `dst` may be a strided view (a slice of a 3-D
  array). Exact (a copy), runs under the simulator.
- `to_device_time_major(a)`: [series, time] host or device array -> [time, series] numba
  device array. A host array goes to the device as it is and is transposed there (no host
  transpose): with CuPy and a device, in 8 MB chunks through two pooled pinned buffers on a
  side stream (host copy and DMA overlap); else (simulator, no CuPy) through one pinned
  staging array (numba's pinned allocation, or pageable where there is no driver).
- `to_host(d)`: a device array -> NumPy through pooled pinned memory (the caller keeps the
  pinned buffer; it returns to CuPy's pool when freed).
- `to_caller(d, like)`: results for the caller: CuPy when `like` is CuPy (zero copy on the
  same allocation), the numba device array when `like` is one, else NumPy (`to_host`).

Device allocations go through numba's memory manager (`cuda.device_array`), which is RMM's
pool when `resources.compute.setup_rmm_pool` ran; CuPy's allocator is the same pool then, so
every array here comes from one pool. Imports CuPy lazily and only off the simulator.
"""

from __future__ import annotations

import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import config, cuda

# a (TILE, ROWS) block moves a TILE x TILE tile, TILE / ROWS elements a thread: 32 x 8 on a
# device; 8 x 2 under the simulator, which runs every thread as a Python thread (same code)
TILE, ROWS = (8, 2) if config.ENABLE_CUDASIM else (32, 8)
TILE_ROW = TILE + 1  # a padded tile row: no bank conflicts; a global, since a shared array's shape must be constants


def cupy_or_none():
    """CuPy when it is importable and the simulator is off, else None."""
    if config.ENABLE_CUDASIM:
        return None
    try:
        import cupy
    except Exception:  # noqa: BLE001 - no CuPy (or a broken one): numba alone
        return None
    return cupy


def is_device_array(a) -> bool:
    return hasattr(a, "__cuda_array_interface__") or (not isinstance(a, np.ndarray) and hasattr(a, "copy_to_host"))


def is_cupy(a) -> bool:
    return type(a).__module__.split(".")[0] == "cupy"


def as_numba(a):
    """A numba device view of device array `a` (itself when it already is one)."""
    if hasattr(a, "copy_to_host"):
        return a
    return cuda.as_cuda_array(a)


@functools.cache
def _transpose_kernel(dtype_str: str):
    from numba import from_dtype

    nb_type = from_dtype(np.dtype(dtype_str))

    @cuda.jit
    def kernel(src, dst):
        """dst [C, R] = src [R, C]^T; block (TILE, ROWS) moves one TILE x TILE tile."""
        tile = cuda.shared.array((TILE, TILE_ROW), nb_type)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        c0 = cuda.blockIdx.x * TILE
        r0 = cuda.blockIdx.y * TILE
        c = c0 + tx
        for k in range(0, TILE, ROWS):
            r = r0 + ty + k
            if r < src.shape[0] and c < src.shape[1]:
                tile[ty + k, tx] = src[r, c]
        cuda.syncthreads()
        r = r0 + tx
        for k in range(0, TILE, ROWS):
            c = c0 + ty + k
            if c < dst.shape[0] and r < dst.shape[1]:
                dst[c, r] = tile[tx, ty + k]

    return kernel


def transpose(src, dst=None, name: str = "transpose"):
    """dst[c, r] = src[r, c] on the device (a new C-order array when `dst` is None)."""
    from kernels.gpu_phases import phase

    src = as_numba(src)
    n_rows, n_cols = src.shape
    if dst is None:
        with phase("alloc", name):
            dst = cuda.device_array((n_cols, n_rows), dtype=src.dtype)
    grid = (max(1, math.ceil(n_cols / TILE)), max(1, math.ceil(n_rows / TILE)))
    nbytes = 2 * n_rows * n_cols * np.dtype(src.dtype).itemsize
    with phase("kernel", name, bytes=nbytes, ops=0, blocks=grid[0] * grid[1], threads=TILE * ROWS):
        if n_rows and n_cols:
            _transpose_kernel(np.dtype(src.dtype).str)[grid, (TILE, ROWS)](src, dst)
    return dst


def pinned_empty(shape, dtype) -> np.ndarray:
    """A host array in page-locked memory: CuPy's pinned pool (reused across calls) when
    CuPy sees a device, else numba's pinned allocation, else pageable (no driver)."""
    cp = cupy_or_none()
    if cp is not None:
        try:
            import cupyx

            return cupyx.empty_pinned(shape, dtype=dtype)
        except Exception:  # noqa: BLE001 - no device behind CuPy: fall through
            pass
    try:
        return cuda.pinned_array(shape, dtype=dtype)
    except Exception:  # noqa: BLE001 - no driver (the PTX compile check): pageable
        return np.empty(shape, dtype=dtype)


H2D_CHUNK_BYTES = 16 << 20  # a chunk of the staged host-to-device copy
H2D_THREADS = min(8, os.cpu_count() or 1)  # host threads filling the pinned staging buffer
_staging_pool: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _staging_pool
    if _staging_pool is None:
        _staging_pool = ThreadPoolExecutor(H2D_THREADS, thread_name_prefix="h2d-staging")
    return _staging_pool


def _h2d_pipelined(cp, a):
    """Host C-order `a` -> CuPy device copy through pinned staging: H2D_THREADS host threads
    copy chunks of H2D_CHUNK_BYTES into one pinned buffer (CuPy's pinned pool: reused across
    calls) and each thread queues its chunk's DMA on a side stream as soon as the chunk is
    staged, so the host copies (NumPy releases the GIL) run side by side and overlap the
    transfers; the side stream first waits for the work queued on the current stream. One host thread copies ~8 GB/s (first H100 run, 2026-11-27: 720 MB in 96 ms),
    below what the link carries. Returns once every chunk has landed."""
    import cupyx

    out = cp.empty(a.shape, dtype=a.dtype)
    src, dst = a.reshape(-1), out.reshape(-1)
    n = src.size
    staged = cupyx.empty_pinned(n, dtype=a.dtype)
    chunk = max(1, H2D_CHUNK_BYTES // a.itemsize)
    stream = cp.cuda.Stream(non_blocking=True)
    # `out` comes from CuPy's pool in the order of the current stream: its memory may still be
    # read by work queued there before it was freed. The side stream waits for that work, so
    # no chunk lands under a kernel still reading the block (second H100 run, 2026-11-27:
    # without this wait the grid search's next kernels read overwritten indices: an illegal
    # address).
    stream.wait_event(cp.cuda.get_current_stream().record())
    device = cp.cuda.Device()

    def stage(lo: int) -> None:
        hi = min(n, lo + chunk)
        np.copyto(staged[lo:hi], src[lo:hi])
        with device:
            dst[lo:hi].set(staged[lo:hi], stream=stream)

    list(_pool().map(stage, range(0, n, chunk)))
    stream.synchronize()
    return out


def upload(a):
    """NumPy -> CuPy through the threaded pinned staging (`_h2d_pipelined`) for arrays of at
    least a chunk, `cupy.asarray` for smaller ones; device arrays are returned as they are."""
    import cupy as cp

    if is_device_array(a):
        return cp.asarray(a)
    a = np.ascontiguousarray(a)
    return _h2d_pipelined(cp, a) if a.nbytes >= H2D_CHUNK_BYTES else cp.asarray(a)


def to_device_time_major(a, name: str = "input"):
    """[series, time] host or device array -> [time, series] numba device array (C order)."""
    from kernels.gpu_phases import phase

    if is_device_array(a):
        return transpose(as_numba(a), name=f"transpose {name}")
    a = np.ascontiguousarray(a)
    cp = cupy_or_none()
    if cp is not None and a.size:
        try:
            cp.cuda.runtime.getDeviceCount()
        except Exception:  # noqa: BLE001 - CuPy without a device
            cp = None
    if cp is not None and a.size:
        with phase("h2d", f"{name} (pinned, pipelined)"):
            d = cuda.as_cuda_array(_h2d_pipelined(cp, a))
    else:
        with phase("host_prep", f"pinned staging {name}"):
            staged = pinned_empty(a.shape, a.dtype)
            np.copyto(staged, a)
        with phase("h2d", name):
            d = cuda.to_device(staged)
    return transpose(d, name=f"transpose {name}")


def to_host(d, name: str = "output") -> np.ndarray:
    """Device array -> NumPy (in pinned memory where the machine has it)."""
    from kernels.gpu_phases import phase

    d = as_numba(d)
    with phase("alloc", f"pinned {name}"):
        out = pinned_empty(d.shape, d.dtype)
    with phase("d2h", name):
        return d.copy_to_host(out)


def to_caller(d, like, name: str = "output"):
    """Result `d` (numba device array) in the kind of the caller's input `like`."""
    if is_cupy(like):
        import cupy

        return cupy.asarray(d)
    if is_device_array(like):
        return d
    return to_host(d, name)
