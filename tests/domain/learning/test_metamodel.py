"""Meta model and calibration kernels (domain.learning.metamodel, domain.learning.calibration).

The synthetic problem has a known truth: P(y = 1) = sigmoid(linear score of two specialists,
the LSTM score and the regime), so the trained model can be held to the oracle's Brier
score and to a small calibration error on held-out rows.
"""

from __future__ import annotations

import copy
import json
import pickle
import sys

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

from domain.learning.calibration import (
    expected_calibration_error,
    fit_calibrator,
    fold_metrics,
    reliability_curve,
)
from domain.learning.matrix import REGIME_COLUMNS, build_meta_matrix, complete_rows, regime_one_hot
from domain.learning.metamodel import MetaModel, logistic_folds as _logistic_folds, train_meta
from domain.learning.onnx_export import export_onnx, onnx_predict
from domain.learning.persistence import meta_from_arrays, save_meta
from domain.learning.plots import calibration_png
from kernels.regime import NO_TAG
from domain.learning.meta import load_meta  # the verified load (resources.verified_files)

SPECIALISTS = ["spec_mr", "spec_trend", "spec_noise_a", "spec_noise_b"]


def make_problem(n: int, seed: int):
    """(X, y, true probability, feature names): specialists on 0..100, LSTM on 0..1."""
    rng = np.random.default_rng(seed)
    spec = rng.uniform(0, 100, size=(n, 4)).astype(np.float32)
    lstm = rng.uniform(0, 1, size=n).astype(np.float32)
    regime = rng.choice(np.array([-1, 0, 1, 2, NO_TAG], dtype=np.int8), size=n)
    X, names = build_meta_matrix(spec, lstm, regime, specialist_names=SPECIALISTS)
    logit = (0.045 * (spec[:, 0] - 50) - 0.03 * (spec[:, 1] - 50) + 2.0 * (lstm - 0.5)
             + 0.6 * (regime == 1) - 0.6 * (regime == -1))
    p = 1.0 / (1.0 + np.exp(-logit.astype(np.float64)))
    y = (rng.uniform(size=n) < p).astype(np.int8)
    return X, y, p, names


@pytest.fixture(scope="module")
def problem():
    X, y, _, names = make_problem(20_000, seed=1)
    Xt, yt, pt, _ = make_problem(20_000, seed=2)
    window = {"start": "2001-01-02", "end": "2015-12-31", "horizon": 7, "symbols": ["AAA", "BBB"]}
    model = train_meta(X, y, feature_names=names, window=window, seed=0)
    return {"X": X, "y": y, "Xt": Xt, "yt": yt, "pt": pt, "names": names, "window": window, "model": model}


# ---------------------------------------------------------------- calibration


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
def test_calibrator_probabilities_are_monotone_in_the_score(method):
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 100, 5_000)
    y = (rng.uniform(size=s.size) < 1 / (1 + np.exp(-(s - 50) / 10))).astype(np.int8)
    cal = fit_calibrator(s, y, method=method)
    grid = np.linspace(-50, 150, 2_001)  # beyond the training range on both sides
    p = cal.predict(grid)
    assert p.dtype == np.float32
    assert p.min() >= 0.0 and p.max() <= 1.0
    assert np.all(np.diff(p) >= 0), "probability must not decrease as the score rises"
    inside = (grid >= 10) & (grid <= 90)
    truth = 1 / (1 + np.exp(-(grid[inside] - 50) / 10))
    assert np.abs(p[inside] - truth).max() < (0.05 if method == "sigmoid" else 0.15)
    assert np.isnan(cal.predict(np.array([np.nan, 50.0]))[0])
    if method == "isotonic":  # clip: outside the range the end values hold
        assert p[0] == cal.predict(np.array([s.min()]))[0] and p[-1] == cal.predict(np.array([s.max()]))[0]


def test_calibrator_rejects_bad_input():
    with pytest.raises(ValueError, match="both classes"):
        fit_calibrator(np.arange(10.0), np.zeros(10), "sigmoid")
    with pytest.raises(ValueError, match="method"):
        fit_calibrator(np.arange(10.0), np.arange(10) % 2, "beta")
    with pytest.raises(ValueError, match="non-finite"):
        fit_calibrator(np.array([1.0, np.nan, 3.0, 4.0]), np.array([0, 1, 0, 1]), "isotonic")


def test_fold_metrics_equal_sklearn():
    y = np.array([0, 0, 1, 1])
    p = np.array([0.1, 0.4, 0.35, 0.8])
    m = fold_metrics(y, p)
    assert m["auc"] == pytest.approx(0.75)  # the textbook ROC example
    assert m == {"auc": pytest.approx(roc_auc_score(y, p)), "brier": pytest.approx(brier_score_loss(y, p)),
                 "log_loss": pytest.approx(log_loss(y, p)), "n": 4, "positives": 2}
    rng = np.random.default_rng(3)
    y, p = (rng.uniform(size=500) < 0.3).astype(int), rng.uniform(size=500)
    m = fold_metrics(y, p)
    assert m["auc"] == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert m["brier"] == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    assert m["log_loss"] == pytest.approx(log_loss(y, p), abs=1e-12)
    json.dumps(m)  # plain Python scalars


def test_fold_metrics_one_class_fold():
    p = np.array([0.1, 0.2, 0.3])
    m = fold_metrics(np.zeros(3, dtype=int), p)
    assert m["auc"] is None and m["n"] == 3 and m["positives"] == 0
    assert m["brier"] == pytest.approx(np.mean(p**2))
    assert m["log_loss"] == pytest.approx(-np.mean(np.log(1 - p)))
    m = fold_metrics(np.ones(3, dtype=int), p)
    assert m["auc"] is None and m["positives"] == 3
    assert m["brier"] == pytest.approx(np.mean((1 - p) ** 2))
    assert fold_metrics(np.zeros(0, dtype=int), np.zeros(0)) == {
        "auc": None, "brier": None, "log_loss": None, "n": 0, "positives": 0}
    with pytest.raises(ValueError, match="non-finite"):
        fold_metrics(np.array([0, 1]), np.array([0.2, np.nan]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fold_metrics(np.array([0, 1]), np.array([0.2, 1.5]))


def test_reliability_curve_matches_sklearn_and_ece():
    rng = np.random.default_rng(4)
    p = rng.uniform(size=50_000)
    y = (rng.uniform(size=p.size) < p).astype(np.int8)  # calibrated by construction
    c = reliability_curve(y, p, bins=10)
    t, q = calibration_curve(y, p, n_bins=10)
    np.testing.assert_array_equal(c["prob_true"], t)
    np.testing.assert_array_equal(c["prob_pred"], q)
    assert c["count"].sum() == p.size and c["count"].size == t.size
    assert expected_calibration_error(y, p) < 0.01
    assert expected_calibration_error(y, np.clip(p + 0.2, 0, 1)) > 0.1


# ---------------------------------------------------------------- matrix


def test_regime_one_hot():
    r = np.array([-1, 0, 1, 2, NO_TAG, 5], dtype=np.int8)
    oh = regime_one_hot(r)
    assert oh.dtype == np.float32 and oh.shape == (6, 4)
    expected = np.zeros((6, 4), dtype=np.float32)
    expected[np.arange(4), np.arange(4)] = 1  # bear, consolidate, bull, oscillate
    np.testing.assert_array_equal(oh, expected)
    assert REGIME_COLUMNS == ("regime_bear", "regime_consolidate", "regime_bull", "regime_oscillate")
    np.testing.assert_array_equal(regime_one_hot(np.array([1.0, np.nan])), [[0, 0, 1, 0], [0, 0, 0, 0]])
    masked = np.ma.array([2, 2], mask=[False, True], dtype=np.int8)
    np.testing.assert_array_equal(regime_one_hot(masked), [[0, 0, 0, 1], [0, 0, 0, 0]])
    np.testing.assert_array_equal(regime_one_hot(np.array([0, None], dtype=object)), [[0, 1, 0, 0], [0, 0, 0, 0]])


def test_build_meta_matrix_keeps_missing_scores_missing():
    spec = np.array([[10, 20], [np.nan, 30], [40, 50]], dtype=np.float64)
    X, names = build_meta_matrix(spec, np.array([0.5, 0.6, np.nan]), np.array([1, -1, NO_TAG], np.int8))
    assert names == ["spec_0", "spec_1", "lstm_score", *REGIME_COLUMNS]
    assert X.dtype == np.float32 and X.shape == (3, 7) and X.flags.c_contiguous
    np.testing.assert_array_equal(complete_rows(X), [True, False, False])
    np.testing.assert_array_equal(X[0], [10, 20, 0.5, 0, 0, 1, 0])
    X2, names2 = build_meta_matrix(spec[:, :1], specialist_names=["a"])
    assert names2 == ["a"] and X2.shape == (3, 1)
    with pytest.raises(ValueError, match="lstm_score"):
        build_meta_matrix(spec, np.zeros(2))
    with pytest.raises(ValueError, match="names"):
        build_meta_matrix(spec, specialist_names=["a"])


# ---------------------------------------------------------------- model


def test_meta_model_beats_constant_and_is_calibrated(problem):
    model, yt = problem["model"], problem["yt"]
    p = model.predict_proba(problem["Xt"])
    assert p.dtype == np.float32 and p.shape == yt.shape and p.min() >= 0 and p.max() <= 1
    m, oracle = fold_metrics(yt, p), fold_metrics(yt, problem["pt"])
    constant = fold_metrics(yt, np.full(yt.shape, problem["y"].mean()))
    assert m["auc"] > 0.7
    assert m["brier"] < constant["brier"] - 0.03
    assert m["brier"] < oracle["brier"] + 0.003  # close to the true probabilities
    assert expected_calibration_error(yt, p) < 0.05
    assert model.feature_names == problem["names"]
    assert model.info["base"] == "LogisticRegression" and model.info["c_search"] == "once" and len(model.info["folds"]) == 5
    coef = model.info["folds"][0]["coef"]  # standardised coefficients: signal > noise
    assert coef["spec_mr"] > 0.5 and coef["spec_trend"] < -0.5 and abs(coef["spec_noise_a"]) < 0.1


def test_incomplete_rows_predict_nan_and_are_refused_in_training(problem):
    model, Xt = problem["model"], problem["Xt"][:100].copy()
    clean = model.predict_proba(Xt)
    Xt[[3, 7], [0, 4]] = [np.nan, np.inf]
    p = model.predict_proba(Xt)
    assert np.isnan(p[[3, 7]]).all()
    keep = complete_rows(Xt)
    np.testing.assert_array_equal(p[keep], clean[keep])
    with pytest.raises(ValueError, match="usable_rows"):
        train_meta(Xt, problem["yt"][:100])
    with pytest.raises(ValueError, match=r"\[n, 9\]"):
        model.predict_proba(Xt[:, :5])


def test_train_meta_with_explicit_splits():
    X, y, _, names = make_problem(3_000, seed=5)
    blocks = np.array_split(np.arange(len(y)), 3)  # blocked, time-ordered folds
    splits = [(np.setdiff1d(np.arange(len(y)), b), b) for b in blocks]
    m = train_meta(X, y, feature_names=names, cv=splits, Cs=None, calibration="sigmoid")
    assert m.info["cv"] == {"kind": "splits", "n_splits": 3} and m.info["base"] == "LogisticRegression"
    assert len(m.estimator.calibrated_classifiers_) == 3
    assert fold_metrics(y, m.predict_proba(X))["auc"] > 0.7
    purged = pytest.importorskip("domain.learning.purged_cv")
    pos = np.arange(len(y))
    m = train_meta(X, y, feature_names=names, cv=purged.PurgedKFold(3, t0=pos, t1=pos + 7, embargo=2))
    assert m.info["cv"] == {"kind": "PurgedKFold", "n_splits": 3}


def test_calibration_folds_in_processes_give_the_same_model_bit_for_bit():
    X, y, _, names = make_problem(2_000, seed=9)
    splits = [(np.setdiff1d(np.arange(len(y)), b), b) for b in np.array_split(np.arange(len(y)), 3)]
    alone = train_meta(X, y, feature_names=names, cv=splits, Cs=4, inner_cv=3)
    spread = train_meta(X, y, feature_names=names, cv=splits, Cs=4, inner_cv=3, fold_jobs=2)
    np.testing.assert_array_equal(alone.predict_proba(X), spread.predict_proba(X))
    assert alone.info["folds"] == spread.info["folds"]


def test_train_meta_rejects_bad_arguments(problem):
    X, y = problem["X"][:200], problem["y"][:200]
    with pytest.raises(ValueError, match="model"):
        train_meta(X, y, model="xgboost")
    with pytest.raises(ValueError, match="calibration"):
        train_meta(X, y, calibration="beta")
    with pytest.raises(ValueError, match="one class"):
        train_meta(X, np.zeros_like(y))


def test_save_load_round_trip(problem, tmp_path):
    model = problem["model"]
    npz, side = tmp_path / "models" / "meta_h7.npz", tmp_path / "models" / "meta_h7.json"
    meta = save_meta(model, npz, side)
    assert sorted(p.name for p in npz.parent.iterdir()) == ["meta_h7.json", "meta_h7.npz"]  # no temp files
    loaded = load_meta(npz)
    Xt = problem["Xt"]
    np.testing.assert_array_equal(loaded.predict_proba(Xt), model.predict_proba(Xt))
    assert loaded.feature_names == model.feature_names and loaded.window == problem["window"]
    sidecar = json.loads(side.read_text())
    assert sidecar == json.loads(json.dumps(meta))
    assert sidecar["features"] == problem["names"] and sidecar["n_features"] == 9
    assert sidecar["window"] == problem["window"]
    assert {"python", "numpy", "scikit-learn", "joblib"} <= set(sidecar["versions"])
    assert sidecar["kind"] == "logistic" and sidecar["calibration"] == "isotonic" and sidecar["npz"] == npz.name
    assert sidecar["format"] == "tradelab.meta/2" and sidecar["methods"] == ["isotonic"] * 5
    import hashlib

    assert sidecar["sha256"] == hashlib.sha256(npz.read_bytes()).hexdigest()
    with np.load(npz, allow_pickle=False) as arrays:  # plain arrays: nothing in the file can run code
        assert all(arrays[k].dtype != object for k in arrays.files)
    with pytest.raises(ValueError, match="other.npz is not a tradelab.meta/2 meta model"):
        meta_from_arrays({}, {"not": "a model"}, tmp_path / "other.npz")


def test_calibration_png(problem, tmp_path):
    p = problem["model"].predict_proba(problem["Xt"])
    out = calibration_png(problem["yt"], p, tmp_path / "plots" / "calibration.png", title="meta h7")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
    assert [f.name for f in out.parent.iterdir()] == ["calibration.png"]


# ---------------------------------------------------------------- NumPy inference path


def _no_sklearn(*_, **__):
    raise AssertionError("the sklearn path was used")


def _sklearn_spy(model, monkeypatch) -> list:
    """Count the calls that reach the (copied) estimator's sklearn predict_proba."""
    calls, real = [], model.estimator.predict_proba

    def spy(X):
        calls.append(X.shape)
        return real(X)

    monkeypatch.setattr(model.estimator, "predict_proba", spy)
    return calls


@pytest.fixture(scope="module")
def sigmoid_model():
    X, y, _, names = make_problem(5_000, seed=8)
    return train_meta(X, y, feature_names=names, calibration="sigmoid")


@pytest.mark.parametrize("calibration", ["isotonic", "sigmoid"])
def test_numpy_path_equals_sklearn(problem, sigmoid_model, calibration, monkeypatch):
    model = copy.deepcopy(problem["model"] if calibration == "isotonic" else sigmoid_model)
    folds = _logistic_folds(model.estimator)
    assert len(folds) == 5 and {f.method for f in folds} == {calibration}
    Xt = problem["Xt"][:2_000].copy()
    Xt[:20, 0], Xt[20:40, 1] = 1e4, -1e4  # decisions far outside the isotonic thresholds, both ways
    X64 = Xt.astype(np.float64)
    want = model.estimator.predict_proba(X64)[:, 1]  # sklearn, float64
    if calibration == "isotonic":  # the clip is exercised on both sides in every copy
        for f in folds:
            d = f.decision(X64)
            assert (d < f.xs[0]).any() and (d > f.xs[-1]).any()
    monkeypatch.setattr(model.estimator, "predict_proba", _no_sklearn)  # from here on: NumPy only
    got = model._proba64(X64)
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    for i in (0, 25, 1_000):  # a single row
        np.testing.assert_allclose(model._proba64(X64[i:i + 1]), want[i:i + 1], rtol=0, atol=1e-12)
        p1 = model.predict_proba(Xt[i:i + 1])
        assert p1.dtype == np.float32 and p1.shape == (1,)
        np.testing.assert_allclose(p1, want[i:i + 1].astype(np.float32), rtol=0, atol=1e-7)
    p = model.predict_proba(Xt)
    assert p.dtype == np.float32 and p.shape == (2_000,)
    np.testing.assert_allclose(p, want.astype(np.float32), rtol=0, atol=1e-7)
    with pytest.raises(ValueError, match=r"\[n, 9\]"):
        model.predict_proba(Xt[0])  # 1-D: the same shape validation as before


def test_numpy_path_keeps_nan_rows(problem, monkeypatch):
    model = copy.deepcopy(problem["model"])
    Xt = problem["Xt"][:50].copy()
    want = model.estimator.predict_proba(Xt.astype(np.float64))[:, 1].astype(np.float32)
    Xt[[3, 7, 9], [0, 4, 8]] = [np.nan, np.inf, -np.inf]
    monkeypatch.setattr(model.estimator, "predict_proba", _no_sklearn)
    p = model.predict_proba(Xt)
    keep = complete_rows(Xt)
    assert np.isnan(p[~keep]).all() and np.isfinite(p[keep]).all() and (~keep).sum() == 3
    np.testing.assert_allclose(p[keep], want[keep], rtol=0, atol=1e-7)
    assert np.isnan(model.predict_proba(Xt[3:4])).all()  # one incomplete row: nothing computed
    assert model.predict_proba(Xt[:0]).shape == (0,)


def test_numpy_path_constant_isotonic_copy(problem):
    model = copy.deepcopy(problem["model"])
    cal = model.estimator.calibrated_classifiers_[1].calibrators[0]
    cal.fit(np.array([0.5, 0.5]), np.array([0.3, 0.3]))  # a one-threshold (constant) calibrator
    assert cal.X_thresholds_.size == 1
    X64 = problem["Xt"][:500].astype(np.float64)
    want = model.estimator.predict_proba(X64)[:, 1]
    np.testing.assert_allclose(model._proba64(X64), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["lightgbm", "something_else"])
def test_other_kinds_use_sklearn(problem, monkeypatch, kind):
    model = copy.deepcopy(problem["model"])
    Xt = problem["Xt"][:30]
    fast = model.predict_proba(Xt)
    calls = _sklearn_spy(model, monkeypatch)
    assert model.predict_proba(Xt).dtype == np.float32 and calls == []  # logistic: NumPy
    monkeypatch.setattr(model, "kind", kind)
    p = model.predict_proba(Xt)
    assert calls == [(30, 9)]
    np.testing.assert_allclose(p, fast, rtol=0, atol=1e-7)


def test_unrecognised_estimator_falls_back_to_sklearn(problem, monkeypatch):
    class Stub:  # anything with predict_proba: not a CalibratedClassifierCV
        def predict_proba(self, X):
            return np.column_stack([np.full(len(X), 0.75), np.full(len(X), 0.25)])

    names = problem["names"]
    model = MetaModel(Stub(), names)
    np.testing.assert_array_equal(model.predict_proba(problem["Xt"][:4]), np.full(4, 0.25, np.float32))
    assert model._fast == (model.estimator, None)  # extraction failed once, remembered
    # one calibrated copy the extraction does not cover: the whole model goes to sklearn
    model = copy.deepcopy(problem["model"])
    model.estimator.calibrated_classifiers_[2].calibrators[0].out_of_bounds = "nan"  # no clip
    with pytest.raises(NotImplementedError, match="out_of_bounds='clip'"):
        _logistic_folds(model.estimator)
    calls = _sklearn_spy(model, monkeypatch)
    want = problem["model"].predict_proba(problem["Xt"][:3])  # in range: the clip changes nothing
    np.testing.assert_array_equal(model.predict_proba(problem["Xt"][:3]), want)
    assert len(calls) == 1 and model._fast[1] is None
    other = copy.deepcopy(problem["model"])
    other.estimator.calibrated_classifiers_[0].method = "temperature"
    with pytest.raises(NotImplementedError, match="temperature"):
        _logistic_folds(other.estimator)
    # replacing the estimator re-extracts (the cache is per estimator object)
    model.estimator = copy.deepcopy(problem["model"].estimator)
    monkeypatch.setattr(model.estimator, "predict_proba", _no_sklearn)
    np.testing.assert_array_equal(model.predict_proba(problem["Xt"][:3]), problem["model"].predict_proba(
        problem["Xt"][:3]))


def test_fast_cache_is_not_pickled(problem, tmp_path):
    model = copy.deepcopy(problem["model"])
    Xt = problem["Xt"][:100]
    p = model.predict_proba(Xt)
    assert model._fast is not None and model._fast[1] is not None
    clone = pickle.loads(pickle.dumps(model))
    assert "_fast" not in clone.__dict__ and clone._fast is None
    np.testing.assert_array_equal(clone.predict_proba(Xt), p)
    save_meta(model, tmp_path / "m.npz")
    loaded = load_meta(tmp_path / "m.npz")
    assert loaded._fast is None
    np.testing.assert_array_equal(loaded.predict_proba(Xt), p)


# ---------------------------------------------------------------- optional extras


def test_lightgbm_missing_names_the_extra(monkeypatch, problem):
    monkeypatch.setitem(sys.modules, "lightgbm", None)  # import lightgbm -> ImportError
    with pytest.raises(ImportError, match="pip install lightgbm"):
        train_meta(problem["X"][:200], problem["y"][:200], model="lightgbm")


def test_lightgbm_meta_model(tmp_path):  # lightgbm is in the dev extra: this runs, never skips
    X, y, _, names = make_problem(4_000, seed=6)
    Xt, yt, _, _ = make_problem(4_000, seed=7)
    m = train_meta(X, y, feature_names=names, model="lightgbm", lgbm_params={"n_estimators": 100})
    p = m.predict_proba(Xt)
    assert p.dtype == np.float32 and fold_metrics(yt, p)["auc"] > 0.7
    assert "lightgbm" in m.versions and m.info["base"] == "LGBMClassifier"
    with pytest.raises(NotImplementedError, match="logistic"):
        export_onnx(m, tmp_path / "m.onnx")


def test_onnx_missing_names_the_extra(monkeypatch, problem, tmp_path):
    monkeypatch.setitem(sys.modules, "onnx", None)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ImportError, match="pip install onnx onnxruntime"):
        export_onnx(problem["model"], tmp_path / "m.onnx")
    with pytest.raises(ImportError, match="pip install onnx onnxruntime"):
        onnx_predict(tmp_path / "m.onnx", problem["Xt"])


@pytest.mark.parametrize("calibration", ["isotonic", "sigmoid"])
def test_onnx_matches_sklearn(problem, tmp_path, calibration):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import onnx

    if calibration == "isotonic":
        model = problem["model"]
    else:
        X, y, _, names = make_problem(5_000, seed=8)
        model = train_meta(X, y, feature_names=names, calibration=calibration, Cs=None)
    Xt = problem["Xt"][:5_000].copy()
    Xt[:20, 0], Xt[20:40, 1], Xt[40, 2] = 1e4, -1e4, np.nan  # out of range both ways, a missing score
    path = export_onnx(model, tmp_path / "meta.onnx")
    got, want = onnx_predict(path, Xt), model.predict_proba(Xt)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0, equal_nan=True)
    props = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert json.loads(props["features"]) == model.feature_names
    assert "scikit-learn" in json.loads(props["versions"])
