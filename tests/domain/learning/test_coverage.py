"""What a meta model's figures stand on (domain.learning.coverage): counts by hand on a
matrix of 3 symbols where one symbol has no volume column at all."""

import numpy as np
import pytest

from domain.learning.coverage import CoverageError, check_floor, coverage_note, merge, row_coverage

NAMES = ["spec_rsi_score", "a158_VMA5", "regime_bear", "regime_consolidate", "regime_bull", "regime_oscillate"]
nan = np.nan


def _matrix():
    """AAA: 3 rows, every value; BBB: 3 rows, the volume column empty; CCC: a warm-up row
    (no value outside the regime one-hot) and one complete row. The last AAA row has no label."""
    rows = [
        ("AAA", 50.0, 1.0, True), ("AAA", 55.0, 1.1, True), ("AAA", 60.0, 1.2, False),
        ("BBB", 40.0, nan, True), ("BBB", 45.0, nan, True), ("BBB", 47.0, nan, True),
        ("CCC", nan, nan, True), ("CCC", 52.0, 0.9, True),
    ]
    X = np.array([[s, v, 1.0, 0.0, 0.0, 0.0] for _, s, v, _ in rows], dtype=np.float32)
    return X, np.array([lab for *_, lab in rows]), np.array([sym for sym, *_ in rows])


def test_drop_counts_the_rows_a_missing_column_empties_and_names_the_symbols_lacking_it():
    X, labelled, symbols = _matrix()
    cov = row_coverage(X, NAMES, labelled, symbols, "drop")
    assert {k: cov[k] for k in ("rows", "rows_labelled", "warm_up", "rows_available", "rows_used")} == {
        "rows": 8, "rows_labelled": 7, "warm_up": 1, "rows_available": 6, "rows_used": 3}
    assert cov["coverage"] == pytest.approx(0.5)
    assert (cov["symbols_available"], cov["symbols_used"], cov["symbols_lacking"]) == (3, 2, 1)
    assert cov["missing_values"] == {"a158_VMA5": 3} and cov["empty_columns"] == {"a158_VMA5": 1}
    assert coverage_note(cov) == "2 of 3 symbols, 3 of 6 rows; 1 symbol left out, lacking a158_VMA5"


@pytest.mark.parametrize("rule", ["fill", "native"])
def test_fill_and_native_use_every_available_row_and_every_symbol(rule):
    X, labelled, symbols = _matrix()
    cov = row_coverage(X, NAMES, labelled, symbols, rule)
    assert (cov["rows_used"], cov["rows_available"], cov["symbols_used"], cov["coverage"]) == (6, 6, 3, 1.0)
    verb = "filled, lacking" if rule == "fill" else "lacking"
    assert coverage_note(cov) == f"3 of 3 symbols, 6 of 6 rows; 1 symbol {verb} a158_VMA5"


def test_a_coverage_below_the_floor_is_one_line_naming_the_columns_and_the_settings_that_help():
    X, labelled, symbols = _matrix()
    cov = row_coverage(X, NAMES, labelled, symbols, "drop")
    check_floor(cov, 0.5, "meta_model 2011 h7 training rows")  # at the floor: fine
    with pytest.raises(CoverageError) as err:
        check_floor(cov, 0.8, "meta_model 2011 h7 training rows")
    assert str(err.value) == (
        "meta_model 2011 h7 training rows: 3 of 6 rows usable (50%, 2 of 3 symbols) under meta.min_coverage 0.8 with "
        "meta.missing drop; the rows were emptied by a158_VMA5; expected meta.missing: fill or native (a tree model), "
        "meta.inputs without those columns' pack, or a lower meta.min_coverage")
    assert "\n" not in str(err.value)


def test_nothing_available_passes_any_floor_and_says_no_rows():
    X, labelled, symbols = _matrix()
    cov = row_coverage(X, NAMES, np.zeros(8, bool), symbols, "drop")
    assert cov["coverage"] is None and cov["rows_available"] == 0
    check_floor(cov, 1.0, "meta_model 2026 h14 out-of-sample rows")


def test_merge_sums_rows_and_keeps_the_most_symbols_of_a_part():
    X, labelled, symbols = _matrix()
    a = row_coverage(X, NAMES, labelled, symbols, "drop")
    b = row_coverage(X[:3], NAMES, labelled[:3], symbols[:3], "drop")
    m = merge([a, None, b])
    assert (m["rows_used"], m["rows_available"], m["symbols_used"], m["symbols_available"]) == (5, 8, 2, 3)
    assert m["coverage"] == pytest.approx(5 / 8) and m["missing_values"] == {"a158_VMA5": 3}
    assert merge([]) is None and coverage_note(None) == ""
