"""The GPU proof's script runs end to end here, before any GPU minute is spent:
`GPU_CHECK_DRY=1 scripts/gpu_check.sh` (numba's CUDA simulator, torch on the CPU, tiny
sizes, Dagster/polars/cuDF unimportable as on the GPU machine) runs the tests marked gpu and
benchmarks/bench_gpu.py --quick, and writes one JSON + a table where every engine agrees."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO

SECTIONS = ("indicators", "atc", "grid", "population", "lstm", "lstm_train")


def test_dry_gpu_check_runs_every_section_and_every_engine_agrees(tmp_path):
    env = {**os.environ, "GPU_CHECK_DRY": "1", "OUT": str(tmp_path), "PYTHON": sys.executable,
           "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(tmp_path / "numba"))}
    env.pop("PYTHONPATH", None)  # the script puts the repository on it
    run = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh")], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert {"gpu_check.json", "gpu_check.txt", "gpu_tests.xml", "gpu_tests.log"} <= set(os.listdir(tmp_path))
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["mode"] == "quick" and report["simulated"] is True
    assert set(report["sections"]) == set(SECTIONS)
    for name, section in report["sections"].items():
        assert "error" not in section, (name, section.get("error"))
        assert section["equal"] is True and section["mismatches"] == [], name
        assert section["cpu_s"] > 0 and section["gpu_s"] > 0, name
    assert report["all_equal"] is True
    tests = report["tests"]
    assert tests["rc"] == 0 and tests["failed"] == tests["errors"] == 0 and tests["passed"] > 100
    table = (tmp_path / "gpu_check.txt").read_text()
    assert all(name in table for name in SECTIONS) and "Dry run" in table
    assert run.stdout.rstrip().endswith("tests rc 0, benchmarks rc 0")


def _compile_check():
    import importlib.util

    spec = importlib.util.spec_from_file_location("cuda_compile_check", REPO / "scripts" / "cuda_compile_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cuda_compile_check_has_an_entry_point_for_every_cuda_kernel():
    """scripts/cuda_compile_check.py compiles every @cuda.jit kernel with numba-cuda (no GPU
    needed, toolchain from PyPI wheels; not run in CI). A new kernel needs an entry point there:
    this fails until COVERS names it."""
    check = _compile_check()
    found = check.kernels_in_source()
    assert {"_atc_kernel", "crossings_kernel", "combos_kernel", "walk_kernel"} <= found
    assert found == set(check.COVERS)
    points = {name.split(" ")[0] if name.startswith("indicator") else name for name, _ in check._entry_points()}
    assert set(check.COVERS.values()) <= points


def test_kernels_in_source_finds_nested_and_top_level_kernels_only(tmp_path):
    (tmp_path / "k.py").write_text(
        "from numba import cuda\n"
        "@cuda.jit\ndef top(x):\n    pass\n"
        "dev = cuda.jit(device=True)(lambda x: x)\n"
        "def template(d):\n    @cuda.jit\n    def kernel(x):\n        d(x)\n    return kernel\n"
        "@cuda.jit(device=True)\ndef device_fn(x):\n    return x\n")
    assert _compile_check().kernels_in_source(tmp_path) == {"top", "template.<locals>.kernel"}
