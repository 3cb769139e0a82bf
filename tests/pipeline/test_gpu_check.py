"""The GPU proof's script runs end to end here, before any GPU minute is spent:
`GPU_CHECK_DRY=1 scripts/gpu_check.sh` (numba's CUDA simulator, torch on the CPU, tiny
sizes, Dagster/polars/cuDF unimportable as on the GPU machine) runs the tests marked gpu and
benchmarks/bench_gpu.py --quick, and writes one JSON + a table where every engine agrees.
Its first step, scripts/gpu_preflight.py, passes on the simulator and stops a broken machine
with one line (exit 3); scripts/gpu_profile.py --quick times every GPU path by phase."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from xml.etree import ElementTree

from tests.conftest import REPO

SECTIONS = ("indicators", "atc", "grid", "population", "lstm", "lstm_train")


# The script's test step on two of the gpu test files (the strategy bitmasks on the simulator,
# the torch kernels): `make test` runs every gpu test itself, so the dry check's step proves the
# plumbing (pytest -m gpu, its JUnit file, the counts in the report), not the tests a second
# time (all of them: 116 s of the 180 s this test took on 2 cores, 2026-11-29).
GPU_TEST_FILES = "tests/kernels/test_strategy_bits.py tests/kernels/test_kernels_torch.py"


def test_dry_gpu_check_runs_every_section_and_every_engine_agrees(tmp_path):
    env = {**os.environ, "GPU_CHECK_DRY": "1", "OUT": str(tmp_path), "PYTHON": sys.executable,
           "GPU_CHECK_PYTEST_ARGS": GPU_TEST_FILES,
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
    ran = {case.get("classname") for case in ElementTree.parse(tmp_path / "gpu_tests.xml").iter("testcase")}
    assert ran == {"tests.kernels.test_strategy_bits", "tests.kernels.test_kernels_torch"}
    table = (tmp_path / "gpu_check.txt").read_text()
    assert all(name in table for name in SECTIONS) and "Dry run" in table
    assert run.stdout.rstrip().endswith("profile rc 0, tests rc 0, benchmarks rc 0, break-evens rc 0")
    assert "gpu-preflight: all checks passed on the simulator" in run.stdout
    profile = json.loads((tmp_path / "gpu_profile.json").read_text())
    assert profile["simulated"] is True and not any("error" in p for p in profile["paths"].values())


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


PTXAS_SAMPLE = """\
ptxas info    : 32 bytes gmem
ptxas info    : Compiling entry function '_ZN7kernels4atc4cuda11_atc_kernelB2v1E' for 'sm_90a'
ptxas info    : Function properties for _ZN7kernels4atc4cuda11_atc_kernelB2v1E
    24 bytes stack frame, 16 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 84 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]
ptxas info    : Function properties for _ZN5numba4cuda8helperE
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_ZN7kernels10gridsearch4cuda13combos_kernelE' for 'sm_90a'
ptxas info    : Function properties for _ZN7kernels10gridsearch4cuda13combos_kernelE
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers
ptxas info    : Compile time = 80.877 ms
"""

PTX_SAMPLE = """\
.visible .entry _ZN7kernels10gridsearch4cuda13combos_kernelE(
\t.param .u64 p0
)
{
\tmul.rn.f64 \t%fd3, %fd1, %fd2;
\tadd.rn.f64 \t%fd4, %fd3, %fd1;
\tfma.rn.f64 \t%fd5, %fd1, %fd2, %fd4;
\t@%p1 fma.rn.f64 \t%fd6, %fd1, %fd2, %fd5;
\tfma.rn.ftz.f32 \t%f3, %f1, %f2, %f1;
\t// fma.rn.f64 in a comment is not an instruction
}
"""


def test_the_compile_check_parses_ptxas_verbose_output_per_function():
    check = _compile_check()
    stats = check.parse_ptxas(PTXAS_SAMPLE)
    assert stats["_ZN7kernels4atc4cuda11_atc_kernelB2v1E"] == {
        "registers": 84, "spill_stores": 16, "spill_loads": 8, "smem": 2048, "stack": 24}
    assert stats["_ZN7kernels10gridsearch4cuda13combos_kernelE"] == {
        "registers": 40, "spill_stores": 0, "spill_loads": 0, "smem": 0, "stack": 0}
    assert stats["_ZN5numba4cuda8helperE"]["stack"] == 8
    assert check.entry_stats(PTXAS_SAMPLE, PTX_SAMPLE)["registers"] == 40  # the PTX's .entry, not the first


def test_the_compile_check_counts_fma_instructions_and_explicit_fma_calls():
    check = _compile_check()
    assert check.fma_counts(PTX_SAMPLE) == {"f64": 2, "f32": 1}
    ir = ('declare double @"llvm.fma.f64"(double %".1", double %".2", double %".3")\n'
          '  %".6" = call double @"llvm.fma.f64"(double %"a", double %"b", double %"c")\n'
          '  %r = call fast double @llvm.fma.f64(double %a, double %b, double %c)\n')
    assert check.explicit_fma_calls(ir) == 2
    assert check.explicit_fma_calls("declare double @llvm.fma.f64(double, double, double)") == 0


def test_the_compile_check_fails_a_kernel_with_contracted_fma_only():
    verdict = _compile_check().fma_verdict
    assert verdict(0, 0, contracted_f64=21, explicit=0) == "ok"  # -fma=0 removed 21 contractions
    assert verdict(42, 0, contracted_f64=42, explicit=1) == "ok"  # kama: its explicit fma calls, inlined
    assert verdict(3, 0, contracted_f64=21, explicit=0).startswith("FAILED")
    assert verdict(0, 2, contracted_f64=0, explicit=0).startswith("FAILED")
    assert verdict(50, 0, contracted_f64=42, explicit=1).startswith("FAILED")


def _dry_env(tmp_path) -> dict:
    env = {**os.environ, "TRADELAB_GPU": "0", "TRADELAB_FORBID_IMPORTS": "dagster,polars,pyarrow,cudf",
           "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", "/tmp/tradelab-numba")}
    env.pop("PYTHONPATH", None)  # the scripts put the repository on sys.path
    return env


def _script(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_preflight_passes_on_the_simulator_and_says_so(tmp_path):
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_preflight.py")], env=_dry_env(tmp_path),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert [line.split()[1] for line in lines[:-1]] == ["numpy", "numba", "numba.cuda", "tiny", "cupy", "torch",
                                                          "kernels", "fma"]
    assert "SIMULATOR" in lines[2] and "tiny kernel ok" in lines[3]
    assert lines[-1].startswith("gpu-preflight: all checks passed on the simulator (dry run)")


def test_the_preflight_stops_at_the_first_failure_with_one_line_and_exit_3():
    preflight = _script("gpu_preflight")
    printed, ran = [], []

    def broken():
        raise ImportError("numpy 2.5 is not supported\nsecond line")

    checks = (("numpy", lambda: "numpy x"), ("numba.cuda", broken), ("kernels", lambda: ran.append(1) or "k"))
    assert preflight.run(checks, out=printed.append) == 3
    assert printed == ["gpu-preflight: numpy       ok: numpy x",
                       "gpu-preflight: FAILED numba.cuda: ImportError: numpy 2.5 is not supported"]
    assert ran == []


def test_the_dry_profile_times_every_path_by_phase_and_reports_a_broken_path(tmp_path):
    """--quick on the simulator: every path has a wall time, phase totals summing with the
    unattributed rest to it, and the population's kernel a roofline entry; an unknown path is
    an error entry while the paths after it still run; nothing forbidden got imported."""
    paths = ["indicators", "atc", "exits", "nosuch", "sums", "brute", "population"]
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_profile.py"), "--quick", "--out", str(tmp_path),
                          "--paths", ",".join(paths)], env=_dry_env(tmp_path), capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads((tmp_path / "gpu_profile.json").read_text())
    assert report["simulated"] is True and report["forbidden_imported"] == []
    assert list(report["paths"]) == paths
    assert report["paths"].pop("nosuch")["error"].startswith("KeyError")
    for name, r in report["paths"].items():
        assert "error" not in r, (name, r.get("error"))
        assert r["wall_s"] > 0 and r["cpu_s"] > 0, name
        assert set(r["totals"]) == {"host_prep", "h2d", "alloc", "kernel", "d2h", "host_post", "unattributed"}, name
        assert abs(sum(r["totals"].values()) - r["wall_s"]) < 1e-9, name
    population = report["paths"]["population"]
    assert {p["kind"] for p in population["phases"]} == {"host_prep", "h2d", "alloc", "kernel", "d2h", "host_post"}
    signal, walk = population["kernels"]  # the bitmask of (individual, word), then the walk over it
    assert signal["name"] == "signal_kernel" and signal["bytes"] > 0 and signal["ops"] > 0
    assert walk["name"] == "walk_kernel" and walk["bytes"] > 0 and walk["ops"] > 0 and walk["blocks"] == 1
    assert walk["hbm_pct"] > 0 and walk["issue_pct"] > 0
    summary = run.stdout.rstrip().splitlines()[-(len(paths) + 2):]
    assert summary[0].split()[:4] == ["path", "gpu", "s", "cpu"] and summary[-1].startswith("Dry run")
    assert [line.split()[0] for line in summary[1:-1]] == paths
    assert "nosuch           ERROR KeyError" in run.stdout
    assert (tmp_path / "gpu_profile.txt").read_text().rstrip().endswith(summary[-1])
