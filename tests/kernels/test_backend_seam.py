"""The backend seam (`kernels.backends`): one device -> backend map, and a registry per kernel
family through which each family's public call dispatches, so a new backend is one module per
family plus its registration. The fakes below are registered in the test and never on disk."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from kernels import backends


@pytest.mark.parametrize("device,backend", [("cpu", "cpu"), ("cuda", "cuda"), ("rocm", "torch")])
def test_backend_for_maps_each_device_kind_to_its_kernel_backend(device, backend):
    assert backends.backend_for(device) == backend


@pytest.mark.parametrize("device", ["auto", "gpu", "torch", ""])
def test_backend_for_an_unknown_or_unresolved_device_is_a_clear_error(device):
    with pytest.raises(ValueError, match=rf"^device must be one of \('cpu', 'cuda', 'rocm'\), got '{device}'$"):
        backends.backend_for(device)


def test_the_selected_device_takes_its_backend_from_backend_for():
    from resources.compute import select_device

    none = lambda: None  # noqa: E731
    assert select_device("rocm", cuda=none, rocm=lambda: "MI300").backend == backends.backend_for("rocm") == "torch"
    assert select_device("cuda", cuda=lambda: "H100", rocm=none).backend == "cuda"


@pytest.mark.parametrize("family,names", [
    ("indicators", ("cpu", "cuda", "torch")),
    ("atc", ("cpu", "cuda", "torch")),
    ("gridsearch.exits", ("cpu", "cuda", "torch")),
    ("gridsearch.brute", ("cpu", "cuda")),
    ("gridsearch.cube", ("cpu", "cuda", "torch")),
    ("strategy", ("cpu", "cuda")),
])
def test_each_family_registers_its_backends_in_its_package(family, names):
    import kernels.atc  # noqa: F401 - importing a family's package registers its backends
    import kernels.gridsearch  # noqa: F401
    import kernels.strategy  # noqa: F401

    assert backends.backends(family) == names


def test_registering_imports_nothing_until_the_backend_is_used():
    import subprocess
    from pathlib import Path

    code = ("import sys, kernels.atc, kernels.strategy, kernels.gridsearch; "
            "print(sorted(m for m in ('torch', 'kernels.atc.cpu', 'kernels.atc.cuda', 'kernels.atc.torch', "
            "'kernels.strategy.cuda', 'kernels.gridsearch.cuda') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"


@pytest.fixture
def fake(monkeypatch):
    """register(family, **entries): a module `fake_backend_<family>` holding `entries`,
    registered as `family`'s backend "fake" for this test only."""
    added = []

    def register(family, target=None, **entries):
        name = "fake_backend_" + family.replace(".", "_")
        mod = types.ModuleType(name)
        mod.__dict__.update(entries)
        monkeypatch.setitem(sys.modules, name, mod)
        backends.register(family, "fake", f"{name}:{target}" if target else name)
        added.append(family)
        return mod

    yield register
    for family in added:
        backends.unregister(family, "fake")


def test_a_fake_atc_backend_registered_in_a_test_is_what_atc_compute_runs(fake):
    from kernels import atc

    seen = {}

    def compute(close, p, dtype, cache, tail):
        seen.update(cutout=p.cutout, tail=tail, cache=cache)
        x = np.atleast_2d(np.asarray(close, dtype=dtype))
        return np.full((x.shape[0], 6, x.shape[1]), 0.5, dtype), np.full(x.shape, -0.25, dtype), np.ndim(close) == 1

    fake("atc", "compute", compute=compute)
    families, final = atc.compute(np.arange(1.0, 41.0), backend="fake", cutout=2, tail=3, cache=True)
    assert seen == {"cutout": 2, "tail": 3, "cache": True}
    assert final.shape == (40,) and final[0] == -0.25 and families["KAMA"][0] == 0.5
    backends.unregister("atc", "fake")
    with pytest.raises(ValueError, match=r"^backend must be one of \('cpu', 'cuda', 'torch'\), got 'fake'$"):
        atc.compute(np.arange(1.0, 41.0), backend="fake")


def test_a_fake_indicators_backend_is_what_sma_runs(fake):
    from kernels import indicators as K

    fake("indicators", run=lambda spec, inputs, params, dtype: [np.full(inputs[0].shape, float(params[0]), dtype)])
    assert K.sma(np.arange(10.0), 4, backend="fake").tolist() == [4.0] * 10


def test_a_fake_strategy_backend_is_what_backtest_population_runs_and_its_failure_falls_back_to_cpu(fake):
    from kernels.strategy import Individual, backtest_population

    rng = np.random.default_rng(0)
    close = 100 + np.cumsum(rng.normal(0, 1, 300))
    bars = (close, close + 1, close - 1, close, rng.uniform(1, 2, 300))
    calls = []

    def walk_result(inp):
        calls.append(len(inp.max_hold))
        raise RuntimeError("fake device lost")

    fake("strategy", "walk_result", walk_result=walk_result)
    with pytest.warns(RuntimeWarning, match=r"FAKE backtest failed \(RuntimeError: fake device lost\); running the cpu backend"):
        res = backtest_population(*bars, [Individual(), Individual()], backend="fake")
    assert calls == [2] and res.backend == "cpu" and res.fallback == "RuntimeError: fake device lost"
    with pytest.raises(RuntimeError, match="fake device lost"):
        backtest_population(*bars, [Individual()], backend="fake", fallback=False)


def test_a_fake_brute_force_backend_is_what_brute_force_runs(fake):
    from kernels.gridsearch.brute import brute_force
    from kernels.gridsearch.grid import Grid
    from kernels.gridsearch.ranking import TopK

    grid = Grid(volatility=(0.0,), ratio=(0.0,), adx28=(0,), adx14=(0,), adx7=(0,), target=(0.2,), stop_loss=(-0.2,))
    got = {}

    def brute(features, results, sizes, table, total, k, min_trades, launch, progress):
        got.update(total=total, k=k, min_trades=min_trades)
        return TopK.empty()

    fake("gridsearch.brute", "brute", brute=brute)
    brute_force(np.zeros((5, 3), np.float32), np.zeros((1, 3), np.int32), grid, k=4, min_trades=2, backend="fake")
    assert got == {"total": 1, "k": 4, "min_trades": 2}


def test_population_takes_backend_and_engine_only_as_a_deprecated_alias():
    """backend= is the name; engine= still works for the deprecation period
    (tests/kernels/test_deprecations.py), and with another backend= it is refused."""
    from kernels.strategy import Individual, backtest_population

    close = 100 + np.cumsum(np.random.default_rng(1).normal(0, 1, 200))
    bars = (close, close + 1, close - 1, close, np.ones(200))
    assert backtest_population(*bars, [Individual()], backend="cpu").backend == "cpu"
    with pytest.raises(TypeError, match="engine='cpu' and backend='cuda' are both given"):
        backtest_population(*bars, [Individual()], backend="cuda", engine="cpu")


def test_the_atc_scan_routes_a_large_chunk_to_a_registered_non_cpu_backend_and_an_unknown_one_to_cpu(fake, monkeypatch):
    from domain.atc_scan import route
    from kernels.backends import routing

    monkeypatch.setitem(routing.BREAK_EVEN, "atc", routing.BreakEven("symbol-bars", 1000, "test"))
    assert route(1000, 1, "fake") == "cpu"  # not registered for atc
    fake("atc", "compute", compute=None)
    assert route(1000, 1, "fake") == "fake"
    assert route(999, 1, "fake") == "cpu"


def test_cube_top_gives_the_same_top10_on_cpu_torch_and_cuda_and_names_its_backends(monkeypatch):
    """cuda with NumPy standing in for CuPy (as the grid search's own cuda test does); torch on its CPU."""
    pytest.importorskip("torch")
    from kernels.gridsearch.cube import cube_top
    from kernels.gridsearch.exits import resolve_exits
    from tests.kernels.test_grid_engines import GRID, as_rows, make_data

    prices, start, end, entry, pct, features = make_data(12)
    results, _ = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss)
    want = as_rows(cube_top(features, results, GRID, k=10, min_trades=1), GRID)
    assert len(want) == 10
    assert as_rows(cube_top(features, results, GRID, k=10, min_trades=1, backend="torch"), GRID) == want
    monkeypatch.setitem(sys.modules, "cupy", np)
    assert as_rows(cube_top(features, results, GRID, k=10, min_trades=1, backend="cuda"), GRID) == want
    with pytest.raises(ValueError, match=r"^dominance sums run on cpu, cuda or torch, got 'gpu'$"):
        cube_top(features, results, GRID, k=10, min_trades=1, backend="gpu")


def test_a_fake_exits_backend_is_what_resolve_exits_runs(fake):
    from kernels.gridsearch.exits import resolve_exits

    def exits(start, end, entry, prices, t_sorted, s_sorted, order_t, order_s, targets, stops, pct_units):
        return np.full((len(targets) * len(stops), len(start)), 7, np.int32), np.zeros((1, len(start)), np.int64)

    fake("gridsearch.exits", "exits", exits=exits)
    res, _ = resolve_exits([0, 1], [1, 2], [1.0, 1.0], np.ones(3), [0.0, 0.0], [0.2, 0.5], [-0.2], backend="fake")
    assert res.tolist() == [[7, 7], [7, 7]]
