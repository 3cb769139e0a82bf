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
