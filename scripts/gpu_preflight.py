"""The GPU run's preflight: in a few seconds, prove the machine's packages work before any
test or benchmark minute is spent (the first GPU run lost its tests to numpy 2.5 breaking
numba-cuda at import).

Checks, in order, one printed line each (with versions):
  numpy, numba      import
  numba.cuda        the device (a real one with TRADELAB_GPU=1; the simulator with TRADELAB_GPU=0,
                    tests/gpu.py choose_simulator) and its name
  tiny kernel       compile and run one @cuda.jit kernel, check its result
  cupy              one device op and its result
  torch             torch.cuda available
  kernels           kernels.indicators.cuda, kernels.atc.cuda, kernels.gridsearch.cuda and
                    kernels.strategy.cuda import
On the first failure it prints ONE line "gpu-preflight: FAILED <check>: <why>" and exits 3;
exit 0 when every check passed. Under the simulator (the dry run) CuPy and torch.cuda are
not required (a CPU machine has no CUDA for them): their line says "skipped (simulator)".

Usage: python scripts/gpu_preflight.py   (scripts/gpu_check.sh runs it first)
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.gpu import choose_simulator  # noqa: E402

choose_simulator()  # before numba.cuda is imported

KERNEL_MODULES = ("kernels.indicators.cuda", "kernels.atc.cuda", "kernels.gridsearch.cuda",
                  "kernels.strategy.cuda")
FAILED = 3
# numba.cuda, bound by check_device. A module global, not a local import: numba's simulator
# runs a kernel by swapping the `cuda` module among the kernel function's globals.
cuda = None


class Skip(Exception):
    """A check that does not apply here (the simulator has no device for CuPy or torch)."""


def simulated() -> bool:
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def check_numpy() -> str:
    import numpy

    return f"numpy {numpy.__version__}"


def check_numba() -> str:
    import numba

    return f"numba {numba.__version__}"


def check_device() -> str:
    """numba.cuda sees a device: the simulator when asked for, else a real one (required)."""
    global cuda
    from numba import cuda

    if simulated():
        return "numba.cuda on the CUDA SIMULATOR (dry run: the device checks below run on it)"
    if not cuda.is_available():
        raise RuntimeError("numba.cuda sees no CUDA device (driver or numba-cuda broken?)")
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    version = getattr(importlib.import_module("numba_cuda"), "__version__", "?") if _has("numba_cuda") else "builtin"
    return f"numba.cuda device {name}, compute capability {dev.compute_capability}, numba-cuda {version}"


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _odd(x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = 2 * i + 1


def check_tiny_kernel() -> str:
    """Compile and launch one kernel (x[i] = 2 * i + 1) and check every element."""
    import numpy as np

    t0 = time.perf_counter()
    d = cuda.device_array(64, dtype=np.int64)
    cuda.jit(_odd)[2, 32](d)
    got = d.copy_to_host()
    if not np.array_equal(got, 2 * np.arange(64) + 1):
        raise RuntimeError(f"tiny kernel returned wrong values: {got[:4]}...")
    return f"tiny @cuda.jit kernel compiled, ran and checked in {time.perf_counter() - t0:.2f} s"


def check_cupy() -> str:
    """One CuPy op on the device (a sum of 1..1000) equals its exact value."""
    if simulated() and not _has("cupy"):
        raise Skip("cupy not installed")
    try:
        import cupy
    except Exception as err:  # noqa: BLE001 - the import error is the finding
        if simulated():
            raise Skip(f"cupy unimportable ({type(err).__name__})") from err
        raise
    if simulated() and cupy.cuda.runtime.getDeviceCount() == 0:
        raise Skip("cupy sees no device")
    got = int(cupy.arange(1, 1001, dtype=cupy.int64).sum().get())
    if got != 500500:
        raise RuntimeError(f"cupy sum of 1..1000 is {got}, not 500500")
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    return f"cupy {cupy.__version__} on {name}: one op checked"


def check_torch() -> str:
    import torch

    if torch.cuda.is_available():
        return f"torch {torch.__version__} cuda {torch.version.cuda}: {torch.cuda.get_device_name(0)}"
    if simulated():
        raise Skip(f"torch {torch.__version__} sees no CUDA")
    raise RuntimeError(f"torch {torch.__version__}: torch.cuda.is_available() is False")


def check_kernels() -> str:
    for name in KERNEL_MODULES:
        importlib.import_module(name)
    return "imported " + ", ".join(KERNEL_MODULES)


def _mul_add(a, b, c, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] * b[i] + c[i]


def check_fma() -> str:
    """Does `-fma=0` (kernels/cuda_build.py) reach the device build? A kernel marked like the
    project's computes a*b+c on random float64: equal to NumPy's two roundings bit for bit and
    no `fma.rn.f64` in its PTX when it does. A finding, not a failure (tests/gpu.py keeps an
    FMA allowance until a device run shows the kernels bit for bit)."""
    if simulated():
        raise Skip("nothing is compiled on the simulator")
    import inspect

    import numpy as np
    import numba.cuda.dispatcher as dispatcher

    from kernels import cuda_build

    kernel = cuda_build.jit(_mul_add)
    rng = np.random.default_rng(0)
    a, b, c = (rng.normal(0, 1, 4096) for _ in range(3))
    out = cuda.device_array(4096, dtype=np.float64)
    kernel[16, 256](*(cuda.to_device(v) for v in (a, b, c)), out)
    differ = int(np.sum(out.copy_to_host() != a * b + c))
    ptx = "\n".join(kernel.inspect_asm().values())
    fmas = ptx.count("fma.rn.f64")
    seen = getattr(inspect.unwrap(dispatcher._Kernel.__init__).__globals__.get("compile_cuda"), "_tradelab_no_fma", False)
    verdict = "bit for bit" if differ == 0 and fmas == 0 else "CONTRACTED"
    return (f"a*b+c {verdict}: {differ} of 4096 differ from NumPy, {fmas} fma.rn.f64 in its PTX; hook seen by the "
            f"kernel compile: {seen} ({dispatcher.__file__})")


CHECKS = (("numpy", check_numpy), ("numba", check_numba), ("numba.cuda", check_device),
          ("tiny kernel", check_tiny_kernel), ("cupy", check_cupy), ("torch", check_torch),
          ("kernels", check_kernels), ("fma", check_fma))


def run(checks=CHECKS, out=print) -> int:
    """Run `checks` ((name, fn returning a line)) in order: 0 when all pass or skip, FAILED (3)
    at the first that raises, after one line naming it."""
    t0 = time.perf_counter()
    for name, fn in checks:
        try:
            out(f"gpu-preflight: {name:<11} ok: {fn()}")
        except Skip as why:
            out(f"gpu-preflight: {name:<11} skipped (simulator): {why}")
        except BaseException as err:  # noqa: BLE001 - any failure, even SystemExit from a broken import, aborts
            first = (str(err).strip().splitlines() or [""])[0][:300]
            out(f"gpu-preflight: FAILED {name}: {type(err).__name__}: {first}")
            return FAILED
    mode = "simulator (dry run)" if simulated() else "real GPU"
    out(f"gpu-preflight: all checks passed on the {mode} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(run())
