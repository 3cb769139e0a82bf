"""meta_model: walk-forward, out of sample, saved with its JSON and a calibration plot."""

from __future__ import annotations

import json

from dagster import materialize

from assets.features import features
from assets.labels import labels
from assets.lstm_model import lstm_model
from assets.meta_model import meta_model
from assets.raw_bars import raw_bars
from assets.regime import regime
from assets.specialists import specialists
from pipeline.definitions import build_resources
from config.settings import read_settings
from resources.delta_store import DeltaStore
from tests.conftest import run_assets


def test_meta_model_of_a_year_is_trained_before_it_and_scored_on_it(make_settings, instance):
    cfg = make_settings()
    syms, years = ["AAA", "BBB", "CCC"], [2000, 2001, 2002, 2003]
    # features too: meta_model declares it as an input (read only with meta.inputs features+specialists)
    assert run_assets([raw_bars, features, specialists, labels], cfg, instance, syms, years).success
    res = materialize([raw_bars, specialists, labels, regime, lstm_model, features, meta_model], selection=[regime, meta_model],
                      partition_key="2003", instance=instance, resources=build_resources(str(cfg)))
    assert res.success
    s = read_settings(cfg)
    side = json.loads((s.models_dir / "meta_h7_2003.json").read_text())
    assert side["window"]["train_to"] < "2003" and "spec_atc_score" in side["features"]
    assert any(f.startswith("regime_") for f in side["features"])
    assert (s.models_dir / "meta_h7_2003.npz").is_file()
    store = DeltaStore(s.data_dir)  # the table versions it was trained on (lstm_model: no table)
    assert side["table_versions"] == {"specialists": store.version("specialists"), "labels": store.version("labels"),
                                      "regime": store.version("regime"), "lstm_model": None}
    report = json.loads((s.stage_reports_dir("meta_model") / "h7_2003.json").read_text())
    assert report["n"] > 200 and 0 <= report["brier"] <= 1
    assert (s.stage_reports_dir("meta_model") / "calibration_h7_2003.png").read_bytes()[:4] == b"\x89PNG"


def test_meta_model_uses_out_of_sample_lstm_scores_when_they_cover_the_training_rows(make_settings, instance):
    cfg = make_settings(lstm={"seq_len": 8, "hidden": 8, "layers": 1, "epochs": 1, "max_steps": 3, "batch_size": 64})
    syms, years = ["AAA", "BBB"], [2000, 2001, 2002, 2003]
    assert run_assets([raw_bars, features, specialists, labels], cfg, instance, syms, years).success
    every = [raw_bars, features, specialists, labels, regime, lstm_model, meta_model]
    for year in ("2001", "2002"):
        assert materialize(every, selection=[lstm_model], partition_key=year, instance=instance,
                           resources=build_resources(str(cfg))).success
    assert materialize(every, selection=[meta_model], partition_key="2003", instance=instance,
                       resources=build_resources(str(cfg))).success
    side = json.loads((read_settings(cfg).models_dir / "meta_h7_2003.json").read_text())
    # no regime is stored in this store: that group is not used (the report's notes say so)
    assert "lstm_score" in side["features"] and side["window"]["inputs"] == ["specialists", "lstm"]
    # the logistic model's default rule is `fill`: the rows of 2000, before any out-of-sample
    # LSTM score, are kept with the score's training median (learned on the rows before 2003)
    assert side["missing"] == "fill" and side["window"]["train_from"] < "2001"
    lstm_fill = side["fill_values"][side["features"].index("lstm_score")]
    assert 0.0 < lstm_fill < 1.0  # a probability, the median of the stored scores
    cov = side["coverage"]["train"]
    assert cov["missing_values"]["lstm_score"] > 0 and cov["rows_used"] == cov["rows_available"]
