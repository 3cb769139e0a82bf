"""Two `live-paper-trade` processes for the same day on one store: each order is logged once,
the paper book agrees with the log, and the run that comes second is refused with one line
(domain.live.paper_trade: once per session, book and log under one flock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl

from config.settings import read_settings
from resources.delta_store import DeltaStore

REPO = Path(__file__).resolve().parents[2]


def _a_day_with_a_signal(cfg) -> str:
    """The last day of 2003 on which some symbol's stored p_h7 clears the threshold: a day with orders."""
    s = read_settings(cfg)
    pred = DeltaStore(s.experiment_data_dir).read("predictions", [2003])
    return f"{pred.filter(pl.col('p_h7') > s.backtest.threshold + 0.01)['date'].max():%Y-%m-%d}"


def test_two_live_paper_trade_processes_for_one_day_log_each_order_once(learned_copy, tmp_path):
    day, s = _a_day_with_a_signal(learned_copy), read_settings(learned_copy)
    env = {**os.environ, "PIPELINE_CONFIG": str(learned_copy), "DAGSTER_HOME": str(tmp_path / "home")}
    cli = [sys.executable, "-m", "pipeline.cli"]
    sync = subprocess.run([*cli, "symbols", "sync"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert sync.returncode == 0, sync.stderr[-2000:]
    procs = [subprocess.Popen([*cli, "live-paper-trade", "--now", day, "--json"], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]

    log_path = s.stage_reports_dir("paper_trades") / "orders.jsonl"
    log = [json.loads(x) for x in log_path.read_text().splitlines()]
    runs = [r for r in log if "session" in r]
    orders = [r for r in log if "side" in r]
    assert len(runs) == 1 and runs[0]["session"] == day and runs[0]["orders"] == len(orders) >= 1
    assert len({(o["symbol"], o["date"]) for o in orders}) == len(orders)  # each order once
    book = DeltaStore(s.data_dir).read("paper_positions")
    assert dict(zip(book["symbol"], book["weight"])) == {o["symbol"]: o["target_weight"] for o in orders}

    refusal = (f"paper_trades: the session of {day} is already traded (run {runs[0]['run']}, {log_path}); "
               "nothing ordered, the paper book is unchanged")
    refused = [i for i, (_, err) in enumerate(outs) if refusal in err.splitlines()]
    assert len(refused) == 1, [e[-1500:] for _, e in outs]
    assert json.loads(outs[refused[0]][0]) == [] and len(json.loads(outs[1 - refused[0]][0])) == len(orders)
