"""config.pack_versions: the features/specialists code versions, resolved in a child
process (the code location imports no kernel) and cached by the declaring files."""

from __future__ import annotations

import pytest

from config import pack_versions
from config.settings import FeatureSettings, SettingsError
from kernels.registry.packs import select

PLUGIN = """from kernels.registry.packs import Formula, Pack
PACKS = [Pack("mine", features=(Formula("my_x", lambda c: c, version="{v}"),))]
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(pack_versions.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    (tmp_path / "plugins" / "pv_research").mkdir(parents=True)
    (tmp_path / "plugins" / "pv_research" / "__init__.py").write_text("")
    return tmp_path


def test_the_child_gives_the_selection_hash_and_a_warm_load_reads_the_cache(cache, monkeypatch):
    got = pack_versions.pack_code_versions(FeatureSettings())
    assert got == {"features": select().features_version, "specialists": select().specialists_version}

    def no_child(features):
        raise AssertionError("a warm load must not start a process")

    monkeypatch.setattr(pack_versions, "_resolve", no_child)
    assert pack_versions.pack_code_versions(FeatureSettings()) == got


def test_bumping_a_plugin_entry_version_changes_the_code_version(cache):
    module = cache / "plugins" / "pv_research" / "features.py"
    module.write_text(PLUGIN.format(v="1"))
    settings = FeatureSettings(plugins=["pv_research.features"])
    first = pack_versions.pack_code_versions(settings)
    module.write_text(PLUGIN.format(v="2") + "# bumped\n")
    second = pack_versions.pack_code_versions(settings)
    assert first["features"] != second["features"] and first["specialists"] == second["specialists"]
    assert first["features"] != pack_versions.pack_code_versions(FeatureSettings())["features"]


def test_an_unusable_plugin_is_the_childs_one_line_and_is_not_cached(cache):
    settings = FeatureSettings(plugins=["pv_research.missing"])
    for _ in range(2):
        with pytest.raises(SettingsError) as err:
            pack_versions.pack_code_versions(settings)
        assert str(err.value) == ("features.plugins: module 'pv_research.missing' cannot be imported (ModuleNotFoundError: "
                                  "No module named 'pv_research.missing'); expected an importable module on sys.path (name its "
                                  "folder in features.plugin_paths) that defines PACKS")
    assert not list((cache / "cache").rglob("*.json"))
