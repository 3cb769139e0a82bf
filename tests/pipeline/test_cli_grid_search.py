"""`grid-search` has one path: the direct run on files and the grid_search_job assets both run
domain.gridsearch.stage.grid_search_stage with the settings in force and the flags given over
them (the settings' `grid_search.dask` included), and neither writes a settings file."""

from __future__ import annotations

import json
import tempfile

import pytest

from config.settings import read_settings
from domain.gridsearch.synthetic import generate_grid_data

SMALL_PARAMS = {"volatility": [0.0, 0.05], "ratio": [0.0, 0.9], "adx28": [0, 20], "adx14": [0, 25], "adx7": [0, 30],
                "target": [0.2, 0.4], "stop_loss": [-0.4, -0.2]}
# wall times; the cluster's own block; the direct run's reader's rejected trades (on the
# assets path the trade_log step reports them in its metadata)
UNTIMED = ("seconds", "timings", "dask", "rejected")


@pytest.fixture(scope="module")
def grid_data(tmp_path_factory):
    return generate_grid_data(tmp_path_factory.mktemp("grid"), days=2, trades_per_day=120)


def _direct(grid_data, out, *flags) -> list[str]:
    return ["grid-search", "--market-data", str(grid_data.market_data), "--trade-log", str(grid_data.trade_log),
            "--out", str(out), "--quiet", *flags]


def _same(a: dict, b: dict) -> dict:
    return {k: v for k, v in a.items() if k not in UNTIMED} == {k: v for k, v in b.items() if k not in UNTIMED}


def test_the_direct_run_writes_the_report_the_assets_write(grid_data, make_settings, monkeypatch, tmp_path, capsys):
    """Same settings, same flags: the direct run's JSON equals the asset's top10.json (the
    overfitting guard of the settings included) but for wall times; no settings file is
    written for either (the flags are settings in memory, resources.project overrides)."""
    from pipeline.cli import main

    cfg = make_settings(grid_search={"params": SMALL_PARAMS, "market_data": str(grid_data.market_data),
                                     "trade_log": str(grid_data.trade_log)})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    written = []
    mkstemp = tempfile.mkstemp

    def recording_mkstemp(*args, **kwargs):
        fd, name = mkstemp(*args, **kwargs)
        written.append(name)
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", recording_mkstemp)
    assert main(_direct(grid_data, tmp_path / "direct.json", "--top", "4", "--engine", "brute")) == 0
    assert main(["grid-search", "--top", "4", "--engine", "brute", "--out", str(tmp_path / "assets.json")]) == 0
    direct = json.loads((tmp_path / "direct.json").read_text())
    assets = json.loads((read_settings(cfg).stage_reports_dir("grid_search") / "top10.json").read_text())
    assert len(direct["top"]) == 4 and direct["overfitting"]["pbo"] and _same(direct, assets)
    assert (tmp_path / "top10.md").exists() and (tmp_path / "heatmap.png").exists()  # beside --out
    assert not [n for n in written if "tradelab-cli-" in n]
    out, err = capsys.readouterr()
    printed = [json.loads(block) for block in out.replace("}\n{", "}\n\n{").split("\n\n")]
    assert printed[0]["winner"] == direct["top"][0] and printed[1]["winner"] == assets["top"][0]
    # the stored key stays `roi`; the printed summary says what it is, in the JSON and in words
    assert printed[0]["roi_means"] == "the sum of the kept trades' returns, percent (not a return on capital)"
    w = direct["top"][0]
    assert (f"grid-search winner (full sample, chosen on all trades): sum of kept trades' returns {w['roi']:.2f}% "
            f"over {w['trades']} trades") in err.splitlines()


def test_the_direct_run_honours_grid_search_dask(grid_data, make_settings, monkeypatch, tmp_path):
    """`grid_search.dask.enabled` in the settings: the direct run shards over the cluster (its
    report names the shards) and finds the same top rows as one process."""
    pytest.importorskip("distributed", reason="the cluster extra: pip install -e '.[cluster]'")
    from pipeline.cli import main

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    reports = {}
    for dask in ({"enabled": False}, {"enabled": True, "workers": 2, "shards": 3}):
        cfg = make_settings(grid_search={"params": SMALL_PARAMS, "overfitting": False, "dask": dask})
        cfg = cfg.rename(cfg.with_name(f"settings_dask_{dask['enabled']}.yaml"))
        monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
        out = tmp_path / f"dask_{dask['enabled']}.json"
        assert main(_direct(grid_data, out, "--engine", "cube")) == 0
        reports[dask["enabled"]] = json.loads(out.read_text())
    assert reports[True]["dask"]["shards"] == 3 and "dask" not in reports[False]
    assert reports[True]["top"] == reports[False]["top"]
