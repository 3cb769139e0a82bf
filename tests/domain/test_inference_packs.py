"""The live path with a plugin pack: its feature (no updater: recomputed over its
window) and its specialist stream next to core's, equal to the batch formulas over the
symbol's history, and a persisted state is reused only by a session of the same packs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import polars as pl
import yaml

from domain.live.inference import InferenceSession
from kernels.panel import Panel
from kernels.registry.features import compute_features
from kernels.registry.packs import select
from kernels.registry.specialists import PANEL_COLUMNS, run_specialists
from resources.delta_store import DeltaStore

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
DAY = dt.date(2003, 6, 2)


def _with_plugin(cfg: Path) -> Path:
    data = yaml.safe_load(cfg.read_text())
    data["features"] = {"plugins": ["my_research.features"]}
    # a plugin is other settings (the settings hash): the store's meta models, trained without
    # it, serve only the default experiment, so this one streams its features with no model
    data["experiment"] = "with-plugin"
    out = cfg.with_name("plugin.yaml")
    out.write_text(yaml.safe_dump(data))
    return out


def test_a_plugin_streams_live_equal_to_its_batch_formula_and_persisted_states_follow_the_packs(
        learned_copy, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    cfg = _with_plugin(learned_copy)
    live = InferenceSession(cfg, state_dir=tmp_path / "states")
    one = live.infer_one("AAA", DAY)
    bars = (DeltaStore(live.settings.data_dir).read("raw_bars").filter(
        (pl.col("symbol") == "AAA") & (pl.col("date") <= one["date"])))
    arrays = {c: bars[c].to_numpy() for c in PANEL_COLUMNS}
    chosen = select(("core",), ("my_research.features",))
    batch = compute_features(arrays, entries=chosen.features)["my_bb_pct_b20"][-1]
    score = run_specialists(Panel.from_columns(arrays), chosen.specialists)["spec_momentum10_score"][-1]
    assert np.float32(one["features"]["my_bb_pct_b20"]) == batch  # bit for bit
    assert np.float32(one["features"]["spec_momentum10_score"]) == score
    live.save_states()

    again = InferenceSession(cfg, state_dir=tmp_path / "states")
    assert again.infer_one("AAA", DAY)["features"] == one["features"] and again.counters["persisted_loads"] == 1
    core_only = InferenceSession(learned_copy, state_dir=tmp_path / "states")
    assert "my_bb_pct_b20" not in core_only.infer_one("AAA", DAY)["features"]
    assert core_only.counters["persisted_loads"] == 0  # other packs: rebuilt from history
