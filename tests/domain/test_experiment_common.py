"""domain.experiment_common (`compare --common`): the evaluation figures of experiments on
the (symbol, date) rows where every one has a finite prediction, from tiny predictions and
labels Delta tables written in tmp_path."""

from __future__ import annotations

import datetime as dt
import json
import math

import polars as pl
import pytest

from config.experiments import MANIFEST
from config.settings import parse_settings

D1, D2 = dt.datetime(2003, 3, 3), dt.datetime(2004, 3, 3)
# (symbol, date, label_bin_h7, base p_h7, alt p_h7); alt has no prediction for D (NaN on D1,
# no row on D2): the shared rows are A, B, C on both days
ROWS = [("A", D1, 1, 0.8, 0.6), ("B", D1, 0, 0.3, 0.4), ("C", D1, 1, 0.4, 0.7), ("D", D1, 0, 0.9, math.nan),
        ("A", D2, 0, 0.6, 0.5), ("B", D2, 1, 0.7, 0.3), ("C", D2, 0, 0.2, 0.1), ("D", D2, 1, 0.1, None)]


def _predictions(column: int) -> pl.DataFrame:
    rows = [r for r in ROWS if r[column] is not None]
    return pl.DataFrame({"symbol": [r[0] for r in rows], "date": [r[1] for r in rows],
                         "regime": pl.Series([1] * len(rows), dtype=pl.Int8),
                         "p_h7": pl.Series([r[column] for r in rows], dtype=pl.Float32),
                         "year": pl.Series([r[1].year for r in rows], dtype=pl.Int32)},
                        schema_overrides={"date": pl.Datetime("ns")})


@pytest.fixture
def store(tmp_path):
    """Settings over tmp_path with experiments `base` and `alt`: manifests, predictions, labels."""
    settings = parse_settings({"paths": {"data": "data", "reports": "reports", "models": "models"},
                               "evaluation": {"min_symbols_per_day": 3}}, root=tmp_path)
    for name, column in (("base", 3), ("alt", 4)):
        (settings.reports_root / name).mkdir(parents=True)
        (settings.reports_root / name / MANIFEST).write_text(json.dumps({"experiment": name, "settings_hash": name}))
        _predictions(column).write_delta(settings.data_dir / "experiments" / name / "predictions")
    labels = pl.DataFrame({"date": [r[1] for r in ROWS], "symbol": [r[0] for r in ROWS],
                           "label_ret_h7": pl.Series([0.02 if r[2] else -0.01 for r in ROWS], dtype=pl.Float32),
                           "label_bin_h7": pl.Series([r[2] for r in ROWS], dtype=pl.Int8)},
                          schema_overrides={"date": pl.Datetime("ns")})
    labels.write_delta(settings.data_dir / "labels")
    return settings


def test_the_figures_are_the_evaluation_of_the_rows_both_experiments_predict(store):
    from domain.evaluation import evaluate_horizon
    from domain.experiment_common import common_figures

    got = common_figures(store, ["base", "alt"])
    assert got["horizons"] == {"h7": {"rows": 6, "evaluated": 6}}
    # base on A, B, C: positives p 0.8, 0.4, 0.7 over negatives 0.3, 0.6, 0.2: 8 of 9 pairs ordered
    assert got["overall"]["base"]["h7 auc"] == pytest.approx(8 / 9)
    # alt: positives 0.6, 0.7, 0.3 over negatives 0.4, 0.5, 0.1: 3 + 3 + 1 = 7 of 9 pairs ordered
    assert got["overall"]["alt"]["h7 auc"] == pytest.approx(7 / 9)
    shared = [r for r in ROWS if r[0] != "D"]
    frame = pl.DataFrame({"symbol": [r[0] for r in shared], "date": [r[1] for r in shared],
                          "regime": pl.Series([1] * 6, dtype=pl.Int8), "p_h7": pl.Series([r[3] for r in shared], dtype=pl.Float32),
                          "label_bin_h7": pl.Series([r[2] for r in shared], dtype=pl.Int8),
                          "label_ret_h7": pl.Series([0.02 if r[2] else -0.01 for r in shared], dtype=pl.Float32)},
                         schema_overrides={"date": pl.Datetime("ns")}).sort("date", "symbol")
    expected = evaluate_horizon(frame, 7, 3)
    for f in ("auc", "pr_auc", "brier", "rank_ic", "icir", "long_short_sharpe"):
        assert got["overall"]["base"][f"h7 {f}"] == expected[f], f
    assert sorted(got["yearly"]["base"]["h7 auc"]) == [2003, 2004]  # each year on its shared rows (t over years)


def test_compare_common_replaces_the_stored_evaluation_figures_and_says_on_how_many_rows(store):
    from domain.experiment_common import common_figures
    from domain.experiment_compare import compare, format_table

    for name, rows, auc in (("base", 8, 0.5), ("alt", 6, 0.7)):  # stored reports: base on 8 rows, alt on 6
        folder = store.reports_root / name / "evaluation"
        folder.mkdir(parents=True)
        (folder / "overall.json").write_text(json.dumps({"rows": rows, "symbols": 4, "h7": {"auc": auc, "n": rows}}))
    stored = compare(store.reports_root, ["base", "alt"])
    assert next(r for r in stored["rows"] if r["figure"] == "h7 auc")["warning"] == "! rows differ 8 vs 6"
    result = compare(store.reports_root, ["base", "alt"], common=common_figures(store, ["base", "alt"]))
    auc = next(r for r in result["rows"] if r["figure"] == "h7 auc")
    assert auc["values"] == {"base": pytest.approx(8 / 9), "alt": pytest.approx(7 / 9)} and auc["warning"] is None
    assert result["common"] == {"horizons": {"h7": {"rows": 6, "evaluated": 6}}}
    assert "(--common: a finite prediction in every experiment): h7 6 shared rows; backtest figures as stored" in \
        format_table(result)


def test_an_experiment_without_stored_predictions_is_one_line(store):
    from domain.experiment_common import common_figures

    (store.reports_root / "fresh").mkdir()
    with pytest.raises(ValueError, match=r"^compare --common: experiment 'fresh' has no stored predictions under .*"
                                         r"run `python -m pipeline.cli --experiment fresh train-meta`\)$"):
        common_figures(store, ["base", "fresh"])
