"""The live path's fixed cost: the paper-trade step imports no torch (about a second, more on a
busy machine) unless a meta model uses the LSTM score (domain.live.inference loads it then)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_importing_the_paper_trade_path_loads_no_torch():
    code = "import sys, domain.live.paper_trade, domain.live.inference; print('torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "False"
