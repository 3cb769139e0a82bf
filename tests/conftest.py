"""Shared fixtures: settings files in tmp dirs, an ephemeral Dagster instance, runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# GPU kernels run under numba's CUDA simulator unless a real GPU is present. This must be
# set before numba.cuda is first imported.
if "NUMBA_ENABLE_CUDASIM" not in os.environ and shutil.which("nvidia-smi") is None:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import pytest
import yaml
from dagster import instance_for_test, materialize
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

REPO = Path(__file__).resolve().parent.parent


def _deep_update(base: dict, extra: dict) -> dict:
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _deep_update(base[k], v)
        else:
            base[k] = v
    return base


@pytest.fixture
def make_settings(tmp_path):
    """Write a settings file under tmp_path (data/reports/models there too); return its path."""

    def _make(**overrides) -> Path:
        data = {
            "paths": {"data": "data", "reports": "reports", "models": "models"},
            "years": {"start": 2000, "end": None},
            "universe": {"source": "synthetic", "synthetic": {"symbols": ["AAA", "BBB"], "seed": 3, "end_date": "2012-12-31"}},
        }
        _deep_update(data, overrides)
        path = tmp_path / "settings.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    return _make


@pytest.fixture
def instance():
    with instance_for_test() as inst:
        yield inst


def run_assets(assets, settings_path, instance, symbols, years, raise_on_error=True, extra_resources=None):
    """Materialize `assets` for the rectangle symbols x years in one run (single-run backfill)."""
    from pipeline.definitions import build_resources
    from pipeline.symbols import register_symbols

    register_symbols(instance, symbols)
    tags = {
        ASSET_PARTITION_RANGE_START_TAG: f"{symbols[0]}|{min(years)}",
        ASSET_PARTITION_RANGE_END_TAG: f"{symbols[-1]}|{max(years)}",
    }
    resources = {**build_resources(str(settings_path)), **(extra_resources or {})}
    return materialize(assets, resources=resources, instance=instance, tags=tags, raise_on_error=raise_on_error)


@pytest.fixture
def clean_env(monkeypatch):
    for var in ("PIPELINE_CONFIG", "DAGSTER_HOME"):
        monkeypatch.delenv(var, raising=False)
    return os.environ
