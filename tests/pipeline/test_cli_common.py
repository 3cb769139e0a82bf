"""pipeline.cli.common: a command's settings (its flags in memory over the file in force), year
ranges; the commands that use them (atc-scan, train-lstm)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from config.settings import SettingsError, read_settings
from pipeline.cli.common import command_settings, parse_years


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


def test_command_settings_apply_the_flags_in_memory_and_write_no_file(make_settings, monkeypatch, tmp_path):
    """The file in force is read, never written; no settings file appears anywhere; the
    overrides travel as JSON to the runs' ProjectResource."""
    import tempfile
    from pathlib import Path

    cfg = make_settings(universe={"source": "folder", "folder": {"path": "user_data"}})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    before, files = cfg.read_text(), set(Path(tempfile.gettempdir()).glob("tradelab-cli-*"))
    cs = command_settings({"meta": {"horizons": [7]}}, freeze=False)
    assert cs.settings.meta.horizons == [7] and read_settings(cfg).meta.horizons != [7]
    assert cs.settings.resolve(cs.settings.universe.folder.path) == cfg.parent / "user_data"  # relative to the file in force
    assert cs.path == cfg and cs.resources()["project"].settings().meta.horizons == [7]
    assert cfg.read_text() == before and set(Path(tempfile.gettempdir()).glob("tradelab-cli-*")) == files
    plain = command_settings(freeze=False)
    assert plain.overrides is None and plain.settings == read_settings(cfg)


def test_a_flag_the_settings_model_refuses_names_the_key(make_settings, monkeypatch):
    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings()))
    with pytest.raises(SettingsError, match="meta.horizons"):
        command_settings({"meta": {"horizons": [5]}}, freeze=False)


def test_atc_scan_command_materializes_the_asset_with_its_flags_as_in_memory_settings(make_settings, instance, monkeypatch, tmp_path, capsys):
    from assets.raw_bars import raw_bars
    from pipeline.cli import live, main
    from tests.conftest import run_assets

    seen = []

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
    import tempfile
    from pathlib import Path

    assert not list(Path(tempfile.gettempdir()).glob(f"tradelab-cli-atc-scan-{os.getpid()}-*"))  # no settings file
    assert (tmp_path / "scan.csv").read_text().count("\n") == 3
    monkeypatch.setattr(live, "resolved_job", lambda cs, job: seen.append(cs) or (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        main(["atc-scan", "--bars", "300", "--robustness", "Wide"])
    assert json.loads(seen[0].overrides) == {"atc": {"scan_bars": 300, "robustness": "Wide"}}
    assert (seen[0].settings.atc.scan_bars, seen[0].settings.atc.robustness) == (300, "Wide")


def test_reports_never_record_a_password(tmp_path, monkeypatch):
    from domain.observe import write_sidecar

    monkeypatch.setattr(sys, "argv", ["cli", "grid-search", "--storage", "postgresql://user:s3cret@db/optuna"])
    path = write_sidecar(tmp_path, "grid_search", "all", args={"storage": "postgresql://user:s3cret@db/optuna?password=x2"})
    text = path.read_text()
    assert "s3cret" not in text and "x2" not in text
    assert "postgresql://user:***@db/optuna" in text
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_train_lstm_on_gpu_without_one_falls_back_to_the_cpu_or_stops_when_strict(make_settings, monkeypatch, tmp_path, capsys):
    """Seed: do not crash, continue on CPU. --strict-device keeps the old exit code 3."""
    import torch

    from pipeline.cli import learning, main

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: nothing to fall back from")
    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings()))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    seen = {}
    monkeypatch.setattr(learning, "materialize_years",
                        lambda cs, selection, years, desc, per_year=False: seen.update(device=cs.settings.device))
    assert main(["train-lstm", "--device", "cuda", "--years", "2005"]) == 0
    err = capsys.readouterr().err
    assert "warning: --device cuda: torch sees no CUDA/ROCm device; training on the CPU instead" in err
    assert seen == {"device": "cpu"}
    assert main(["train-lstm", "--device", "cuda", "--strict-device", "--years", "2005"]) == 3
    assert "error: --device cuda: torch sees no CUDA/ROCm device (--strict-device)" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "overrides"), [
    (["train-meta", "--horizon", "7", "--years", "2005"], {"meta": {"horizons": [7]}}),
    (["backtest", "--horizon", "3", "--years", "2005"], {"backtest": {"horizon": 3}}),
    (["train-lstm", "--epochs", "2", "--device", "cpu", "--years", "2005"], {"lstm": {"epochs": 2}, "device": "cpu"}),
    (["evaluate", "--years", "2005"], None),
], ids=["train-meta", "backtest", "train-lstm", "evaluate-no-flags"])
def test_a_stage_command_runs_with_its_flags_in_memory_and_writes_no_settings_file(make_settings, monkeypatch, tmp_path,
                                                                                   capsys, argv, overrides):
    import tempfile
    from pathlib import Path

    from pipeline.cli import learning, main

    cfg = make_settings()
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(learning, "print_results", lambda *a, **k: None)
    seen = []
    monkeypatch.setattr(learning, "materialize_years", lambda cs, selection, years, desc, per_year=False: seen.append(cs))
    before = set(Path(tempfile.gettempdir()).glob("tradelab-cli-*"))
    assert main(argv) == 0
    [cs] = seen
    assert cs.path == cfg and (json.loads(cs.overrides) if cs.overrides else None) == overrides
    assert set(Path(tempfile.gettempdir()).glob("tradelab-cli-*")) == before
