"""scripts/smoke.sh, the acceptance script of the stage commands, on toy data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_smoke_script_runs_every_stage_command_and_leaves_the_artifacts(tmp_path):
    cfg = tmp_path / "settings.yaml"
    cfg.write_text(
        "paths: {data: data, reports: reports, models: models}\n"
        "years: {start: 2000, end: 2003}\n"
        "universe: {source: synthetic, synthetic: {symbols: [AAA, BBB, CCC], seed: 3, end_date: '2003-12-31'}}\n"
    )
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "home"), "PYTHON": sys.executable}
    out = subprocess.run(["bash", "scripts/smoke.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    assert "smoke: ok" in out.stdout
    reports = tmp_path / "reports"
    log = (reports / "default" / "backtest.jsonl").read_text().splitlines()
    assert len(log) >= 250 and {"date", "net", "equity"} <= set(json.loads(log[0]))
    assert (tmp_path / "models" / "default" / "meta_h7_2003.npz").is_file()
    assert not (tmp_path / "models" / "default" / "meta_h3_2003.npz").exists()  # train-meta --horizon 7
    assert json.loads((reports / "default" / "evaluation" / "overall.json").read_text())["h7"]["n"] > 500
    orders = [json.loads(x) for x in (reports / "default" / "paper_trades" / "orders.jsonl").read_text().splitlines()]
    assert orders[0]["now"].startswith("2003-12-31")
