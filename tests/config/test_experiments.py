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


def test_the_settings_hash_follows_the_model_settings_only(tmp_path):
    from config.experiments import settings_hash

    base = settings_hash(_settings(tmp_path))
    assert len(base) == 12 and base == settings_hash(_settings(tmp_path, experiment="other"))
    assert settings_hash(_settings(tmp_path, meta={"horizons": [7]})) == base  # train-meta --horizon: same models
    assert settings_hash(_settings(tmp_path, backtest={"fee_bps": 5.0})) == base
    assert settings_hash(_settings(tmp_path, meta={"calibration": "sigmoid"})) != base
    assert settings_hash(_settings(tmp_path, features={"packs": ["core", "alpha158"]})) != base
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
                                               r"are \w{12} \(meta.model \"hist_gbm\" -> \"logistic\"\)"):
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
