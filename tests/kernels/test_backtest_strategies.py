"""The portfolio strategies (kernels.backtest.portfolio: topk_dropout, long_short), the trade
costs (open_cost, close_cost, min_cost) and the daily turnover limit, against references:
a plain-Python TopkDropout written from Qlib's documented Topk-Drop rule, hand-computed days,
the NumPy reference of the loop (kernels.backtest.reference), and a one-day shift of the
scores that must change nothing before it."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.backtest.portfolio import PortfolioConfig, run_portfolio
from kernels.backtest.reference import run_portfolio_reference

NAN = np.nan
SERIES = ("net", "gross", "turnover", "cost", "equity")


def random_panel(T: int, N: int, seed: int, missing: float = 0.05, no_pred: float = 0.1):
    rng = np.random.default_rng(seed)
    prices = (50.0 * np.exp(np.cumsum(rng.normal(0.0, 0.02, (T, N)), axis=0))).astype(np.float32)
    prices[rng.uniform(size=(T, N)) < missing] = np.nan
    prices[: T // 4, 0] = np.nan  # listed late
    prices[T // 2:, 1] = np.nan  # delisted
    prices[T // 3] = np.nan  # a row without any bar: no session
    probs = rng.uniform(size=(T, N)).astype(np.float32)
    probs[rng.uniform(size=(T, N)) < no_pred] = np.nan
    return prices, probs


def topk(**kw) -> PortfolioConfig:
    return PortfolioConfig(strategy="topk_dropout", **{"max_weight": 1.0, "fee_bps": 0.0, "slippage_bps": 0.0, **kw})


# ---------------------------------------------------------------- TopkDropout against Qlib's documented rule


def qlib_topk_drop(scores: list[dict[str, float]], k: int, n_drop: int) -> list[set[str]]:
    """Qlib's documented Topk-Drop (docs/component/strategy.rst, TopkDropoutStrategy): the book
    holds Topk stocks; each trading day, rank the instruments by the prediction score from high
    to low; let d be the number of held ones ranked below K; the d (at most Drop) held ones with
    the worst score are sold and as many unheld ones with the best score are bought (at the
    start, the best Topk are bought). Written from the text, not from Qlib's code."""
    held: set[str] = set()
    books = []
    for day in scores:
        ranked = sorted(day, key=lambda s: -day[s])
        top = set(ranked[:k])
        d = min(len(held - top), n_drop)
        sold = sorted(held, key=lambda s: day[s])[:d]
        held -= set(sold)
        held |= set([s for s in ranked if s not in held][: k - len(held)])
        books.append(set(held))
    return books


@pytest.mark.parametrize("n_symbols,k,n_drop,seed", [(8, 3, 1, 0), (10, 4, 2, 1), (12, 5, 5, 2), (6, 2, 1, 3),
                                                     (20, 6, 1, 4)])
def test_topk_dropout_holds_what_qlibs_documented_rule_holds_every_day(n_symbols, k, n_drop, seed):
    rng = np.random.default_rng(seed)
    T = 60
    probs = rng.uniform(size=(T, n_symbols)).astype(np.float32)
    prices = (20 * np.exp(np.cumsum(rng.normal(0, 0.02, (T, n_symbols)), axis=0))).astype(np.float32)
    names = [f"S{i}" for i in range(n_symbols)]
    expected = qlib_topk_drop([dict(zip(names, map(float, row))) for row in probs], k, n_drop)
    w = run_portfolio(prices, probs, topk(topk=k, n_drop=n_drop)).weights
    held = [{names[i] for i in np.flatnonzero(row)} for row in w]
    assert held == expected
    changes = [len(a - b) for a, b in zip(held[1:], held[:-1])]
    assert max(changes) <= n_drop and all(len(h) == k for h in held)


def test_topk_dropout_on_a_small_case_worked_out_by_hand():
    # 5 symbols, topk 2, n_drop 1; prices flat so the weights stay where they are bought
    probs = np.array([[0.9, 0.8, 0.7, 0.6, 0.5],   # buy A, B (the best two)
                      [0.1, 0.8, 0.9, 0.7, 0.6],   # A worst held, C better: sell A, buy C
                      [0.2, 0.3, 0.9, 0.8, 0.7],   # B worst held, D better: sell B, buy D (one a day)
                      [0.9, 0.95, 0.1, 0.2, 0.3],  # C and D both below A and B: still only one (C) goes, B comes
                      [0.9, 0.95, 0.1, 0.2, 0.3]], dtype=np.float32)  # D below A: A replaces D
    prices = np.full((5, 5), 10.0, dtype=np.float32)
    w = run_portfolio(prices, probs, topk(topk=2, n_drop=1)).weights
    np.testing.assert_array_equal(w, np.array([[.5, .5, 0, 0, 0], [0, .5, .5, 0, 0], [0, 0, .5, .5, 0],
                                               [0, .5, 0, .5, 0], [.5, .5, 0, 0, 0]], dtype=np.float32))


def test_held_names_keep_their_drifted_weight_and_buys_share_the_cash():
    # A doubles while held; when B is sold only B's value is re-invested: A is not rebalanced
    probs = np.array([[0.9, 0.8, 0.1], [0.9, 0.8, 0.1], [0.9, 0.1, 0.8]], dtype=np.float32)
    prices = np.array([[10, 10, 10], [20, 10, 10], [20, 10, 10]], dtype=np.float32)
    res = run_portfolio(prices, probs, topk(topk=2, n_drop=1))
    np.testing.assert_allclose(res.weights[1], [2 / 3, 1 / 3, 0], atol=1e-7)  # drifted, not traded
    np.testing.assert_allclose(res.weights[2], [2 / 3, 0, 1 / 3], atol=1e-7)  # B's third goes to C
    assert res.turnover[1] == 0.0 and res.turnover[2] == pytest.approx(2 / 3)


def test_a_held_symbol_is_sold_only_for_a_better_ranked_one_and_only_with_a_bar():
    probs = np.array([[0.9, 0.8, 0.1], [0.9, 0.2, 0.3], [0.9, 0.2, 0.3]], dtype=np.float32)
    prices = np.array([[10, 10, 10], [10, NAN, 10], [10, 10, 10]], dtype=np.float32)
    w = run_portfolio(prices, probs, topk(topk=2, n_drop=1)).weights
    assert w[1, 1] == pytest.approx(0.5) and w[1, 2] == 0  # B has no bar on day 1: kept (frozen)
    np.testing.assert_allclose(w[2], [0.5, 0, 0.5], atol=1e-7)  # day 2: B is sold for C
    # a universe no larger than topk: nothing to replace with, nothing sold
    small = run_portfolio(prices[:, :2], probs[:, :2], topk(topk=2, n_drop=1)).weights
    assert (small[:, 0] > 0).all()


def test_hold_thresh_keeps_a_new_name_for_that_many_sessions():
    probs = np.array([[0.9, 0.8, 0.1], [0.1, 0.8, 0.9], [0.1, 0.8, 0.9], [0.1, 0.8, 0.9]], dtype=np.float32)
    prices = np.full((4, 3), 10.0, dtype=np.float32)
    prices[1] = NAN  # day 1 is no session: nothing trades, it is no day held
    held = run_portfolio(prices, probs, topk(topk=2, n_drop=1, hold_thresh=2)).weights != 0
    np.testing.assert_array_equal(held, [[1, 1, 0], [1, 1, 0], [1, 1, 0], [0, 1, 1]])
    held1 = run_portfolio(prices, probs, topk(topk=2, n_drop=1, hold_thresh=1)).weights != 0
    np.testing.assert_array_equal(held1, [[1, 1, 0], [1, 1, 0], [0, 1, 1], [0, 1, 1]])


# ---------------------------------------------------------------- long_short


def test_long_short_holds_the_top_and_bottom_quantiles_dollar_neutral():
    prices = np.full((1, 6), 10.0, dtype=np.float32)
    probs = np.array([[0.9, 0.2, 0.5, 0.7, NAN, 0.1]], dtype=np.float32)  # 5 scored; k = floor(0.4 * 5) = 2
    cfg = PortfolioConfig(strategy="long_short", quantile=0.4, max_weight=1.0)
    w = run_portfolio(prices, probs, cfg).weights[0]
    np.testing.assert_allclose(w, [0.25, -0.25, 0, 0.25, 0, -0.25], atol=1e-7)
    capped = run_portfolio(prices, probs, PortfolioConfig(strategy="long_short", quantile=0.4, max_weight=0.1)).weights[0]
    np.testing.assert_allclose(capped, [0.1, -0.1, 0, 0.1, 0, -0.1], atol=1e-7)
    assert run_portfolio(prices, probs, PortfolioConfig(strategy="long_short", quantile=0.1)).weights[0].any() == 0


def test_long_short_is_neutral_on_every_day_of_a_random_panel_without_gaps():
    prices, probs = random_panel(120, 15, seed=11, missing=0.0)
    prices[:] = np.nan_to_num(prices, nan=50.0)
    w = run_portfolio(prices, probs, PortfolioConfig(strategy="long_short", quantile=0.3)).weights.astype(np.float64)
    np.testing.assert_allclose(w.sum(axis=1), 0.0, atol=1e-7)
    assert ((w > 0).sum(axis=1) == (w < 0).sum(axis=1)).all()


# ---------------------------------------------------------------- costs and the turnover limit, by hand


def test_open_close_and_min_cost_worked_out_by_hand():
    # one symbol, capital 1000: buy all on day 0, +10% on day 1, sell on day 2
    cfg = PortfolioConfig(threshold=0.5, max_weight=1.0, fee_bps=0.0, slippage_bps=0.0,
                          open_cost=0.0005, close_cost=0.0015, min_cost=5.0, account=1000.0)
    prices = np.array([[100], [110], [110]], dtype=np.float32)
    probs = np.array([[0.9], [0.9], [0.1]], dtype=np.float32)
    res = run_portfolio(prices, probs, cfg)
    # day 0: buy 1.0 of a NAV of 1000: 0.0005 * 1000 = 0.5 < 5 -> the minimum, 5 / 1000 = 0.005
    assert res.cost[0] == pytest.approx(0.005, rel=1e-12)
    # day 1: +10%, the book stays at weight 1 (no trade: drifted 1.0 -> target 1.0), no cost
    assert res.turnover[1] == 0.0 and res.cost[1] == 0.0
    nav1 = 1000 * (1 - 0.005) * 1.10
    # day 2: sell 1.0 of a NAV of nav1 = 1094.5: 0.0015 * 1094.5 = 1.64 < 5 -> 5 / 1094.5
    assert res.cost[2] == pytest.approx(5 / nav1, rel=1e-12)
    big = run_portfolio(prices, probs, PortfolioConfig(**{**cfg.__dict__, "account": 1e7}))
    assert big.cost[0] == pytest.approx(0.0005, rel=1e-12) and big.cost[2] == pytest.approx(0.0015, rel=1e-12)
    np.testing.assert_allclose(res.net, (1 + res.gross) * (1 - res.cost) - 1, atol=1e-15)


def test_costs_add_to_the_bps_on_turnover_and_count_each_trade():
    prices = np.full((1, 3), 10.0, dtype=np.float32)
    probs = np.array([[0.75, 0.625, 0.5625]], dtype=np.float32)  # s = 1/4, 1/8, 1/16: w = 4/7, 2/7, 1/7
    cfg = PortfolioConfig(max_weight=1.0, fee_bps=3.0, slippage_bps=2.0, open_cost=0.001, min_cost=200.0,
                          account=1e6)
    c = run_portfolio(prices, probs, cfg).cost[0]
    m = 200.0 / 1e6  # 2e-4: above 0.001 * 1/7, below 0.001 * 2/7 and 0.001 * 4/7
    assert c == pytest.approx(1.0 * 5e-4 + 0.001 * 4 / 7 + 0.001 * 2 / 7 + m, rel=1e-12)


def test_the_turnover_limit_scales_every_trade_of_the_day_alike():
    prices = np.full((3, 2), 10.0, dtype=np.float32)
    probs = np.array([[0.9, 0.9], [0.9, 0.9], [0.9, 0.1]], dtype=np.float32)
    res = run_portfolio(prices, probs, PortfolioConfig(max_weight=1.0, max_turnover=0.4))
    np.testing.assert_allclose(res.weights, [[0.2, 0.2], [0.4, 0.4], [0.64, 0.24]], atol=1e-7)  # day 2: +0.6, -0.4 scaled by 0.4
    np.testing.assert_allclose(res.turnover, 0.4, atol=1e-12)


# ---------------------------------------------------------------- no look-ahead: a one-day shift of the scores


@pytest.mark.parametrize("cfg", [
    PortfolioConfig(),
    PortfolioConfig(strategy="topk_dropout", topk=4, n_drop=2, hold_thresh=2, open_cost=5e-4, close_cost=1.5e-3,
                    min_cost=5.0, max_turnover=0.5),
    PortfolioConfig(strategy="long_short", quantile=0.25, open_cost=5e-4, close_cost=1.5e-3, min_cost=5.0),
], ids=["threshold", "topk_dropout", "long_short"])
def test_a_one_day_shift_of_the_scores_from_day_c_changes_nothing_before_day_c(cfg):
    prices, probs = random_panel(150, 12, seed=12)
    base = run_portfolio(prices, probs, cfg, chunk_days=16)
    for c in (1, 40, 77, 120):
        shifted = probs.copy()
        shifted[c:] = probs[c - 1:-1]  # from day c on, each day sees the day before's scores
        res = run_portfolio(prices, shifted, cfg, chunk_days=16)
        np.testing.assert_array_equal(res.weights[:c], base.weights[:c])
        for k in ("net", "turnover", "cost", "equity"):
            np.testing.assert_array_equal(getattr(res, k)[:c], getattr(base, k)[:c])
        np.testing.assert_array_equal(res.gross[:c + 1], base.gross[:c + 1])  # day c earns day c-1's book
        assert not np.array_equal(res.weights[c:], base.weights[c:])  # the shift is seen from day c on


# ---------------------------------------------------------------- parity with the NumPy reference


CONFIGS = {
    "topk": PortfolioConfig(strategy="topk_dropout", topk=8, n_drop=3, max_weight=0.2),
    "topk_hold": PortfolioConfig(strategy="topk_dropout", topk=5, n_drop=5, hold_thresh=3, max_gross=0.9,
                                 open_cost=5e-4, close_cost=1.5e-3, min_cost=5.0, account=1e5),
    "topk_limit": PortfolioConfig(strategy="topk_dropout", topk=10, n_drop=2, max_weight=1.0, max_turnover=0.15),
    "long_short": PortfolioConfig(strategy="long_short", quantile=0.2, max_gross=2.0, max_weight=0.3),
    "long_short_costs": PortfolioConfig(strategy="long_short", quantile=0.5, open_cost=1e-3, close_cost=2e-3,
                                        min_cost=1.0, account=1e4, max_turnover=0.8),
    "threshold_costs": PortfolioConfig(open_cost=5e-4, close_cost=1.5e-3, min_cost=5.0, account=1e6),
    "threshold_limit": PortfolioConfig(long_short=True, max_gross=1.5, max_weight=0.2, max_turnover=0.3),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_parity_with_the_numpy_reference(name):
    prices, probs = random_panel(300, 30, seed=13)
    a, b = run_portfolio(prices, probs, CONFIGS[name], chunk_days=29), run_portfolio_reference(prices, probs, CONFIGS[name])
    for k in SERIES:
        np.testing.assert_allclose(getattr(a, k), getattr(b, k), rtol=0, atol=1e-12, err_msg=k)
    np.testing.assert_allclose(a.weights, b.weights, rtol=0, atol=1e-7)
    assert np.count_nonzero(a.weights) > 0


def test_the_general_loop_gives_the_threshold_loops_results():
    # a turnover limit that never binds sends the threshold rule through book_days
    prices, probs = random_panel(300, 25, seed=14)
    for cfg in (PortfolioConfig(), PortfolioConfig(long_short=True, max_gross=1.5, max_weight=0.2)):
        general = PortfolioConfig(**{**cfg.__dict__, "max_turnover": 1e9})
        assert cfg.threshold_only and not general.threshold_only
        a, b = run_portfolio(prices, probs, cfg), run_portfolio(prices, probs, general)
        for k in SERIES:
            np.testing.assert_allclose(getattr(a, k), getattr(b, k), rtol=0, atol=1e-14, err_msg=k)
        np.testing.assert_array_equal(a.weights, b.weights)


@pytest.mark.parametrize("chunk_days", [1, 7, 300])
def test_topk_results_do_not_depend_on_chunk_days(chunk_days):
    prices, probs = random_panel(300, 20, seed=15)
    cfg = CONFIGS["topk_hold"]
    base, res = run_portfolio(prices, probs, cfg, chunk_days=300), run_portfolio(prices, probs, cfg, chunk_days=chunk_days)
    for k in SERIES:
        np.testing.assert_array_equal(getattr(res, k), getattr(base, k))
    np.testing.assert_array_equal(res.weights, base.weights)


@pytest.mark.parametrize("kw,message", [
    ({"strategy": "topk"}, "strategy must be one of threshold, topk_dropout, long_short"),
    ({"strategy": "topk_dropout", "topk": 2, "n_drop": 3}, "n_drop <= topk"),
    ({"strategy": "long_short", "quantile": 0.6}, r"quantile must lie in \(0, 0.5\]"),
    ({"strategy": "topk_dropout", "long_short": True}, "long_short=True is the threshold strategy's map"),
    ({"min_cost": -1.0}, "min_cost"),
    ({"max_turnover": 0.0}, "max_turnover"),
    ({"account": 0.0}, "account"),
])
def test_bad_config_values_are_clear_errors(kw, message):
    with pytest.raises(ValueError, match=message):
        PortfolioConfig(**kw)
