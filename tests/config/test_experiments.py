"""An experiment's folders, settings hash and frozen settings (config.settings, config.experiments)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.settings import SettingsError, parse_settings


def _settings(tmp_path: Path, **extra):
    return parse_settings({"paths": {"data": "data", "reports": "reports", "models": "models"}, **extra}, root=tmp_path)


def test_an_experiment_has_its_own_reports_models_and_model_tables_and_shares_the_others(tmp_path):
    s = _settings(tmp_path, experiment="momentum")
    assert (s.reports_dir, s.models_dir) == (tmp_path / "reports" / "momentum", tmp_path / "models" / "momentum")
    assert s.stage_reports_dir("evaluation") == tmp_path / "reports" / "momentum" / "evaluation"
    assert s.table_root("predictions") == tmp_path / "data" / "experiments" / "momentum"
    assert s.table_root("specialists") == tmp_path / "data"  # shared by every experiment
    assert _settings(tmp_path).reports_dir == tmp_path / "reports" / "default"
    with pytest.raises(ValueError, match="'eval' is not a stage; expected one of raw_bars, "):
        s.stage_reports_dir("eval")


@pytest.mark.parametrize("name", ["my run", "-x", "a/b", "evaluation", "eval", "x" * 65])
def test_an_experiment_name_that_is_no_folder_name_or_a_stage_folder_is_refused(tmp_path, name):
    with pytest.raises(SettingsError, match=r"experiment: Value error, "):
        _settings(tmp_path, experiment=name)


def test_the_settings_hash_follows_the_settings_that_change_a_stored_figure_only(tmp_path):
    from config.experiments import settings_hash

    base = settings_hash(_settings(tmp_path))
    assert len(base) == 12 and base == settings_hash(_settings(tmp_path, experiment="other"))
    assert settings_hash(_settings(tmp_path, meta={"horizons": [7]})) == base  # train-meta --horizon: same models
    assert settings_hash(_settings(tmp_path, backtest={"fee_bps": 5.0})) != base  # another backtest figure
    assert settings_hash(_settings(tmp_path, device="cpu", build={"workers": 1})) == base  # the same figures
    assert settings_hash(_settings(tmp_path, meta={"calibration": "sigmoid"})) != base
    assert settings_hash(_settings(tmp_path, features={"packs": ["core", "alpha158"]})) != base
    # where the plugins are found changes no figure (their entries' identity is hashed): the hash of
    # every experiment built before the setting is kept
    assert settings_hash(_settings(tmp_path, features={"plugin_paths": ["."]})) == base
    assert settings_hash(_settings(tmp_path, labels={"horizons": [7], "thresholds": {7: 0.0}}, backtest={"horizon": 7},
                                   lstm={"horizon": 7})) != base


def test_new_model_settings_are_taken_until_the_experiment_has_results_then_refused(tmp_path):
    from config.experiments import ExperimentFrozen, freeze_experiment, settings_hash

    first, second = _settings(tmp_path), _settings(tmp_path, meta={"model": "hist_gbm"})
    assert freeze_experiment(first)["settings_hash"] == settings_hash(first)
    (first.stage_reports_dir("raw_bars") / "runs").mkdir(parents=True)
    (first.stage_reports_dir("raw_bars") / "runs" / "2001.json").write_text("{}")  # a shared stage's sidecar: no result
    assert freeze_experiment(second)["settings_hash"] == settings_hash(second)  # no results yet: replaced
    first.models_dir.mkdir(parents=True)
    (first.models_dir / "meta_h7_2001.joblib").write_bytes(b"m")
    manifest = (second.reports_dir / "experiment.json").read_text()
    with pytest.raises(ExperimentFrozen, match=r"experiment 'default' has results built with settings \w{12}, these "
                                               r"are \w{12} \(meta.missing \"native\" -> \"fill\"; meta.model \"hist_gbm\" -> \"logistic\"\)"):
        freeze_experiment(first)
    assert (second.reports_dir / "experiment.json").read_text() == manifest  # unchanged
    assert freeze_experiment(second)["settings_hash"] == settings_hash(second)


FREEZE = """
import sys
from config.experiments import freeze_experiment
from config.settings import parse_settings
from pathlib import Path
s = parse_settings({"paths": {"reports": "reports", "models": "models", "data": "data"},
                    "meta": {"model": sys.argv[1]}}, root=Path(sys.argv[2]))
sys.stdin.readline()  # all processes start, then freeze at once
print(freeze_experiment(s)["settings_hash"])
"""


def test_processes_freezing_one_new_experiment_at_once_leave_one_whole_manifest(tmp_path):
    """Real processes released together: every one ends with a complete manifest that is
    one of theirs (never a torn or mixed file)."""
    from config.experiments import settings_hash

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    models = ["logistic", "hist_gbm"] * 3
    procs = [subprocess.Popen([sys.executable, "-c", FREEZE, m, str(tmp_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env) for m in models]
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    manifest = json.loads((tmp_path / "reports" / "default" / "experiment.json").read_text())
    hashes = {settings_hash(_settings(tmp_path, meta={"model": m})) for m in set(models)}
    assert manifest["settings_hash"] in hashes and set(outs) <= hashes
    assert not [p for p in (tmp_path / "reports" / "default").iterdir() if p.name != "experiment.json"]  # no temp files


def test_settings_added_later_keep_the_hash_at_their_default_and_change_it_otherwise(tmp_path):
    """cv.max_rows and meta.search_rows came after experiments existed: at their defaults an
    experiment built before keeps its hash; another value is a different experiment."""
    from config.experiments import model_settings, settings_hash

    base = _settings(tmp_path)
    assert "max_rows" not in model_settings(base)["cv"] and "search_rows" not in model_settings(base)["meta"]
    assert settings_hash(_settings(tmp_path, cv={"max_rows": 500_000}, meta={"search_rows": 250_000})) == settings_hash(base)
    assert settings_hash(_settings(tmp_path, cv={"max_rows": None})) != settings_hash(base)
    assert settings_hash(_settings(tmp_path, meta={"search_rows": 50_000})) != settings_hash(base)
    assert model_settings(_settings(tmp_path, meta={"search_rows": None}))["meta"]["search_rows"] is None


BASE = {"paths": {"data": "data", "reports": "reports", "models": "models"}}


def test_an_experiment_at_default_settings_keeps_the_hash_it_had_before_backtest_and_evaluation_entered_it(tmp_path):
    """The hashes computed on main before the backtest, the evaluation, plugin entries and
    meta.missing entered the hash: an existing experiment (whose models dropped incomplete
    rows: meta.missing drop) is not refused after the upgrade."""
    from config.experiments import figure_settings, settings_hash

    drop = {"missing": "drop"}
    assert settings_hash(_settings(tmp_path, meta=drop)) == "3affad4bf797"
    assert settings_hash(_settings(tmp_path, meta=drop, features={"packs": ["core", "alpha158"]})) == "259cb4be3dff"
    assert "backtest" not in figure_settings(_settings(tmp_path)) and "plugins" not in figure_settings(_settings(tmp_path))
    # settings that change no figure stay out at any value
    assert settings_hash(_settings(tmp_path, meta=drop, backtest={"chunk_days": 7},
                                   evaluation={"year_figures": True})) == "3affad4bf797"
    assert settings_hash(_settings(tmp_path, meta={**drop, "min_coverage": 0.1})) == "3affad4bf797"
    assert settings_hash(_settings(tmp_path, meta=drop, backtest={"threshold": 0.5, "fee_bps": 1.0})) == "3affad4bf797"


def test_the_missing_value_rule_in_force_is_in_the_hash(tmp_path):
    """meta.missing's default `auto` fills the logistic model's missing values (models built
    before the setting dropped those rows): another hash. `auto` and the rule it resolves to
    are the same experiment; a list of meta.inputs (now exactly its column groups) is hashed
    apart from the same list before."""
    from config.experiments import figure_settings, settings_hash

    assert settings_hash(_settings(tmp_path)) == "8df18f840c87" != "3affad4bf797"
    assert figure_settings(_settings(tmp_path))["meta"]["missing"] == "fill"
    assert settings_hash(_settings(tmp_path, meta={"missing": "fill"})) == settings_hash(_settings(tmp_path))
    tree = {"model": "lightgbm"}
    assert settings_hash(_settings(tmp_path, meta={**tree, "missing": "native"})) == settings_hash(_settings(tmp_path, meta=tree))
    listed = figure_settings(_settings(tmp_path, meta={"inputs": ["specialists", "regime"]}))["meta"]["inputs"]
    assert listed == {"groups": ["specialists", "regime"]}


def test_lightgbm_max_bin_at_its_default_keeps_the_hash_of_an_experiment_that_set_lightgbm_before(tmp_path):
    """meta.lightgbm.max_bin came after meta.lightgbm: at LightGBM's own 255 it is left out of the
    hash (a section set before keeps its hash), any other value is in it."""
    from config.experiments import figure_settings, settings_hash

    tuned = {"model": "lightgbm", "lightgbm": {"feature_fraction": 0.3}}
    assert "max_bin" not in figure_settings(_settings(tmp_path, meta=tuned))["meta"]["lightgbm"]
    assert settings_hash(_settings(tmp_path, meta={"model": "lightgbm", "lightgbm": {"max_bin": 255}})) == \
        settings_hash(_settings(tmp_path, meta={"model": "lightgbm"}))
    coarse = _settings(tmp_path, meta={"model": "lightgbm", "lightgbm": {"max_bin": 63}})
    assert figure_settings(coarse)["meta"]["lightgbm"]["max_bin"] == 63
    assert settings_hash(coarse) != settings_hash(_settings(tmp_path, meta={"model": "lightgbm"}))


@pytest.mark.parametrize("section, change", [("backtest", {"threshold": 0.55}), ("backtest", {"long_short": True}),
                                             ("backtest", {"slippage_bps": 0.0}),
                                             ("evaluation", {"min_symbols_per_day": 10})])
def test_a_backtest_or_evaluation_setting_other_than_its_default_changes_the_hash(tmp_path, section, change):
    from config.experiments import figure_settings, settings_hash

    changed = _settings(tmp_path, **{section: change})
    assert settings_hash(changed) != settings_hash(_settings(tmp_path))
    assert figure_settings(changed)[section] == change


def _with_results(s) -> None:
    s.models_dir.mkdir(parents=True, exist_ok=True)
    (s.models_dir / "meta_h7_2001.joblib").write_bytes(b"m")


def test_a_changed_backtest_threshold_under_an_experiment_with_results_is_refused(tmp_path):
    """Before, `backtest` was outside the hash: re-running it silently replaced the report."""
    from config.experiments import ExperimentFrozen, freeze_experiment

    freeze_experiment(_settings(tmp_path))
    _with_results(_settings(tmp_path))
    with pytest.raises(ExperimentFrozen, match=r"experiment 'default' has results built with settings 8df18f840c87, "
                                               r"these are \w{12} \(backtest.threshold default -> 0.55\); use another"):
        freeze_experiment(_settings(tmp_path, backtest={"threshold": 0.55}))
    assert freeze_experiment(_settings(tmp_path))["settings_hash"] == "8df18f840c87"  # the defaults still run


PLUGIN = '''"""A tmp plugin: one formula."""
import numpy as np
from kernels.registry.packs import Formula, Pack

PACKS = [Pack("mine", features=(Formula("my_x", lambda c: {formula}, version="{version}"),))]
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module `cfg_exp_plugin` in tmp_path (on sys.path), the version cache there too:
    write(formula, version) rewrites it."""
    from config import pack_versions

    monkeypatch.setenv(pack_versions.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    (tmp_path / "plugins").mkdir()
    module = tmp_path / "plugins" / "cfg_exp_plugin.py"

    def write(formula: str, version: str) -> None:
        module.write_text(PLUGIN.format(formula=formula, version=version))

    write("c * 2.0", "1")
    return write


def test_the_hash_covers_a_plugin_entrys_version_and_its_modules_source(tmp_path, plugin):
    from config.experiments import figure_settings, settings_hash

    s = _settings(tmp_path, features={"plugins": ["cfg_exp_plugin"]})
    first = settings_hash(s)
    entries = figure_settings(s)["plugins"]["cfg_exp_plugin"]
    assert entries["entries"] == {"mine/my_x": "1"} and len(entries["source"]) == 16
    plugin("c * 2.0", "2")  # only the version bumped
    bumped = settings_hash(s)
    plugin("c * 3.0 + 0.0", "2")  # only the formula edited
    edited = settings_hash(s)
    assert len({first, bumped, edited, settings_hash(_settings(tmp_path))}) == 4
    plugin("c * 2.0", "1")  # as it was: the same experiment again
    assert settings_hash(s) == first


def test_an_edited_plugin_formula_under_an_experiment_with_results_is_refused_in_one_line(tmp_path, plugin):
    from config.experiments import ExperimentFrozen, freeze_experiment

    s = _settings(tmp_path, features={"plugins": ["cfg_exp_plugin"]})
    manifest = freeze_experiment(s)
    assert manifest["code_versions"]["plugins"]["cfg_exp_plugin"]["entries"] == {"mine/my_x": "1"}
    assert set(manifest["code_versions"]) == {"features", "specialists", "plugins"}
    _with_results(s)
    plugin("c * 3.0 + 0.0", "1")  # the formula changed, its version not bumped
    with pytest.raises(ExperimentFrozen) as err:
        freeze_experiment(s)
    line = str(err.value)
    assert "\n" not in line and f"has results built with settings {manifest['settings_hash']}, these are " in line
    assert "(plugins.cfg_exp_plugin.source " in line and "use another --experiment name" in line


def test_an_experiment_built_before_meta_missing_is_refused_with_the_setting_that_keeps_its_models(tmp_path):
    """An experiment of before (its models dropped incomplete rows: the hash of meta.missing
    drop) under the new default `fill`: refused, naming meta.missing: drop as the way on."""
    from config.experiments import ExperimentFrozen, freeze_experiment

    freeze_experiment(_settings(tmp_path, meta={"missing": "drop"}))
    _with_results(_settings(tmp_path))
    with pytest.raises(ExperimentFrozen, match=r"\(meta.missing default -> \"fill\"\); use another --experiment name, "
                                               r"or move .* away to rebuild it, or set meta.missing: drop to go on "
                                               r"with the models built before$"):
        freeze_experiment(_settings(tmp_path))
    assert freeze_experiment(_settings(tmp_path, meta={"missing": "drop"}))["settings_hash"] == "3affad4bf797"


def test_the_strategy_settings_enter_the_hash_and_the_defaults_keep_it(tmp_path):
    from config.experiments import settings_hash

    base = settings_hash(_settings(tmp_path))
    same = _settings(tmp_path, backtest={"strategy": "threshold", "topk": 50, "n_drop": 5, "open_cost": 0.0,
                                         "max_turnover": None})
    assert settings_hash(same) == base  # written at their defaults: an experiment of before keeps its hash
    variants = [{"strategy": "topk_dropout"}, {"strategy": "long_short"}, {"topk": 10}, {"n_drop": 1},
                {"hold_thresh": 2}, {"quantile": 0.1}, {"open_cost": 0.0005}, {"close_cost": 0.0015},
                {"min_cost": 5}, {"account": 1e8}, {"max_turnover": 0.5}]
    hashes = {settings_hash(_settings(tmp_path, backtest=v)) for v in variants}
    assert base not in hashes and len(hashes) == len(variants)
