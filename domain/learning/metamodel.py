"""Meta model over specialist scores (+ the LSTM score + the market regime): a matrix in
(domain.learning.matrix), a calibrated P(label = 1) out. Persistence: domain.learning.persistence;
ONNX: domain.learning.onnx_export; the calibration PNG: domain.learning.plots.

Inference (`MetaModel.predict_proba`): for model='logistic' the fitted parameters of every
    calibrated copy (`logistic_folds`, the same extraction export_onnx uses) are evaluated
    directly in NumPy float64 with sklearn's own operations (scale, X @ coef.T + b, np.interp
    after the isotonic clip or expit(-(a d + b)), the > 1 clip, the mean over copies), so it
    equals CalibratedClassifierCV.predict_proba[:, 1] bit for bit in practice at ~1/100 of
    the per-call cost (sklearn's input validation dominates a one-row call). The parameters
    are extracted once per estimator, cached on the instance and never pickled. LightGBM
    models, or an estimator whose structure the extraction does not recognise, go through
    sklearn.

Missing values: the model's rule (`missing`: drop, fill or native; domain.learning.matrix,
    "Missing values"): `train_meta` refuses rows its rule would leave out, learns the `fill`
    values (each column's training median) and stores them on the model; `predict_proba`
    applies the same rule and returns NaN for the rows it leaves out.

Model (`train_meta`)
    logistic (default): CalibratedClassifierCV(Pipeline(StandardScaler, LogisticRegression(C)),
        method="isotonic", cv=5), L2. solver="newton-cholesky" (default): scikit-learn's Newton
        solver for every logistic fit (the C search's path and the calibrated copies): the same
        objective as lbfgs solved to its optimum (a few Newton steps on ~10 columns), where
        lbfgs stops at its loose tolerance (on the demo the coefficients moved by up to 0.004,
        and 2 of 15 fits chose the neighbouring C, whose fold log losses tie to ~1e-6); 1.4-1.8x
        less time for the demo's meta_model, mean out-of-sample AUC / IC equal to 3 decimals
        (benchmarks/LOG.md, "Issue 26: the demo's yearly stages"; `bench_yearly.py --compare-solver`). solver="lbfgs":
        the earlier models bit for bit. c_search="once" (default): C is chosen ONCE per
        fit, by Pipeline(StandardScaler, LogisticRegressionCV(Cs=10, scoring="neg_log_loss";
        `neg_log_loss_score`, the same scores without sklearn's per-call validation))
        over the same `cv` splits (purged when the caller passes purged splits) on all the
        training rows, or on a seeded uniform sample of `search_rows` of them with the same
        splits restricted to it (`_search_rows`; the calibrated fits use every row) (sklearn walks the C path with warm starts; no refit on all the rows,
        whose coefficients nothing used); every calibrated copy
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
    blas_threads=1 (default) limits BLAS threads during the fit: the solver steps on ~10
        columns are too small for threads, which only contend (3x slower on 2 busy cores);
        None leaves BLAS alone. Parallel folds are n_jobs (processes via joblib); fold_jobs
        runs only the calibration folds in processes (each fit as in process: same model).
    cv: an int (StratifiedKFold, NOT shuffled: folds are blocks of rows in the order given)
        or any splitter / list of (train, test) index pairs, e.g. domain.learning.purged_cv.
        PurgedKFold for time-ordered rows whose labels overlap. With ensemble calibration
        (sklearn's default) the model averages the cv calibrated copies. copies=k (settings
        meta.calibration_copies) fits only the copies of the last k folds: k of the cv fits,
        each the same copy the full model has (the logistic C search still sees every fold).
"""

from __future__ import annotations

import contextlib
import inspect
import numbers
import platform
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import joblib
import numpy as np
import sklearn
from scipy.special import expit
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.model_selection import check_cv
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from domain.learning.logistic_folds import LogisticFold, logistic_folds, logistic_proba as _logistic_proba  # noqa: F401 (re-exported)
from domain.learning.matrix import MISSING_RULES, column_fill, fill_missing, native_missing, usable_rows
from domain.learning.purged_cv import folds_on, row_sample

MODELS = ("logistic", "hist_gbm", "lightgbm")
SOLVERS = ("newton-cholesky", "lbfgs")  # train_meta: scikit-learn's solver of every logistic fit
C_SEARCHES = ("once", "per_fold")  # train_meta: C chosen once per fit, or in every calibration fold
CALIBRATIONS = ("isotonic", "sigmoid")  # sklearn's names, the settings' meta.calibration (no aliases)
PAYLOAD_FORMAT = "tradelab.meta/1"  # the pickled payloads of before (domain.learning.persistence.migrate_pickled)
LIGHTGBM_HINT = "pip install lightgbm (the project's optional extra: pip install 'tradelab[lightgbm]')"
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
    missing: str = "drop"  # the missing-value rule (MISSING_RULES); models saved before it: drop
    fill_values: list[float] | None = None  # the `fill` rule's column values (training medians)

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

    def usable(self, X) -> np.ndarray:
        """bool [n]: the rows of X this model scores (its missing-value rule)."""
        return usable_rows(X, self.feature_names, self.missing)

    def prepared(self, X) -> np.ndarray:
        """float32 rows as the estimator sees them: filled (`fill`), inf as NaN (`native`)."""
        if self.missing == "fill":
            return fill_missing(X, self.fill_values)
        return native_missing(X) if self.missing == "native" else np.asarray(X, dtype=np.float32)

    def predict_proba(self, X) -> np.ndarray:
        """float32 [n] P(y = 1); NaN for the rows the model's missing-value rule leaves out."""
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must be [n, {self.n_features}] ({self.feature_names}), got shape {X.shape}")
        out = np.full(X.shape[0], np.nan, dtype=np.float32)
        ok = self.usable(X)
        if ok.any():  # float64 in: sklearn then computes in float64 (as it trained), see export_onnx
            out[ok] = self._proba64(self.prepared(X[ok]).astype(np.float64))
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
            "missing": self.missing,
            **({"fill_values": [float(v) for v in self.fill_values]} if self.fill_values is not None else {}),
            **self.info,
        }


def library_versions(*extra: str) -> dict[str, str]:
    out = {"python": platform.python_version(), "numpy": np.__version__,
           "scikit-learn": sklearn.__version__, "joblib": joblib.__version__}
    for name in extra:
        with contextlib.suppress(ImportError):
            out[name] = __import__(name).__version__
    return out


def neg_log_loss_score(estimator, X, y) -> float:
    """sklearn's "neg_log_loss" scorer for a binary linear classifier, the same float64
    operations in the same order (decision = X @ coef.T + intercept, expit, the true class's
    probability clipped to [eps, 1 - eps], mean of log), without the scorer's validation,
    which cost ~7 ms a call and 50 calls per C search (10 Cs x 5 folds): the same scores bit
    for bit, so the same C."""
    coef = estimator.coef_
    d = X @ (coef.T if coef.ndim == 2 else coef) + estimator.intercept_
    p = expit(d.reshape(-1))
    eps = np.finfo(np.float64).eps
    q = np.where(np.asarray(y) == estimator.classes_[-1], p, 1 - p)
    return -float(np.average(-np.log(np.clip(q, eps, 1 - eps))))


def _logistic_cv(Cs, cv, seed: int, n_jobs, refit: bool = True, solver: str = "lbfgs") -> LogisticRegressionCV:
    kw: dict[str, Any] = {"refit": refit, "solver": solver}
    params = inspect.signature(LogisticRegressionCV).parameters
    if "use_legacy_attributes" in params:  # scikit-learn >= 1.8: pin the new defaults now
        kw.update(l1_ratios=(0.0,), use_legacy_attributes=False)
    return LogisticRegressionCV(Cs=Cs, cv=cv, scoring=neg_log_loss_score, max_iter=1000, random_state=seed,
                                n_jobs=n_jobs, **kw)


def _logistic(Cs, inner_cv, seed: int, n_jobs, C: float = 1.0, solver: str = "lbfgs") -> Pipeline:
    """Pipeline(StandardScaler, LogisticRegression(C)) for Cs=None, else with a nested
    LogisticRegressionCV(Cs, cv=inner_cv) (c_search="per_fold")."""
    if Cs is None:
        lr = LogisticRegression(C=C, max_iter=1000, random_state=seed, solver=solver)
    else:
        lr = _logistic_cv(Cs, inner_cv, seed, n_jobs, solver=solver)
    return Pipeline([("scale", StandardScaler()), ("logit", lr)])


def _search_C(X64: np.ndarray, y: np.ndarray, Cs, cv, seed: int, n_jobs, solver: str = "lbfgs") -> float:
    """The C of the best mean validation log loss over the `cv` splits (c_search="once").

    LogisticRegressionCV(refit=False): only its C is used, so the refit on all the rows that
    refit=True adds (one more fit, on 1.25x the rows of a fold, thrown away here) is skipped.
    refit=False would report the mean of the per-fold best Cs as C_; the C chosen here is
    refit=True's: the argmax over Cs of the fold scores summed over folds (the first on a
    tie), the same sum in the same order, so the same C bit for bit."""
    search = Pipeline([("scale", StandardScaler()), ("logit", _logistic_cv(Cs, cv, seed, n_jobs, refit=False, solver=solver))])
    search.fit(X64, y)
    lr = search.named_steps["logit"]
    scores = lr.scores_
    if isinstance(scores, dict):  # scikit-learn < 1.8 (legacy attributes): {class: [n_folds, n_Cs]}
        scores = next(iter(scores.values()))
    scores = np.asarray(scores)
    scores = scores.reshape(scores.shape[0], -1, len(lr.Cs_))  # [n_folds, n_l1_ratios (1), n_Cs]
    total = scores.sum(axis=0)[0]
    return float(lr.Cs_[int(np.argmax(total))])


def _search_rows(X: np.ndarray, y: np.ndarray, cv, cap: int | None, seed: int):
    """(X, y, cv) of the C search: every row, or at most `cap` rows (a seeded uniform sample,
    purged_cv.row_sample) with the same folds restricted to them (purged_cv.folds_on;
    an int `cv` splits the sample)."""
    rows = row_sample(len(y), cap, seed)
    if rows is None:
        return X, y, cv
    if not isinstance(cv, int):
        cv = folds_on(rows, cv.split(X, y) if hasattr(cv, "split") else cv, len(y))
    return X[rows], y[rows], cv


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
               c_search: str = "once", solver: str = "newton-cholesky", search_rows: int | None = None,
               missing: str = "drop", copies: int | None = None) -> MetaModel:
    """Fit the calibrated meta model on the rows its missing-value rule `missing` uses (drop:
    complete rows; fill: each missing value replaced by its column's training median; native:
    NaN as they are, tree models only): see the module docstring. `copies`: fit only the
    calibrated copies of the last `copies` folds of `cv` (None: one per fold); the logistic
    C search still runs over every fold, so the copies are those of the full model.
    `lgbm_params` may hold `shared_bins: True` (settings meta.lightgbm.shared_bins): the
    LightGBM copies are then fitted on columns binned once (domain.learning.lightgbm_copies,
    a PortableEnsemble) instead of by CalibratedClassifierCV."""
    if c_search not in C_SEARCHES:
        raise ValueError(f"c_search must be one of {C_SEARCHES}, got {c_search!r}")
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
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
    if missing not in MISSING_RULES:
        raise ValueError(f"missing must be one of {MISSING_RULES}, got {missing!r}")
    if missing == "native" and model == "logistic":
        raise ValueError("missing='native' needs a model that handles NaN (hist_gbm, lightgbm), not logistic")
    names = [f"x{i}" for i in range(X.shape[1])] if feature_names is None else [str(f) for f in feature_names]
    if len(names) != X.shape[1]:
        raise ValueError(f"{len(names)} feature names for {X.shape[1]} columns")
    ok = usable_rows(X, names, missing)
    if not ok.all():
        what = "non-finite values" if missing == "drop" else "no finite value"
        raise ValueError(f"X has {int((~ok).sum())} rows with {what}: train on X[usable_rows(X, names, {missing!r})]")
    fill = column_fill(X) if missing == "fill" else None
    X = fill_missing(X, fill) if fill is not None else native_missing(X) if missing == "native" else X
    if isinstance(cv, numbers.Integral):
        cv = int(cv)
    elif not hasattr(cv, "split"):
        cv = [(np.asarray(tr), np.asarray(te)) for tr, te in cv]  # materialise a generator once

    calibration_cv = cv
    if copies is not None:
        if isinstance(copies, bool) or not isinstance(copies, numbers.Integral) or copies < 1:
            raise ValueError(f"copies must be a positive int or None, got {copies!r}")
        folds = list(check_cv(cv, y, classifier=True).split(X, y))
        if copies > len(folds):
            raise ValueError(f"copies is {copies}, more than the {len(folds)} folds of cv")
        calibration_cv = folds[-copies:]  # the latest held-out blocks' copies (the same copies as with all)
    omp_threads = None
    shared_bins = False
    chosen_C = None
    searched_on = None
    if model == "logistic" and Cs is not None and c_search == "once":
        Xs, ys, cvs = _search_rows(X, y, cv, search_rows, seed)
        searched_on = int(len(ys))
        with (warnings.catch_warnings(), threadpool_limits(blas_threads, user_api="blas")):
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            chosen_C = _search_C(Xs.astype(np.float64), ys, Cs, cvs, seed, n_jobs, solver)
        base = _logistic(None, inner_cv, seed, n_jobs, C=chosen_C, solver=solver)
        extra: tuple[str, ...] = ()
    elif model == "logistic":
        base = _logistic(Cs, inner_cv, seed, n_jobs, solver=solver)
        extra = ()
    elif model == "hist_gbm":
        base = _hist_gbm(seed, hist_gbm_params)
        extra = ()
        omp_threads = 1 if n_jobs is None else n_jobs
    else:
        lgbm_params = dict(lgbm_params or {})
        shared_bins = bool(lgbm_params.pop("shared_bins", False))
        base = _lightgbm(seed, n_jobs, lgbm_params)
        extra = ("lightgbm",)
    if shared_bins:  # the copies' LightGBM fits on columns binned once (domain.learning.lightgbm_copies)
        from domain.learning.lightgbm_copies import fit_copies

        folds = list(check_cv(calibration_cv, y, classifier=True).split(X, y))
        est = fit_copies(X.astype(np.float64), y, folds, base.get_params(), calibration)
    else:
        # fold_jobs: the calibration folds in that many joblib processes, each fitting as above
        # (the same fitted copies, in the same order, as in process)
        est = CalibratedClassifierCV(base, method=calibration, cv=calibration_cv, n_jobs=fold_jobs or n_jobs)
        with (warnings.catch_warnings(), threadpool_limits(blas_threads, user_api="blas"),
              threadpool_limits(omp_threads, user_api="openmp")):
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            est.fit(X.astype(np.float64), y)  # float32 values, float64 arithmetic (coefficients too)
    info = {
        "n_train": int(X.shape[0]),
        "positives": int(y.sum()),
        "seed": seed,
        "cv": _cv_description(cv, X, y),
        **({"calibration_copies": int(copies)} if copies is not None else {}),
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
            info["search_rows"] = searched_on
        info["solver"] = solver
        info["folds"] = _fold_summary(est, names)
    else:
        key = "hist_gbm_params" if model == "hist_gbm" else "lgbm_params"
        info[key] = {k: v for k, v in base.get_params().items() if isinstance(v, (int, float, str, bool))}
        if shared_bins:
            info["shared_bins"] = True
    return MetaModel(est, names, model, calibration, dict(window or {}), library_versions(*extra), info, missing,
                     None if fill is None else [float(v) for v in fill])
