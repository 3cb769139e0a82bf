"""evaluation, backtest and cv_report record their headline figures as top-level float
metadata (what Dagster's Plots tab charts across materializations), rounded to 4
significant digits, equal to the figures of their reports."""

from __future__ import annotations

import json

import yaml
from dagster import materialize

from config.settings import read_settings
from domain.figures import rounded
from pipeline.definitions import ALL_ASSETS, build_resources
from tests.conftest import LEARNED_SYMBOLS, LEARNED_YEAR


def test_evaluation_backtest_and_cv_report_materializations_carry_numeric_headline_metadata(learned_copy, instance):
    from pipeline.symbols import register_symbols

    cfg = yaml.safe_load(learned_copy.read_text())
    cfg["evaluation"] = {"min_symbols_per_day": 3}  # 3 symbols: rank IC, ICIR and long-short Sharpe have values
    learned_copy.write_text(yaml.safe_dump(cfg))
    # another days floor is another experiment (the settings hash): the copy's stored
    # predictions are evaluated under it, as a store built before the manifest would be
    (read_settings(learned_copy).reports_dir / "experiment.json").unlink()
    register_symbols(instance, LEARNED_SYMBOLS)
    res = materialize(ALL_ASSETS, selection=["evaluation", "backtest", "cv_report"], partition_key=str(LEARNED_YEAR),
                      instance=instance, resources=build_resources(str(learned_copy)))
    assert res.success
    reports = read_settings(learned_copy).reports_dir

    meta = res.asset_materializations_for_node("evaluation")[0].metadata
    overall = json.loads((read_settings(learned_copy).stage_reports_dir("evaluation") / "overall.json").read_text())
    for h in (3, 7, 14):
        for name, key in (("auc", "auc"), ("pr_auc", "pr_auc"), ("brier", "brier"), ("rank_ic", "rank_ic"),
                          ("icir", "icir"), ("ls_sharpe", "long_short_sharpe")):
            value = meta[f"h{h}_{name}"].value
            assert type(value) is float and value == rounded(overall[f"h{h}"][key]), (h, name)
    assert 0.3 < meta["h7_auc"].value < 0.7 and len(repr(meta["h7_auc"].value)) <= 7  # 0.xxxx, not 16 digits
    auc_json = meta["metrics"].value["overall"]["h7"]["auc"]
    assert auc_json == rounded(overall["h7"]["auc"])  # the JSON preview is rounded too

    meta = res.asset_materializations_for_node("backtest")[0].metadata
    bt = json.loads((reports / "backtest" / "overall.json").read_text())
    for name, key in (("sharpe", "sharpe"), ("cagr", "cagr"), ("max_drawdown", "max_drawdown"),
                      ("turnover", "annual_turnover")):
        assert type(meta[name].value) is float and meta[name].value == rounded(bt[key]), name

    experiment = read_settings(learned_copy).experiment
    assert {res.asset_materializations_for_node(a)[0].metadata["experiment"].value
            for a in ("evaluation", "backtest", "cv_report")} == {experiment}  # each plotted point names its experiment
    meta = res.asset_materializations_for_node("cv_report")[0].metadata
    for h in (3, 7, 14):
        assert 0 <= meta[f"h{h}_best_auc"].value <= 1 and 0 <= meta[f"h{h}_best_brier"].value <= 1
        assert meta[f"h{h}_mean_auc"].value <= meta[f"h{h}_best_auc"].value
