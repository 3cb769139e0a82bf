"""Adding a pack or plugin to an existing store. The features asset's
code version is a hash of the selected packs, so Dagster marks the stored partitions stale;
rebuilding one merges the new column into the Delta table (schema evolution) while the
other partitions keep their rows and read the new column as missing; nothing is deleted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from assets.features import features
from assets.raw_bars import raw_bars
from config.partitions import SymbolYear
from config.settings import read_settings
from domain.feature_packs import feature_selection
from resources.delta_store import DeltaStore
from tests.conftest import one_partition, run_assets

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"


def _features_of(cfg):
    """The features asset as the definitions build it for the settings `cfg` (its code
    version comes from the settings' packs when the definitions load)."""
    version = feature_selection(read_settings(cfg)).features_version
    return features.map_asset_specs(lambda spec: spec.replace_attributes(code_version=version))


def _status(instance, assets, key: SymbolYear):
    """The partition's stale status as the UI resolves it (Dagster's own test helper builds
    the CachingStaleStatusResolver over the asset graph)."""
    from dagster import AssetKey
    from dagster._utils.test.data_versions import get_stale_status_resolver

    return get_stale_status_resolver(instance, assets).get_status(AssetKey("features"),
                                                               one_partition(instance, key.symbol, key.year)["partition_key"])


def _settings_file(make_settings, name: str, **overrides) -> Path:
    """A settings file of its own (make_settings rewrites one path), in the same folder so
    that data, reports and models are shared."""
    path = make_settings(**overrides)
    own = path.with_name(f"{name}.yaml")
    own.write_text(path.read_text())
    return own


@pytest.fixture
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))


def test_adding_a_plugin_marks_partitions_stale_and_rebuilding_one_merges_its_column(make_settings, instance, plugin_path):
    from dagster import materialize
    from dagster._core.definitions.data_version import StaleStatus

    from pipeline.definitions import build_resources

    core_cfg = _settings_file(make_settings, "core")
    old, new = SymbolYear("AAA", 2003), SymbolYear("AAA", 2004)
    assert run_assets([raw_bars, _features_of(core_cfg)], core_cfg, instance, ["AAA"], [2000, 2001, 2002, 2003, 2004]).success
    store = DeltaStore(read_settings(core_cfg).data_dir)
    before = store.read("features", [old])
    core_defs = [raw_bars, _features_of(core_cfg)]
    assert _status(instance, core_defs, old) == StaleStatus.FRESH

    plugin_cfg = _settings_file(make_settings, "plugin", features={"plugins": ["my_research.features"]})
    plugin_defs = [raw_bars, _features_of(plugin_cfg)]
    assert _status(instance, plugin_defs, old) == StaleStatus.STALE
    assert _status(instance, plugin_defs, new) == StaleStatus.STALE

    res = materialize(plugin_defs, selection=["features"], **one_partition(instance, "AAA", 2004), instance=instance,
                      resources=build_resources(str(plugin_cfg)))
    assert res.success
    assert _status(instance, plugin_defs, new) == StaleStatus.FRESH
    assert _status(instance, plugin_defs, old) == StaleStatus.STALE  # only the rebuilt one is fresh

    rebuilt, kept = store.read("features", [new]), store.read("features", [old])
    assert rebuilt["my_bb_pct_b20"].drop_nans().len() > 200  # the new column, computed
    assert kept["my_bb_pct_b20"].null_count() == kept.height  # not rebuilt yet: missing
    assert kept.drop("my_bb_pct_b20").equals(before)  # the old rows, bytes unchanged

    # removing the plugin again drops nothing stored: a core-only rebuild keeps its column
    res = materialize(core_defs, selection=["features"], **one_partition(instance, "AAA", 2004), instance=instance,
                      resources=build_resources(str(core_cfg)))
    assert res.success
    again = store.read("features", [new])
    np.testing.assert_array_equal(again["my_bb_pct_b20"].to_numpy(), rebuilt["my_bb_pct_b20"].to_numpy())
    assert again.select(pl.exclude("my_bb_pct_b20")).equals(rebuilt.select(pl.exclude("my_bb_pct_b20")))


def test_adding_the_alpha158_pack_marks_partitions_stale_and_a_rebuild_merges_its_158_columns(make_settings, instance):
    from dagster import materialize
    from dagster._core.definitions.data_version import StaleStatus

    from kernels.alpha158 import ALPHA158_NAMES
    from pipeline.definitions import build_resources

    core_cfg = _settings_file(make_settings, "core")
    old, new = SymbolYear("AAA", 2001), SymbolYear("AAA", 2002)
    assert run_assets([raw_bars, _features_of(core_cfg)], core_cfg, instance, ["AAA"], [2000, 2001, 2002]).success
    store = DeltaStore(read_settings(core_cfg).data_dir)
    before = store.read("features", [old])
    a158_cfg = _settings_file(make_settings, "a158", features={"packs": ["core", "alpha158"]})
    a158_defs = [raw_bars, _features_of(a158_cfg)]
    assert _status(instance, a158_defs, old) == StaleStatus.STALE and _status(instance, a158_defs, new) == StaleStatus.STALE

    assert materialize(a158_defs, selection=["features"], **one_partition(instance, "AAA", 2002), instance=instance,
                       resources=build_resources(str(a158_cfg))).success
    assert _status(instance, a158_defs, new) == StaleStatus.FRESH and _status(instance, a158_defs, old) == StaleStatus.STALE
    columns = [f"a158_{n}" for n in ALPHA158_NAMES]
    rebuilt, kept = store.read("features", [new]), store.read("features", [old])
    assert rebuilt.select(columns).null_count().sum_horizontal().item() == 0 and rebuilt["a158_ROC60"].drop_nans().len() > 200
    assert kept.select(columns).null_count().row(0) == (kept.height,) * len(columns)  # not rebuilt yet: missing
    assert kept.drop(columns).equals(before)  # the old rows, bytes unchanged


def _code_versions(cfg) -> tuple[str, str]:
    """The code versions of the features and specialists assets when the definitions load
    with the settings `cfg` (a fresh process, as Dagster loads them)."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "PYTHONPATH": os.pathsep.join([str(repo), str(PLUGINS)])}
    code = ("from dagster import AssetKey; from assets.features import features; from assets.specialists import specialists; "
            "print(features.code_versions_by_key[AssetKey('features')], specialists.code_versions_by_key[AssetKey('specialists')])")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=repo, capture_output=True, text=True, check=True)
    feats, specs = out.stdout.split()
    return feats, specs


def test_the_assets_code_versions_follow_the_packs_in_the_settings(make_settings, tmp_path):
    core = _code_versions(_settings_file(make_settings, "core"))
    assert core == (feature_selection(None).features_version, feature_selection(None).specialists_version)
    plugin = _code_versions(_settings_file(make_settings, "plugin", features={"plugins": ["my_research.features"]}))
    assert plugin[0] != core[0] and plugin[1] != core[1]  # a feature and a specialist added
    again = _code_versions(_settings_file(make_settings, "again", features={"packs": ["core"], "plugins": []}))
    assert again == core  # the same packs: the same versions, nothing stale


def test_a_plugin_specialist_goes_stale_and_is_merged_into_the_specialists_table(make_settings, instance, plugin_path):
    from dagster import AssetKey, materialize
    from dagster._core.definitions.data_version import StaleStatus
    from dagster._utils.test.data_versions import get_stale_status_resolver

    from assets.specialists import specialists
    from pipeline.definitions import build_resources

    def defs(cfg):
        version = feature_selection(read_settings(cfg)).specialists_version
        return [raw_bars, specialists.map_asset_specs(lambda spec: spec.replace_attributes(code_version=version))]

    def status(assets, year):
        return get_stale_status_resolver(instance, assets).get_status(AssetKey("specialists"),
                                                                   one_partition(instance, "AAA", year)["partition_key"])

    core_cfg = _settings_file(make_settings, "core")
    assert run_assets(defs(core_cfg), core_cfg, instance, ["AAA"], [2000, 2001]).success
    plugin_cfg = _settings_file(make_settings, "plugin", features={"plugins": ["my_research.features"]})
    assert status(defs(core_cfg), 2001) == StaleStatus.FRESH and status(defs(plugin_cfg), 2001) == StaleStatus.STALE
    assert materialize(defs(plugin_cfg), selection=["specialists"], **one_partition(instance, "AAA", 2001), instance=instance,
                       resources=build_resources(str(plugin_cfg))).success
    store = DeltaStore(read_settings(core_cfg).data_dir)
    new, old = store.read("specialists", [SymbolYear("AAA", 2001)]), store.read("specialists", [SymbolYear("AAA", 2000)])
    assert new["spec_momentum10_score"].is_nan().sum() == 0 and new["spec_momentum10_score"].abs().max() <= 1
    assert old["spec_momentum10_score"].null_count() == old.height
    assert status(defs(plugin_cfg), 2001) == StaleStatus.FRESH and status(defs(plugin_cfg), 2000) == StaleStatus.STALE
