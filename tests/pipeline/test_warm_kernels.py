"""`make install`'s kernel warm-up (pipeline.warm_kernels): every listed kernel and signature
resolves without compiling, and a warm-up fills the numba cache that a later process loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from numba.core.dispatcher import Dispatcher

from pipeline.warm_kernels import dispatcher, groups, parse_signature, read_manifest

REPO = Path(__file__).resolve().parents[2]


def test_every_listed_kernel_is_a_dispatcher_and_every_signature_parses():
    rows = read_manifest()
    assert len(rows) > 20
    for kernel, sigs in groups(rows):
        disp = dispatcher(kernel)
        assert isinstance(disp, Dispatcher), kernel
        for text in sigs:
            sig = parse_signature(text)
            assert str(sig) == text or str(sig) == text.replace(",)", ")"), (kernel, text)
    # the cpu backend's cores are the backend's own dispatchers, with its options
    from kernels.indicators.cpu import compiled

    assert dispatcher("compiled:rsi_core") is compiled("rsi_core")


def test_a_warm_up_fills_the_cache_the_next_process_loads(tmp_path):
    manifest = tmp_path / "kernels.txt"
    manifest.write_text("# one small kernel\n"
                        "0.5\tkernels.simulation:markov_chain\t"
                        "(Array(float64, 1, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True), int64)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    cmd = [sys.executable, "-m", "pipeline.warm_kernels", "--manifest", str(manifest), "--processes", "2"]
    first = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "1 signatures of 1 kernels, 1 compiled and 0 already cached in 1 processes" in first.stdout, first.stdout
    assert "0 compiled again by the check pass" in first.stdout
    again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert "0 compiled and 1 already cached" in again.stdout, again.stdout
