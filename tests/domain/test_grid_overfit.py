"""The overfitting guard: in/out-of-sample over shuffled day blocks, PBO by CSCV, and the
Deflated Sharpe Ratio, on random data with and without a planted edge."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from domain.gridsearch.inputs import TradeArrays
from domain.gridsearch.overfit import (cscv_lambdas, deflated_sharpe, deflated_sharpe_ratio, distinct_trials,
                                 expected_max_sharpe, in_out_of_sample, overfitting_report, pbo_cscv, trial_sharpes)
from domain.gridsearch.search import describe
from kernels.gridsearch.cube import cube_roi
from kernels.gridsearch.evaluate import evaluate
from kernels.gridsearch.grid import FILTERS, Grid
from kernels.gridsearch.ranking import top_k_full

GRID = Grid(volatility=(0.0, 0.3, 0.4, 0.5, 0.6), ratio=(0.0, 0.2, 0.5, 0.7, 0.8, 0.9, 1.0), adx28=(0, 20, 30),
            adx14=(0, 20, 30), adx7=(0, 20, 30), target=(0.2, 0.3, 0.4, 0.5), stop_loss=(-0.5, -0.4, -0.3))


def make_case(seed: int, n: int = 1600, days: int = 16, edge: bool = False):
    """Continuous features and pure-noise results per (pair, trade); with `edge`, every trade
    with volatility >= 0.5 wins (a genuinely dominant filter)."""
    rng = np.random.default_rng(seed)
    features = np.stack([rng.uniform(0, 0.8, n), rng.uniform(0, 1.2, n), rng.uniform(0, 50, n), rng.uniform(0, 50, n),
                         rng.uniform(0, 50, n)]).astype(np.float32)
    results = rng.integers(-500_000, 500_001, (GRID.n_pairs, n)).astype(np.int32)
    if edge:
        good = features[0] >= 0.5
        results[:, good] = np.abs(results[:, good]) + 200_000
    day = rng.integers(0, days, n).astype(np.int32)
    z = np.zeros(n, dtype=np.int64)
    return TradeArrays(z, z.copy(), np.ones(n), np.zeros(n), features, day), results


def full_top(trades, results, k=5):
    roi, counts = cube_roi(trades.features, results, GRID)
    best = top_k_full(roi, counts, k, 1)
    return describe(best.index, best.roi_units, GRID, trades, results)


@pytest.fixture(scope="module")
def noise():
    return make_case(1)


@pytest.fixture(scope="module")
def edge():
    return make_case(2, edge=True)


# ----------------------------------------------------------------------------- in / out of sample


def test_in_plus_out_of_sample_is_the_full_sample_roi(noise):
    trades, results = noise
    top = full_top(trades, results)
    rows = in_out_of_sample(trades, results, GRID, top, blocks=8, seed=3, k=6)
    ins = [r for r in rows if r["source"] == "in_sample_top"]
    full = [r for r in rows if r["source"] == "full_sample_top"]
    assert len(ins) == 6 and len(full) == len(top)
    for r in full:
        assert r["roi_in"] + r["roi_out"] == pytest.approx(r["roi_full"], abs=1e-6)
        assert r["trades_in"] + r["trades_out"] == top[r["rank"] - 1]["trades"]
    roi, counts = cube_roi(trades.features, results, GRID)
    for r in ins:
        assert r["roi_in"] + r["roi_out"] == pytest.approx(roi.ravel()[r["combination"]] / 1e6, abs=1e-6)
        assert r["trades_in"] + r["trades_out"] == counts.ravel()[r["combination"]]
    assert [r["roi_in"] for r in ins] == sorted((r["roi_in"] for r in ins), reverse=True)


def test_in_out_of_sample_rejects_rows_whose_exits_are_not_in_the_grid(noise):
    trades, results = noise
    row = {**full_top(trades, results, 1)[0], "target": 0.35}
    with pytest.raises(ValueError, match="not levels of the grid"):
        in_out_of_sample(trades, results, GRID, [row])


# ----------------------------------------------------------------------------- CSCV


def test_cscv_on_pure_noise_gives_pbo_near_one_half(noise):
    trades, results = noise
    out = pbo_cscv(trades, results, GRID, blocks=8, candidates=1000, seed=0)
    assert out["splits"] == math.comb(8, 4) == 70
    assert 0.2 <= out["pbo"] <= 0.8
    assert out["candidates"] > 100 and out["blocks"] == 8


def test_cscv_with_a_dominant_combination_gives_pbo_near_zero(edge):
    trades, results = edge
    out = pbo_cscv(trades, results, GRID, blocks=8, seed=0)
    assert out["pbo"] <= 0.05 and out["lambda_median"] > 0 and out["prob_oos_loss"] == 0.0


@pytest.mark.parametrize("blocks,expected", [(6, 20), (7, 20), (4, 6)])
def test_cscv_uses_an_even_number_of_blocks(noise, blocks, expected):
    trades, results = noise
    out = pbo_cscv(trades, results, GRID, blocks=blocks, candidates=200, seed=1)
    assert out["splits"] == expected and 0.0 <= out["pbo"] <= 1.0


def test_cscv_lambdas_on_a_hand_made_matrix():
    # candidate 0 best on every block: in-sample best and out-of-sample best, rank N of N.
    m = np.array([[5, 5, 5, 5], [1, 2, 3, 4], [4, 3, 2, 1]])
    lambdas, oos = cscv_lambdas(m)
    assert lambdas.size == 6 and np.allclose(lambdas, math.log(0.75 / 0.25)) and (oos == 10).all()
    # candidate 0 shines on blocks 0 and 1 only. Split {0,1} in sample: it is chosen and is
    # the worst out of sample (rank 1 of 3). Split {2,3}: candidate 1 is chosen, the median
    # out of sample (w = 2/4): lambda 0, which counts as overfit.
    m = np.array([[9, 9, 0, 0], [3, 3, 3, 3], [2, 2, 2, 2]])
    lambdas, oos = cscv_lambdas(m)
    assert lambdas[0] == pytest.approx(math.log(0.25 / 0.75)) and oos[0] == 0
    assert lambdas[-1] == 0.0 and oos[-1] == 6


def test_cscv_top_selection_is_available(noise):
    trades, results = noise
    out = pbo_cscv(trades, results, GRID, blocks=8, candidates=300, seed=0, selection="top")
    assert 0.0 <= out["pbo"] <= 1.0 and out["selection"] == "top"


# ----------------------------------------------------------------------------- deflated Sharpe


def test_dsr_is_a_probability_that_rises_with_sharpe_and_falls_with_trials():
    rng = np.random.default_rng(0)
    z = rng.standard_normal(400)
    trials = rng.normal(0, 0.05, 500)
    dsr = [deflated_sharpe_ratio(z + mu, 1000, trials)["dsr"] for mu in (0.0, 0.1, 0.2, 0.4)]
    assert all(0.0 <= d <= 1.0 for d in dsr)
    assert dsr == sorted(dsr) and dsr[0] < dsr[-1]
    by_n = [deflated_sharpe_ratio(z + 0.15, n, trials)["dsr"] for n in (1, 10, 1000, 10**6)]
    assert by_n == sorted(by_n, reverse=True) and by_n[0] > by_n[-1]
    assert expected_max_sharpe(1, 0.01) == 0.0
    assert expected_max_sharpe(100, 0.01) == pytest.approx(0.1 * 2.5306, rel=1e-3)  # E[max] of 100 N(0,1) ~ 2.53


def test_dsr_of_a_grid_winner(noise, edge):
    dsr = {}
    for name, (trades, results) in (("noise", noise), ("edge", edge)):
        roi, counts = cube_roi(trades.features, results, GRID)
        trials = distinct_trials(roi, counts)
        srs = trial_sharpes(trades, results, GRID, trials, sample=500)
        winner = full_top(trades, results, 1)[0]
        out = deflated_sharpe(trades, results, GRID, winner, trials.size, srs)
        keep = np.all(trades.features >= np.array([[winner[f]] for f in FILTERS], dtype=np.float32), axis=0)
        r = results[winner_pair(winner), keep] / 1e6
        assert out["trades"] == winner["trades"] == keep.sum()
        assert out["sharpe"] == pytest.approx(r.mean() / r.std(ddof=1))
        assert 0.0 <= out["dsr"] <= 1.0 and 0.0 <= out["dsr_sampling"] <= 1.0 and out["sr0"] > 0
        fewer = deflated_sharpe(trades, results, GRID, winner, 10, srs)
        assert fewer["dsr"] >= out["dsr"] and fewer["dsr_sampling"] >= out["dsr_sampling"]
        dsr[name] = out
    assert dsr["noise"]["dsr_sampling"] < 0.5 < 0.99 < dsr["edge"]["dsr_sampling"]  # luck vs skill
    assert dsr["noise"]["dsr"] < 0.5


def winner_pair(row):
    return GRID.target.index(row["target"]) * len(GRID.stop_loss) + GRID.stop_loss.index(row["stop_loss"])


def test_dsr_undefined_cases_say_why():
    assert deflated_sharpe_ratio(np.ones(50), 10, [0.1, 0.2])["dsr"] is None
    assert "fewer than 3" in deflated_sharpe_ratio(np.array([1.0, 2.0]), 10, [0.1, 0.2])["reason"]


def test_trial_sharpes_match_evaluate(noise):
    trades, results = noise
    index = np.array([0, 17, 5000, GRID.n_combinations - 1])
    srs = trial_sharpes(trades, results, GRID, index)
    decoded = GRID.decode(index)
    for i, sr in zip(range(len(index)), srs):
        th = np.array([[decoded[f][i] for f in ("volatility", "ratio", "adx28", "adx14", "adx7")]], dtype=np.float32)
        pair = GRID.target.index(decoded["target"][i]) * 3 + GRID.stop_loss.index(decoded["stop_loss"][i])
        keep = np.all(trades.features >= th[0][:, None], axis=0)
        r = results[pair, keep].astype(np.float64)
        assert sr == pytest.approx(r.mean() / r.std(ddof=1))
        assert evaluate(trades.features, results, th, np.array([pair]))[1][0] == keep.sum()


# ----------------------------------------------------------------------------- report


def test_overfitting_report_is_json_and_tells_skill_from_luck(noise, edge):
    reports = {}
    for name, (trades, results) in (("noise", noise), ("edge", edge)):
        report = overfitting_report(trades, results, GRID, full_top(trades, results), blocks=8, seed=0)
        reports[name] = json.loads(json.dumps(report))
        assert set(report) >= {"in_out_of_sample", "pbo", "deflated_sharpe", "distinct_trials"}
    assert reports["edge"]["pbo"]["pbo"] < reports["noise"]["pbo"]["pbo"]
    edge_dsr, noise_dsr = reports["edge"]["deflated_sharpe"], reports["noise"]["deflated_sharpe"]
    assert edge_dsr["dsr_sampling"] > noise_dsr["dsr_sampling"] and 0.0 <= noise_dsr["dsr"] <= 1.0
    assert len(reports["edge"]["in_out_of_sample"]) == 10 + 5
    assert overfitting_report(*noise, GRID, [], blocks=4)["deflated_sharpe"]["dsr"] is None
