"""`make install` (the first step of `make demo` and `make test`) says what each step does
before the quiet pip runs and the numba kernels' warm-up (pipeline.warm_kernels), on a fake
Python: no network, nothing installed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/bin/sh
# `-m venv DIR`: a virtualenv whose python records its arguments; anything else is recorded
echo "$*" >> "$CALLS"
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; fi
"""


def test_make_install_announces_the_virtualenv_pip_and_the_project_steps(tmp_path):
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    venv, calls = tmp_path / "venv", tmp_path / "calls"
    env = {**os.environ, "CALLS": str(calls)}
    env.pop("MAKEFLAGS", None)
    numba_cache = env.get("NUMBA_CACHE_DIR", f"{REPO}/.numba_cache")  # the Makefile's `?=` default
    out = subprocess.run(["make", "-s", "-C", str(REPO), "install", f"VENV={venv}", f"PYTHON={python}"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        f"[install] creating the virtualenv {venv} with {python}",
        f"[install] upgrading pip in {venv}",
        "[install] installing tradelab and its dependencies (pinned by constraints.txt; minutes the first time)",
        f"[install] compiling the numba kernels the demo calls into {numba_cache}, one process per CPU "
        "(a minute or two the first time)",
        f"[install] done: {venv} is ready",
    ]
    assert calls.read_text().splitlines() == [f"-m venv {venv}", "-m pip install --quiet --upgrade pip",
                                              "-m pip install --quiet -c constraints.txt -e .[dev]",
                                              "-m pipeline.warm_kernels"]
    assert (venv / ".installed-stamp").exists()
