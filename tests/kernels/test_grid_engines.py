"""Grid-search engines against the plain-Python reference (small data), and each other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.gridsearch import NO_CROSS, RESULT_SCALE
from kernels.gridsearch.brute import brute_force
from kernels.gridsearch.cores import kept_mask
from kernels.gridsearch.cube import cube_roi, cube_roi_torch
from kernels.gridsearch.evaluate import evaluate
from kernels.gridsearch.exits import resolve_exits, to_units
from kernels.gridsearch.grid import Grid
from kernels.gridsearch.ranking import top_k_full
from kernels.gridsearch.reference import reference_grid, trade_result
from tests.gpu import gpu, torch_device


def make_data(seed: int, n_trades: int = 40, n_prices: int = 3000):
    rng = np.random.default_rng(seed)
    prices = (100 * np.exp(np.cumsum(rng.normal(0, 0.002, n_prices)))).astype(np.float32)
    start = np.sort(rng.integers(0, n_prices - 200, n_trades)).astype(np.int64)
    end = start + rng.integers(0, 150, n_trades)
    entry = prices[start].astype(np.float64) * (1 + rng.normal(0, 0.0005, n_trades))
    pct = np.round((prices[end] / entry - 1) * 100, 4)
    # Coarse features so that thresholds tie with feature values.
    features = np.stack([
        rng.choice([0.0, 0.3, 0.4, 0.5, 0.7], n_trades),
        rng.choice([0.0, 0.5, 0.9, 1.0, 1.2], n_trades),
        rng.choice([10, 20, 25, 30, 40], n_trades),
        rng.choice([10, 20, 25, 30, 40], n_trades),
        rng.choice([10, 20, 25, 30, 40], n_trades),
    ]).astype(np.float32)
    return prices, start, end, entry, pct, features


GRID = Grid(volatility=(0.0, 0.4, 0.3), ratio=(0.0, 0.9), adx28=(0, 20, 30), adx14=(20, 0), adx7=(0, 30),
            target=(0.2, 0.5, 0.3), stop_loss=(-0.5, -0.2))


def engines_top(prices, start, end, entry, pct, features, grid, k, min_trades, backend_exits="cpu"):
    results, _ = resolve_exits(start, end, entry, prices, pct, grid.target, grid.stop_loss, backend=backend_exits)
    brute = brute_force(features, results, grid, k=k, min_trades=min_trades)
    roi, trades = cube_roi(features, results, grid)
    cube = top_k_full(roi, trades, k, min_trades)
    return results, brute, cube, roi, trades


def as_rows(top, grid):
    return [(int(i), r / RESULT_SCALE, int(n)) for i, r, n in zip(top.index, top.roi_units, top.trades)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_brute_force_and_cube_equal_the_reference_top10(seed):
    data = make_data(seed)
    ref = reference_grid(*data, GRID)[:10]
    _, brute, cube, _, _ = engines_top(*data, GRID, k=10, min_trades=1)
    expected = [(row["index"], row["roi"], row["trades"]) for row in ref]
    assert as_rows(brute, GRID) == expected
    assert as_rows(cube, GRID) == expected


def test_every_combination_roi_equals_the_reference():
    data = make_data(5)
    ref = {row["index"]: (row["roi"], row["trades"]) for row in reference_grid(*data, GRID)}
    _, _, _, roi, trades = engines_top(*data, GRID, k=10, min_trades=1)
    got = {i: (roi.ravel()[i] / RESULT_SCALE, int(trades.ravel()[i])) for i in range(GRID.n_combinations) if trades.ravel()[i] >= 1}
    assert got == ref


def test_exit_resolution_equals_walking_each_path():
    prices, start, end, entry, pct, _ = make_data(3)
    results, rows = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss)
    for p, (t, s) in enumerate((t, s) for t in GRID.target for s in GRID.stop_loss):
        for j in range(len(start)):
            expected = trade_result(prices, start[j], end[j], entry[j], pct[j], t, s)
            assert results[p, j] == to_units(expected), (p, j)


def test_stop_and_target_semantics_on_a_hand_made_path():
    prices = np.array([100, 100.1, 100.35, 99.6, 99.4, 100.6], dtype=np.float32)
    start, end, entry, pct = np.array([0]), np.array([5]), np.array([100.0]), np.array([0.6])
    res, rows = resolve_exits(start, end, entry, prices, pct, (0.3, 0.5, 1.0), (-0.3, -0.5))
    # target 0.3 is hit on row 2 before any stop; 0.5: stop -0.3 (row 3) first; -0.5 hit on row 4
    # target 1.0 never: stop -0.3 on row 3, stop -0.5 on row 4
    assert (res[:, 0] / RESULT_SCALE).tolist() == [0.3, 0.3, -0.3, -0.5, -0.3, -0.5]
    assert rows[:, 0].tolist() == [2, 2, 3, 4, 3, 4]
    res, _ = resolve_exits(start, end, entry, prices, pct, (2.0,), (-2.0,))
    assert res[0, 0] / RESULT_SCALE == 0.6  # neither: the trade's own Trade Percent Change


def test_min_trades_excludes_thin_combinations():
    data = make_data(4)
    ref = reference_grid(*data, GRID, min_trades=12)[:10]
    _, brute, cube, _, _ = engines_top(*data, GRID, k=10, min_trades=12)
    expected = [(row["index"], row["roi"], row["trades"]) for row in ref]
    assert as_rows(brute, GRID) == expected == as_rows(cube, GRID)
    assert all(n >= 12 for _, _, n in expected)


def test_ties_go_to_the_earlier_combination_in_grid_order():
    prices, start, end, entry, pct, features = make_data(6)
    features[:] = 50.0  # every filter keeps every trade: combinations sharing a pair tie
    _, brute, cube, _, _ = engines_top(prices, start, end, entry, pct, features, GRID, k=10, min_trades=1)
    assert list(brute.index) == list(cube.index)
    best = brute.roi_units[0]
    tied = brute.index[brute.roi_units == best]
    assert list(tied) == sorted(tied)


def test_launches_smaller_than_the_grid_merge_to_the_same_top10():
    prices, start, end, entry, pct, features = make_data(7)
    results, _ = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss)
    one = brute_force(features, results, GRID, k=10)
    many = brute_force(features, results, GRID, k=10, launch=7)
    assert list(one.index) == list(many.index) and list(one.roi_units) == list(many.roi_units)


@gpu
def test_cuda_kernels_equal_cpu_under_the_simulator():
    """(Named for CI; on a GPU it runs on the device: exits and sums are integers, so exact.)"""
    prices, start, end, entry, pct, features = make_data(8, n_trades=12)
    small = Grid(volatility=(0.0, 0.4), ratio=(0.0,), adx28=(0, 20), adx14=(0,), adx7=(0, 30), target=(0.2, 0.5), stop_loss=(-0.3,))
    cpu, _ = resolve_exits(start, end, entry, prices, pct, small.target, small.stop_loss)
    gpu, _ = resolve_exits(start, end, entry, prices, pct, small.target, small.stop_loss, backend="cuda")
    np.testing.assert_array_equal(gpu, cpu)
    a = brute_force(features, cpu, small, k=5)
    b = brute_force(features, cpu, small, k=5, backend="cuda")
    assert list(a.index) == list(b.index) and list(a.roi_units) == list(b.roi_units)


@gpu
def test_cuda_brute_force_equals_cpu_on_a_grid_of_many_launches():
    prices, start, end, entry, pct, features = make_data(12, n_trades=30)
    cpu, _ = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss)
    gpu_res, _ = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss, backend="cuda")
    np.testing.assert_array_equal(gpu_res, cpu)
    a = brute_force(features, cpu, GRID, k=10, min_trades=2)
    b = brute_force(features, cpu, GRID, k=10, min_trades=2, backend="cuda", launch=97)
    assert as_rows(a, GRID) == as_rows(b, GRID)


@gpu
def test_cupy_dominance_sums_equal_numpy():
    from kernels.gridsearch.cuda import array_module

    xp, to_device = array_module()  # CuPy on a GPU, NumPy under the simulator
    prices, start, end, entry, pct, features = make_data(10)
    cpu, _ = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss)
    roi, trades = cube_roi(features, cpu, GRID)
    groi, gtrades = cube_roi(to_device(features), to_device(cpu), GRID, xp=xp)
    as_numpy = getattr(xp, "asnumpy", np.asarray)
    np.testing.assert_array_equal(as_numpy(groi), roi)
    np.testing.assert_array_equal(as_numpy(gtrades), trades)
    assert as_rows(top_k_full(groi, gtrades, 10, 1, xp=xp), GRID) == as_rows(top_k_full(roi, trades, 10, 1), GRID)


def test_the_gpu_grid_search_needs_no_cudf(monkeypatch):
    """engine_top(backend="cuda") with a fake CuPy (NumPy) and cuDF made unimportable."""
    from domain.gridsearch.search import engine_top

    monkeypatch.setitem(sys.modules, "cupy", np)
    monkeypatch.setitem(sys.modules, "cudf", None)
    prices, start, end, entry, pct, features = make_data(11)
    results, _ = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss, backend="cuda")
    want = engine_top(features, results, GRID, "cube", "cpu", 10, 1)
    got = engine_top(features, results, GRID, "cube", "cuda", 10, 1)
    assert as_rows(got, GRID) == as_rows(want, GRID)


@gpu
def test_torch_exits_and_cube_equal_cpu():
    prices, start, end, entry, pct, features = make_data(9)
    cpu, _ = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss)
    tor, _ = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss, backend="torch")
    np.testing.assert_array_equal(tor, cpu)
    roi, trades = cube_roi(features, cpu, GRID)
    troi, ttrades = cube_roi_torch(features, cpu, GRID, device=torch_device())
    np.testing.assert_array_equal(troi, roi)
    np.testing.assert_array_equal(ttrades, trades)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), min_trades=st.integers(1, 5))
def test_property_brute_force_and_dominance_sums_agree(seed, n, min_trades):
    data = make_data(seed, n_trades=n)
    _, brute, cube, _, _ = engines_top(*data, GRID, k=10, min_trades=min_trades)
    assert as_rows(brute, GRID) == as_rows(cube, GRID)


def test_paths_outside_the_prices_are_an_error_not_a_crash():
    prices = np.ones(10, dtype=np.float32)
    with pytest.raises(ValueError, match="trade 1: path rows 8..12 outside the 10 market rows"):
        resolve_exits(np.array([0, 8]), np.array([3, 12]), np.ones(2), prices, np.zeros(2), (1.0,), (-1.0,))


def test_invalid_grids_are_clear_errors():
    with pytest.raises(ValueError, match="target values are percents > 0"):
        Grid(volatility=(0,), ratio=(0,), adx28=(0,), adx14=(0,), adx7=(0,), target=(0.0,), stop_loss=(-1,))
    with pytest.raises(ValueError, match="stop_loss values are percents < 0"):
        Grid(volatility=(0,), ratio=(0,), adx28=(0,), adx14=(0,), adx7=(0,), target=(1,), stop_loss=(0.5,))
    with pytest.raises(ValueError, match="adx7 must be a non-empty list"):
        Grid(volatility=(0,), ratio=(0,), adx28=(0,), adx14=(0,), adx7=(), target=(1,), stop_loss=(-1,))


def test_kept_mask_is_the_predicate_the_engines_sum_over():
    _, _, _, _, _, features = make_data(10, n_trades=60)
    results = np.random.default_rng(10).integers(-10**6, 10**6, (2, 60)).astype(np.int32)
    thresholds = np.array([[0.3, 0.5, 20, 0, 25], [0.0, 0.0, 0, 0, 0], [0.7, 1.2, 40, 40, 40], [0.4, 0.9, 25, 20, 30]])
    pairs = np.array([0, 1, 0, 1])
    roi, kept = evaluate(features, results, thresholds, pairs)
    for c in range(len(pairs)):
        mask = kept_mask(features, thresholds[c])
        ref = np.array([all(features[d, j] >= np.float32(thresholds[c, d]) for d in range(5)) for j in range(60)])
        np.testing.assert_array_equal(mask, ref)
        assert kept[c] == mask.sum() and roi[c] == results[pairs[c], mask].astype(np.int64).sum()


def test_engines_load_the_cuda_module_only_on_demand():
    code = ("import sys; import kernels.gridsearch.brute, kernels.gridsearch.exits, kernels.gridsearch.evaluate, "
            "kernels.gridsearch.cube, kernels.gridsearch.reference; print('kernels.gridsearch.cuda' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("dtype,block", [(np.float32, 32), (np.float64, 32), (np.float64, 1), (np.float32, 7)])
def test_cpu_crossings_by_level_price_equal_the_shared_core(dtype, block):
    """exits.crossings_cpu (prices compared with per-trade level prices, blocks skipped by
    their max and min) and resolve_pairs_cpu equal cores.crossings_core and the NumPy
    resolve_pairs bit for bit, including levels that land exactly on a price, a negative or
    NaN entry, NaN prices on the path (a whole block of them), paths shorter than a block and
    paths that start or end inside one."""
    from kernels.gridsearch import exits as E

    rng = np.random.default_rng(3)
    prices = (100.0 * np.exp(np.cumsum(rng.normal(0, 0.002, 20_000)))).astype(dtype)
    prices[::97] = np.round(prices[::97], 1)  # many prices on round levels
    prices[5000:5070] = np.nan
    n = 3000
    start = rng.integers(0, 19_000, n).astype(np.int64)
    end = np.minimum(start + rng.integers(0, 900, n), len(prices) - 1).astype(np.int64)
    entry = prices[start].astype(np.float64)
    entry[:3] = [-5.0, np.nan, -1.0]
    entry[3:40] = 100.0  # round entries: levels like 100.2 / 99.7 are exact prices
    targets = np.array([0.1, 0.2, 0.3, 0.5, 1.0, 3.0])
    stops = np.array([-0.1, -0.3, -0.5, -1.0, -100.0])
    want_t = np.empty((len(targets), n), np.int64)
    want_s = np.empty((len(stops), n), np.int64)
    E.crossings_cpu_reference(start, end, entry, prices, targets, stops, want_t, want_s)
    got_t = np.empty_like(want_t)
    got_s = np.empty_like(want_s)
    E.crossings_cpu(start, end, entry, prices, targets, stops, got_t, got_s, block=block)
    np.testing.assert_array_equal(got_t, want_t)
    np.testing.assert_array_equal(got_s, want_s)
    pct = to_units(rng.normal(0, 1, n))
    order_t, order_s = np.arange(len(targets))[::-1].copy(), np.arange(len(stops))
    want = E.resolve_pairs(want_t, want_s, order_t, order_s, targets[::-1], stops, pct)
    got = E.resolve_pairs_cpu(got_t, got_s, order_t, order_s, targets[::-1], stops, pct)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_block_whose_max_is_exactly_the_level_price_is_walked_not_skipped(dtype):
    """Entry 100: +1 % is crossed at exactly 101.0 and -1 % at exactly 99.0 (the smallest and
    largest prices whose return reaches the level), each the only such row of its block."""
    from kernels.gridsearch import exits as E

    prices = np.full(256, 100.0, dtype=dtype)
    prices[77], prices[140] = 101.0, 99.0
    start, end, entry = np.array([3]), np.array([250]), np.array([100.0])
    targets, stops = np.array([1.0, 5.0]), np.array([-1.0])
    for block in (32, 1):
        first_t, first_s = np.empty((2, 1), np.int64), np.empty((1, 1), np.int64)
        E.crossings_cpu(start, end, entry, prices, targets, stops, first_t, first_s, block=block)
        assert first_t[:, 0].tolist() == [77, NO_CROSS] and first_s[:, 0].tolist() == [140]


def _per_pair_cube(features, results, grid):
    """The dominance sums as they were computed before the batched pass: one float64
    bincount and suffix sums per pair (the oracle of the batched version)."""
    from kernels.gridsearch.cube import _bins, _suffix_sums

    bins, orders, shape = _bins(np.asarray(features), grid, np)
    flat = np.ravel_multi_index(tuple(bins), shape)
    cells = int(np.prod(shape))

    def grid_order(cube):
        cube = cube[(slice(1, None),) * 5]
        for axis, order in enumerate(orders):
            cube = np.take(cube, order, axis=axis)
        return cube

    counts = grid_order(_suffix_sums(np.bincount(flat, minlength=cells).reshape(shape), np))
    n_pairs = len(grid.target) * len(grid.stop_loss)
    roi = np.empty(tuple(grid.sizes[:5]) + (n_pairs,), dtype=np.int64)
    for p in range(n_pairs):
        hist = np.bincount(flat, weights=np.asarray(results[p], dtype=np.float64), minlength=cells).reshape(shape)
        roi[..., p] = np.rint(grid_order(_suffix_sums(hist, np))).astype(np.int64)
    return roi.reshape(tuple(grid.sizes)), np.broadcast_to(counts.astype(np.int64)[..., None, None], tuple(grid.sizes))


def _crossings_with_no_cross(seed: int, n: int):
    """first_t / first_s of the shared core on a short random walk: levels far enough that
    some trades cross none (NO_CROSS), targets and stops that tie with each other's rows."""
    from kernels.gridsearch import exits as E

    rng = np.random.default_rng(seed)
    prices = (100.0 * np.exp(np.cumsum(rng.normal(0, 0.003, 400)))).astype(np.float32)
    start = rng.integers(0, 350, n).astype(np.int64)
    end = np.minimum(start + rng.integers(0, 40, n), 399).astype(np.int64)
    entry = prices[start].astype(np.float64)
    targets, stops = np.array([0.1, 0.5, 3.0]), np.array([-0.1, -0.4, -5.0])
    ft = np.empty((3, n), np.int64)
    fs = np.empty((3, n), np.int64)
    E.crossings_cpu_reference(start, end, entry, prices, targets, stops, ft, fs)
    assert (ft == NO_CROSS).any() and (fs == NO_CROSS).any() and (ft < NO_CROSS).any()
    return ft, fs, to_units(rng.normal(0, 1, n)), targets, stops


@gpu
@pytest.mark.parametrize("rows", [True, False])
def test_cuda_pairs_kernel_equals_the_cpu_pair_resolution_bit_for_bit(rows):
    """cuda.pairs_kernel (a thread per (pair, trade), under the simulator here) and the CPU
    kernel over the same cores.pair_core equal the NumPy resolve_pairs, NO_CROSS included;
    exit rows only when asked (None otherwise, the results unchanged)."""
    from kernels.gridsearch import exits as E
    from kernels.gridsearch.cuda import array_module, resolve_pairs_device

    xp, dev = array_module()
    ft, fs, pct, targets, stops = _crossings_with_no_cross(4, 37)
    order_t, order_s = np.array([2, 0, 1]), np.array([1, 2, 0])  # grid levels in another order than the sorted rows
    grid_t, grid_s = targets[order_t], stops[order_s]
    want_res, want_rows = E.resolve_pairs(ft, fs, order_t, order_s, grid_t, grid_s, pct)
    cpu_res, cpu_rows = E.resolve_pairs_cpu(ft, fs, order_t, order_s, grid_t, grid_s, pct, rows=rows)
    res, ex = resolve_pairs_device(dev(ft), dev(fs), order_t, order_s, E.level_units(grid_t), E.level_units(grid_s),
                                   pct, rows=rows)
    as_numpy = getattr(xp, "asnumpy", np.asarray)
    for got in (cpu_res, as_numpy(res)):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want_res)
    if rows:
        for got in (cpu_rows, as_numpy(ex)):
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got, want_rows)
        assert (want_rows == NO_CROSS).any()
    else:
        assert cpu_rows is None and ex is None


@gpu
@pytest.mark.parametrize("backend", ["cpu", "cuda", "torch"])
def test_exit_rows_only_on_request_and_on_device_results_equal_the_host_path(backend):
    if backend == "torch":
        pytest.importorskip("torch")
    prices, start, end, entry, pct, _ = make_data(5, n_trades=12)
    want, want_rows = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss)
    res, rows = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss, backend=backend)
    np.testing.assert_array_equal(res, want)
    np.testing.assert_array_equal(rows, want_rows)
    res, rows = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss, backend=backend,
                              exit_rows=False)
    assert rows is None and isinstance(res, np.ndarray)
    np.testing.assert_array_equal(res, want)
    dres, rows = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss, backend=backend,
                               exit_rows=False, on_device=True)
    to_host = (lambda a: a.cpu().numpy()) if backend == "torch" else getattr(dres, "get", lambda: np.asarray(dres))
    assert rows is None
    np.testing.assert_array_equal(to_host(dres) if backend == "torch" else to_host(), want)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), min_trades=st.integers(1, 5))
def test_property_batched_dominance_sums_equal_the_per_pair_cube_and_the_brute_force(seed, n, min_trades):
    """The batched cube (numba histogram and in-place suffix sums) equals the per-pair cube
    cell for cell, and its top-10 the brute force's (coarse features: ties; min_trades)."""
    prices, start, end, entry, pct, features = make_data(seed, n_trades=n)
    results, _ = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss, exit_rows=False)
    roi, trades = cube_roi(features, results, GRID)
    want_roi, want_trades = _per_pair_cube(features, results, GRID)
    np.testing.assert_array_equal(roi, want_roi)
    np.testing.assert_array_equal(trades, want_trades)
    brute = brute_force(features, results, GRID, k=10, min_trades=min_trades)
    assert as_rows(top_k_full(roi, trades, 10, min_trades), GRID) == as_rows(brute, GRID)


@gpu
@pytest.mark.parametrize("min_trades", [1, 3])
def test_cuda_histogram_kernel_cube_equals_the_per_pair_cube_and_grid_top_the_brute_force(min_trades):
    """cuda.hist_kernel (int64 atomics; the simulator here) gives the per-pair cube's sums,
    and grid_top (exits -> sums with the results left on the device) the brute force's top-10
    on every backend, ties included."""
    from kernels.gridsearch.cube import cube_top, grid_top
    from kernels.gridsearch.cuda import array_module

    xp, dev = array_module()
    prices, start, end, entry, pct, features = make_data(6, n_trades=24)
    results, _ = resolve_exits(start, end, entry, prices, pct, GRID.target, GRID.stop_loss)
    roi, trades = cube_roi(dev(features), dev(results), GRID, xp=xp, kernel=True)
    want_roi, want_trades = _per_pair_cube(features, results, GRID)
    as_numpy = getattr(xp, "asnumpy", np.asarray)
    np.testing.assert_array_equal(as_numpy(roi), want_roi)
    np.testing.assert_array_equal(as_numpy(trades), want_trades)
    want = as_rows(brute_force(features, results, GRID, k=10, min_trades=min_trades), GRID)
    assert as_rows(cube_top(features, results, GRID, k=10, min_trades=min_trades, backend="cuda"), GRID) == want
    backends = ["cpu", "cuda"] + (["torch"] if _has_torch() else [])
    for b in backends:
        got = grid_top(start, end, entry, prices, pct, features, GRID, k=10, min_trades=min_trades, backend=b)
        assert as_rows(got, GRID) == want, b


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("seed", range(6))
def test_kth_largest_through_block_maxima_equals_the_partition(seed):
    """ranking.kth_largest's bounded path (the device's) gives the partition's k-th largest,
    with many ties, a key of lowest values (min_trades left too few) and a short last block."""
    from kernels.gridsearch.ranking import kth_largest

    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 5000))
    key = rng.integers(-20, 20, n).astype(np.int64)
    if seed % 2:
        key[rng.random(n) < 0.9] = np.iinfo(np.int64).min
    for k in (1, 3, 10):
        want = np.partition(key, n - k)[n - k]
        for block, most in ((7, 1 << 20), (16, 5), (1, 1 << 20)):
            assert kth_largest(key, k, np, min_size=1, block=block, most=most) == want
