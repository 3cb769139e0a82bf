"""One home for the ATC parameters: settings `atc` (robustness, length, lam, decay, cutout)
drive the scanner, the stored `atc` specialist and the live path's stream of it alike, and a
change of them marks the stored specialists stale (their code version)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
from dagster import materialize

from assets.atc_scan import atc_scan
from assets.raw_bars import raw_bars
from assets.specialists import specialists
from config.settings import read_settings
from pipeline.definitions import build_resources
from resources.delta_store import DeltaStore
from tests.conftest import run_assets

REPO = Path(__file__).resolve().parents[2]
# not the defaults in any parameter; one year of bars (252) is inside scan_bars, so the
# scanner and the specialist see the same bars from the same first bar
ATC = {"robustness": "Wide", "length": 20, "lam": 1.0, "decay": 0.5, "cutout": 0, "scan_bars": 400}
ONE_YEAR = {"years": {"start": 2000, "end": 2000}}  # the first year: its history is itself


def test_a_non_default_atc_setting_gives_the_scanners_value_in_the_store_and_the_live_path(make_settings, instance):
    from domain.live.inference import InferenceSession
    from kernels.panel import Panel
    from kernels.registry.specialists import atc_score

    cfg = make_settings(atc=ATC, **ONE_YEAR)
    settings = read_settings(cfg)
    assert run_assets([raw_bars, specialists], cfg, instance, ["AAA"], [2000]).success
    assert materialize([raw_bars, atc_scan], selection=[atc_scan], instance=instance,
                       resources=build_resources(str(cfg))).success
    store = DeltaStore(settings.data_dir)
    scan = store.read("atc_scan").row(0, named=True)
    stored = store.read("specialists").sort("date")
    assert stored.height == 252 and stored["date"][-1] == scan["date"]
    stored_score = stored["spec_atc_score"][-1]
    assert stored_score == np.float32(scan["atc"])

    session = InferenceSession(settings, state_dir=settings.data_dir.parent / "live_state")
    state, _ = session.state("AAA", scan["date"])
    assert state.scores[session.specialist_columns.index("spec_atc_score")] == stored_score

    closes = store.read("raw_bars").sort("date")["close"].to_numpy()
    default = atc_score(Panel.from_columns({c: closes for c in ("open", "high", "low", "close", "volume")}))
    assert abs(float(default[-1]) - stored_score) > 1e-3  # the parameters matter on these bars


def _specialists_code_versions(cfg: Path, cache: Path) -> tuple[str, str]:
    """(specialists, features) code versions as the code location loads them with `cfg`."""
    code = ("import json; from dagster import AssetKey; from assets.specialists import specialists; "
            "from assets.features import features; "
            "print(json.dumps([specialists.code_versions_by_key[AssetKey('specialists')], "
            "features.code_versions_by_key[AssetKey('features')]]))")
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "TRADELAB_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return tuple(json.loads(run.stdout.strip().splitlines()[-1]))


def test_a_change_of_atc_lam_marks_the_specialists_stale_not_the_features(make_settings, tmp_path):
    versions = {}
    for lam in (0.02, 0.5, 0.02):
        cfg = make_settings(atc={"lam": lam})
        cfg = cfg.rename(cfg.with_name(f"settings_lam_{lam}.yaml"))
        versions.setdefault(lam, []).append(_specialists_code_versions(cfg, tmp_path / "cache"))
    (a, b), (c, d) = versions[0.02][0], versions[0.5][0]
    assert a != c and b == d  # specialists stale, features not
    assert versions[0.02][1] == versions[0.02][0]  # the same settings, the same versions (cached or not)


def test_the_live_state_of_other_atc_settings_is_rebuilt_not_reused(make_settings, instance, tmp_path):
    """A saved live state carries the specialists' version: with other `atc` settings it is
    not loaded (the stream is rebuilt from the bars), so the live score follows the settings."""
    from domain.live.inference import InferenceSession

    cfg = make_settings(**ONE_YEAR)
    assert run_assets([raw_bars], cfg, instance, ["AAA"], [2000]).success
    state_dir = tmp_path / "live_state"
    scores = {}
    for name, atc in (("default", {}), ("other", ATC), ("default_again", {})):
        settings = read_settings(cfg).model_copy(update={"atc": read_settings(cfg).atc.model_validate(
            {**read_settings(cfg).atc.model_dump(), **atc})})
        session = InferenceSession(settings, state_dir=state_dir)
        last = DeltaStore(settings.data_dir).read("raw_bars")["date"].max()
        state, _ = session.state("AAA", last)
        scores[name] = float(state.scores[session.specialist_columns.index("spec_atc_score")])
        session.save_states()
    assert scores["default"] == scores["default_again"] != scores["other"]
    assert pl.Series([scores["default"]]).is_finite().all()
