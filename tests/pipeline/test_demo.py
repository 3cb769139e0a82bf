"""`make demo` (python -m pipeline.cli demo): the whole chain on a toy universe, headline figures."""

from __future__ import annotations

import json
import os
import re
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
    env.pop("TRADELAB_PROGRESS", None)  # the default: stderr is a pipe here, as a log file would be
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "demo"], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    # progress in a log: plain lines, one per chain run and step start and finish, no carriage return
    assert "\r" not in out.stderr
    progress = [line for line in out.stderr.splitlines() if line.startswith("progress: ")]
    assert progress[0].endswith(" demo: loading the pipeline (settings, symbols, the Dagster definitions)"), progress[:3]
    assert re.match(r"progress: [\d :-]+ chain 1/\d historical_build_and_train 2000..2004 started$", progress[2]), progress[:3]
    assert any(re.search(r" historical_build_and_train: features done \(step \d/\d, \d+\.\d s\)$", x) for x in progress)
    assert any(x.endswith(" grid search started") for x in progress)
    headline = out.stdout.split("headline", 1)[1]
    # the evaluation's span: the years with a prediction (2000, the first, has no meta model)
    assert re.search(r"meta pooled AUC   out of sample 200[01]-2004, 3 symbols: h3 0\.", headline), headline
    assert "planted signal strength 0.1: recovered pooled AUC 0." in headline and ", IC " in headline
    assert "backtest          p_h7" in headline and ", 3 symbols: Sharpe" in headline
    assert "grid search, in-sample winner (chosen on half the days): " in headline
    assert "-> sum of kept trades' returns in sample " in headline and "out of sample" in headline
    summary = out.stdout.split("headline", 1)[0]
    assert "meta model 2004   out of sample: h3 AUC 2004 0." in summary
    assert "full-sample winner (chosen on all trades, no holdout): " in summary
    assert "-> sum of kept trades' returns " in summary and " ROI " not in out.stdout
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
    assert "benchmark         Sharpe " in headline and "the strategy " in headline and "(equal weight of 3 symbols, rebalanced daily)" in headline
    assert DeltaStore(tmp_path / "data").read("atc_scan").height > 0


def test_demo_summary_and_headline_give_each_auc_and_each_grid_winner_its_own_name(make_settings):
    """The one-year meta line says `AUC 2004`, the headline's evaluation says `pooled AUC`, and
    the headline's grid-search winner is the in-sample one with the sum of its kept trades'
    returns on each half: no two different numbers under one name, no bare "ROI"."""
    from config.settings import read_settings
    from pipeline.demo import _headline, _meta_summary

    settings = read_settings(make_settings(universe={"source": "folder", "folder": {"path": "raw"}}))
    reports = settings.reports_dir

    def write(path, data):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))

    for h in (3, 7, 14):
        write(reports / "meta_model" / f"h{h}_2004.json", {"auc": 0.578, "brier": 0.2481, "symbols": 3})
    write(reports / "evaluation" / "overall.json", {"symbols": 3, "years": [2000, 2004], "h7": {"auc": 0.571}})
    row = {"volatility": 0.05, "ratio": 0.9, "adx28": 20, "adx14": 0, "adx7": 30, "target": 0.4, "stop_loss": -0.3}
    write(reports / "grid_search" / "top10.json", {"overfitting": {"in_out_of_sample": [
        {"source": "full_sample_top", **row, "roi_in": 9.0, "trades_in": 50, "roi_out": 4.97, "trades_out": 40},
        {"source": "in_sample_top", **row, "roi_in": 7.5, "trades_in": 41, "roi_out": -1.25, "trades_out": 38}]}})
    assert _meta_summary(settings, 2004) == (
        "meta model 2004   out of sample: h3 AUC 2004 0.578 Brier 0.248 (3 symbols); "
        "h7 AUC 2004 0.578 Brier 0.248 (3 symbols); h14 AUC 2004 0.578 Brier 0.248 (3 symbols)")
    headline = _headline(settings, [2000, 2004])
    assert "meta pooled AUC   out of sample 2000-2004, 3 symbols: h3 n/a  h7 0.571  h14 n/a" in headline
    assert headline[-1] == ("grid search, in-sample winner (chosen on half the days): volatility>=0.05 ratio>=0.9 "
                            "adx28>=20 adx14>=0 adx7>=30 target 0.4% stop -0.3% -> sum of kept trades' returns "
                            "in sample 7.50% (41 trades), out of sample -1.25% (38 trades)")
    assert not [line for line in headline if " AUC 0." in line.replace("pooled AUC 0.", "")]
