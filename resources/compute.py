"""Compute device selection (auto|cpu|cuda|rocm) as a Dagster resource.

- CUDA is present when CuPy sees a device or numba.cuda is available; ROCm when torch is a
  HIP build (`torch.version.hip`) and `torch.cuda.is_available()`.
- `auto` takes CUDA, then ROCm, then CPU. A device that was asked for but is absent falls
  back to CPU with a warning (never a crash).
- On CUDA one RMM pool serves numba, CuPy and cuDF. The order matters: numba's memory
  manager first (before any numba.cuda context exists), then the pool, then CuPy's
  allocator, and cuDF last (importing cuDF touches the allocator).
- Thread variables are pinned before heavy imports (see resources.threads); the selected
  device and the threads are logged when the resource starts.

The kernel backend per device comes from `kernels.backends.backend_for` (the only such
map): cpu -> "cpu" (numba), cuda -> "cuda" (numba.cuda/CuPy), rocm -> "torch" (HIP torch).
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.metadata
import logging
import sys
import warnings
from dataclasses import dataclass
from typing import Callable, Literal

from dagster import ConfigurableResource, InitResourceContext
from pydantic import PrivateAttr

from resources.threads import pin_worker_threads

DeviceKind = Literal["cpu", "cuda", "rocm"]
GPU_POOL = "gpu"  # the Dagster concurrency pool of steps that may use a GPU (pipeline.executors)
DASK_RESOURCES_TAG = "dagster-dask/resource_requirements"


def gpu_step_tags() -> dict:
    """Op tags of a step that may use a GPU: on the dask executor with
    `executor.dask.gpu_resources`, the Dask resource requirement GPU=1; else none."""
    from config.settings import load_settings

    ex = load_settings().executor
    return {DASK_RESOURCES_TAG: {"GPU": 1}} if ex.kind == "dask" and ex.dask.gpu_resources else {}


@dataclass(frozen=True)
class Device:
    kind: DeviceKind
    name: str
    backend: str
    torch_device: str

    @classmethod
    def of(cls, kind: DeviceKind, name: str) -> "Device":
        """The device `kind` named `name`, with its kernel backend and torch device."""
        from kernels.backends import backend_for  # here: loading the code location loads no kernel

        return cls(kind, name, backend_for(kind), "cpu" if kind == "cpu" else "cuda")

    @classmethod
    def cpu(cls) -> "Device":
        return cls.of("cpu", "cpu")


def cuda_driver_loads() -> bool:
    """Whether the NVIDIA driver library can be loaded (a dlopen, milliseconds). Without it no
    CUDA device exists, and CuPy and numba.cuda (about half a second to import) stay unloaded."""
    names = {"win32": ("nvcuda.dll",), "darwin": ()}.get(sys.platform, ("libcuda.so.1", "libcuda.so"))
    for name in names:
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def probe_cuda() -> str | None:
    """Name of the first CUDA device, or None."""
    if not cuda_driver_loads():
        return None
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            props = cupy.cuda.runtime.getDeviceProperties(0)
            return props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    except Exception:
        pass
    try:
        from numba import config, cuda

        if not config.ENABLE_CUDASIM and cuda.is_available():  # the simulator is not a GPU
            return cuda.get_current_device().name.decode()
    except Exception:
        pass
    return None


def probe_rocm() -> str | None:
    """Name of the first ROCm device seen by a HIP build of torch, or None. A torch that is
    not a ROCm build (its version has no `rocm`) is not imported: that costs seconds."""
    try:
        if "rocm" not in importlib.metadata.version("torch"):
            return None
        import torch

        if getattr(torch.version, "hip", None) and torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    except Exception:
        pass
    return None


def select_device(
    requested: str,
    *,
    cuda: Callable[[], str | None] | None = None,
    rocm: Callable[[], str | None] | None = None,
    log: logging.Logger | None = None,
) -> Device:
    """The device to use for `requested` (auto|cpu|cuda|rocm), falling back to CPU."""
    log = log or logging.getLogger(__name__)
    cuda = cuda or probe_cuda
    rocm = rocm or probe_rocm
    if requested == "cpu":
        return Device.cpu()
    if requested in ("auto", "cuda"):
        name = cuda()
        if name:
            return Device.of("cuda", name)
    if requested in ("auto", "rocm"):
        name = rocm()
        if name:
            return Device.of("rocm", name)
    if requested in ("cuda", "rocm"):
        msg = f"device '{requested}' was requested but none is available; falling back to CPU"
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
        log.warning(msg)
    elif requested != "auto":
        raise ValueError(f"device must be auto, cpu, cuda or rocm, got {requested!r}")
    return Device.cpu()


def setup_rmm_pool(pool_bytes: int | None = None, importer: Callable = importlib.import_module) -> list[str]:
    """One RMM pool shared by numba, CuPy and cuDF, set up in the only safe order.

    Returns the steps taken, in order (for logs and tests).
    """
    steps = []
    rmm_numba = importer("rmm.allocators.numba")
    numba_cuda = importer("numba.cuda")
    numba_cuda.set_memory_manager(rmm_numba.RMMNumbaManager)
    steps.append("numba_memory_manager")
    rmm = importer("rmm")
    kwargs = {"pool_allocator": True}
    if pool_bytes:
        kwargs["initial_pool_size"] = int(pool_bytes)
    rmm.reinitialize(**kwargs)
    steps.append("rmm_pool")
    cupy = importer("cupy")
    rmm_cupy = importer("rmm.allocators.cupy")
    cupy.cuda.set_allocator(rmm_cupy.rmm_cupy_allocator)
    steps.append("cupy_allocator")
    try:
        importer("cudf")
        steps.append("cudf")
    except ImportError:
        steps.append("cudf_missing")
    return steps


class ComputeResource(ConfigurableResource):
    """The compute device for kernels; `device` defaults to the settings' policy."""

    device: str = "auto"
    threads_per_worker: int = 1
    rmm_pool_gb: float | None = None

    _device: Device | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        threads = pin_worker_threads(self.threads_per_worker)
        log = context.log if context.log is not None else logging.getLogger(__name__)
        self._device = select_device(self.device, log=log)
        if self._device.kind == "cuda":
            try:
                pool = int(self.rmm_pool_gb * 2**30) if self.rmm_pool_gb else None
                steps = setup_rmm_pool(pool)
                log.info(f"RMM pool ready: {' -> '.join(steps)}")
            except ImportError as err:
                log.warning(f"RMM not installed ({err}); CuPy and numba use their own allocators")
        log.info(f"compute device: {self._device.kind} ({self._device.name}), backend {self._device.backend}; threads {threads}")

    @property
    def selected(self) -> Device:
        if self._device is None:
            self._device = select_device(self.device)
        return self._device

    @property
    def backend(self) -> str:
        return self.selected.backend


RUNTIME_PACKAGES = ("torch", "numba", "polars", "dagster")


def runtime_line(device: Device, policy: str) -> str:
    """The one line every command and run logs at start: device, backend, thread variables and the versions that decide the numerics.
    Versions come from package metadata: nothing heavy is imported for it."""
    from resources.threads import thread_report

    def version(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "absent"

    threads = " ".join(f"{k}={v}" for k, v in thread_report().items())
    versions = " ".join(f"{n} {version(n)}" for n in RUNTIME_PACKAGES)
    return f"tradelab: device {device.kind} ({device.name}, policy {policy}), backend {device.backend}; {threads}; {versions}"
