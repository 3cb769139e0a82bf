"""The stage commands' helpers: derived settings and year ranges."""

from __future__ import annotations

import pytest
import yaml

from config.settings import SettingsError, read_settings
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


def test_parse_years_accepts_single_ranges_and_contiguous_lists_and_refuses_gaps_and_years_outside(make_settings):
    s = read_settings(make_settings(years={"start": 2000, "end": 2010}))
    assert parse_years("2003", s) == [2003]
    assert parse_years("2003-2005", s) == [2003, 2004, 2005]
    assert parse_years("2005,2004", s) == [2004, 2005]
    with pytest.raises(ValueError, match="contiguous"):
        parse_years("2005,2003", s)  # runs cover ranges: 2004 would be built too
    assert parse_years(None, s) == list(range(2000, 2011))
    with pytest.raises(ValueError, match="outside the configured years"):
        parse_years("1999-2001", s)


def test_atc_scan_command_materializes_the_asset_with_its_flags_as_settings(make_settings, instance, monkeypatch, tmp_path, capsys):
    from assets.raw_bars import raw_bars
    from pipeline.cli import main
    from tests.conftest import run_assets

    cfg = make_settings()
    assert run_assets([raw_bars], cfg, instance, ["AAA", "BBB"], [2010, 2011, 2012]).success
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["atc-scan", "--bars", "300", "--out", str(tmp_path / "scan.csv")]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[0].split() == ["symbol", "date", "ATC", "state"]
    assert "2 symbols" in out.err
    from dagster import AssetKey, DagsterInstance

    with DagsterInstance.from_config(str(tmp_path / "home")) as home_instance:
        assert home_instance.get_latest_materialization_event(AssetKey("atc_scan")) is not None
    assert read_settings(cfg.with_name(".cli-atc-scan.yaml")).atc.scan_bars == 300
    assert (tmp_path / "scan.csv").read_text().count("\n") == 3
