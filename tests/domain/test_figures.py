"""domain.figures: headline figures rounded to meaningful digits, and the flat numeric
metadata names the Plots tab charts."""

from __future__ import annotations

import math

import pytest

from domain.figures import backtest_figures, cv_figures, evaluation_figures, rounded, rounded_tree


@pytest.mark.parametrize("value, expected", [
    (0.523456789, 0.5235), (-0.00123456, -0.001235), (1234.5678, 1235.0), (0.0, 0.0), (3, 3.0),
    (None, None), (math.nan, None), (math.inf, None), ("n/a", None), (True, None),
])
def test_rounded_keeps_four_significant_digits_and_drops_nan_and_missing(value, expected):
    assert rounded(value) == expected


def test_rounded_tree_rounds_floats_at_any_depth_and_keeps_ints_strings_and_none():
    tree = {"h7": {"auc": 0.5123456, "n": 1234, "note": "x", "daily": [{"ic": 0.0123456, "x": None}]}}
    assert rounded_tree(tree) == {"h7": {"auc": 0.5123, "n": 1234, "note": "x", "daily": [{"ic": 0.01235, "x": None}]}}


def test_evaluation_figures_are_flat_floats_per_horizon_and_a_one_class_horizon_is_left_out():
    overall = {
        "h7": {"auc": 0.5312345, "pr_auc": 0.555567, "brier": 0.2487654, "ic": 0.0412345, "rank_ic": 0.0312345,
               "icir": 0.2345678, "long_short_sharpe": 1.234567, "cross_section": {"rank_ic": 0.0312345}},
        "h14": {"auc": None, "pr_auc": None, "brier": None, "ic": None, "rank_ic": None, "icir": None,
                "long_short_sharpe": None, "cross_section": {}},
    }
    assert evaluation_figures(overall, [7, 14]) == {
        "h7_auc": 0.5312, "h7_pr_auc": 0.5556, "h7_brier": 0.2488, "h7_ic": 0.04123, "h7_rank_ic": 0.03123,
        "h7_icir": 0.2346, "h7_ls_sharpe": 1.235}


def test_backtest_figures_name_turnover_and_leave_out_a_sharpe_without_trades():
    headline = {"cagr": 0.0612345, "sharpe": None, "max_drawdown": -0.1234567, "annual_turnover": 45.678,
                "total_return": 0.3, "n_days": 1258}
    assert backtest_figures(headline) == {"cagr": 0.06123, "max_drawdown": -0.1235, "turnover": 45.68,
                                          "total_return": 0.3}


def test_cv_figures_average_each_specialist_over_the_years_then_take_the_best():
    summary = {
        "2003/h7": {"spec_rsi": {"sigmoid": {"auc": 0.60, "brier": 0.24}, "isotonic": {"auc": 0.50, "brier": 0.25}},
                    "spec_mom": {"sigmoid": {"auc": 0.70, "brier": 0.20}, "isotonic": {"auc": None, "brier": 0.26}}},
        "2004/h7": {"spec_rsi": {"sigmoid": {"auc": 0.64, "brier": 0.22}, "isotonic": {"auc": 0.52, "brier": 0.25}},
                    "spec_mom": {"sigmoid": {"auc": 0.50, "brier": 0.30}, "isotonic": {"auc": 0.54, "brier": 0.26}}},
        "2004/h3": {"spec_rsi": {"sigmoid": {"auc": None, "brier": None}}},  # one-class: no AUC
    }
    # rsi/sigmoid 0.62 beats mom/sigmoid 0.60 once both years count
    assert cv_figures(summary, [3, 7]) == {"h7_best_auc": 0.62, "h7_best_brier": 0.23,
                                           "h7_mean_auc": rounded((0.62 + 0.51 + 0.60 + 0.54) / 4)}
