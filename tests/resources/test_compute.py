"""Device selection, CPU fallback, the RMM set-up order, and worker thread defaults."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest
from dagster import build_init_resource_context

from resources.compute import ComputeResource, Device, select_device, setup_rmm_pool
from resources.threads import THREAD_VARS, pin_worker_threads

NONE = lambda: None  # noqa: E731


def test_cpu_is_cpu_without_probing():
    def boom():
        raise AssertionError("must not probe")

    assert select_device("cpu", cuda=boom, rocm=boom) == Device.cpu()


def test_auto_prefers_cuda_then_rocm_then_cpu():
    assert select_device("auto", cuda=lambda: "H100", rocm=lambda: "MI300").kind == "cuda"
    rocm = select_device("auto", cuda=NONE, rocm=lambda: "7900 XTX")
    assert (rocm.kind, rocm.backend, rocm.torch_device) == ("rocm", "torch", "cuda")
    assert select_device("auto", cuda=NONE, rocm=NONE) == Device.cpu()


@pytest.mark.parametrize("asked", ["cuda", "rocm"])
def test_absent_device_falls_back_to_cpu_with_a_warning(asked):
    with pytest.warns(RuntimeWarning, match=f"'{asked}' was requested but none is available; falling back to CPU"):
        assert select_device(asked, cuda=NONE, rocm=NONE) == Device.cpu()


def test_unknown_device_is_an_error():
    with pytest.raises(ValueError, match="auto, cpu, cuda or rocm"):
        select_device("tpu", cuda=NONE, rocm=NONE)


def test_rmm_pool_is_set_up_in_the_only_safe_order():
    calls: list[str] = []
    mods = {
        "rmm.allocators.numba": types.SimpleNamespace(RMMNumbaManager="RMMNumbaManager"),
        "numba.cuda": types.SimpleNamespace(set_memory_manager=lambda m: calls.append(f"numba:{m}")),
        "rmm": types.SimpleNamespace(reinitialize=lambda **kw: calls.append(f"rmm:{sorted(kw.items())}")),
        "cupy": types.SimpleNamespace(cuda=types.SimpleNamespace(set_allocator=lambda a: calls.append(f"cupy:{a}"))),
        "rmm.allocators.cupy": types.SimpleNamespace(rmm_cupy_allocator="rmm_cupy_allocator"),
    }

    def importer(name):
        if name == "cudf":
            calls.append("cudf")
            return types.SimpleNamespace()
        return mods[name]

    steps = setup_rmm_pool(2**30, importer=importer)
    assert steps == ["numba_memory_manager", "rmm_pool", "cupy_allocator", "cudf"]
    assert calls == [
        "numba:RMMNumbaManager",
        f"rmm:{[('initial_pool_size', 2**30), ('pool_allocator', True)]}",
        "cupy:rmm_cupy_allocator",
        "cudf",
    ]


def test_rmm_pool_without_cudf_is_complete():
    """cuDF (hundreds of MB, not on the GPU machine) is optional: the pool serves numba and CuPy."""
    calls: list[str] = []
    mods = {
        "rmm.allocators.numba": types.SimpleNamespace(RMMNumbaManager="RMMNumbaManager"),
        "numba.cuda": types.SimpleNamespace(set_memory_manager=lambda m: calls.append("numba")),
        "rmm": types.SimpleNamespace(reinitialize=lambda **kw: calls.append("rmm")),
        "cupy": types.SimpleNamespace(cuda=types.SimpleNamespace(set_allocator=lambda a: calls.append("cupy"))),
        "rmm.allocators.cupy": types.SimpleNamespace(rmm_cupy_allocator="rmm_cupy_allocator"),
    }

    def importer(name):
        if name == "cudf":
            raise ModuleNotFoundError("No module named 'cudf'")
        return mods[name]

    assert setup_rmm_pool(importer=importer) == ["numba_memory_manager", "rmm_pool", "cupy_allocator", "cudf_missing"]
    assert calls == ["numba", "rmm", "cupy"]


def test_resource_without_the_requested_gpu_warns_and_runs_on_cpu(monkeypatch, caplog):
    import resources.compute as compute

    monkeypatch.setattr(compute, "probe_cuda", NONE)
    monkeypatch.setattr(compute, "probe_rocm", NONE)
    res = ComputeResource(device="cuda")
    with pytest.warns(RuntimeWarning, match="'cuda' was requested but none is available"):
        res.setup_for_execution(build_init_resource_context())
    assert res.selected == Device.cpu() and res.backend == "cpu"


def test_the_cuda_simulator_is_not_taken_for_a_gpu(monkeypatch):
    from numba import config

    monkeypatch.setattr(config, "ENABLE_CUDASIM", 1)
    monkeypatch.setitem(__import__("sys").modules, "cupy", None)  # no CuPy: only numba could answer
    from resources.compute import probe_cuda

    assert probe_cuda() is None


def test_thread_defaults_never_override_the_user(monkeypatch):
    for var in THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "4")
    report = pin_worker_threads(1)
    assert report["MKL_NUM_THREADS"] == "4" and report["OMP_NUM_THREADS"] == "1"


def test_importing_packages_sets_nothing():
    code = ("import os, config.settings, config.partitions, pipeline, resources, assets, domain, kernels; "
            "print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('DAGSTER_EVENT_BATCH_SIZE'))")
    env = {k: v for k, v in __import__("os").environ.items() if k not in (*THREAD_VARS, "DAGSTER_EVENT_BATCH_SIZE")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["None", "None"]


def test_code_location_pins_threads_before_numpy_loads():
    # A finder that records OPENBLAS_NUM_THREADS at the moment NumPy is first imported.
    code = (
        "import os, sys\n"
        "class Spy:\n"
        "    seen = None\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy' and Spy.seen is None:\n"
        "            Spy.seen = os.environ.get('OPENBLAS_NUM_THREADS', 'unset')\n"
        "        return None\n"
        "sys.meta_path.insert(0, Spy())\n"
        "import pipeline.definitions\n"
        "print(Spy.seen, os.environ['DAGSTER_EVENT_BATCH_SIZE'])\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k not in (*THREAD_VARS, "DAGSTER_EVENT_BATCH_SIZE")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split()[-2:] == ["1", "1000"]


def test_without_the_nvidia_driver_the_probe_imports_neither_cupy_nor_numba_cuda(monkeypatch):
    import builtins

    import resources.compute as compute

    real, imported = builtins.__import__, []

    def recording(name, *args, **kwargs):
        if name.startswith(("cupy", "numba")):
            imported.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(compute, "cuda_driver_loads", lambda: False)
    monkeypatch.setattr(builtins, "__import__", recording)
    assert compute.probe_cuda() is None
    assert imported == []
