"""meta.calibration_copies: the yearly model averages the calibrated copies of the last k
purged folds only (k/n_splits of the fits); validated against cv.n_splits, in the settings
hash only off its default (null: one copy per fold, the models of before)."""

import datetime as dt

import numpy as np
import polars as pl
import pytest

from config.experiments import settings_hash
from config.settings import SettingsError, parse_settings
from domain.learning.meta import fit_year


def _frames(n_days=700, symbols=3, seed=3):
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(symbols):
        for d in range(n_days):
            a, b, c = rng.normal(size=3)
            ret = 0.8 * a * b + 0.3 * c + rng.normal()
            date = dt.date(2010, 1, 1) + dt.timedelta(days=d)
            rows.append({"symbol": f"S{s}", "date": date, "t1_h7": date + dt.timedelta(days=7), "label_ret_h7": ret,
                         "label_bin_h7": int(ret > 0), "a": a, "b": b, "c": c})
    frame = pl.DataFrame(rows).with_columns(pl.col("a", "b", "c").cast(pl.Float32)).sort("date", "symbol")
    cut = dt.date(2010, 1, 1) + dt.timedelta(days=int(n_days * 0.8))
    return frame.filter(pl.col("date") < cut), frame.filter(pl.col("date") >= cut)


@pytest.mark.parametrize("model", ["logistic", "lightgbm"])
def test_k_copies_are_the_last_k_copies_of_the_full_model(model):
    train, test = _frames()
    kw = {"n_splits": 5, "embargo_days": 7, "model": model, "names": ["a", "b", "c"], "missing": "drop",
          "lgbm_params": {"n_estimators": 20}}
    full, metrics_full, _, _ = fit_year(train, test, 7, **kw)
    two, metrics_two, p_two, _ = fit_year(train, test, 7, calibration_copies=2, **kw)
    assert len(full.estimator.calibrated_classifiers_) == 5 and len(two.estimator.calibrated_classifiers_) == 2
    X = test.select("a", "b", "c").to_numpy().astype(np.float64)
    for mine, theirs in zip(two.estimator.calibrated_classifiers_, full.estimator.calibrated_classifiers_[-2:]):
        assert np.array_equal(mine.predict_proba(X), theirs.predict_proba(X))  # the same copies, fitted alike
    assert two.info["cv"]["n_splits"] == 5 and two.info["calibration_copies"] == 2 and metrics_two["train_rows"] == metrics_full["train_rows"]
    # all copies requested by number: the model of the default, bit for bit
    five, _, p_five, _ = fit_year(train, test, 7, calibration_copies=5, **kw)
    assert np.array_equal(p_five, full.predict_proba(test.select("a", "b", "c").to_numpy()))


def test_the_setting_is_validated_and_hashed_only_off_its_default():
    base = parse_settings({})
    assert base.meta.calibration_copies is None
    assert settings_hash(parse_settings({"meta": {"calibration_copies": None}})) == settings_hash(base)
    assert settings_hash(parse_settings({"meta": {"calibration_copies": 2}})) != settings_hash(base)
    assert parse_settings({"meta": {"calibration_copies": 3}, "cv": {"n_splits": 3}}).meta.calibration_copies == 3
    with pytest.raises(SettingsError, match="meta.calibration_copies is 6, more than cv.n_splits"):
        parse_settings({"meta": {"calibration_copies": 6}})
    with pytest.raises(SettingsError, match="meta.calibration_copies"):
        parse_settings({"meta": {"calibration_copies": 0}})


def test_the_stage_passes_the_setting_to_each_fit(monkeypatch):
    import domain.learning.meta as meta

    class Seen(Exception):
        pass

    def fake(*args, **kw):
        raise Seen(kw)

    monkeypatch.setattr(meta, "fit_year", fake)
    with pytest.raises(Seen) as seen:
        meta._fit_task(None, None, 7, 2016, {"calibration_copies": 2}, [], [])
    assert seen.value.args[0]["calibration_copies"] == 2
