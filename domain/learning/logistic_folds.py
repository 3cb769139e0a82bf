"""The fitted parameters of a calibrated logistic meta model, as float64 arrays.

`logistic_folds(estimator)` reads them from a fitted CalibratedClassifierCV (or gives a loaded
PortableEnsemble's copies as they are); `LogisticFold.proba` and `logistic_proba` predict
with NumPy exactly as sklearn does (domain.learning.metamodel's fast path, the portable
arrays, the ONNX export). A module of its own so that those three can share it without an
import cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy.special import expit
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler


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
    for anything else. Shared by export_onnx and MetaModel's NumPy path. A model loaded from
    its arrays (domain.learning.portable.PortableEnsemble) gives its copies as they are."""
    if getattr(estimator, "folds", None):
        return list(estimator.folds)
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


def logistic_proba(folds: Sequence[LogisticFold], X64: np.ndarray) -> np.ndarray:
    """float64 [n]: CalibratedClassifierCV.predict_proba(X64)[:, 1] (the mean over the copies)."""
    total = np.zeros(X64.shape[0], dtype=np.float64)
    for fold in folds:
        total += fold.proba(X64)
    total /= len(folds)
    return total
