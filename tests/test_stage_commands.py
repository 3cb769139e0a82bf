"""The stage commands' helpers: derived settings and year ranges."""

from __future__ import annotations

import pytest
import yaml

from pipeline.settings import SettingsError, read_settings
from pipeline.stage_commands import derived_settings, parse_years


def test_derived_settings_sit_beside_the_file_in_force_and_keep_its_relative_paths(make_settings, monkeypatch):
    cfg = make_settings()
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    before = cfg.read_text()
    path = derived_settings({"meta": {"horizons": [7]}}, "train-meta")
    assert path.parent == cfg.parent and path.name == ".cli-train-meta.yaml"
    derived, original = read_settings(path), read_settings(cfg)
    assert derived.meta.horizons == [7] and derived.data_dir == original.data_dir
    assert cfg.read_text() == before  # the file in force is never modified


def test_a_derived_setting_that_is_invalid_names_the_key(make_settings, monkeypatch):
    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings()))
    with pytest.raises(SettingsError, match="meta.horizons"):
        derived_settings({"meta": {"horizons": [5]}}, "bad")


def test_parse_years_accepts_single_ranges_and_lists_and_refuses_years_outside_the_settings(make_settings):
    s = read_settings(make_settings(years={"start": 2000, "end": 2010}))
    assert parse_years("2003", s) == [2003]
    assert parse_years("2003-2005", s) == [2003, 2004, 2005]
    assert parse_years("2005,2003", s) == [2003, 2005]
    assert parse_years(None, s) == list(range(2000, 2011))
    with pytest.raises(ValueError, match="outside the configured years"):
        parse_years("1999-2001", s)
