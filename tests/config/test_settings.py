"""The settings file: one model, one clear message per mistake, every key documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from config.settings import DEFAULT_CONFIG, Settings, SettingsError, load_settings, parse_settings, read_settings

README = Path(__file__).resolve().parents[2] / "README.md"


def test_shipped_settings_file_is_valid():
    s = read_settings(DEFAULT_CONFIG)
    assert s.labels.horizons == [3, 7, 14]
    assert s.device in ("auto", "cpu", "cuda", "rocm")


def test_pipeline_config_env_selects_another_file(tmp_path, monkeypatch):
    other = tmp_path / "other.yaml"
    other.write_text("years: {start: 2015}\ndevice: cpu\n")
    monkeypatch.setenv("PIPELINE_CONFIG", str(other))
    s = load_settings()
    assert s.years.start == 2015 and s.device == "cpu"


def test_relative_paths_resolve_against_the_settings_file(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("paths: {data: d1}\n")
    assert read_settings(f).data_dir == tmp_path / "d1"


def test_unknown_key_is_named():
    with pytest.raises(SettingsError, match=r"universe\.sourse: unknown key"):
        parse_settings({"universe": {"sourse": "folder"}}, "f.yaml")


def test_wrong_type_names_key_and_expected_type():
    with pytest.raises(SettingsError, match=r"years\.start: Input should be a valid integer.*'soon'"):
        parse_settings({"years": {"start": "soon"}}, "f.yaml")


def test_bad_device_lists_the_allowed_values():
    with pytest.raises(SettingsError) as err:
        parse_settings({"device": "gpu"}, "f.yaml")
    assert "f.yaml" in str(err.value) and "'auto', 'cpu', 'cuda' or 'rocm'" in str(err.value)


def test_thresholds_must_cover_each_horizon():
    with pytest.raises(SettingsError, match="one entry per horizon"):
        parse_settings({"labels": {"horizons": [3, 7], "thresholds": {3: 0.0}}})


@pytest.mark.parametrize(
    "params, message",
    [
        ({"target": [0.0, 0.5]}, "target values are percents > 0"),
        ({"stop_loss": [-0.5, 0.1]}, "stop_loss values are percents < 0"),
        ({"adx7": []}, "adx7 must be a non-empty list"),
    ],
)
def test_invalid_grid_lists_are_rejected(params, message):
    with pytest.raises(SettingsError, match=message):
        parse_settings({"grid_search": {"params": params}})


def test_symbol_outside_the_pattern_is_rejected():
    with pytest.raises(SettingsError, match=r"'\.\./x' does not match"):
        parse_settings({"universe": {"synthetic": {"symbols": ["../x"]}}})


def test_end_year_before_start_is_rejected():
    with pytest.raises(SettingsError, match=r"end \(2001\) must be >= start \(2005\)"):
        parse_settings({"years": {"start": 2005, "end": 2001}})


def test_missing_file_says_how_to_select_one(tmp_path):
    with pytest.raises(SettingsError, match="PIPELINE_CONFIG"):
        read_settings(tmp_path / "nope.yaml")


def _dotted_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        key = f"{prefix}{name}"
        keys.append(key)
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            keys += _dotted_keys(ann, key + ".")
    return keys


def test_every_settings_key_is_documented_in_the_readme():
    text = README.read_text()
    missing = [k for k in _dotted_keys(Settings) if not re.search(rf"`{re.escape(k)}`", text)]
    assert not missing, f"README.md does not document: {missing}"
