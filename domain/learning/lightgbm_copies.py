"""LightGBM's calibrated copies on columns binned once (settings `meta.lightgbm.shared_bins`).

`CalibratedClassifierCV(LGBMClassifier)` fits one LightGBM model per calibration fold, and
each fit first builds its own Dataset: a quantile sketch of every column (the bin edges),
then every row put in its bins. On 100,000 x 181 rows that is 2.9 s of a 13.8 s default fit
and about half of a light one (benchmarks/LOG.md, "Issue 43 item 5"), paid once per copy.
`fit_copies` builds the Dataset of all the training rows ONCE and trains each copy on
`Dataset.subset(its training rows)`, which keeps those bins (0.02 s instead of 2.9 s).

What differs from the per-copy binning: the bin edges come from every training row of the
fit, the copy's held-out block included (edges are quantiles of the inputs; no label enters
them), so the trees are close to, not equal to, CalibratedClassifierCV's; the default
(`shared_bins: false`) keeps those. Everything else is CalibratedClassifierCV's
(ensemble=True): copy k's booster is trained on the rows of fold k's training side with the
LGBMClassifier's parameters (`booster_params`: LightGBM reads the sklearn names as aliases;
a tree for tree the same model as LGBMClassifier.fit on a Dataset of those rows, tested), its
response is the raw score (LGBMClassifier.decision_function, what sklearn calibrates), its
calibrator is sklearn's (IsotonicRegression(out_of_bounds="clip"), or _SigmoidCalibration)
fitted on the held-out block, and P(y = 1) is the mean of the copies' calibrated responses.
The result is a `PortableEnsemble`: the form a saved model is loaded in. The copies are fitted one
after another in the calling process (train_meta's `fold_jobs` does not apply; the meta stage
already runs one fit per worker process).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from domain.learning.portable import Calibrator, PortableEnsemble

# LGBMClassifier's keyword arguments LightGBM's core does not take as parameters
SKLEARN_ONLY = ("n_estimators", "importance_type", "class_weight")


def booster_params(estimator_kw: dict) -> tuple[dict, int]:
    """(LightGBM core parameters, boosting rounds) of LGBMClassifier(**estimator_kw) for a
    binary objective; the sklearn names (colsample_bytree, reg_lambda, random_state, n_jobs,
    ...) are LightGBM aliases and pass as they are."""
    params = {k: v for k, v in estimator_kw.items() if k not in SKLEARN_ONLY and v is not None}
    params["objective"] = "binary"
    return params, int(estimator_kw.get("n_estimators", 100))


def _calibrated(method: str, scores: np.ndarray, y: np.ndarray) -> Calibrator:
    """sklearn's calibrator of CalibratedClassifierCV for one binary copy, as its arrays."""
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        iso = IsotonicRegression(out_of_bounds="clip").fit(scores, y)
        return Calibrator("isotonic", np.asarray(iso.X_thresholds_, np.float64), np.asarray(iso.y_thresholds_, np.float64),
                          float(iso.X_min_), float(iso.X_max_))
    from sklearn.calibration import _SigmoidCalibration  # the class CalibratedClassifierCV fits

    sig = _SigmoidCalibration().fit(scores, y)
    return Calibrator("sigmoid", a=float(sig.a_), b=float(sig.b_))


def fit_copies(X64: np.ndarray, y: np.ndarray, folds: Sequence[tuple[np.ndarray, np.ndarray]], estimator_kw: dict,
               method: str) -> PortableEnsemble:
    """The calibrated copies of `folds` ((train rows, held-out rows) index pairs, one copy
    each) of LightGBM over `X64` (float64, NaN = missing) and 0/1 labels `y`, binned once
    (see the module doc)."""
    import lightgbm

    params, rounds = booster_params(estimator_kw)
    whole = lightgbm.Dataset(X64, label=y, params=params).construct()
    boosters, calibrators = [], []
    for train, held_out in folds:
        booster = lightgbm.train(params, whole.subset(np.sort(np.asarray(train))), num_boost_round=rounds)
        rows = np.asarray(held_out)
        calibrators.append(_calibrated(method, booster.predict(X64[rows], raw_score=True), y[rows]))
        boosters.append(booster)
    scorers = [lambda X, b=b: b.predict(X, raw_score=True) for b in boosters]
    return PortableEnsemble("lightgbm", scorers, calibrators, None, boosters)
