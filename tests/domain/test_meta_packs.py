"""meta.inputs naming packs: a plugin pack added to an existing store
feeds the meta model (LightGBM), the batch predictions and live inference, without
deleting anything stored."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from config.settings import parse_settings, read_settings
from domain.feature_packs import feature_selection
from domain.learning.meta import feature_columns
from kernels.registry.features import FEATURE_NAMES
from kernels.registry.packs import select
from kernels.registry.specialists import SPECIALIST_COLUMNS
from tests.conftest import LEARNED_SYMBOLS, LEARNED_YEAR, LEARNED_YEARS, project_instance_for_test

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
REPO = Path(__file__).resolve().parents[2]


def test_meta_inputs_name_packs_and_each_adds_its_feature_columns(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    chosen = select(("core",), ("my_research.features",))
    assert feature_columns(["specialists"], chosen) == []
    assert feature_columns(["specialists", "my_research"], chosen) == ["my_bb_pct_b20"]
    assert feature_columns(["my_research", "core"], chosen) == ["my_bb_pct_b20", *FEATURE_NAMES]
    assert feature_columns("features+specialists", chosen) == FEATURE_NAMES  # the string forms keep their meaning
    with pytest.raises(ValueError, match=r"meta.inputs: 'alpha158' is not a selected pack; expected one of "
                                         r"\['specialists', 'lstm', 'regime'\] or \['core', 'my_research'\]"):
        feature_columns(["specialists", "alpha158"], chosen)
    assert parse_settings({"meta": {"inputs": ["specialists", "alpha158"]}}).meta.inputs == ["specialists", "alpha158"]


def test_lightgbm_over_alpha158_is_a_shipped_configuration():
    """configs/alpha158_lightgbm.yaml selects the alpha158 pack and trains LightGBM on its
    158 columns, in Qlib's order."""
    from kernels.alpha158 import ALPHA158_NAMES

    select.cache_clear()
    try:
        s = read_settings(REPO / "configs" / "alpha158_lightgbm.yaml")
        assert s.meta.model == "lightgbm"
        assert feature_columns(s.meta.inputs, feature_selection(s)) == [f"a158_{n}" for n in ALPHA158_NAMES]
    finally:
        select.cache_clear()


@pytest.fixture
def plugin_store(learned_copy, monkeypatch):
    """The learned store's copy with the plugin added in the settings: features rebuilt for
    every partition (its column merged in), then meta_model and predictions of 2003 with
    meta.inputs [specialists, my_research] and LightGBM."""
    from dagster import materialize

    from assets.features import features
    from assets.meta_model import meta_model
    from assets.predictions import predictions
    from resources.partitions import dynamic_key_of, range_tags
    from pipeline.definitions import ALL_ASSETS, build_resources
    from pipeline.symbols import register_symbols

    monkeypatch.syspath_prepend(str(PLUGINS))
    cfg = yaml.safe_load(learned_copy.read_text())
    cfg["features"] = {"plugins": ["my_research.features"]}
    cfg["meta"] = {"inputs": ["specialists", "my_research"], "model": "lightgbm"}
    cfg["experiment"] = "my-research"  # other model settings: another experiment
    learned_copy.write_text(yaml.safe_dump(cfg))
    with project_instance_for_test() as inst:
        register_symbols(inst, LEARNED_SYMBOLS)
        keys = dynamic_key_of(inst, LEARNED_SYMBOLS)  # the symbols' keys, or their group's
        first, last = keys[LEARNED_SYMBOLS[0]], keys[LEARNED_SYMBOLS[-1]]
        res = materialize(ALL_ASSETS, selection=[features], instance=inst, resources=build_resources(str(learned_copy)),
                          tags=range_tags(f"{first}|{LEARNED_YEARS[0]}", f"{last}|{LEARNED_YEARS[-1]}"))
        assert res.success
        assert materialize(ALL_ASSETS, selection=[meta_model, predictions], partition_key=str(LEARNED_YEAR),
                           instance=inst, resources=build_resources(str(learned_copy))).success
    return learned_copy


def test_a_plugin_pack_in_meta_inputs_trains_scores_and_infers_live(plugin_store):
    from domain.live.inference import InferenceSession
    from resources.delta_store import DeltaStore

    s = read_settings(plugin_store)
    side = json.loads((s.models_dir / f"meta_h7_{LEARNED_YEAR}.json").read_text())
    assert side["features"][-1] == "my_bb_pct_b20" and side["kind"] == "lightgbm"
    store = DeltaStore(s.data_dir)
    feats = store.read("features")
    assert feats["my_bb_pct_b20"].is_null().sum() == 0  # every partition rebuilt: no missing values
    assert DeltaStore(s.experiment_data_dir).read("predictions").filter(pl.col("date").dt.year() == LEARNED_YEAR)["p_h7"].is_not_nan().mean() > 0.9
    day = dt.date(LEARNED_YEAR, 12, 1)
    one = InferenceSession(plugin_store).infer_one("BBB", day)
    stored = feats.filter((pl.col("symbol") == "BBB") & (pl.col("date") == one["date"]))["my_bb_pct_b20"].item()
    assert one["features"]["meta_inputs"]["my_bb_pct_b20"] == pytest.approx(stored, rel=1e-6)
    assert set(SPECIALIST_COLUMNS) | {"spec_momentum10_score"} <= set(one["features"])
    assert np.isfinite(one["h7"])


def test_inputs_with_a_column_the_data_never_fills_are_one_line_naming_it_not_a_fold_error():
    """Close-only bars leave alpha158's volume correlations without any value: no training
    row is complete, and the stage says which columns, instead of a splitter's traceback."""
    from domain.learning.meta import fit_year

    n = 300
    rng = np.random.default_rng(0)
    dates = pl.date_range(dt.date(2001, 1, 1), dt.date(2001, 1, 1) + dt.timedelta(days=n - 1), eager=True)
    frame = pl.DataFrame({
        "symbol": ["AAA"] * n, "date": dates, "t1_h7": dates + dt.timedelta(days=7),
        **{c: rng.uniform(-1, 1, n).astype(np.float32) for c in SPECIALIST_COLUMNS},
        "label_bin_h7": rng.integers(0, 2, n).astype(np.int8), "label_ret_h7": rng.normal(0, 0.01, n),
        "a158_CORR5": np.full(n, np.nan, np.float32), "a158_KMID": rng.normal(0, 0.01, n).astype(np.float32),
    })
    with pytest.raises(ValueError) as err:
        fit_year(frame, frame, 7, n_splits=3, embargo_days=7, features=["a158_CORR5", "a158_KMID"])
    assert str(err.value) == (
        "meta_model h7: none of the 300 training rows has a value in every input column (meta.missing drop); column(s) "
        "without any value: ['a158_CORR5']; expected meta.inputs whose columns the data can fill (close-only bars leave "
        "volume features empty) or meta.missing: fill")
