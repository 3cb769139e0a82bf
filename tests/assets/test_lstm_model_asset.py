"""lstm_model: trained before its year, scores of that year stored, weights and JSON saved."""

from __future__ import annotations

import json

import torch
from dagster import materialize

from assets.features import features
from assets.labels import labels
from assets.lstm_model import lstm_model
from assets.raw_bars import raw_bars
from pipeline.definitions import build_resources
from config.settings import read_settings
from resources.delta_store import DeltaStore
from tests.conftest import run_assets


def test_lstm_model_of_a_year_scores_that_year_out_of_sample(make_settings, instance):
    cfg = make_settings(lstm={"seq_len": 8, "hidden": 8, "layers": 1, "epochs": 1, "max_steps": 4, "batch_size": 64})
    assert run_assets([raw_bars, features, labels], cfg, instance, ["AAA", "BBB"], [2000, 2001, 2002]).success
    res = materialize([raw_bars, features, labels, lstm_model], selection=[lstm_model], partition_key="2002",
                      instance=instance, resources=build_resources(str(cfg)))
    assert res.success
    assert [(e.check_name, e.passed) for e in res.get_asset_check_evaluations()] == [("scores_in_unit_interval", True)]
    s = read_settings(cfg)
    side = json.loads((s.models_dir / "lstm_h7_2002.json").read_text())
    assert side["window"]["train_to"] < side["window"]["val_start"] < "2002"
    assert side["window"]["train_rows"] > 0 and side["window"]["val_rows"] > 0
    store = DeltaStore(s.data_dir)
    assert side["table_versions"] == {"features": store.version("features"), "labels": store.version("labels")}
    state = torch.load(s.models_dir / "lstm_h7_2002.pt")
    assert any(k.startswith("lstm.") for k in state)
    scores = DeltaStore(s.experiment_data_dir).read("lstm_model", [2002])
    assert scores["date"].dt.year().unique().to_list() == [2002] and scores.height == 2 * 252
    finite = scores["spec_lstm_score"].drop_nans()
    assert finite.len() > 400 and finite.is_between(0, 1).all()
