"""meta_model's yearly fits: the C search runs once per fit, and the (year, horizon) fits
give the same files whether they run in this process or in worker processes."""

from __future__ import annotations

import json

from domain.learning.meta import load_meta
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegressionCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from config.settings import read_settings
from resources.delta_store import DeltaStore


def _planted(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(np.int8)
    return X, y


def test_logistic_c_search_once_picks_one_C_over_the_given_splits_for_every_calibrated_copy():
    from domain.learning.metamodel import train_meta

    X, y = _planted()
    splits = [(np.r_[0:i, i + 600:3000], np.arange(i, i + 600)) for i in range(0, 3000, 600)]
    m = train_meta(X, y, cv=splits, Cs=10)
    search = Pipeline([("scale", StandardScaler()), ("logit", LogisticRegressionCV(
        Cs=10, cv=splits, scoring="neg_log_loss", max_iter=1000, l1_ratios=(0.0,), use_legacy_attributes=False))])
    expected_C = float(np.ravel(search.fit(X.astype(np.float64), y).named_steps["logit"].C_)[0])
    assert m.info["c_search"] == "once" and m.info["C"] == expected_C
    assert [f["C"] for f in m.info["folds"]] == [expected_C] * 5  # one C, not a search per calibration fold
    assert m.info["base"] == "LogisticRegression"
    nested = train_meta(X, y, cv=splits, Cs=10, c_search="per_fold")  # the nested search, kept for comparison
    assert nested.info["base"] == "LogisticRegressionCV" and "C" not in nested.info
    p_once, p_nested = m.predict_proba(X), nested.predict_proba(X)
    assert np.corrcoef(p_once, p_nested)[0, 1] > 0.99  # the same signal either way


def test_train_meta_refuses_an_unknown_c_search():
    from domain.learning.metamodel import train_meta

    X, y = _planted(300)
    with pytest.raises(ValueError, match="c_search must be one of"):
        train_meta(X, y, c_search="twice")


def _build(cfg, workers: int):
    from domain.learning.meta import build_meta_models

    s = read_settings(cfg)
    s = s.model_copy(update={"build": s.build.model_copy(update={"workers": workers})})
    scan = {a: DeltaStore(s.table_root(a)).scan(a) for a in ("specialists", "labels", "regime")}
    import polars as pl

    table, _ = build_meta_models(scan["specialists"], scan["labels"], scan["regime"], pl.LazyFrame(), [2002, 2003], s)
    return s, table


def test_meta_models_of_several_years_in_worker_processes_equal_those_fitted_in_process(learned_copy, tmp_path):
    import shutil

    other = tmp_path / "other"
    shutil.copytree(learned_copy.parent, other)
    cfg2 = other / "settings.yaml"
    text = learned_copy.read_text().replace(str(learned_copy.parent), str(other))
    cfg2.write_text(text)
    s1, t1 = _build(learned_copy, 1)
    s2, t2 = _build(cfg2, 2)
    assert t1.equals(t2) and t1.height == 6  # 2 years x 3 horizons, in year then horizon order
    assert t1["year"].to_list() == [2002, 2002, 2002, 2003, 2003, 2003]
    for year in (2002, 2003):
        for h in (3, 7, 14):
            a = json.loads((s1.models_dir / f"meta_h{h}_{year}.json").read_text())
            b = json.loads((s2.models_dir / f"meta_h{h}_{year}.json").read_text())
            assert a["folds"] == b["folds"] and a["C"] == b["C"]  # bit for bit: the same coefficients
            ma = load_meta(s1.models_dir / f"meta_h{h}_{year}.npz")
            mb = load_meta(s2.models_dir / f"meta_h{h}_{year}.npz")
            X = np.random.default_rng(year + h).normal(50, 20, size=(50, len(a["features"]))).astype(np.float32)
            np.testing.assert_array_equal(ma.predict_proba(X), mb.predict_proba(X))
            assert (s2.stage_reports_dir("meta_model") / f"calibration_h{h}_{year}.png").read_bytes()[:4] == b"\x89PNG"


def test_year_frames_cut_from_one_read_equal_the_frames_read_for_each_year(learned_store):
    """build_meta_models reads the tables once (read_inputs of the last year) and cuts each
    year's training and test rows from that frame (training_data.known_by): the same rows, in
    the same order, with the same labels and label ends as reading each year on its own."""
    import polars as pl

    from domain.learning.meta import read_inputs, year_frames
    from domain.learning.training_data import known_by, training_frame

    s = read_settings(learned_store)
    scan = {a: DeltaStore(s.table_root(a)).scan(a) for a in ("specialists", "labels", "regime")}
    horizons = s.labels.horizons
    read = read_inputs(scan["specialists"], scan["labels"], scan["regime"], pl.LazyFrame(), horizons, 2003)
    assert read[1] is None  # no LSTM scores stored
    for year in (2001, 2002, 2003):
        own = training_frame(scan["specialists"], scan["labels"], horizons, known_by_year=year, regime=scan["regime"])
        cut = known_by(read[0], horizons, year)
        assert cut.equals(own) and own.height > 0
        # a label whose interval ends after the cutoff is unknown (null) in the year's frame
        assert cut[f"label_bin_h{horizons[-1]}"].null_count() >= horizons[-1]
        no_regime = training_frame(scan["specialists"], scan["labels"], horizons, known_by_year=year)  # cv_report's
        assert known_by(training_frame(scan["specialists"], scan["labels"], horizons, known_by_year=2003), horizons,
                        year).equals(no_regime)
        for a, b in zip(year_frames(scan["specialists"], scan["labels"], scan["regime"], pl.LazyFrame(), horizons, year),
                        year_frames(scan["specialists"], scan["labels"], scan["regime"], pl.LazyFrame(), horizons, year,
                                    read=read)):
            assert a.equals(b)
