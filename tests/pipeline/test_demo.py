"""`make demo` (python -m pipeline.cli demo): the whole chain on a toy universe, headline figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from resources.delta_store import DeltaStore

REPO = Path(__file__).resolve().parents[2]


def test_demo_runs_the_whole_chain_and_prints_the_headline_figures(tmp_path):
    cfg = tmp_path / "settings.yaml"
    cfg.write_text(
        "paths: {data: data, reports: reports, models: models}\n"
        "years: {start: 2000, end: 2004}\n"
        "universe: {source: synthetic, synthetic: {symbols: [AAA, BBB, CCC], seed: 3, end_date: '2004-12-31',\n"
        "                                          planted: {strength: 0.1, kind: linear, horizon: 7}}}\n"
        "grid_search: {market_data: grid_data/market_data, trade_log: grid_data/all_trade_logs.csv}\n"
    )
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "demo"], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    headline = out.stdout.split("headline", 1)[1]
    assert "meta model AUC    out of sample 2000-2004, 3 symbols: h3 0." in headline
    assert "planted signal strength 0.1: recovered AUC 0." in headline and ", IC " in headline
    assert "backtest          p_h7" in headline and ", 3 symbols: Sharpe" in headline
    assert "grid-search winner (chosen on the in-sample half)" in headline and "out of sample" in headline
    live = next(line for line in out.stdout.splitlines() if line.startswith("live "))
    assert "bars of the current year in (raw_bars 3, features 3, labels 3, specialists 3 partitions)" in live
    assert live.endswith("latest bar 2004-12-31")  # the live job built 2004's bars, then traded on the newest
    reports = tmp_path / "reports" / "default"
    for path in ("evaluation/overall.json", "backtest/overall.json", "grid_search/top10.json", "paper_trades/orders.jsonl"):
        assert (reports / path).is_file(), path
    bt = json.loads((reports / "backtest" / "overall.json").read_text())
    # 2000 has no meta model (no history before it): its days sit in cash, left out of the headline and counted
    assert bt["from"].startswith("2001") and bt["in_cash_days"] > 200
    assert bt["in_cash_reason"] == f"no prediction (no meta model) before {bt['from']}"
    assert "benchmark         Sharpe " in headline and "the strategy " in headline and "buy-and-hold of 3 symbols" in headline
    assert DeltaStore(tmp_path / "data").read("atc_scan").height > 0
