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

Exactness: a GPU engine equals its CPU engine bit for bit, everywhere. Under the simulator
(and on the CPU) a CUDA kernel runs the same float64 operations in the same order as the CPU
core; on real hardware NVVM would contract a*b+c into one fused multiply-add (one rounding
instead of two), so every project kernel is compiled with `-fma=0` (kernels/cuda_build.py;
scripts/cuda_compile_check.py checks the PTX), and explicit `fma` calls are the CPU's too.
The first device run allowed 1e-12 (and a condition-number bound for two cancelling
indicators); the second (H100, 2026-11-27, `-fma=0`) ran every test below with no allowance.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

gpu = pytest.mark.gpu


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


def assert_engine_equal(gpu_out, cpu_out, err_msg: str = "") -> None:
    """A GPU engine's output equals the CPU engine's bit for bit (NaN where it has NaN), on
    the simulator and on a real GPU alike (module docstring); the message names how many
    elements differ and the first of them."""
    gpu_out, cpu_out = np.asarray(gpu_out), np.asarray(cpu_out)
    assert gpu_out.dtype == cpu_out.dtype and gpu_out.shape == cpu_out.shape, err_msg
    same = (gpu_out == cpu_out) | (np.isnan(gpu_out) & np.isnan(cpu_out)) if np.issubdtype(cpu_out.dtype, np.floating) \
        else gpu_out == cpu_out
    if not np.all(same):
        bad = ~np.asarray(same).reshape(-1)
        first = int(np.argmax(bad))
        raise AssertionError(f"{err_msg} {int(bad.sum())} of {bad.size} elements differ, first at flat index {first}: "
                             f"gpu {gpu_out.reshape(-1)[first].item()!r}, cpu {cpu_out.reshape(-1)[first].item()!r}".strip())
