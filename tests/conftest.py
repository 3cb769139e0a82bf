"""Shared fixtures: settings files in tmp dirs, an ephemeral Dagster instance, runs."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from tests.gpu import choose_simulator

# GPU kernels run under numba's CUDA simulator unless a real GPU is present; TRADELAB_GPU=1
# (the GPU proof) forces the real device, TRADELAB_GPU=0 (its dry run) the simulator
# (tests/gpu.py). This must be set before numba.cuda is first imported.
choose_simulator()


class _ForbidImports:
    """TRADELAB_FORBID_IMPORTS=dagster,polars,...: importing these fails, as on the GPU
    machine (none of them is there), so the dry GPU check proves the GPU tests need none."""

    def __init__(self, names):
        self.names = set(names)

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r} (TRADELAB_FORBID_IMPORTS)", name=name)
        return None


if os.environ.get("TRADELAB_FORBID_IMPORTS"):
    sys.meta_path.insert(0, _ForbidImports(filter(None, os.environ["TRADELAB_FORBID_IMPORTS"].split(","))))

import pytest  # noqa: E402
import yaml  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _private_tmpdir_per_xdist_worker() -> None:
    """Under pytest-xdist (`make test` runs `-n 2 --dist loadfile`), each worker gets a temp
    folder of its own, for itself and the processes it starts (TMPDIR): tests that look at what
    their commands leave in the temp folder (tests/pipeline/test_cli_common.py) see no other
    worker's files. tmp_path is per worker already (xdist's basetemp)."""
    import atexit
    import shutil
    import tempfile

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    private = tempfile.mkdtemp(prefix=f"tradelab-xdist-{worker}-")
    os.environ["TMPDIR"] = private
    tempfile.tempdir = private
    atexit.register(shutil.rmtree, private, ignore_errors=True)


_private_tmpdir_per_xdist_worker()

# Progress lines (pipeline.progress) go to stderr whenever it is no terminal, as under pytest;
# the tests pin their commands' stderr line by line, so progress is off unless a test turns it
# on (TRADELAB_PROGRESS=1): tests/pipeline/test_progress.py and the tests that set it specify it.
os.environ.setdefault("TRADELAB_PROGRESS", "0")

# TRADELAB_TEST_SYMBOLS_PER_GROUP=N (default 1) runs the tests with symbol groups of N: the
# settings files the fixtures write say so, and so do the process's own settings, which the
# Dagster definitions are built from at import (resources.partitions): a copy of the shipped
# file with its paths made absolute, unless PIPELINE_CONFIG is already set.
SYMBOLS_PER_GROUP = int(os.environ.get("TRADELAB_TEST_SYMBOLS_PER_GROUP") or 1)


def _grouped_process_settings() -> None:
    import tempfile

    if SYMBOLS_PER_GROUP == 1 or os.environ.get("PIPELINE_CONFIG"):
        return
    data = yaml.safe_load((REPO / "dagster_project.yaml").read_text())
    data["paths"] = {k: str(REPO / v) for k, v in data["paths"].items()}
    data.setdefault("partitions", {})["symbols_per_group"] = SYMBOLS_PER_GROUP
    path = Path(tempfile.gettempdir()) / f"tradelab-test-settings-groups-{SYMBOLS_PER_GROUP}-{os.getpid()}.yaml"
    path.write_text(yaml.safe_dump(data))
    os.environ["PIPELINE_CONFIG"] = str(path)


_grouped_process_settings()


def group_settings(data: dict) -> dict:
    """`data` (a settings mapping a test writes) with the group size of this test session."""
    if SYMBOLS_PER_GROUP != 1:
        data.setdefault("partitions", {}).setdefault("symbols_per_group", SYMBOLS_PER_GROUP)
    return data


def pytest_ignore_collect(collection_path, config):
    """`pytest -m gpu` collects only the modules that use the marker, so the GPU tests run
    where Dagster and polars are not installed (the GPU machine); the selection is the same."""
    if config.getoption("markexpr", "") == "gpu" and collection_path.suffix == ".py" \
            and collection_path.name.startswith("test_"):
        text = collection_path.read_text()
        return "pytest.mark.gpu" not in text and "from tests.gpu import" not in text
    return None


def pytest_sessionstart(session):
    if os.environ.get("TRADELAB_GPU") == "1":
        from tests.gpu import real_cuda

        if not real_cuda():
            raise pytest.UsageError("TRADELAB_GPU=1 but numba.cuda sees no real GPU (driver, toolkit?)")


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
        _deep_update(group_settings(data), overrides)
        path = tmp_path / "settings.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    return _make


@pytest.fixture
def instance():
    with project_instance_for_test() as inst:
        yield inst


@contextlib.contextmanager
def project_instance_for_test(**kwargs):
    """Dagster's `instance_for_test` (a temporary DAGSTER_HOME) with the event log the project's
    dagster.yaml selects (pipeline.event_log.BatchedSqliteEventLogStorage), so the tests store
    their events as `make`, the CLI and the demo do."""
    import tempfile

    from dagster import instance_for_test

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as home:  # as Dagster's own
        overrides = {"event_log_storage": {"module": "pipeline.event_log", "class": "BatchedSqliteEventLogStorage",
                                           "config": {"base_dir": str(Path(home) / "history" / "runs")}}}
        with instance_for_test(temp_dir=home, overrides={**overrides, **kwargs.pop("overrides", {})}, **kwargs) as inst:
            yield inst


def run_assets(assets, settings_path, instance, symbols, years, raise_on_error=True, extra_resources=None):
    """Materialize `assets` for the rectangle symbols x years in one run (single-run backfill)."""
    from dagster import materialize
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    from pipeline.definitions import build_resources
    from pipeline.symbols import register_symbols

    from resources.partitions import selection_blocks

    register_symbols(instance, symbols)
    (first, last, extra, _), = selection_blocks(instance, symbols)  # one rectangle: symbols (or groups) first..last
    tags = {
        ASSET_PARTITION_RANGE_START_TAG: f"{first}|{min(years)}",
        ASSET_PARTITION_RANGE_END_TAG: f"{last}|{max(years)}",
        **extra,
    }
    resources = {**build_resources(str(settings_path)), **(extra_resources or {})}
    return materialize(assets, resources=resources, instance=instance, tags=tags, raise_on_error=raise_on_error)


@pytest.fixture
def clean_env(monkeypatch):
    for var in ("PIPELINE_CONFIG", "DAGSTER_HOME"):
        monkeypatch.delenv(var, raising=False)
    return os.environ


LEARNED_SYMBOLS = ["AAA", "BBB", "CCC"]
LEARNED_YEARS = [2000, 2001, 2002, 2003]
LEARNED_YEAR = 2003  # the out-of-sample year that has a meta model


@pytest.fixture(scope="session")
def learned_store(tmp_path_factory):
    """A tiny universe built once per session through Dagster: raw_bars, features,
    specialists, labels for 3 symbols x 2000-2003, then regime, meta_model and predictions
    of 2003. Tests read it; they must not write into it (copy it first)."""
    from assets.features import features
    from assets.labels import labels
    from assets.lstm_model import lstm_model
    from assets.meta_model import meta_model
    from assets.predictions import predictions
    from assets.raw_bars import raw_bars
    from assets.regime import regime
    from assets.specialists import specialists
    from dagster import materialize
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    from pipeline.definitions import build_resources

    root = tmp_path_factory.mktemp("learned")
    cfg = root / "settings.yaml"
    cfg.write_text(yaml.safe_dump(group_settings({
        "paths": {"data": str(root / "data"), "reports": str(root / "reports"), "models": str(root / "models")},
        "years": {"start": 2000, "end": None},
        "universe": {"source": "synthetic", "synthetic": {"symbols": LEARNED_SYMBOLS, "seed": 3, "end_date": "2012-12-31"}},
    })))
    with project_instance_for_test() as inst:
        assert run_assets([raw_bars, features, specialists, labels], cfg, inst, LEARNED_SYMBOLS, LEARNED_YEARS).success
        every = [raw_bars, features, specialists, labels, regime, lstm_model, meta_model, predictions]
        assert materialize(every, selection=[regime], instance=inst, resources=build_resources(str(cfg)),
                           tags={ASSET_PARTITION_RANGE_START_TAG: "2000", ASSET_PARTITION_RANGE_END_TAG: "2003"}).success
        assert materialize(every, selection=[meta_model, predictions], partition_key=str(LEARNED_YEAR), instance=inst,
                           resources=build_resources(str(cfg))).success
    return cfg


@pytest.fixture
def learned_copy(learned_store, tmp_path):
    """A private copy of `learned_store` (same data, models, reports) that a test may write to."""
    import shutil

    src = learned_store.parent
    dst = tmp_path / "learned"
    shutil.copytree(src, dst)
    cfg = yaml.safe_load(learned_store.read_text())
    cfg["paths"] = {k: str(dst / k) for k in ("data", "reports", "models")}
    path = dst / "settings.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def one_partition(instance, symbol: str, year: int, tags: dict | None = None) -> dict:
    """materialize() keywords for the partition symbol x year in this session's layout: its
    key (a group's key when grouped, with the run tag that narrows the run to `symbol`)."""
    from config.partitions import SYMBOLS_TAG, key_text
    from resources.partitions import GROUPED, dynamic_key_of

    key = key_text(dynamic_key_of(instance, [symbol])[symbol], year)
    return {"partition_key": key, "tags": {**(tags or {}), **({SYMBOLS_TAG: symbol} if GROUPED else {})}}


# `make test-fast` (`pytest -m "not slow"`): the tests named in tests/slow_tests.txt are marked
# `slow` here (a file, a test function: every parametrization of it, or one parametrized id);
# `make test` runs them all. The list is measured (benchmarks/LOG.md, "make test: where the
# time goes"); tests/test_layout.py checks that each entry still names a test.
SLOW_LIST = REPO / "tests" / "slow_tests.txt"


def slow_entries() -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in SLOW_LIST.read_text().splitlines())
    return [line for line in lines if line]


def _is_listed(nodeid: str, entries: set[str]) -> bool:
    if nodeid in entries:
        return True
    path, _, name = nodeid.partition("::")
    return path in entries or f"{path}::{name.partition('[')[0]}" in entries


def file_seconds() -> dict[str, float]:
    """Measured seconds per test file: the sum of its entries' figures in tests/slow_tests.txt."""
    out: dict[str, float] = {}
    for line in SLOW_LIST.read_text().splitlines():
        entry, _, note = line.partition("#")
        seconds = note.strip().removesuffix("s").strip()
        if entry.strip() and seconds.replace(".", "", 1).isdigit():
            path = entry.strip().partition("::")[0]
            out[path] = out.get(path, 0.0) + float(seconds)
    return out


def pytest_collection_modifyitems(config, items):
    entries = set(slow_entries())
    same_under_groups = pytest.mark.skip(reason="layout_free: runs no Dagster partition, so symbol groups change "
                                         "nothing (the pass without groups ran it)")
    for item in items:
        if _is_listed(item.nodeid, entries):
            item.add_marker(pytest.mark.slow)
        if SYMBOLS_PER_GROUP != 1 and item.get_closest_marker("layout_free"):
            item.add_marker(same_under_groups)
    # The longest files first (a stable sort: a file's tests keep their order): with pytest-xdist's
    # --dist loadfile and --no-loadscope-reorder (the Makefile) the workers take files in this
    # order, so the last file a worker starts is a short one and both finish near together
    # (longest-processing-time-first scheduling; xdist's default orders by test count instead).
    weight = file_seconds()
    items.sort(key=lambda item: -weight.get(item.nodeid.partition("::")[0], 0.0))
