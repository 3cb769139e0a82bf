"""A store where one symbol has no value in a feature column (a close-only symbol's volume
features): the meta model uses every symbol by default (native trees, filled linear model),
`meta.missing: drop` shrinks the counts and says so, and below meta.min_coverage the command
stops with one line (exit 2) and stores nothing. Through the CLI (`train-meta`), in process."""

from __future__ import annotations

import json

import polars as pl
import pytest
import yaml
from deltalake import write_deltalake

from config.settings import read_settings
from kernels.registry.features import FEATURE_NAMES
from tests.conftest import LEARNED_YEAR

EMPTY = FEATURE_NAMES[:2]  # the columns CCC lacks entirely
YEAR = str(LEARNED_YEAR)


@pytest.fixture
def lacking_store(learned_copy, monkeypatch, tmp_path):
    """The learned store with EMPTY null for every row of CCC, inputs features+specialists."""
    s = read_settings(learned_copy)
    path = s.table_root("features") / "features"
    table = pl.read_delta(str(path))
    table = table.with_columns([pl.when(pl.col("symbol") == "CCC").then(None).otherwise(pl.col(c)).alias(c) for c in EMPTY])
    write_deltalake(str(path), table.to_arrow(), mode="overwrite", partition_by=["year"])
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    return learned_copy


def _run(monkeypatch, capsys, cfg, meta: dict, name: str) -> tuple[int, str, str]:
    from pipeline.cli import main

    path = cfg.parent / f"settings_{name}.yaml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(cfg.read_text()), "meta": {"inputs": "features+specialists", **meta}}))
    monkeypatch.setenv("PIPELINE_CONFIG", str(path))
    assert main(["symbols", "sync"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("PIPELINE_CONFIG", str(path))
    try:
        code = main(["train-meta", "--years", YEAR, "--experiment", name])
    except SystemExit as exit_:
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _report(cfg, name: str, h: int = 7) -> dict:
    s = read_settings(cfg).model_copy(update={"experiment": name})
    return json.loads((s.stage_reports_dir("meta_model") / f"h{h}_{YEAR}.json").read_text())


def test_native_trees_use_every_symbol_and_the_printout_gives_the_true_counts(lacking_store, monkeypatch, capsys):
    code, out, _ = _run(monkeypatch, capsys, lacking_store, {"model": "lightgbm"}, "trees")
    assert code == 0
    rep = _report(lacking_store, "trees")
    test = rep["coverage"]["test"]
    assert rep["missing"] == "native" and rep["inputs"] == ["specialists", "regime", "core"]
    assert (test["symbols_used"], test["symbols_available"], test["symbols_lacking"]) == (3, 3, 1)
    assert test["rows_used"] == test["rows_available"] and sorted(test["empty_columns"]) == sorted(EMPTY)
    lines = out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith(f"meta h7 {YEAR}"))
    assert f"3 of 3 symbols, {test['rows_used']:,} of {test['rows_available']:,} rows; 1 symbol lacking" in lines[at]
    # the model's top 10 columns by LightGBM's split gain, under its line
    assert lines[at + 1].startswith("  importance (lightgbm split gain): ") and lines[at + 1].count(",") == 9
    assert list(_report(lacking_store, "trees")["importance"]["values"])[:1] == [lines[at + 1].split(": ")[1].split()[0]]


def test_drop_shrinks_the_counts_and_prints_them_as_such(lacking_store, monkeypatch, capsys):
    code, out, _ = _run(monkeypatch, capsys, lacking_store, {"missing": "drop", "min_coverage": 0.5}, "dropped")
    assert code == 0
    test = _report(lacking_store, "dropped")["coverage"]["test"]
    assert (test["symbols_used"], test["symbols_available"]) == (2, 3) and test["rows_used"] < test["rows_available"]
    line = next(x for x in out.splitlines() if x.startswith(f"meta h7 {YEAR}"))
    assert f"2 of 3 symbols, {test['rows_used']:,} of {test['rows_available']:,} rows; 1 symbol left out, lacking" in line


def test_below_the_floor_the_command_stops_with_one_line_and_stores_nothing(lacking_store, monkeypatch, capsys):
    code, out, err = _run(monkeypatch, capsys, lacking_store, {"missing": "drop"}, "floor")
    assert code == 2
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and "under meta.min_coverage 0.8 with meta.missing drop" in lines[0]
    assert all(c in lines[0] for c in EMPTY) and "expected meta.missing: fill or native" in lines[0]
    s = read_settings(lacking_store).model_copy(update={"experiment": "floor"})
    assert not list(s.models_dir.glob("meta_*")) and not list(s.stage_reports_dir("meta_model").glob("h*_*.json"))
