"""Meta model over specialist scores (+ the LSTM score + the market regime): arrays in,
a calibrated P(label = 1) out.

Matrix (`build_meta_matrix`)
    columns: the k specialist scores, then the LSTM score (when given), then four regime
    one-hot columns in the order bear (-1), consolidate (0), bull (1), oscillate (2), then
    the m extra feature columns when given (`features`, [n, m], named by `feature_columns`:
    the feature registry's FEATURE_NAMES for settings `meta.inputs: features+specialists`).
    A model records its column names, so a caller rebuilds its matrix from those names.
    The seed's "condition meta weights by regime" is done the simple way: one-hot regimes in
    X shift the intercept per regime (no per-regime models, no interactions). A missing
    regime (kernels.regime.NO_TAG, NaN, a masked entry, anything outside -1..2) is all zeros.
    X is float32; the estimator is fitted and queried on those values cast to float64, so
    its coefficients and arithmetic are float64 (and an ONNX copy can repeat them exactly).
    Probabilities come back float32.

Inference (`MetaModel.predict_proba`): for model='logistic' the fitted parameters of every
    calibrated copy (`logistic_folds`, the same extraction export_onnx uses) are evaluated
    directly in NumPy float64 with sklearn's own operations (scale, X @ coef.T + b, np.interp
    after the isotonic clip or expit(-(a d + b)), the > 1 clip, the mean over copies), so it
    equals CalibratedClassifierCV.predict_proba[:, 1] bit for bit in practice at ~1/100 of
    the per-call cost (sklearn's input validation dominates a one-row call). The parameters
    are extracted once per estimator, cached on the instance and never pickled. LightGBM
    models, or an estimator whose structure the extraction does not recognise, go through
    sklearn.

Missing scores: NOT imputed. A NaN (or inf) specialist or LSTM score stays NaN in X.
    `complete_rows(X)` is the mask of usable rows: the caller trains on X[mask], and
    `MetaModel.predict_proba` returns NaN for incomplete rows (so outputs stay aligned with
    the input rows and nothing is invented). `train_meta` refuses non-finite X.
    Imputing 0 + an indicator column was rejected: a 0..100 score imputed at 0 is a strong
    (false) signal and an indicator per specialist doubles the columns for a warm-up effect.

Model (`train_meta`)
    logistic (default): CalibratedClassifierCV(Pipeline(StandardScaler, LogisticRegression(C)),
        method="isotonic", cv=5), L2, lbfgs. c_search="once" (default): C is chosen ONCE per
        fit, by Pipeline(StandardScaler, LogisticRegressionCV(Cs=10, scoring="neg_log_loss"))
        over the same `cv` splits (purged when the caller passes purged splits) on all the
        training rows (sklearn walks the C path with warm starts); every calibrated copy
        then fits LogisticRegression(C=that C). 10 Cs x 5 folds + 5 fits, about 4x less work
        than c_search="per_fold": the nested search the seed described (each of the 5
        calibration folds runs its own LogisticRegressionCV(Cs, cv=inner_cv=5), 255 fits),
        kept for comparison (benchmarks/bench_yearly.py). Cs=None: a plain
        LogisticRegression(C=1.0), no search. The scaler matters: specialist scores live on
        0..100, the LSTM score on 0..1.
    hist_gbm: the same calibration around scikit-learn's HistGradientBoostingClassifier
        (histogram trees, no extra dependency; HIST_GBM_DEFAULTS: 200 shallow trees, learning
        rate 0.05, at least 100 rows a leaf, no early stopping, so deterministic per seed;
        one OpenMP thread unless n_jobs says otherwise). The non-linear model that is always
        there: it can use an interaction or a U-shape that the logistic model cannot
        (tests/domain/test_planted_signal.py plants one).
    lightgbm (in the dev extra; the `lightgbm` extra alone): the same calibration around an LGBMClassifier (histogram
        trees, GOSS sampling, deterministic, one thread unless n_jobs says otherwise).
    blas_threads=1 (default) limits BLAS threads during the fit: the lbfgs steps on ~10
        columns are too small for threads, which only contend (3x slower on 2 busy cores);
        None leaves BLAS alone. Parallel folds are n_jobs (processes via joblib); fold_jobs
        runs only the calibration folds in processes (each fit as in process: same model).
    cv: an int (StratifiedKFold, NOT shuffled: folds are blocks of rows in the order given)
        or any splitter / list of (train, test) index pairs, e.g. kernels.learn.purged_cv.
        PurgedKFold for time-ordered rows whose labels overlap. With ensemble calibration
        (sklearn's default) the model averages the cv calibrated copies.

Persistence: `save_meta` writes a joblib payload (a plain dict, not this module's class, so
a refactor here does not break old files) and a JSON sidecar (features, versions, training
window, fold coefficients, and the payload's sha256), each atomically (temp file in the same
folder, os.replace). This module never unpickles: `domain.learning.meta.load_meta` verifies
the file against the recorded sha256 (resources.verified_files), then `meta_from_payload`
rebuilds the model and warns when the scikit-learn version differs from the one that trained.

ONNX (optional extra: `onnx` to export, `onnxruntime` to run): `export_onnx` writes the
logistic model (every calibrated copy: scaler, logistic decision, isotonic interpolation or
sigmoid; then their mean) as a hand-built float64 graph with float32 input and output;
`onnx_predict` runs it with onnxruntime on CPU. It matches `MetaModel.predict_proba` to
float32 precision. skl2onnx is not used: it mis-converts this model (see export_onnx).
LightGBM models are not exported.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import io
import json
import numbers
import os
import platform
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import joblib
import numpy as np
import sklearn
from scipy.special import expit
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from kernels.learn.calibration import fold_metrics, reliability_curve
from kernels.regime import BEAR, BULL, CONSOLIDATE, OSCILLATE

REGIME_VALUES = (BEAR, CONSOLIDATE, BULL, OSCILLATE)  # -1, 0, 1, 2
REGIME_COLUMNS = ("regime_bear", "regime_consolidate", "regime_bull", "regime_oscillate")
LSTM_COLUMN = "lstm_score"
MODELS = ("logistic", "hist_gbm", "lightgbm")
C_SEARCHES = ("once", "per_fold")  # train_meta: C chosen once per fit, or in every calibration fold
CALIBRATIONS = {"isotonic": "isotonic", "sigmoid": "sigmoid", "platt": "sigmoid"}
PAYLOAD_FORMAT = "tradelab.meta/1"
LIGHTGBM_HINT = "pip install lightgbm (the project's optional extra: pip install 'tradelab[lightgbm]')"
ONNX_HINT = "pip install onnx onnxruntime (the project's optional extra: pip install 'tradelab[onnx]')"
HIST_GBM_DEFAULTS = {
    "max_iter": 200,
    "learning_rate": 0.05,
    "max_leaf_nodes": 15,
    "min_samples_leaf": 100,
    "l2_regularization": 1.0,
    "early_stopping": False,
}
LIGHTGBM_DEFAULTS = {
    "n_estimators": 300,
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_child_samples": 100,
    "reg_lambda": 1.0,
    "data_sample_strategy": "goss",
    "deterministic": True,
    "force_row_wise": True,
    "verbose": -1,
}


# ---------------------------------------------------------------- matrix


def regime_one_hot(regime) -> np.ndarray:
    """float32 [n, 4]: columns bear, consolidate, bull, oscillate; missing -> all zeros."""
    if isinstance(regime, np.ma.MaskedArray):
        r = np.ma.filled(regime.astype(np.float64), np.nan)
    else:
        r = np.asarray(regime)
    if r.ndim != 1:
        raise ValueError(f"regime must be 1-D, got shape {r.shape}")
    out = np.zeros((r.shape[0], len(REGIME_VALUES)), dtype=np.float32)
    for j, v in enumerate(REGIME_VALUES):
        out[:, j] = r == v  # NaN, None and NO_TAG never equal a regime
    return out


def build_meta_matrix(specialist_scores, lstm_score=None, regime=None, *,
                      specialist_names: Sequence[str] | None = None, features=None,
                      feature_columns: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """(X float32 [n, k + lstm + 4 + m], feature names). NaN scores and features stay NaN
    (see complete_rows). `features` [n, m] (any float dtype, cast to float32) are appended
    last, named by `feature_columns` (default f_0..f_{m-1})."""
    s = np.asarray(specialist_scores, dtype=np.float32)
    if s.ndim == 1:
        s = s.reshape(-1, 1)
    if s.ndim != 2:
        raise ValueError(f"specialist_scores must be [n, k], got shape {s.shape}")
    n, k = s.shape
    names = [f"spec_{i}" for i in range(k)] if specialist_names is None else [str(x) for x in specialist_names]
    if len(names) != k:
        raise ValueError(f"{len(names)} specialist names for {k} score columns")
    blocks = [s]
    if lstm_score is not None:
        lstm = np.asarray(lstm_score, dtype=np.float32)
        if lstm.shape != (n,):
            raise ValueError(f"lstm_score must have shape ({n},), got {lstm.shape}")
        blocks.append(lstm.reshape(-1, 1))
        names.append(LSTM_COLUMN)
    if regime is not None:
        oh = regime_one_hot(regime)
        if oh.shape[0] != n:
            raise ValueError(f"regime has {oh.shape[0]} rows, scores have {n}")
        blocks.append(oh)
        names.extend(REGIME_COLUMNS)
    if features is not None:
        f = np.asarray(features, dtype=np.float32)
        if f.ndim != 2 or f.shape[0] != n:
            raise ValueError(f"features must be [{n}, m], got shape {f.shape}")
        cols = [f"f_{i}" for i in range(f.shape[1])] if feature_columns is None else [str(c) for c in feature_columns]
        if len(cols) != f.shape[1]:
            raise ValueError(f"{len(cols)} feature column names for {f.shape[1]} feature columns")
        blocks.append(f)
        names.extend(cols)
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate feature names: {names}")
    return np.ascontiguousarray(np.concatenate(blocks, axis=1), dtype=np.float32), names


def complete_rows(X) -> np.ndarray:
    """bool [n]: rows whose every feature is finite (the rows a model can use)."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    return np.isfinite(X).all(axis=1)


# ---------------------------------------------------------------- fitted logistic parameters


class LogisticFold(NamedTuple):
    """One calibrated copy of a logistic CalibratedClassifierCV, as float64 arrays.

    decision d = ((x - mean) / scale) @ coef_t + intercept   (mean / scale None: step skipped)
    isotonic:  P = interp(clip(d, x_min, x_max), xs, ys)      (IsotonicRegression, clip)
    sigmoid:   P = expit(-(a * d + b))                        (_SigmoidCalibration)
    """

    mean: np.ndarray | None  # [k] StandardScaler.mean_ (None when with_mean=False or no scaler)
    scale: np.ndarray | None  # [k] StandardScaler.scale_
    coef_t: np.ndarray  # [k, 1] LogisticRegression.coef_.T (a transposed view, as sklearn uses it)
    intercept: np.ndarray  # [1]
    method: str  # "isotonic" | "sigmoid"
    xs: np.ndarray | None = None  # isotonic X_thresholds_ (increasing)
    ys: np.ndarray | None = None  # isotonic y_thresholds_
    x_min: float = -np.inf  # isotonic X_min_ / X_max_ (the clip range)
    x_max: float = np.inf
    a: float = 0.0  # sigmoid a_ / b_
    b: float = 0.0

    def decision(self, X64: np.ndarray) -> np.ndarray:
        """float64 [n]: Pipeline(StandardScaler, LogisticRegression).decision_function, same ops."""
        z = X64
        if self.mean is not None:
            z = z - self.mean
        if self.scale is not None:
            z = z / self.scale
        return (z @ self.coef_t + self.intercept).reshape(-1)

    def proba(self, X64: np.ndarray) -> np.ndarray:
        """float64 [n]: this copy's _CalibratedClassifier.predict_proba(X)[:, 1]."""
        d = self.decision(X64)
        if self.method == "sigmoid":
            p = expit(-(self.a * d + self.b))
        else:  # np.interp is what scipy's interp1d (IsotonicRegression.f_) runs for float64 data
            p = np.interp(np.clip(d, self.x_min, self.x_max), self.xs, self.ys)
        p[(1.0 < p) & (p <= 1.0 + 1e-5)] = 1.0  # sklearn's "minimally exceeds 1.0" fix
        return p


def logistic_folds(estimator) -> list[LogisticFold]:
    """The parameters of every calibrated copy of a fitted binary logistic
    CalibratedClassifierCV (Pipeline(StandardScaler, LogisticRegression[CV]) or a bare
    LogisticRegression, isotonic (clip) or sigmoid calibration). Raises NotImplementedError
    for anything else. Shared by export_onnx and MetaModel's NumPy path."""
    copies = getattr(estimator, "calibrated_classifiers_", None)
    if not copies:
        raise NotImplementedError(f"expected a fitted CalibratedClassifierCV, got {type(estimator).__name__}")
    folds = []
    for cc in copies:
        est, mean, scale = cc.estimator, None, None
        if isinstance(est, Pipeline):
            steps = list(est.named_steps.values())
            if len(steps) != 2 or not isinstance(steps[0], StandardScaler):
                raise NotImplementedError(f"expected Pipeline(StandardScaler, logistic), got {est}")
            sc, est = steps
            if sc.with_mean:
                mean = np.asarray(sc.mean_, np.float64)
            if sc.with_std:
                scale = np.asarray(sc.scale_, np.float64)
        if (not isinstance(est, (LogisticRegression, LogisticRegressionCV)) or np.ndim(est.coef_) != 2
                or est.coef_.shape[0] != 1 or len(getattr(cc, "classes", ())) != 2 or len(cc.calibrators) != 1):
            raise NotImplementedError(f"expected a binary logistic regression, got {est}")
        coef_t = np.asarray(est.coef_, np.float64).T
        intercept = np.asarray(est.intercept_, np.float64).reshape(1)
        cal = cc.calibrators[0]
        if cc.method == "sigmoid":
            folds.append(LogisticFold(mean, scale, coef_t, intercept, "sigmoid", a=cal.a_, b=cal.b_))
        elif cc.method == "isotonic":
            if getattr(cal, "out_of_bounds", None) != "clip":
                raise NotImplementedError(f"covers isotonic calibration with out_of_bounds='clip', not {cal}")
            xs, ys = np.asarray(cal.X_thresholds_, np.float64), np.asarray(cal.y_thresholds_, np.float64)
            if xs.ndim != 1 or xs.shape != ys.shape or xs.size == 0:
                raise NotImplementedError(f"unexpected isotonic thresholds: shapes {xs.shape}, {ys.shape}")
            folds.append(LogisticFold(mean, scale, coef_t, intercept, "isotonic", xs=xs, ys=ys,
                                      x_min=float(cal.X_min_), x_max=float(cal.X_max_)))
        else:
            raise NotImplementedError(f"covers isotonic and sigmoid calibration, not {cc.method!r}")
    return folds


def _logistic_proba(folds: Sequence[LogisticFold], X64: np.ndarray) -> np.ndarray:
    """float64 [n]: CalibratedClassifierCV.predict_proba(X64)[:, 1] (the mean over the copies)."""
    total = np.zeros(X64.shape[0], dtype=np.float64)
    for fold in folds:
        total += fold.proba(X64)
    total /= len(folds)
    return total


# ---------------------------------------------------------------- model


@dataclass
class MetaModel:
    estimator: Any  # fitted CalibratedClassifierCV
    feature_names: list[str]
    kind: str = "logistic"
    calibration: str = "isotonic"
    window: dict = field(default_factory=dict)  # the caller's training window metadata
    versions: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)  # n_train, positives, cv, seed, fold coefficients

    # (estimator, folds or None): the extracted logistic parameters, built on first use for
    # that estimator object. A class attribute, not a field; dropped by __getstate__.
    _fast = None

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_fast", None)
        return state

    def _fast_folds(self) -> list[LogisticFold] | None:
        """The logistic parameters for the NumPy path, or None (then sklearn predicts)."""
        if self.kind != "logistic":
            return None
        cached = self._fast
        if cached is None or cached[0] is not self.estimator:
            try:
                folds = logistic_folds(self.estimator)
                if any(f.coef_t.shape[0] != self.n_features for f in folds):
                    raise NotImplementedError("coefficient count differs from the feature names")
            except (NotImplementedError, AttributeError, TypeError, ValueError):
                folds = None
            cached = self._fast = (self.estimator, folds)
        return cached[1]

    def predict_proba(self, X) -> np.ndarray:
        """float32 [n] P(y = 1); NaN for rows with a non-finite feature."""
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must be [n, {self.n_features}] ({self.feature_names}), got shape {X.shape}")
        out = np.full(X.shape[0], np.nan, dtype=np.float32)
        ok = complete_rows(X)
        if ok.any():  # float64 in: sklearn then computes in float64 (as it trained), see export_onnx
            out[ok] = self._proba64(X[ok].astype(np.float64))
        return out

    def _proba64(self, X64: np.ndarray) -> np.ndarray:
        """float64 [n] P(y = 1) of complete float64 rows: the NumPy path when it applies."""
        folds = self._fast_folds()
        if folds is None:
            return self.estimator.predict_proba(X64)[:, 1]
        return _logistic_proba(folds, X64)

    def metadata(self) -> dict:
        """The JSON sidecar's content."""
        return {
            "format": PAYLOAD_FORMAT,
            "kind": self.kind,
            "calibration": self.calibration,
            "features": list(self.feature_names),
            "n_features": self.n_features,
            "window": self.window,
            "versions": self.versions,
            **self.info,
        }


def library_versions(*extra: str) -> dict[str, str]:
    out = {"python": platform.python_version(), "numpy": np.__version__,
           "scikit-learn": sklearn.__version__, "joblib": joblib.__version__}
    for name in extra:
        with contextlib.suppress(ImportError):
            out[name] = __import__(name).__version__
    return out


def _logistic_cv(Cs, cv, seed: int, n_jobs) -> LogisticRegressionCV:
    kw: dict[str, Any] = {}
    params = inspect.signature(LogisticRegressionCV).parameters
    if "use_legacy_attributes" in params:  # scikit-learn >= 1.8: pin the new defaults now
        kw.update(l1_ratios=(0.0,), use_legacy_attributes=False)
    return LogisticRegressionCV(Cs=Cs, cv=cv, scoring="neg_log_loss", max_iter=1000, random_state=seed,
                                n_jobs=n_jobs, **kw)


def _logistic(Cs, inner_cv, seed: int, n_jobs, C: float = 1.0) -> Pipeline:
    """Pipeline(StandardScaler, LogisticRegression(C)) for Cs=None, else with a nested
    LogisticRegressionCV(Cs, cv=inner_cv) (c_search="per_fold")."""
    if Cs is None:
        lr = LogisticRegression(C=C, max_iter=1000, random_state=seed)
    else:
        lr = _logistic_cv(Cs, inner_cv, seed, n_jobs)
    return Pipeline([("scale", StandardScaler()), ("logit", lr)])


def _search_C(X64: np.ndarray, y: np.ndarray, Cs, cv, seed: int, n_jobs) -> float:
    """The C of the best mean validation log loss over the `cv` splits (c_search="once")."""
    search = Pipeline([("scale", StandardScaler()), ("logit", _logistic_cv(Cs, cv, seed, n_jobs))])
    search.fit(X64, y)
    return float(np.ravel(search.named_steps["logit"].C_)[0])


def _lightgbm(seed: int, n_jobs, params: dict | None):
    try:
        import lightgbm
    except ImportError as e:
        raise ImportError(f"model='lightgbm' needs LightGBM, which is not installed: {LIGHTGBM_HINT}") from e
    kw = {**LIGHTGBM_DEFAULTS, "random_state": seed, "n_jobs": 1 if n_jobs is None else n_jobs, **(params or {})}
    return lightgbm.LGBMClassifier(**kw)


def _hist_gbm(seed: int, params: dict | None):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(**{**HIST_GBM_DEFAULTS, "random_state": seed, **(params or {})})


def _fold_summary(est: CalibratedClassifierCV, names: list[str]) -> list[dict]:
    """Per calibrated copy: the chosen C and the standardised coefficients (logistic only)."""
    out = []
    for cc in getattr(est, "calibrated_classifiers_", []):
        inner = getattr(cc, "estimator", None)
        if not isinstance(inner, Pipeline):
            continue
        lr = inner.named_steps["logit"]
        C = getattr(lr, "C_", getattr(lr, "C", None))
        out.append({
            "C": float(np.ravel(C)[0]) if C is not None else None,
            "intercept": float(np.ravel(lr.intercept_)[0]),
            "coef": {n: float(c) for n, c in zip(names, np.ravel(lr.coef_))},
        })
    return out


def _cv_description(cv, X, y) -> dict:
    if isinstance(cv, int):
        return {"kind": "StratifiedKFold", "n_splits": cv, "shuffle": False}
    if isinstance(cv, list):
        return {"kind": "splits", "n_splits": len(cv)}
    return {"kind": type(cv).__name__, "n_splits": int(cv.get_n_splits(X, y))}


def train_meta(X, y, *, model: str = "logistic", calibration: str = "isotonic", cv=5, seed: int = 0,
               feature_names: Sequence[str] | None = None, window: dict | None = None,
               Cs: int | Sequence[float] | None = 10, inner_cv: int = 5, n_jobs: int | None = None,
               blas_threads: int | None = 1, lgbm_params: dict | None = None,
               hist_gbm_params: dict | None = None, fold_jobs: int | None = None,
               c_search: str = "once") -> MetaModel:
    """Fit the calibrated meta model on complete rows (see the module docstring)."""
    if c_search not in C_SEARCHES:
        raise ValueError(f"c_search must be one of {C_SEARCHES}, got {c_search!r}")
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {tuple(CALIBRATIONS)}, got {calibration!r}")
    X = np.ascontiguousarray(X, dtype=np.float32)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y must be binary 0/1")
    y = y.astype(np.int8)
    if np.unique(y).size < 2:
        raise ValueError("y has one class: nothing to learn")
    ok = complete_rows(X)
    if not ok.all():
        raise ValueError(f"X has {int((~ok).sum())} rows with non-finite values: train on X[complete_rows(X)]")
    names = [f"x{i}" for i in range(X.shape[1])] if feature_names is None else [str(f) for f in feature_names]
    if len(names) != X.shape[1]:
        raise ValueError(f"{len(names)} feature names for {X.shape[1]} columns")
    if isinstance(cv, numbers.Integral):
        cv = int(cv)
    elif not hasattr(cv, "split"):
        cv = [(np.asarray(tr), np.asarray(te)) for tr, te in cv]  # materialise a generator once

    omp_threads = None
    chosen_C = None
    if model == "logistic" and Cs is not None and c_search == "once":
        with (warnings.catch_warnings(), threadpool_limits(blas_threads, user_api="blas")):
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            chosen_C = _search_C(X.astype(np.float64), y, Cs, cv, seed, n_jobs)
        base = _logistic(None, inner_cv, seed, n_jobs, C=chosen_C)
        extra: tuple[str, ...] = ()
    elif model == "logistic":
        base = _logistic(Cs, inner_cv, seed, n_jobs)
        extra = ()
    elif model == "hist_gbm":
        base = _hist_gbm(seed, hist_gbm_params)
        extra = ()
        omp_threads = 1 if n_jobs is None else n_jobs
    else:
        base = _lightgbm(seed, n_jobs, lgbm_params)
        extra = ("lightgbm",)
    # fold_jobs: the calibration folds in that many joblib processes, each fitting as above
    # (the same fitted copies, in the same order, as in process)
    est = CalibratedClassifierCV(base, method=CALIBRATIONS[calibration], cv=cv, n_jobs=fold_jobs or n_jobs)
    with (warnings.catch_warnings(), threadpool_limits(blas_threads, user_api="blas"),
          threadpool_limits(omp_threads, user_api="openmp")):
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        est.fit(X.astype(np.float64), y)  # float32 values, float64 arithmetic (coefficients too)
    info = {
        "n_train": int(X.shape[0]),
        "positives": int(y.sum()),
        "seed": seed,
        "cv": _cv_description(cv, X, y),
        "base": ("LogisticRegressionCV" if Cs is not None and c_search == "per_fold" else "LogisticRegression")
        if model == "logistic"
        else "HistGradientBoostingClassifier" if model == "hist_gbm" else "LGBMClassifier",
    }
    if model == "logistic":
        info["Cs"] = Cs if Cs is None or isinstance(Cs, int) else [float(c) for c in Cs]
        if Cs is not None:
            info["c_search"] = c_search
        if chosen_C is not None:
            info["C"] = chosen_C
        info["folds"] = _fold_summary(est, names)
    else:
        key = "hist_gbm_params" if model == "hist_gbm" else "lgbm_params"
        info[key] = {k: v for k, v in base.get_params().items() if isinstance(v, (int, float, str, bool))}
    return MetaModel(est, names, model, calibration, dict(window or {}), library_versions(*extra), info)


# ---------------------------------------------------------------- persistence


def atomic_write(path, write: Callable[[Any], None], mode: str = "wb") -> Path:
    """Write via `write(file)` to a temp file beside `path`, fsync, then os.replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def save_meta(model: MetaModel, path_joblib, path_json=None) -> dict:
    """joblib payload + JSON sidecar (default: the joblib path with .json); returns the sidecar."""
    path_joblib = Path(path_joblib)
    path_json = path_joblib.with_suffix(".json") if path_json is None else Path(path_json)
    payload = {
        "format": PAYLOAD_FORMAT, "estimator": model.estimator, "feature_names": list(model.feature_names),
        "kind": model.kind, "calibration": model.calibration, "window": model.window,
        "versions": model.versions, "info": model.info,
    }
    buf = io.BytesIO()
    joblib.dump(payload, buf)
    data = buf.getvalue()  # the sha256 of exactly the bytes written, not of a re-read a swap could change
    atomic_write(path_joblib, lambda fh: fh.write(data))
    meta = {**model.metadata(), "joblib": path_joblib.name, "sha256": hashlib.sha256(data).hexdigest()}
    atomic_write(path_json, lambda fh: (json.dump(meta, fh, indent=2, default=str), fh.write("\n")), mode="w")
    return meta


def meta_from_payload(payload, origin) -> MetaModel:
    """The MetaModel of a payload `save_meta` wrote, already unpickled by the caller (never
    unpickle a file unverified: domain.learning.meta.load_meta checks its recorded sha256
    first). ValueError naming `origin` when it is not a meta model payload."""
    if not isinstance(payload, dict) or payload.get("format") != PAYLOAD_FORMAT:
        raise ValueError(f"{origin} is not a {PAYLOAD_FORMAT} meta model")
    trained = payload["versions"].get("scikit-learn")
    if trained != sklearn.__version__:
        warnings.warn(f"meta model trained with scikit-learn {trained}, loaded with {sklearn.__version__}",
                      UserWarning, stacklevel=2)
    return MetaModel(payload["estimator"], payload["feature_names"], payload["kind"], payload["calibration"],
                     payload["window"], payload["versions"], payload["info"])


# ---------------------------------------------------------------- plots


def calibration_png(y, p, path, title: str = "", bins: int = 10) -> Path:
    """Reliability diagram (top) and prediction histogram (bottom) written to `path` as a PNG."""
    data = calibration_png_bytes(y, p, title, bins)
    return atomic_write(path, lambda fh: fh.write(data))


def calibration_png_bytes(y, p, title: str = "", bins: int = 10) -> bytes:
    """Reliability diagram (top) and prediction histogram (bottom) as PNG bytes (Agg, no pyplot)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    curve = reliability_curve(y, p, bins)
    m = fold_metrics(y, p)
    fig = Figure(figsize=(6.0, 6.5), dpi=100)
    FigureCanvasAgg(fig)
    ax, hx = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect")
    ax.plot(curve["prob_pred"], curve["prob_true"], marker="o", label="model")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("observed positive rate")
    auc = "n/a" if m["auc"] is None else f"{m['auc']:.3f}"
    brier = "n/a" if m["brier"] is None else f"{m['brier']:.4f}"
    ax.legend(loc="upper left", title=f"n={m['n']}  AUC={auc}  Brier={brier}")
    ax.set_title(title)
    hx.hist(np.asarray(p, dtype=np.float64), bins=np.linspace(0, 1, bins + 1), color="tab:blue", alpha=0.7)
    hx.set_xlim(0, 1)
    hx.set_xlabel("predicted probability")
    hx.set_ylabel("rows")
    w, h = fig.get_size_inches()  # fixed margins: tight_layout would draw the figure twice
    fig.subplots_adjust(left=0.85 / w, right=1.0 - 0.25 / w, bottom=0.6 / h, top=1.0 - 0.45 / h, hspace=0.08)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


# ---------------------------------------------------------------- ONNX (optional)
#
# The graph is built by hand with onnx.helper, not with skl2onnx: skl2onnx 1.20 gets this
# model wrong in two ways. (1) Around a Pipeline it calibrates predict_proba instead of the
# decision function (sklearn calibrates decision_function), off by up to 0.5. (2) Its
# isotonic step takes the NEAREST threshold, sklearn interpolates linearly between
# thresholds; with thresholds 1e-6 apart and slopes of 1e4 that is not a rounding error.
# The hand graph repeats sklearn's arithmetic in float64 (MetaModel feeds the estimator
# float64, see predict_proba), so the two agree to float32 output precision.


def _fold_nodes(h, numpy_helper, TensorProto, fold: LogisticFold, i: int, nodes: list, inits: list) -> str:
    """Nodes for one calibrated copy: X -> decision (float64) -> calibrated P(y = 1)."""

    def const(name, value, dtype=np.float64):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), f"f{i}_{name}"))
        return f"f{i}_{name}"

    def node(op, inputs, name, **kw):
        nodes.append(h.make_node(op, inputs, [f"f{i}_{name}"], name=f"f{i}_{name}", **kw))
        return f"f{i}_{name}"

    z = "X64"
    if fold.mean is not None:
        z = node("Sub", [z, const("mean", fold.mean)], "centred")
    if fold.scale is not None:
        z = node("Div", [z, const("scale", fold.scale)], "scaled")
    d = node("Add", [node("MatMul", [z, const("coef", fold.coef_t)], "xw"), const("b", fold.intercept)], "decision")
    if fold.method == "sigmoid":  # expit(-(a * d + b))
        lin = node("Add", [node("Mul", [d, const("a", fold.a)], "ad"), const("sb", fold.b)], "adb")
        return node("Sigmoid", [node("Neg", [lin], "neg")], "p")
    xs, ys = fold.xs, fold.ys
    if xs.size == 1:  # constant calibrator
        return node("Add", [node("Mul", [d, const("zero", 0.0)], "d0"), const("y", ys[0])], "p")
    t = node("Clip", [d, const("lo", fold.x_min), const("hi", fold.x_max)], "clipped")
    # segment j = #{xs[1:] < t} (t <= xs[-1] after the clip), then scipy's interp1d formula
    below = node("Cast", [node("Less", [const("xs_hi", xs[1:].reshape(1, -1)), t], "lt")], "lt64",
                 to=TensorProto.INT64)
    j = node("ReduceSum", [below, const("axis", [1], np.int64)], "j", keepdims=1)
    j1 = node("Add", [j, const("one", 1, np.int64)], "j1")
    xs_c, ys_c = const("xs", xs), const("ys", ys)
    x0, x1 = node("Gather", [xs_c, j], "x0"), node("Gather", [xs_c, j1], "x1")
    y0, y1 = node("Gather", [ys_c, j], "y0"), node("Gather", [ys_c, j1], "y1")
    slope = node("Div", [node("Sub", [y1, y0], "dy"), node("Sub", [x1, x0], "dx")], "slope")
    return node("Add", [node("Mul", [slope, node("Sub", [t, x0], "tx")], "rise"), y0], "p")


def export_onnx(model: MetaModel, path, *, opset: int = 17) -> Path:
    """Write the logistic meta model as ONNX: input "X" float32 [n, k], output
    "probabilities" float32 [n, 2] (P(y = 0), P(y = 1)); the feature names, versions and
    training window go into the model's metadata_props."""
    if model.kind != "logistic":
        raise NotImplementedError(f"ONNX export covers model='logistic' only, not {model.kind!r}")
    try:
        import onnx
        from onnx import TensorProto, helper as h, numpy_helper
    except ImportError as e:
        raise ImportError(f"ONNX export needs the onnx package: {ONNX_HINT}") from e
    try:
        params = logistic_folds(model.estimator)
    except NotImplementedError as e:
        raise NotImplementedError(f"ONNX export: {e}") from e
    k = model.n_features
    nodes = [h.make_node("Cast", ["X"], ["X64"], name="X64", to=TensorProto.DOUBLE)]
    inits: list = []
    folds = [_fold_nodes(h, numpy_helper, TensorProto, fold, i, nodes, inits) for i, fold in enumerate(params)]
    inits.append(numpy_helper.from_array(np.asarray(len(folds), np.float64), "n_folds"))
    inits.append(numpy_helper.from_array(np.asarray(1.0, np.float64), "one64"))
    nodes += [
        h.make_node("Sum", folds, ["p_sum"], name="p_sum"),
        h.make_node("Div", ["p_sum", "n_folds"], ["p1"], name="p1"),
        h.make_node("Sub", ["one64", "p1"], ["p0"], name="p0"),
        h.make_node("Concat", ["p0", "p1"], ["p64"], name="p64", axis=1),
        h.make_node("Cast", ["p64"], ["probabilities"], name="probabilities", to=TensorProto.FLOAT),
    ]
    graph = h.make_graph(nodes, "tradelab_meta", [h.make_tensor_value_info("X", TensorProto.FLOAT, ["n", k])],
                         [h.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["n", 2])], inits)
    onx = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="tradelab.kernels.learn.meta")
    onx.ir_version = 8
    h.set_model_props(onx, {"features": json.dumps(model.feature_names), "versions": json.dumps(model.versions),
                            "window": json.dumps(model.window, default=str), "calibration": model.calibration})
    onnx.checker.check_model(onx)
    return atomic_write(path, lambda fh: fh.write(onx.SerializeToString()))


def onnx_predict(path, X) -> np.ndarray:
    """float32 [n] P(y = 1) from an exported model; NaN for rows with a non-finite feature."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise ImportError(f"ONNX inference needs onnxruntime: {ONNX_HINT}") from e
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    X = np.asarray(X, dtype=np.float32)
    k = sess.get_inputs()[0].shape[1]
    if X.ndim != 2 or (isinstance(k, int) and X.shape[1] != k):
        raise ValueError(f"X must be [n, {k}], got shape {X.shape}")
    out = np.full(X.shape[0], np.nan, dtype=np.float32)
    ok = complete_rows(X)
    if ok.any():
        proba = sess.run(["probabilities"], {"X": np.ascontiguousarray(X[ok])})[0]
        out[ok] = proba[:, 1]
    return out
