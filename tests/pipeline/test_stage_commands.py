"""The stage commands' helpers: derived settings and year ranges."""

from __future__ import annotations

import os
import sys

import pytest

from config.settings import SettingsError, read_settings
from pipeline.stage_commands import derived_settings, parse_years


def test_derived_settings_are_a_private_temp_file_that_keeps_the_relative_paths_of_the_file_in_force(make_settings, monkeypatch):
    """Not beside the file in force: its folder may be read-only."""
    import tempfile

    cfg = make_settings(universe={"source": "folder", "folder": {"path": "user_data"}})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    before = cfg.read_text()
    path = derived_settings({"meta": {"horizons": [7]}}, "train-meta")
    assert str(path.parent) == tempfile.gettempdir() and path.name.startswith(f"tradelab-cli-train-meta-{os.getpid()}-")
    assert path.suffix == ".yaml" and path.stat().st_mode & 0o777 == 0o600  # may hold a storage password
    derived, original = read_settings(path), read_settings(cfg)
    assert derived.meta.horizons == [7]
    assert (derived.data_dir, derived.reports_root, derived.models_root) == (cfg.parent / "data", cfg.parent / "reports",
                                                                             cfg.parent / "models")
    assert derived.resolve(derived.universe.folder.path) == cfg.parent / "user_data"
    assert derived.resolve(derived.grid_search.trade_log) == original.resolve(original.grid_search.trade_log)
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
    import tempfile
    from pathlib import Path

    [derived] = Path(tempfile.gettempdir()).glob(f"tradelab-cli-atc-scan-{os.getpid()}-*.yaml")  # removed at exit
    assert read_settings(derived).atc.scan_bars == 300
    assert (tmp_path / "scan.csv").read_text().count("\n") == 3


def test_two_commands_at_once_each_run_with_their_own_flags(make_settings):
    """Real processes: A derives its settings, then B derives other ones while A is still
    running; A must still read its own flags, and both files are gone when they exit."""
    import os
    import subprocess
    import sys

    cfg = make_settings()
    code = ("import sys; from pipeline.stage_commands import derived_settings; from config.settings import read_settings\n"
            "p = derived_settings({'universe': {'folder': {'path': sys.argv[1]}}}, 'build-features')\n"
            "print('ready', flush=True); sys.stdin.readline()\n"
            "print(read_settings(p).universe.folder.path, flush=True)\n")
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg)}
    run = lambda folder: subprocess.Popen([sys.executable, "-c", code, folder], env=env, text=True,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    a = run("/data/A")
    assert a.stdout.readline().strip() == "ready"
    b = run("/data/B")
    assert b.stdout.readline().strip() == "ready"
    out_a, _ = a.communicate("go\n", timeout=60)
    out_b, _ = b.communicate("go\n", timeout=60)
    assert (out_a.strip(), out_b.strip()) == ("/data/A", "/data/B")
    import tempfile
    from pathlib import Path

    assert not [p for pid in (a.pid, b.pid) for p in Path(tempfile.gettempdir()).glob(f"tradelab-cli-build-features-{pid}-*")]


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

    from pipeline import stage_commands
    from pipeline.cli import main

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: nothing to fall back from")
    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings()))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    seen = {}
    monkeypatch.setattr(stage_commands, "_materialize_years",
                        lambda cfg, selection, years, desc, per_year=False: seen.update(device=read_settings(cfg).device))
    assert main(["train-lstm", "--device", "cuda", "--years", "2005"]) == 0
    err = capsys.readouterr().err
    assert "warning: --device cuda: torch sees no CUDA/ROCm device; training on the CPU instead" in err
    assert seen == {"device": "cpu"}
    assert main(["train-lstm", "--device", "cuda", "--strict-device", "--years", "2005"]) == 3
    assert "error: --device cuda: torch sees no CUDA/ROCm device (--strict-device)" in capsys.readouterr().err
