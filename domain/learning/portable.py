"""The calibrated meta model as data that cannot execute code (no pickle).

A fitted CalibratedClassifierCV is an average over calibrated copies; each copy is a scorer
(the base model's response: the logistic decision, LightGBM's probability, the
HistGradientBoosting decision) and a calibrator (isotonic: interp(clip(d, x_min, x_max), xs,
ys); sigmoid: expit(-(a d + b))). `to_arrays(estimator, kind)` writes each copy as arrays:

    logistic   c{i}_mean, c{i}_scale (absent: step skipped), c{i}_coef [k, 1], c{i}_intercept [1]
    lightgbm   c{i}_lightgbm: the booster in LightGBM's text format, as uint8 bytes (its trees' split
               features and children checked in range before LightGBM parses it; the parser itself
               is C++ and no safer than the sha256 check in front of it); c{i}_raw: 1 when
               the calibrated response is its raw score (decision_function), 0 its probability
    hist_gbm   c{i}_skops: the HistGradientBoostingClassifier through skops (its trusted-types
               check), as uint8 bytes; loaded only after every tree's node indices are
               checked in bounds (skops warns that out-of-range indices read out of memory)
    every kind c{i}_cal (isotonic: [xs; ys] [2, m], x_min, x_max; sigmoid: [a, b])

`PortableEnsemble.from_arrays(arrays, kind, methods)` gives back an object whose
`predict_proba(X64)[:, 1]` equals the fitted estimator's bit for bit (the same operations in
the same order: domain.learning.metamodel.LogisticFold for the logistic copies, the base
model's own predict for the trees). Arrays go to an .npz read with allow_pickle=False.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import expit

from domain.learning.logistic_folds import LogisticFold, logistic_folds

TREE_NODE_TYPE = "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"


class Calibrator(NamedTuple):
    """One copy's calibration of a response d (sklearn's IsotonicRegression with clip, or
    _SigmoidCalibration)."""

    method: str
    xs: np.ndarray | None = None
    ys: np.ndarray | None = None
    x_min: float = -np.inf
    x_max: float = np.inf
    a: float = 0.0
    b: float = 0.0

    def apply(self, d: np.ndarray) -> np.ndarray:
        """float64 [n] P(y = 1) of responses d (LogisticFold.proba's calibration step)."""
        if self.method == "sigmoid":
            p = expit(-(self.a * d + self.b))
        else:
            p = np.interp(np.clip(d, self.x_min, self.x_max), self.xs, self.ys)
        p[(1.0 < p) & (p <= 1.0 + 1e-5)] = 1.0  # sklearn's "minimally exceeds 1.0" fix
        return p


def _calibrator(cc) -> Calibrator:
    cal = cc.calibrators[0]
    if cc.method == "sigmoid":
        return Calibrator("sigmoid", a=float(cal.a_), b=float(cal.b_))
    if getattr(cal, "out_of_bounds", None) != "clip":
        raise NotImplementedError(f"covers isotonic calibration with out_of_bounds='clip', not {cal}")
    return Calibrator("isotonic", np.asarray(cal.X_thresholds_, np.float64), np.asarray(cal.y_thresholds_, np.float64),
                      float(cal.X_min_), float(cal.X_max_))


def _cal_arrays(i: int, cal: Calibrator) -> dict[str, np.ndarray]:
    if cal.method == "sigmoid":
        return {f"c{i}_cal": np.array([cal.a, cal.b], np.float64)}
    return {f"c{i}_cal": np.stack([cal.xs, cal.ys]), f"c{i}_clip": np.array([cal.x_min, cal.x_max], np.float64)}


def _cal_from(arrays, i: int, method: str) -> Calibrator:
    c = arrays[f"c{i}_cal"]
    if method == "sigmoid":
        return Calibrator("sigmoid", a=float(c[0]), b=float(c[1]))
    lo, hi = arrays[f"c{i}_clip"]
    return Calibrator("isotonic", np.ascontiguousarray(c[0]), np.ascontiguousarray(c[1]), float(lo), float(hi))


def _bytes(text: bytes) -> np.ndarray:
    return np.frombuffer(text, dtype=np.uint8).copy()


def to_arrays(estimator, kind: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """(arrays, calibration method of each copy) of a fitted binary CalibratedClassifierCV of
    `kind` (see the module docstring); NotImplementedError for another structure."""
    if isinstance(estimator, PortableEnsemble) and estimator.kind == kind == "lightgbm":
        return _ensemble_arrays(estimator)
    copies = getattr(estimator, "calibrated_classifiers_", None)
    if not copies:
        raise NotImplementedError(f"expected a fitted CalibratedClassifierCV, got {type(estimator).__name__}")
    arrays: dict[str, np.ndarray] = {}
    methods = [cc.method for cc in copies]
    if kind == "logistic":
        for i, fold in enumerate(logistic_folds(estimator)):
            if fold.mean is not None:
                arrays[f"c{i}_mean"] = fold.mean
            if fold.scale is not None:
                arrays[f"c{i}_scale"] = fold.scale
            arrays[f"c{i}_coef"], arrays[f"c{i}_intercept"] = np.ascontiguousarray(fold.coef_t), fold.intercept
            arrays |= _cal_arrays(i, Calibrator(fold.method, fold.xs, fold.ys, fold.x_min, fold.x_max, fold.a, fold.b))
        return arrays, methods
    for i, cc in enumerate(copies):
        if len(cc.calibrators) != 1:
            raise NotImplementedError("expected a binary calibrated copy")
        if kind == "lightgbm":
            arrays[f"c{i}_lightgbm"] = _bytes(cc.estimator.booster_.model_to_string().encode())
            # the response sklearn calibrated: the raw score where LGBMClassifier has a
            # decision_function (LightGBM >= 4), else the probability
            arrays[f"c{i}_raw"] = np.array([hasattr(cc.estimator, "decision_function")], np.uint8)
        elif kind == "hist_gbm":
            import skops.io as sio

            arrays[f"c{i}_skops"] = _bytes(sio.dumps(cc.estimator))
        else:
            raise NotImplementedError(f"no portable form of model kind {kind!r}")
        arrays |= _cal_arrays(i, _calibrator(cc))
    return arrays, methods


def _ensemble_arrays(ensemble: "PortableEnsemble") -> tuple[dict[str, np.ndarray], list[str]]:
    """The arrays of a LightGBM PortableEnsemble (one fitted with shared bins, or loaded):
    each booster's text and its calibrator; the response is the raw score."""
    arrays: dict[str, np.ndarray] = {}
    for i, (booster, cal) in enumerate(zip(ensemble.bases, ensemble.calibrators)):
        arrays[f"c{i}_lightgbm"] = _bytes(booster.model_to_string().encode())
        arrays[f"c{i}_raw"] = np.array([ensemble.raw[i] if ensemble.raw else True], np.uint8)
        arrays |= _cal_arrays(i, cal)
    return arrays, [c.method for c in ensemble.calibrators]


def _checked_hist_gbm(data: bytes, origin: str, n_features: int):
    """The HistGradientBoostingClassifier of skops `data`, refused (ValueError naming
    `origin`) unless every type but the trees' is trusted, the model takes `n_features`
    columns with no categorical preprocessing, and every tree is safe to walk: sklearn's
    records, no categorical split, and each inner node's feature in range and children after
    it in the tree (the grower writes children after their parent: no index outside the tree,
    no cycle). sklearn's predictor reads these without bounds checks."""
    import skops.io as sio
    from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE

    untrusted = [t for t in sio.get_untrusted_types(data=data) if t != TREE_NODE_TYPE]
    if untrusted:
        raise ValueError(f"{origin}: the hist_gbm model holds types skops does not trust: {untrusted}")
    model = sio.loads(data, trusted=[TREE_NODE_TYPE])
    if int(getattr(model, "n_features_in_", -1)) != n_features or getattr(model, "_preprocessor", None) is not None \
            or getattr(model, "is_categorical_", None) is not None:
        raise ValueError(f"{origin}: the hist_gbm model is not one of {n_features} numeric columns")
    for trees in getattr(model, "_predictors", []):
        for tree in trees:
            nodes = tree.nodes
            n = len(nodes)
            if n == 0 or nodes.dtype != PREDICTOR_RECORD_DTYPE:
                raise ValueError(f"{origin}: a hist_gbm tree is not a tree of sklearn's records")
            inner = ~nodes["is_leaf"].astype(bool)
            idx = np.arange(n)
            bad = inner & ((nodes["left"] <= idx) | (nodes["right"] <= idx) | (nodes["left"] >= n)
                           | (nodes["right"] >= n) | (nodes["feature_idx"] >= n_features) | (nodes["feature_idx"] < 0))
            if bad.any() or nodes["is_categorical"].any():
                raise ValueError(f"{origin}: a hist_gbm tree's node indices fall outside the tree or the features, "
                                 "or it splits on a category")
    return model


def _checked_lightgbm_text(text: str, origin: str, n_features: int) -> None:
    """ValueError (naming `origin`) unless LightGBM's text model is of `n_features` columns and
    every tree's split features and children are in range (LightGBM's parser and predictor
    do not check them: a crafted index reads out of memory). Leaves are ~k (k < num_leaves),
    inner nodes 0..num_leaves-2, each child after its parent."""
    head = text.split("\nTree=", 1)[0]
    fields = dict(line.split("=", 1) for line in head.splitlines() if "=" in line)
    if int(fields.get("max_feature_idx", -2)) != n_features - 1:
        raise ValueError(f"{origin}: the LightGBM model is not one of {n_features} columns")
    for block in text.split("\nTree=")[1:]:
        tree = dict(line.split("=", 1) for line in block.split("\n\n", 1)[0].splitlines()[1:] if "=" in line)
        leaves = int(tree.get("num_leaves", 0))
        if leaves < 1:
            raise ValueError(f"{origin}: a LightGBM tree without leaves")
        if leaves == 1:
            continue
        split, left, right = (np.array(tree.get(k, "").split(), dtype=np.int64)
                              for k in ("split_feature", "left_child", "right_child"))
        inner = np.arange(leaves - 1)
        shaped = split.shape == left.shape == right.shape == inner.shape
        children_ok = shaped and all((((c > inner) & (c < leaves - 1)) | ((c < 0) & (~c < leaves))).all()
                                     for c in (left, right))
        if not (children_ok and (split >= 0).all() and (split < n_features).all()):
            raise ValueError(f"{origin}: a LightGBM tree's split features or children fall outside the tree")


class PortableEnsemble:
    """The calibrated copies of a meta model rebuilt from arrays; `predict_proba` as the
    fitted CalibratedClassifierCV's."""

    def __init__(self, kind: str, scorers: list, calibrators: list[Calibrator], folds: list[LogisticFold] | None,
                 bases: list | None = None, raw: list[bool] | None = None):
        self.kind, self.scorers, self.calibrators, self.folds = kind, scorers, calibrators, folds
        self.bases = bases if bases is not None else list(folds or [])  # each copy's base model (a booster, ...)
        self.raw = raw  # lightgbm: per copy, whether its response is the raw score (None: all are)

    @classmethod
    def from_arrays(cls, arrays, kind: str, methods: list[str], origin: str = "model",
                    n_features: int | None = None) -> "PortableEnsemble":
        """The ensemble of `arrays` (to_arrays of a model of `kind` over `n_features` columns:
        the tree models are checked against it before use)."""
        cals = [_cal_from(arrays, i, m) for i, m in enumerate(methods)]
        if kind == "logistic":
            folds = [LogisticFold(arrays.get(f"c{i}_mean"), arrays.get(f"c{i}_scale"), arrays[f"c{i}_coef"],
                                  arrays[f"c{i}_intercept"], c.method, c.xs, c.ys, c.x_min, c.x_max, c.a, c.b)
                     for i, c in enumerate(cals)]
            return cls(kind, [f.decision for f in folds], cals, folds)
        scorers, bases, raws = [], [], []
        for i in range(len(methods)):
            if kind == "lightgbm":
                import lightgbm

                text = arrays[f"c{i}_lightgbm"].tobytes().decode()
                _checked_lightgbm_text(text, origin, int(n_features))
                booster = lightgbm.Booster(model_str=text)
                raw = bool(arrays[f"c{i}_raw"][0])
                scorers.append(lambda X, b=booster, raw=raw: b.predict(X, raw_score=raw))
                bases.append(booster)
                raws.append(raw)
            elif kind == "hist_gbm":
                bases.append(_checked_hist_gbm(arrays[f"c{i}_skops"].tobytes(), origin, int(n_features)))
                scorers.append(bases[-1].decision_function)
            else:
                raise ValueError(f"{origin}: no portable form of model kind {kind!r}")
        return cls(kind, scorers, cals, None, bases, raws if kind == "lightgbm" else None)

    def predict_proba(self, X64: np.ndarray) -> np.ndarray:
        """float64 [n, 2] (P(y = 0), P(y = 1)): the mean of the copies' calibrated responses."""
        total = np.zeros(X64.shape[0], dtype=np.float64)
        for score, cal in zip(self.scorers, self.calibrators):
            total += cal.apply(np.asarray(score(X64), dtype=np.float64).reshape(-1))
        total /= len(self.scorers)
        return np.stack([1.0 - total, total], axis=1)
