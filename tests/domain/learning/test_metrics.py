"""Evaluation kernel (domain.learning.metrics) against sklearn, scipy and pandas as oracles."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import average_precision_score, brier_score_loss, log_loss, roc_auc_score

from domain.learning.metrics import (
    DECILE_COLUMNS,
    annualization,
    classification_metrics,
    cross_section,
    decile_returns,
    decile_returns_by_group,
    ic_summary,
    information_coefficient,
    quantile_bins,
    sharpe_ratio,
    turnover_mean,
)
from domain.learning.plots import (
    cumulative_ic_png_bytes,
    decile_bars_png_bytes,
    equity_png_bytes,
    long_short_png_bytes,
    reliability_png_bytes,
)


def problem(n: int, seed: int):
    """p, y ~ Bernoulli(p), ret = signal in p + noise."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.uniform(size=n) < p).astype(np.int8)
    ret = 0.02 * (p - 0.5) + rng.normal(0, 0.02, n)
    return p, y, ret


# ---------------------------------------------------------------- classification


def test_classification_metrics_match_sklearn():
    p, y, _ = problem(3000, seed=1)
    m = classification_metrics(y, p)
    assert m["auc"] == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert m["pr_auc"] == pytest.approx(average_precision_score(y, p), abs=1e-12)
    assert m["brier"] == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    assert m["log_loss"] == pytest.approx(log_loss(y, p), abs=1e-12)
    assert m["n"] == 3000 and m["positives"] == int(y.sum()) and m["n_dropped"] == 0
    assert m["base_rate"] == pytest.approx(y.mean())


def test_classification_metrics_one_class_has_no_auc_or_pr_auc():
    p = np.array([0.2, 0.7, 0.9])
    for y in (np.zeros(3), np.ones(3)):
        m = classification_metrics(y, p)
        assert m["auc"] is None and m["pr_auc"] is None
        assert m["brier"] == pytest.approx(brier_score_loss(y, p))
        assert m["log_loss"] == pytest.approx(log_loss(y, p, labels=[0, 1]))
        assert m["base_rate"] == y.mean()


def test_classification_metrics_nan_rows_dropped():
    p, y, _ = problem(500, seed=2)
    pn, yn = p.copy(), y.astype(np.float64)
    pn[::7] = np.nan
    yn[3::11] = np.nan  # label not known yet
    ok = np.isfinite(pn) & np.isfinite(yn)
    m = classification_metrics(yn, pn)
    assert m == {**classification_metrics(y[ok], p[ok]), "n_dropped": int((~ok).sum())}
    assert m["n"] == int(ok.sum())


def test_classification_metrics_no_rows():
    m = classification_metrics(np.array([np.nan]), np.array([0.5]))
    assert m["n"] == 0 and m["n_dropped"] == 1
    assert m["auc"] is m["pr_auc"] is m["brier"] is m["log_loss"] is m["base_rate"] is None


def test_classification_metrics_refuse_non_binary_labels_and_bad_probabilities():
    with pytest.raises(ValueError, match="binary"):
        classification_metrics([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        classification_metrics([0, 1], [0.1, 1.2])


# ---------------------------------------------------------------- information coefficient


def test_information_coefficient_matches_scipy_spearman_with_ties():
    p, _, ret = problem(2000, seed=3)
    assert information_coefficient(p, ret) == pytest.approx(spearmanr(p, ret).statistic, abs=1e-12)
    p_tied, ret_tied = np.round(p, 1), np.round(ret, 3)  # many ties in both
    assert information_coefficient(p_tied, ret_tied) == pytest.approx(spearmanr(p_tied, ret_tied).statistic,
                                                                       abs=1e-12)


def test_information_coefficient_constant_predictions_or_fewer_than_3_rows_is_none():
    assert information_coefficient(np.full(10, 0.5), np.arange(10.0)) is None
    assert information_coefficient(np.arange(10.0), np.zeros(10)) is None
    assert information_coefficient([0.1, 0.2], [1.0, 2.0]) is None
    assert information_coefficient([0.1, 0.2, np.nan], [1.0, 2.0, 3.0]) is None  # 2 rows left


def test_information_coefficient_nan_rows_dropped():
    p, _, ret = problem(300, seed=4)
    pn, rn = p.copy(), ret.copy()
    pn[::5] = np.nan
    rn[1::9] = np.inf
    ok = np.isfinite(pn) & np.isfinite(rn)
    assert information_coefficient(pn, rn) == pytest.approx(spearmanr(p[ok], ret[ok]).statistic, abs=1e-12)


# ---------------------------------------------------------------- deciles


def test_deciles_without_ties_match_pandas_qcut():
    p, _, ret = problem(1000, seed=5)
    d = decile_returns(p, ret)
    labels = pd.qcut(p, 10, labels=False)
    frame = pd.DataFrame({"b": labels, "p": p, "ret": ret, "hit": ret > 0}).groupby("b")
    np.testing.assert_array_equal(d["bin"], np.arange(10))
    np.testing.assert_array_equal(d["count"], np.full(10, 100))
    np.testing.assert_allclose(d["p_mean"], frame["p"].mean(), rtol=1e-12)
    np.testing.assert_allclose(d["p_min"], frame["p"].min(), rtol=0)
    np.testing.assert_allclose(d["p_max"], frame["p"].max(), rtol=0)
    np.testing.assert_allclose(d["ret_mean"], frame["ret"].mean(), rtol=1e-10)
    np.testing.assert_allclose(d["hit_rate"], frame["hit"].mean(), rtol=1e-12)
    assert set(d) == set(DECILE_COLUMNS)
    assert d["ret_mean"][-1] > d["ret_mean"][0]  # the synthetic signal: top decile beats bottom


def test_deciles_are_rank_bins_of_near_equal_size_for_any_n():
    p, _, ret = problem(1003, seed=6)
    b = quantile_bins(p)
    rank = np.argsort(np.argsort(p))
    np.testing.assert_array_equal(b, rank * 10 // 1003)
    counts = decile_returns(p, ret)["count"]
    assert counts.sum() == 1003 and counts.max() - counts.min() <= 1


def test_deciles_tied_predictions_share_a_bin_whatever_the_row_order():
    rng = np.random.default_rng(7)
    p = np.round(rng.uniform(size=400), 2)  # ~100 distinct values, many ties
    ret = rng.normal(size=400)
    b = quantile_bins(p)
    for v in np.unique(p):
        assert np.unique(b[p == v]).size == 1
    perm = rng.permutation(400)
    d, dp = decile_returns(p, ret), decile_returns(p[perm], ret[perm])
    for k in DECILE_COLUMNS:
        np.testing.assert_allclose(d[k], dp[k], rtol=1e-12)
    assert (d["p_max"][:-1] < d["p_min"][1:]).all()  # bins do not overlap


def test_deciles_fewer_distinct_values_than_bins_give_fewer_bins():
    p = np.array([0.2] * 6 + [0.5] * 3 + [0.9])
    ret = np.arange(10.0) - 4.5
    d = decile_returns(p, ret)
    np.testing.assert_array_equal(d["bin"], [0, 6, 9])  # the quantile of each block's lowest rank
    np.testing.assert_array_equal(d["count"], [6, 3, 1])
    np.testing.assert_allclose(d["ret_mean"], [ret[:6].mean(), ret[6:9].mean(), ret[9]])
    np.testing.assert_allclose(d["hit_rate"], [1 / 6, 1.0, 1.0])


def test_deciles_constant_predictions_are_one_bin():
    d = decile_returns(np.full(50, 0.5), np.linspace(-1, 1, 50))
    np.testing.assert_array_equal(d["bin"], [0])
    np.testing.assert_array_equal(d["count"], [50])


def test_deciles_nan_rows_dropped_and_empty_input():
    p, _, ret = problem(200, seed=8)
    pn, rn = p.copy(), ret.copy()
    pn[::4] = np.nan
    rn[1::6] = np.nan
    ok = np.isfinite(pn) & np.isfinite(rn)
    d, ref = decile_returns(pn, rn), decile_returns(p[ok], ret[ok])
    for k in DECILE_COLUMNS:
        np.testing.assert_array_equal(d[k], ref[k])
    empty = decile_returns(np.array([np.nan]), np.array([1.0]))
    assert all(v.size == 0 for v in empty.values())


def test_deciles_by_group_bin_each_group_on_its_own():
    p, _, ret = problem(3000, seed=9)
    rng = np.random.default_rng(9)
    regime = rng.choice(np.array([-1, 0, 1, 2], dtype=np.int8), size=3000)
    out = decile_returns_by_group(p, ret, regime, n_bins=5)
    assert list(out) == [-1, 0, 1, 2] and all(type(k) is int for k in out)
    for g, d in out.items():
        ref = decile_returns(p[regime == g], ret[regime == g], n_bins=5)
        for k in DECILE_COLUMNS:
            np.testing.assert_array_equal(d[k], ref[k])


def test_deciles_by_group_nan_group_dropped():
    p = np.linspace(0, 1, 12)
    ret = np.linspace(-1, 1, 12)
    group = np.array([0.0, 1.0, np.nan] * 4)
    out = decile_returns_by_group(p, ret, group, n_bins=2)
    assert list(out) == [0.0, 1.0]
    assert sum(int(d["count"].sum()) for d in out.values()) == 8


# ---------------------------------------------------------------- figures


def _png_shape(data: bytes):
    import matplotlib.image

    return matplotlib.image.imread(io.BytesIO(data), format="png").shape


def test_reliability_png_bytes_is_a_deterministic_png():
    p, y, _ = problem(1000, seed=10)
    p[:10] = np.nan
    png = reliability_png_bytes(y, p, title="h7 2015")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert _png_shape(png)[:2] == (650, 600)
    assert png == reliability_png_bytes(y, p, title="h7 2015")  # same inputs, same bytes


def test_reliability_png_bytes_one_class_and_no_rows_still_draw():
    assert reliability_png_bytes(np.ones(20), np.linspace(0, 1, 20))[:4] == b"\x89PNG"
    assert reliability_png_bytes(np.array([np.nan]), np.array([0.5]))[:4] == b"\x89PNG"


def test_equity_png_bytes_with_dates_without_dates_and_a_wiped_out_curve():
    days = np.arange("2020-01-01", "2021-01-01", dtype="datetime64[D]")
    eq = np.cumprod(1 + np.random.default_rng(11).normal(0, 0.01, days.size))
    png = equity_png_bytes(days, eq, title="backtest")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and _png_shape(png)[:2] == (500, 800)
    assert equity_png_bytes(None, np.array([1.0, 0.5, 0.0]))[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="dates must have shape"):
        equity_png_bytes(days[:3], eq)


def test_equity_png_bytes_draws_the_benchmark_beside_the_book_and_refuses_one_of_other_days():
    days = np.arange("2020-01-01", "2020-03-01", dtype="datetime64[D]")
    eq = np.cumprod(1 + np.random.default_rng(3).normal(0, 0.01, days.size))
    bench = np.cumprod(np.full(days.size, 1.001))
    with_bench = equity_png_bytes(days, eq, "backtest", benchmark=bench, benchmark_label="equal-weight buy-and-hold")
    assert _png_shape(with_bench)[:2] == (500, 800) and with_bench != equity_png_bytes(days, eq, "backtest")
    with pytest.raises(ValueError, match="benchmark has 3 rows, expected 60"):
        equity_png_bytes(days, eq, benchmark=bench[:3])


# ---------------------------------------------------------------- signal analysis (cross-sectional)


def panel(n_days: int, n_symbols: int, seed: int, missing: float = 0.1):
    """A long panel (day, symbol, p, ret), rows shuffled, some p / ret missing, with ties in p."""
    rng = np.random.default_rng(seed)
    day = np.repeat(np.datetime64("2020-01-01") + np.arange(n_days), n_symbols)
    sym = np.tile(np.array([f"S{i:02d}" for i in range(n_symbols)]), n_days)
    p = np.round(rng.uniform(0, 1, day.size), 2)  # 2 decimals: ties within a day
    ret = 0.01 * (p - 0.5) + rng.normal(0, 0.02, day.size)
    p[rng.uniform(size=day.size) < missing] = np.nan
    ret[rng.uniform(size=day.size) < missing / 2] = np.nan
    order = rng.permutation(day.size)
    return day[order], sym[order], p[order], ret[order]


def oracle(day, sym, p, ret, min_symbols: int, n_bins: int = 10) -> pd.DataFrame:
    """scipy's spearmanr per day, pandas nlargest / nsmallest (keep='first') for the deciles."""
    df = pd.DataFrame({"day": day, "sym": sym, "p": p, "ret": ret}).dropna()
    df = df.iloc[np.argsort(df["day"].to_numpy(), kind="stable")]  # row order within a day, as the kernel
    rows, prev_top, prev_bottom = [], None, None
    for d, g in df.groupby("day", sort=True):
        if len(g) < min_symbols:
            continue
        k = max(1, len(g) // n_bins)
        top, bottom = g.nlargest(k, "p", keep="first"), g.nsmallest(k, "p", keep="first")
        ic = spearmanr(g["p"], g["ret"]).statistic
        tt = np.nan if prev_top is None else 1 - len(set(top["sym"]) & prev_top) / k
        bt = np.nan if prev_bottom is None else 1 - len(set(bottom["sym"]) & prev_bottom) / k
        prev_top, prev_bottom = set(top["sym"]), set(bottom["sym"])
        rows.append({"day": d, "n": len(g), "ic": ic, "long": top["ret"].mean(), "short": bottom["ret"].mean(),
                     "top_turnover": tt, "bottom_turnover": bt})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("n_symbols", "min_symbols"), [(40, 5), (12, 10), (7, 5)])
def test_cross_section_matches_scipy_spearman_and_pandas_deciles_per_day(n_symbols, min_symbols):
    day, sym, p, ret = panel(60, n_symbols, seed=n_symbols)
    cs = cross_section(day, sym, p, ret, min_symbols=min_symbols)
    want = oracle(day, sym, p, ret, min_symbols)
    assert len(want) > 5 and list(cs["days"]) == list(want["day"].to_numpy().astype("datetime64[D]"))
    np.testing.assert_array_equal(cs["n"], want["n"])
    for col in ("ic", "long", "short", "top_turnover", "bottom_turnover"):
        np.testing.assert_allclose(cs[col], want[col], rtol=1e-12, atol=1e-14, err_msg=col)
    np.testing.assert_allclose(cs["long_short"], want["long"] - want["short"], rtol=1e-12, atol=1e-14)
    usable = pd.DataFrame({"day": day, "p": p, "ret": ret}).dropna().groupby("day").size()
    assert cs["n_days"] == len(usable) and cs["n_days_excluded"] == int((usable < min_symbols).sum())


def test_cross_section_ic_summary_and_sharpe_match_pandas():
    day, sym, p, ret = panel(80, 30, seed=5)
    cs = cross_section(day, sym, p, ret, min_symbols=5)
    ic = pd.Series(cs["ic"])
    s = ic_summary(cs["ic"])
    assert s["rank_ic"] == pytest.approx(ic.mean(), rel=1e-12) and s["rank_ic_std"] == pytest.approx(ic.std(), rel=1e-12)
    assert s["icir"] == pytest.approx(ic.mean() / ic.std(), rel=1e-12) and s["n"] == 80
    assert s["ic_positive"] == pytest.approx((ic > 0).mean())
    ls = pd.Series(cs["long_short"])
    assert annualization(7) == 36.0
    assert sharpe_ratio(cs["long_short"], annualization(7)) == pytest.approx(ls.mean() / ls.std() * np.sqrt(252 / 7),
                                                                             rel=1e-12)
    assert turnover_mean(cs["top_turnover"]) == pytest.approx(pd.Series(cs["top_turnover"]).mean(), rel=1e-12)
    assert s["rank_ic"] > 0  # the panel has signal


def test_cross_section_excludes_small_days_and_constant_days_give_nan_ic():
    day = np.array(["2020-01-01"] * 3 + ["2020-01-02"] * 5 + ["2020-01-03"] * 5, dtype="datetime64[D]")
    sym = np.array(list("abc") + list("abcde") * 2)
    p = np.array([0.1, 0.2, 0.3, 0.5, 0.5, 0.5, 0.5, 0.5, 0.1, 0.9, 0.3, 0.7, 0.5])
    ret = np.arange(13, dtype=float)
    cs = cross_section(day, sym, p, ret, min_symbols=5)
    assert cs["n_days"] == 3 and cs["n_days_excluded"] == 1 and list(cs["n"]) == [5, 5]
    assert np.isnan(cs["ic"][0]) and cs["ic"][1] == pytest.approx(spearmanr(p[8:], ret[8:]).statistic)
    assert cs["long"][0] == ret[3] and cs["short"][0] == ret[3]  # all tied: the first row is top and bottom
    assert cs["long"][1] == ret[9] and cs["short"][1] == ret[8]
    # day 2: top = bottom = "a" (all tied); day 3: top "b" (new), bottom "a" (kept)
    assert np.isnan(cs["top_turnover"][0]) and cs["top_turnover"][1] == 1.0 and cs["bottom_turnover"][1] == 0.0
    none = cross_section(day, sym, p, ret, min_symbols=6)
    assert none["n_days_excluded"] == 3 and len(none["days"]) == 0 and len(none["ic"]) == 0
    assert ic_summary(none["ic"]) == {"rank_ic": None, "rank_ic_std": None, "icir": None, "ic_positive": None, "n": 0}
    assert sharpe_ratio(none["long_short"]) is None and turnover_mean(none["top_turnover"]) is None
    with pytest.raises(ValueError, match="day and symbol"):
        cross_section(day[:3], sym, p, ret)


def test_signal_plots_are_pngs():
    day, sym, p, ret = panel(50, 20, seed=9)
    cs = cross_section(day, sym, p, ret)
    for png in (cumulative_ic_png_bytes(cs["days"], cs["ic"], "h7"),
                long_short_png_bytes(cs["days"], cs["long"], cs["short"], 7, "h7"),
                decile_bars_png_bytes(np.arange(10), np.linspace(-0.01, 0.01, 10), np.full(10, 0.5), "h7"),
                cumulative_ic_png_bytes(None, np.array([np.nan, 0.1]))):
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and _png_shape(png)[0] > 100
