"""Feature packs and plugins (kernels.registry.packs): the core pack is the registry, a
plugin from a module outside the library adds a feature and a specialist, a Batch entry
makes many columns in one call, and entries without an updater stream by recomputing
their window, bit for bit."""

from __future__ import annotations

import pickle
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from kernels.panel import Panel
from kernels.registry.features import FEATURE_NAMES, compute_features
from domain.feature_packs import select  # loads plugin modules (registered with kernels.registry.packs)
from kernels.registry.packs import Batch, Pack
from kernels.registry.specialists import PANEL_COLUMNS, SPECIALIST_COLUMNS, run_specialists
from kernels.indicators.streaming import SymbolStream
from tests.kernels.test_streaming import RANDOM

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
WITH_PLUGIN = (("core",), ("my_research.features",))


@pytest.fixture
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))


@pytest.fixture
def fresh_select():
    """`select` caches per (packs, plugins): a test that fakes a module starts and ends clean."""
    select.cache_clear()
    yield
    select.cache_clear()


def _bars(n: int = 400) -> dict[str, np.ndarray]:
    return {c: RANDOM[c][:n] for c in PANEL_COLUMNS}


def test_the_core_pack_is_the_registry_columns_and_values_unchanged():
    core = select()
    assert core.feature_columns == FEATURE_NAMES and core.specialist_columns == SPECIALIST_COLUMNS
    bars = _bars()
    by_pack = compute_features(bars, entries=core.features)
    registry = compute_features(bars)
    assert list(by_pack) == FEATURE_NAMES
    for name in FEATURE_NAMES:
        assert by_pack[name].tobytes() == registry[name].tobytes(), name


def test_the_worked_plugin_example_runs_from_a_module_outside_the_library(plugin_path):
    import my_research.features as plugin

    assert not Path(plugin.__file__).resolve().is_relative_to(Path(__file__).resolve().parents[2] / "kernels")
    chosen = select(*WITH_PLUGIN)
    assert chosen.feature_columns == [*FEATURE_NAMES, "my_bb_pct_b20"]
    assert chosen.specialist_columns == [*SPECIALIST_COLUMNS, "spec_momentum10_score"]
    # two symbols back to back: the NumPy formula sees each one alone
    a, b = _bars(300), {c: RANDOM[c][1000:1250] for c in PANEL_COLUMNS}
    both = {c: np.concatenate([a[c], b[c]]) for c in PANEL_COLUMNS}
    got = compute_features(both, np.array([0, 300, 550]), entries=chosen.features)["my_bb_pct_b20"]
    np.testing.assert_array_equal(got[:300], plugin.bollinger_pct_b(a["close"]))
    np.testing.assert_array_equal(got[300:], plugin.bollinger_pct_b(b["close"]))
    assert np.isnan(got[300:319]).all() and np.isfinite(got[319:]).all()  # the warm-up restarts per symbol
    scores = run_specialists(Panel.from_columns(a), chosen.specialists)["spec_momentum10_score"]
    assert np.isnan(scores[:10]).all() and (np.abs(scores[10:]) <= 1).all()


def test_an_entry_without_an_updater_streams_its_window_recomputed_bit_for_bit(plugin_path):
    bars = _bars(400)
    chosen = select(*WITH_PLUGIN)
    feats, scores = SymbolStream(packs=WITH_PLUGIN).replay(*(bars[c] for c in PANEL_COLUMNS))
    batch = compute_features(bars, entries=chosen.features)
    spec = run_specialists(Panel.from_columns(bars), chosen.specialists)
    for j, name in enumerate(chosen.feature_columns):  # the core taps and the window tap
        assert feats[:, j].tobytes() == batch[name].tobytes(), name
    for j, name in enumerate(chosen.specialist_columns):
        assert scores[:, j].tobytes() == spec[name].tobytes(), name


def test_a_pickled_stream_with_window_taps_goes_on_as_one_that_never_stopped(plugin_path):
    bars = _bars(200)
    rows = list(zip(*(bars[c].tolist() for c in PANEL_COLUMNS)))
    whole = SymbolStream(packs=WITH_PLUGIN)
    want = [whole.update(*r) for r in rows][-1]
    first = SymbolStream(packs=WITH_PLUGIN)
    for r in rows[:150]:
        first.update(*r)
    resumed = pickle.loads(pickle.dumps(first))
    got = [resumed.update(*r) for r in rows[150:]][-1]
    assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()


def _batch_module(calls: list) -> types.ModuleType:
    """A plugin module with one Batch of three columns over close and vwap."""

    def spread(arrays, offsets, dtype):
        calls.append(len(offsets) - 1)
        close, vwap = arrays["close"], arrays["vwap"]
        return {"b_close": close.copy(), "b_vwap": vwap.copy(), "b_gap": (close - vwap).astype(dtype)}

    mod = types.ModuleType("fake_batch_plugin")
    mod.PACKS = [Pack("spread", features=(Batch("spread", ("b_close", "b_vwap", "b_gap"), spread, ("close", "vwap"),
                                                 warmup={"b_close": 0, "b_vwap": 0, "b_gap": 0}),))]
    return mod


def test_a_batch_entry_makes_many_columns_in_one_call_with_vwap_the_typical_price(monkeypatch, fresh_select):
    import polars as pl

    from config.partitions import SymbolYear
    from domain.features import build_features

    calls: list = []
    monkeypatch.setitem(sys.modules, "fake_batch_plugin", _batch_module(calls))
    chosen = select(("core",), ("fake_batch_plugin",))
    assert chosen.feature_columns[-3:] == ["b_close", "b_vwap", "b_gap"]
    bars = _bars(300)
    frame = pl.DataFrame({"date": pl.datetime_range(pl.datetime(2010, 1, 1), pl.datetime(2010, 10, 27), "1d", eager=True)
                          .cast(pl.Datetime("ns")), "symbol": "AAA", **bars})
    out, _, _ = build_features(frame, [SymbolYear("AAA", 2010)], selection=chosen)
    assert calls == [1]  # one call for the chunk, three columns
    typical = (bars["high"] + bars["low"] + bars["close"]) / np.float32(3)
    assert out["b_vwap"].to_numpy().tobytes() == typical.tobytes()
    with_vwap = frame.with_columns(vwap=pl.col("close") * 1.5)
    out, _, _ = build_features(with_vwap, [SymbolYear("AAA", 2010)], selection=chosen)
    assert out["b_vwap"].to_numpy().tobytes() == with_vwap["vwap"].to_numpy().tobytes()  # the source's own
    # the live path computes the same vwap from the bar: its window tap equals the batch
    feats, _ = SymbolStream(packs=(("core",), ("fake_batch_plugin",))).replay(*(bars[c] for c in PANEL_COLUMNS))
    assert feats[:, -2].tobytes() == typical.tobytes()


def test_the_alpha158_pack_is_one_batch_of_qlibs_158_columns_over_ohlcv_and_vwap():
    """`alpha158` is kernels.alpha158 as one Batch: the `a158_` columns in Qlib's order with
    Qlib's warm-ups, equal to compute_alpha158 over the same bars and the typical price as
    vwap when the bars carry none."""
    from kernels.alpha158 import ALPHA158_NAMES, ALPHA158_WARMUP, compute_alpha158
    from kernels.registry.packs import typical_price

    chosen = select(("core", "alpha158"), ())
    assert chosen.feature_columns == [*FEATURE_NAMES, *(f"a158_{n}" for n in ALPHA158_NAMES)]
    assert all(chosen.warmups()[f"a158_{n}"] == ALPHA158_WARMUP[n] for n in ALPHA158_NAMES)
    bars = _bars(300)
    bars["vwap"] = typical_price(bars["high"], bars["low"], bars["close"])  # as domain.features adds it
    out = compute_features(bars, entries=chosen.features)
    want = compute_alpha158(bars, np.array([0, 300]), np.float32)
    for name in ALPHA158_NAMES:
        assert out[f"a158_{name}"].tobytes() == want[name].tobytes(), name


def test_the_alpha158_pack_streams_bit_for_bit_by_recomputing_its_61_row_window():
    """The live path has no O(1) updater for alpha158: each bar recomputes the last
    warm-up + 1 = 61 rows (ROC60 reads 60 rows back), and equals the batch value."""
    from kernels.registry.packs import typical_price

    packs = (("core", "alpha158"), ())
    chosen = select(*packs)
    bars = _bars(200)
    feats, _ = SymbolStream(packs=packs).replay(*(bars[c] for c in PANEL_COLUMNS))
    batch = compute_features({**bars, "vwap": typical_price(bars["high"], bars["low"], bars["close"])},
                             entries=chosen.features)
    for j, name in enumerate(chosen.feature_columns):
        assert feats[:, j].tobytes() == batch[name].tobytes(), name


def test_changing_the_packs_changes_the_code_versions_and_the_same_packs_keep_them(plugin_path):
    core, plugin = select(), select(*WITH_PLUGIN)
    assert plugin.features_version != core.features_version
    assert plugin.specialists_version != core.specialists_version
    assert select(("core",), ()).features_version == core.features_version


def test_the_documented_worked_example_is_the_module_the_tests_run():
    """docs/features.md's section "Features: packs and plugins" shows the plugin module these tests
    import, verbatim."""
    repo = Path(__file__).resolve().parents[2]
    doc = (repo / "docs" / "features.md").read_text()
    module = (PLUGINS / "my_research" / "features.py").read_text()
    assert f"```python\n{module}```" in doc


def test_a_feature_appended_to_the_core_registry_is_a_new_core_column_and_code_version(monkeypatch, fresh_select):
    from kernels.registry import features as feature_registry
    from kernels.registry.features import FEATURES, Feature

    before = select()
    extra = Feature("f_sma50", lambda k: k("sma", ("close",), n=50), ("sma", 50), lambda u: u("sma", ("close",), n=50))
    monkeypatch.setattr(feature_registry, "FEATURES", (*FEATURES, extra))
    select.cache_clear()
    after = select()
    assert after.feature_columns == [*before.feature_columns, "f_sma50"]
    assert after.features_version != before.features_version
    assert after.specialists_version == before.specialists_version  # the specialists stay fresh


def test_a_worker_selecting_again_by_name_finds_the_plugin_through_the_paths_in_the_names(tmp_path, fresh_select):
    """Selection.names carries the plugin folders: a fresh process (a spawned or forkserver
    worker, whose sys.path lacks them) selects the same packs again from the names alone."""
    import json
    import os
    import subprocess

    (tmp_path / "lab_worker.py").write_text("from kernels.registry.packs import Formula, Pack\n"
                                            "PACKS = [Pack('lab', features=(Formula('my_w', lambda c: c * 2),))]\n")
    chosen = select(("core",), ("lab_worker",), (), (str(tmp_path),))
    assert chosen.names == (("core",), ("lab_worker",), (), (str(tmp_path),))
    code = ("import json, sys; from domain.feature_packs import select; "
            "names = [tuple(tuple(x) if isinstance(x, list) else x for x in n) for n in json.loads(sys.argv[1])]; "
            "print(select(*names).feature_columns[-1], sys.path.index(sys.argv[2]))")
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code, json.dumps(chosen.names), str(tmp_path)], cwd=repo,
                         env={**os.environ, "PYTHONPATH": str(repo)}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["my_w", "0"]  # found, the plugin folder first on sys.path


def test_plugin_paths_go_first_on_sys_path_once(tmp_path, monkeypatch):
    from domain.feature_packs import add_plugin_paths

    monkeypatch.setattr(sys, "path", list(sys.path))
    add_plugin_paths((str(tmp_path / "a"), str(tmp_path / "b")))
    add_plugin_paths((str(tmp_path / "a"), str(tmp_path / "b")))
    assert sys.path[:2] == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert sys.path.count(str(tmp_path / "a")) == 1
