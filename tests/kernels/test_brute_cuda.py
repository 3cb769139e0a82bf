"""The device-shaped brute force (`kernels.gridsearch.brute_cuda`) against the CPU brute force
and the dominance sums: exact top-k (int64 totals), whatever the tiles, chunks and flushes."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.gridsearch import brute_cuda
from kernels.gridsearch.brute import brute_force, filter_table
from kernels.gridsearch.cores import kept_mask
from kernels.gridsearch.cube import cube_roi
from kernels.gridsearch.exits import resolve_exits
from kernels.gridsearch.grid import Grid
from kernels.gridsearch.ranking import top_k_full
from tests.gpu import gpu
from tests.kernels.test_grid_engines import GRID, make_data


def rows(top):
    return list(zip(top.index.tolist(), top.roi_units.tolist(), top.trades.tolist()))


def results_for(grid, seed=12, n_trades=50):
    prices, start, end, entry, pct, features = make_data(seed, n_trades=n_trades)
    results, _ = resolve_exits(start, end, entry, prices, pct, grid.target, grid.stop_loss)
    return features, results


def test_packed_bins_state_the_keep_predicate():
    """bin_d > rank_d(j) on every dimension iff `cores.passes` (ties, NaN, +-inf included)."""
    rng = np.random.default_rng(4)
    grid = Grid(volatility=(0.3, 0.0, 0.3, 0.5), ratio=(0.9, 0.0), adx28=(20, 0, 30), adx14=(0, 20), adx7=(30, 0, 25),
                target=(0.2,), stop_loss=(-0.2,))
    features = np.stack([rng.choice([0.0, 0.3, 0.4, 0.5, np.nan, np.inf], 200),
                         rng.choice([0.0, 0.9, 1.2, -np.inf], 200), rng.choice([0, 20, 25, 30, 40], 200),
                         rng.choice([0, 10, 20, np.nan], 200), rng.choice([0, 25, 30, 40], 200)]).astype(np.float32)
    sizes = np.asarray(grid.sizes, dtype=np.int64)
    table = filter_table(grid, features.dtype)
    packed, rank = brute_cuda.pack_bins(features, sizes, table, np)
    high = int(brute_cuda.HIGH)
    for combo in np.ndindex(*grid.sizes[:5]):
        word = sum((int(rank[d, j]) + 1) << (8 * d) for d, j in enumerate(combo))
        got = (((packed | np.uint64(high)) - np.uint64(word)) & np.uint64(high)) == np.uint64(high)
        want = kept_mask(features, [table[d, j] for d, j in enumerate(combo)])
        np.testing.assert_array_equal(got, want)


def test_flush_keeps_int32_partial_sums_exact():
    assert brute_cuda.flush_every(-5, 7) == brute_cuda.TILE
    assert brute_cuda.flush_every(-(2**31), 0) == 1
    assert brute_cuda.flush_every(-3, 2**31 - 1) == 1
    n = brute_cuda.flush_every(-10_000_000, 9_000_000)
    assert n * 10_000_000 <= 2**31 - 1 < (n + 1) * 10_000_000


def test_shape_splits_stops_evenly():
    assert brute_cuda.shape_for(2) == (2, 1, 8)
    assert brute_cuda.shape_for(10) == (5, 2, 6)
    assert brute_cuda.shape_for(7) == (4, 2, 7)


@gpu
@pytest.mark.parametrize("min_trades", [1, 9])
def test_tile_kernel_equals_cpu_brute_force_and_cube(min_trades):
    features, results = results_for(GRID)
    cpu = brute_force(features, results, GRID, k=10, min_trades=min_trades)
    dev = brute_force(features, results, GRID, k=10, min_trades=min_trades, backend="cuda")
    cube = top_k_full(*cube_roi(features, results, GRID), 10, min_trades)
    assert rows(dev) == rows(cpu) == rows(cube)


@gpu
def test_tile_kernel_launches_ties_and_chunked_stops():
    """Seven stops (two chunks of four, one padded), launches of single filter combinations,
    coarse features (ties with thresholds and between combinations) and k past the ties."""
    grid = Grid(volatility=(0.0, 0.4), ratio=(0.0, 0.9), adx28=(20, 0), adx14=(0,), adx7=(0, 30), target=(0.2, 0.5),
                stop_loss=(-0.5, -0.4, -0.3, -0.25, -0.2, -0.15, -0.1))
    features, results = results_for(grid, seed=3, n_trades=300)  # more than one tile on the device
    for launch in (10**9, 5):
        cpu = brute_force(features, results, grid, k=25, min_trades=2)
        dev = brute_force(features, results, grid, k=25, min_trades=2, backend="cuda", launch=launch)
        assert rows(dev) == rows(cpu)


@gpu
def test_tile_kernel_nan_features_pass_no_threshold():
    features, results = results_for(GRID)
    features[1, ::7] = np.nan
    features[3, 2] = np.nan
    cpu = brute_force(features, results, GRID, k=20)
    dev = brute_force(features, results, GRID, k=20, backend="cuda")
    assert rows(dev) == rows(cpu)


@gpu
def test_tile_kernel_exact_with_results_near_int32_limits():
    """Results of +-2^31-1: every partial sum is flushed after one trade, totals stay exact."""
    features, results = results_for(GRID, n_trades=40)
    results = np.where(results > 0, 2**31 - 1, -(2**31) + 1).astype(np.int32)
    results[:, ::3] = 1_000_003
    cpu = brute_force(features, results, GRID, k=10)
    dev = brute_force(features, results, GRID, k=10, backend="cuda")
    assert rows(dev) == rows(cpu)
    assert int(np.abs(dev.roi_units).max()) > 2**31


@gpu
def test_many_thresholds_fall_back_to_the_one_thread_kernel():
    grid = Grid(volatility=tuple(np.linspace(0.0, 0.7, 130)), ratio=(0.0,), adx28=(0,), adx14=(0, 20), adx7=(0,),
                target=(0.2,), stop_loss=(-0.3,))
    features, results = results_for(grid, n_trades=30)
    cpu = brute_force(features, results, grid, k=10)
    dev = brute_force(features, results, grid, k=10, backend="cuda")
    assert rows(dev) == rows(cpu)


@gpu
def test_tile_kernel_without_trades_ranks_nothing():
    features, results = results_for(GRID)
    top = brute_force(features[:, :0], results[:, :0], GRID, k=10, backend="cuda")
    assert rows(top) == rows(brute_force(features[:, :0], results[:, :0], GRID, k=10)) == []
