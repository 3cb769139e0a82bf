"""What the GPU tests share: where they run and how exactly a GPU engine must equal the CPU.

A test that exercises a GPU engine (numba.cuda, CuPy, torch on CUDA) carries the marker
`gpu` (registered in pyproject.toml). `pytest -m gpu` selects exactly those: CI runs them
under numba's CUDA simulator and torch-CPU; `make gpu-check` runs the same tests on a real
GPU (scripts/gpu_check.sh sets TRADELAB_GPU=1).

TRADELAB_GPU (read once, in tests/conftest.py, before numba.cuda is imported):
  1      the GPU proof: simulator OFF, a real CUDA device is required (the session stops if
         there is none), torch tests run on "cuda"
  0      simulator ON and torch on "cpu", even on a machine with a GPU (the dry run)
  unset  simulator unless `nvidia-smi` is on the PATH; torch on "cuda" when it sees one

Exactness: under the simulator (and on the CPU) a CUDA kernel runs the same float64
operations in the same order as the CPU core, so the tests compare bit for bit. On real
hardware the last bits of a float64 result may differ: there, and only there,
`assert_engine_equal` allows a relative difference of 1e-12 (of the reference's largest
magnitude, so values that cancel to ~0 are not held to a tighter bound than their inputs),
and one float32 ulp for float32 outputs (a float64 result 1e-16 away can round to the
neighbouring float32). Integer outputs (trade counts, exit rows, ranks) are always compared
exactly. TRADELAB_GPU_EXACT=1 drops the allowance (bit for bit on the device too).

Why the allowance stays: NVVM contracts a*b+c into one fused multiply-add (one rounding
instead of two). The project's kernels are compiled with `-fma=0` (kernels/cuda_build.py;
scripts/cuda_compile_check.py finds no contracted fma in their PTX, with numba 0.64 and 0.68
alike), yet the second H100 run (2026-11-27, with the allowance removed) still found
last-bit differences in 16 tests (ema, dema, tema, wma, hma, lsma, rsi, rolling_std, zscore;
e.g. ema 98.38407315231093 against 98.38407315231095), so the device build is not yet shown
bit for bit; `scripts/gpu_preflight.py` now reports whether a marked kernel's a*b+c is
contracted on the device, which the next device run answers first.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

gpu = pytest.mark.gpu

# float64 results of a CUDA kernel on real hardware may differ from the CPU's by FMA rounding
REAL_GPU_RTOL = 1e-12
# ... times an output's condition number, in float64 epsilons, where it comes by cancellation
COND_ULPS = 64


def choose_simulator() -> None:
    """Set NUMBA_ENABLE_CUDASIM from TRADELAB_GPU (module docstring). Call it before
    numba.cuda is first imported: tests/conftest.py and benchmarks/bench_gpu.py do."""
    switch = os.environ.get("TRADELAB_GPU", "")
    if switch in ("0", "1"):
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if switch == "0" else "0"
    elif "NUMBA_ENABLE_CUDASIM" not in os.environ and shutil.which("nvidia-smi") is None:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


def simulated() -> bool:
    """numba.cuda runs on its simulator (CI, the dry run)."""
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def real_cuda() -> bool:
    """numba.cuda runs on a real device."""
    if simulated():
        return False
    from numba import cuda

    return cuda.is_available()


def torch_device() -> str:
    """Where the torch engines are tested: "cuda" when the simulator is off and torch sees a
    GPU (ROCm shows as cuda), else "cpu"."""
    import torch

    return "cuda" if not simulated() and torch.cuda.is_available() else "cpu"


def exact_on_device() -> bool:
    """TRADELAB_GPU_EXACT=1: a real GPU is held to bit-for-bit equality too (no FMA allowance)."""
    return os.environ.get("TRADELAB_GPU_EXACT", "") == "1"


def assert_engine_equal(gpu_out, cpu_out, err_msg: str = "", *, condition=None) -> None:
    """A GPU engine's output equals the CPU engine's: bit for bit on the simulator and for
    integers; within FMA rounding (module docstring) on a real GPU.

    condition: for an output computed by cancellation, its condition number per element
    (broadcast to the output), e.g. E[x^2] / Var(x) for a variance taken as E[x^2] - E[x]^2:
    a rounding moved by FMA is magnified by it, so on a real GPU each element may also differ
    by COND_ULPS float64 epsilons times its condition, relative to itself (first device run,
    H100, 2026-11-27: a window-2 z-score of condition 8.4e9 differed by 1.1e-8)."""
    gpu_out, cpu_out = np.asarray(gpu_out), np.asarray(cpu_out)
    assert gpu_out.dtype == cpu_out.dtype and gpu_out.shape == cpu_out.shape, err_msg
    if not real_cuda() or not np.issubdtype(cpu_out.dtype, np.floating) or exact_on_device():
        np.testing.assert_array_equal(gpu_out, cpu_out, err_msg=err_msg)
        return
    finite = np.isfinite(cpu_out)
    np.testing.assert_array_equal(gpu_out[~finite], cpu_out[~finite], err_msg=f"{err_msg} (NaN and inf positions)")
    scale = float(np.max(np.abs(cpu_out[finite]), initial=0.0))
    tol = REAL_GPU_RTOL * scale if cpu_out.dtype == np.float64 else float(np.spacing(np.float32(scale)))
    rtol = REAL_GPU_RTOL
    if condition is not None:
        cond = np.broadcast_to(np.asarray(condition, dtype=np.float64), cpu_out.shape)[finite]
        rtol = REAL_GPU_RTOL + COND_ULPS * np.finfo(np.float64).eps * np.maximum(cond, 1.0)
    g, c = gpu_out[finite], cpu_out[finite]
    with np.errstate(invalid="ignore"):  # an infinite condition (a flat window) times 0: no bound
        bad = np.abs(g - c) > tol + rtol * np.abs(c)
    assert not bad.any(), (
        f"{err_msg} {int(bad.sum())} of {c.size} elements differ beyond FMA rounding, "
        f"first at {int(np.argmax(bad))}: gpu {g[bad][0]!r}, cpu {c[bad][0]!r}"
    )
