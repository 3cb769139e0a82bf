"""Smart search (Optuna beyond the exhaustive grid): the candidate kernel against plain loops, and the
Optuna search (TPE, NSGA-II, pruning over shuffled day blocks, shared storage) on data
with a planted optimum."""

from __future__ import annotations

import numpy as np
import pytest

from domain.gridsearch.inputs import TradeArrays, read_market_data, read_trade_log
from domain.gridsearch.smart import (default_levels, feature_ranges, open_storage, shuffled_day_blocks, smart_search,
                               snap_thresholds)
from kernels.gridsearch.cube import cube_roi
from kernels.gridsearch.evaluate import evaluate, evaluate_moments, sharpe_ratios
from kernels.gridsearch.exits import resolve_exits
from kernels.gridsearch.grid import FILTERS, Grid
from kernels.gridsearch.ranking import top_k_full

COARSE = ([0.0, 0.3, 0.4, 0.5, 0.7], [0.0, 0.5, 0.9, 1.0, 1.2], [10, 20, 25, 30, 40], [10, 20, 25, 30, 40],
          [10, 20, 25, 30, 40])
TARGETS = [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.5, 2.0]
STOPS = [-2.0, -1.5, -1.0, -0.8, -0.6, -0.4, -0.2]


def random_case(seed: int, n_trades: int = 300, n_pairs: int = 6, n_cand: int = 40):
    """Coarse features (thresholds tie with feature values), random results and candidates."""
    rng = np.random.default_rng(seed)
    features = np.stack([rng.choice(v, n_trades) for v in COARSE]).astype(np.float32)
    results = rng.integers(-2_000_000, 2_000_001, (n_pairs, n_trades)).astype(np.int32)
    thresholds = np.stack([rng.choice(v + [-1.0, 99.0], n_cand) for v in COARSE], axis=1).astype(np.float32)
    pairs = rng.integers(0, n_pairs, n_cand).astype(np.int64)
    return features, results, thresholds, pairs


def plain_loop(features, results, thresholds, pairs, trades=None):
    trades = range(features.shape[1]) if trades is None else trades
    roi, kept = [], []
    for c in range(len(pairs)):
        s = n = 0
        for j in trades:
            if all(features[d, j] >= thresholds[c, d] for d in range(5)):
                s += int(results[pairs[c], j])
                n += 1
        roi.append(s)
        kept.append(n)
    return roi, kept


def planted(seed: int = 0, n: int = 1500, days: int = 12, length: int = 60):
    """Trades whose own price paths rise then fall back (peak ~1.4%) when volatility >= 0.5
    and adx14 >= 25, and drift down to -1.5% otherwise; ratio, adx28 and adx7 are noise."""
    rng = np.random.default_rng(seed)
    feats = np.stack([rng.choice(COARSE[0], n), rng.uniform(0, 1.5, n), rng.uniform(5, 50, n),
                      rng.choice(COARSE[3], n), rng.uniform(5, 50, n)]).astype(np.float32)
    good = (feats[0] >= 0.5) & (feats[3] >= 25)
    t = np.arange(length) / (length - 1)
    shape = np.where(good[:, None], 1.4 * np.sin(np.pi * t)[None, :], -1.5 * t[None, :])
    r = shape + np.cumsum(rng.normal(0, 0.08, (n, length)), axis=1)
    r[:, 0] = 0
    prices = (100 * (1 + r / 100)).astype(np.float32).ravel()
    start = np.arange(n, dtype=np.int64) * length
    end = start + length - 1
    entry = np.full(n, 100.0)
    pct = np.round((prices[end] / 100 - 1) * 100, 4)
    day = np.sort(rng.integers(0, days, n)).astype(np.int32)
    return prices, TradeArrays(start, end, entry, pct, feats, day)


@pytest.fixture(scope="module")
def case():
    prices, trades = planted()
    results, _ = resolve_exits(trades.start, trades.end, trades.entry, prices, trades.pct_change, TARGETS, STOPS)
    return prices, trades, results


def search(case, **kw):
    prices, trades, results = case
    args = {"n_trials": 200, "batch": 25, "target_levels": TARGETS, "stop_levels": STOPS, "results": results, **kw}
    return smart_search(trades, prices, **args)


# ----------------------------------------------------------------------------- evaluate


@pytest.mark.parametrize("seed", [0, 1])
def test_evaluate_equals_a_plain_loop(seed):
    features, results, thresholds, pairs = random_case(seed)
    roi, kept = evaluate(features, results, thresholds, pairs)
    assert roi.dtype == np.int64 and kept.dtype == np.int64
    assert (roi.tolist(), kept.tolist()) == plain_loop(features, results, thresholds, pairs)


def test_evaluate_on_a_trade_subset_equals_evaluate_on_the_sliced_data():
    features, results, thresholds, pairs = random_case(2)
    idx = np.sort(np.random.default_rng(0).choice(features.shape[1], 120, replace=False))
    sub = evaluate(features, results, thresholds, pairs, idx)
    sliced = evaluate(features[:, idx], results[:, idx], thresholds, pairs)
    np.testing.assert_array_equal(sub[0], sliced[0])
    np.testing.assert_array_equal(sub[1], sliced[1])
    assert sub[0].tolist() == plain_loop(features, results, thresholds, pairs, idx)[0]
    empty = evaluate(features, results, thresholds, pairs, np.empty(0, dtype=np.int64))
    assert not empty[0].any() and not empty[1].any()


def test_evaluate_moments_and_sharpe_ratios_equal_numpy():
    features, results, thresholds, pairs = random_case(3)
    total, sq, n = evaluate_moments(features, results, thresholds, pairs)
    sr = sharpe_ratios(features, results, thresholds, pairs)
    for c in range(len(pairs)):
        keep = np.all(features >= thresholds[c][:, None], axis=0)
        r = results[pairs[c], keep].astype(np.float64)
        assert total[c] == int(r.sum()) and n[c] == keep.sum()
        assert sq[c] == pytest.approx((r * r).sum(), rel=1e-12)
        if keep.sum() >= 2:
            assert sr[c] == pytest.approx(r.mean() / r.std(ddof=1), rel=1e-9)
        else:
            assert np.isnan(sr[c])


def test_evaluate_rejects_bad_shapes_and_pairs():
    features, results, thresholds, pairs = random_case(4)
    with pytest.raises(ValueError, match="pairs must be rows of results"):
        evaluate(features, results, thresholds, pairs + 100)
    with pytest.raises(ValueError, match=r"thresholds must be \[40, 5\]"):
        evaluate(features, results, thresholds[:, :4], pairs)
    with pytest.raises(ValueError, match="trade_index"):
        evaluate(features, results, thresholds, pairs, np.array([10**6]))


# ----------------------------------------------------------------------------- pieces


def test_day_blocks_deal_whole_shuffled_days_and_partition_the_trades():
    day = np.repeat(np.arange(10), 7).astype(np.int32)
    blocks = shuffled_day_blocks(day, 4, seed=1)
    assert len(blocks) == 4
    assert np.array_equal(np.sort(np.concatenate(blocks)), np.arange(day.size))
    days_of = [set(day[b].tolist()) for b in blocks]
    assert all(not (a & b) for i, a in enumerate(days_of) for b in days_of[i + 1:])  # whole days
    assert days_of != [set(range(i, i + 3)) for i in range(0, 9, 3)]  # mixed, not sequential
    assert [b.tolist() for b in blocks] == [b.tolist() for b in shuffled_day_blocks(day, 4, seed=1)]
    assert len(shuffled_day_blocks(day[:14], 8)) == 2  # never more blocks than days


def test_default_space():
    targets, stops = default_levels()
    assert targets[0] == 0.1 and targets[-1] == 2.0 and len(targets) == 39
    assert stops[0] == -2.0 and stops[-1] == -0.1 and len(stops) == 39
    features = np.array([[0.0, 1.0]] * 5, dtype=np.float32)
    assert feature_ranges(features)["adx7"] == (-0.1, 1.0)
    snapped = snap_thresholds(features, np.array([[-0.05, 0.2, 1.0, 1.5, 0.0]]))
    assert snapped.tolist() == [[0.0, 1.0, 1.0, 1.5, 0.0]]


# ----------------------------------------------------------------------------- search


def exact_optimum(case) -> float:
    """The cube engine over every distinct value of the coarse filters and quantiles of the
    continuous ones (their minimum included), with the same exit levels."""
    _, trades, results = case
    def q(d):
        return tuple(np.unique(np.quantile(trades.features[d], np.linspace(0, 1, 6))).astype(np.float32).astype(float))

    grid = Grid(tuple(COARSE[0]), q(1), q(2), tuple(COARSE[3]), q(4), target=tuple(TARGETS), stop_loss=tuple(STOPS))
    roi, counts = cube_roi(trades.features, results, grid)
    return top_k_full(roi, counts, 1, 1).roi_units[0] / 1e6


def test_rows_are_shaped_like_the_grid_search_and_scored_on_all_trades(case):
    _, trades, results = case
    res = search(case, sampler="tpe", pruner="hyperband", top=5)
    keys = ["rank", *FILTERS, "target", "stop_loss", "roi", "trades", "compounded_return", "win_rate", "mean", "trial"]
    assert [list(r) for r in res.top] == [keys] * len(res.top)
    assert [r["rank"] for r in res.top] == list(range(1, len(res.top) + 1))
    assert [r["roi"] for r in res.top] == sorted((r["roi"] for r in res.top), reverse=True)
    th = np.array([[r[f] for f in FILTERS] for r in res.top], dtype=np.float32)
    pairs = np.array([TARGETS.index(r["target"]) * len(STOPS) + STOPS.index(r["stop_loss"]) for r in res.top])
    roi, kept = evaluate(trades.features, results, th, pairs)  # all trades, not blocks
    assert (roi / 1e6).round(9).tolist() == [r["roi"] for r in res.top]
    assert kept.tolist() == [r["trades"] for r in res.top]
    assert res.n_complete + res.n_pruned == 200 == res.study_trials
    assert res.to_json()["top"] == res.top


def test_tpe_and_nsga2_do_at_least_as_well_as_random_search(case):
    random = search(case, sampler="random", pruner="none").top[0]["roi"]
    assert search(case, sampler="tpe", pruner="none").top[0]["roi"] >= random
    assert search(case, sampler="nsga2").top[0]["roi"] >= random


def test_tpe_finds_the_planted_optimum(case):
    best = exact_optimum(case)
    found = search(case, sampler="tpe", pruner="none", n_trials=400).top[0]
    assert found["roi"] >= 0.97 * best
    assert found["volatility"] == 0.5 and found["adx14"] == 25.0  # the planted region


def test_hyperband_and_successive_halving_prune_over_day_blocks(case):
    hb = search(case, sampler="tpe", pruner="hyperband", blocks=6)
    assert hb.n_pruned > 0 and hb.n_complete > 0 and hb.pruner == "hyperband" and hb.blocks == 6
    sh = search(case, sampler="tpe", pruner="successive_halving", blocks=6)
    assert sh.n_pruned > 0
    ga = search(case, sampler="nsga2", pruner="hyperband")  # the genetic search is not pruned
    assert ga.n_pruned == 0 and ga.pruner == "none"


def test_nsga2_with_roi_and_trades_as_two_objectives(case):
    res = search(case, sampler="nsga2", objectives="roi_trades", n_trials=100)
    assert res.n_complete == 100 and res.n_pruned == 0 and res.top[0]["roi"] > 0


def test_a_journal_file_lets_a_second_worker_add_trials_to_the_same_study(case, tmp_path):
    storage = str(tmp_path / "study.log")
    first = search(case, storage=storage, study_name="shared", n_trials=60)
    second = search(case, storage=storage, study_name="shared", n_trials=60)
    assert first.study_trials == 60 and second.study_trials == 120
    assert second.top[0]["roi"] >= first.top[0]["roi"]  # ranks the whole study


def test_storage_strings(tmp_path):
    from optuna.storages import JournalStorage

    assert open_storage(None) is None
    assert open_storage("sqlite:///study.db") == "sqlite:///study.db"  # an RDB URL, handed to Optuna
    assert isinstance(open_storage(f"journal:{tmp_path / 'x.bin'}"), JournalStorage)
    assert isinstance(open_storage(str(tmp_path / "y.log")), JournalStorage)


def test_a_fixed_seed_gives_the_same_search(case):
    a = search(case, sampler="tpe", pruner="hyperband", seed=7)
    b = search(case, sampler="tpe", pruner="hyperband", seed=7)
    assert a.top == b.top and (a.n_complete, a.n_pruned) == (b.n_complete, b.n_pruned)


def test_min_trades_and_bad_arguments(case):
    res = search(case, min_trades=300)
    assert res.top and all(r["trades"] >= 300 for r in res.top)
    with pytest.raises(ValueError, match="sampler must be one of"):
        search(case, sampler="cmaes")
    with pytest.raises(ValueError, match="pruner must be one of"):
        search(case, pruner="median")
    with pytest.raises(ValueError, match="results must be"):
        search(case, target_levels=TARGETS[:3])


def test_smart_search_on_the_seed_formats(tmp_path):
    """Synthetic market data and trade log in their CSV formats, default levels."""
    from domain.gridsearch.synthetic import generate_grid_data

    paths = generate_grid_data(tmp_path, days=5, trades_per_day=40, seed=5)
    tickers = ["SOXL", "IONQ", "MARA"]
    market = read_market_data(paths.market_data, tickers)
    frame, _ = read_trade_log(paths.trade_log, tickers, market)
    trades = TradeArrays.from_frame(frame)
    res = smart_search(trades, market["price"].to_numpy(), n_trials=120, batch=40, blocks=5, top=3)
    assert res.levels == {"targets": 39, "stops": 39}
    assert len(res.top) == 3 and res.top[0]["trades"] >= 1
    assert res.n_complete + res.n_pruned == 120
