"""The meta model's input matrix: arrays in, a float32 matrix and its column names out.

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

Missing values: a rule of the model (settings `meta.missing`; `usable_rows`, `fill_missing`):
    `drop`: a row is used only when every column is finite (the rule before the setting);
    `fill`: a column's missing values are replaced by its median over the training rows
    (`column_fill`: learned on the training years only, stored with the model), `native`: the
    rows go as they are (NaN) to a model that handles them (the tree models). Under `fill` and
    `native` a row needs at least one finite value outside the regime one-hot (a row with no
    value at all is a warm-up: nothing to say about it). inf counts as missing.
    `MetaModel.predict_proba` returns NaN for the rows its rule leaves out, so outputs stay
    aligned with the input rows. Imputing 0 + an indicator column was rejected: a 0..100
    score imputed at 0 is a strong (false) signal and an indicator per specialist doubles the
    columns for a warm-up effect.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernels.regime import BEAR, BULL, CONSOLIDATE, OSCILLATE

REGIME_VALUES = (BEAR, CONSOLIDATE, BULL, OSCILLATE)  # -1, 0, 1, 2
REGIME_COLUMNS = ("regime_bear", "regime_consolidate", "regime_bull", "regime_oscillate")
LSTM_COLUMN = "lstm_score"


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


MISSING_RULES = ("native", "fill", "drop")


def valued_rows(X, names: Sequence[str]) -> np.ndarray:
    """bool [n]: rows with at least one finite value outside the regime one-hot (every row
    when the matrix has no other column): the rows that are not a warm-up."""
    X = np.asarray(X)
    cols = [j for j, n in enumerate(names) if n not in REGIME_COLUMNS]
    if not cols:
        return np.ones(X.shape[0], dtype=bool)
    return np.isfinite(X[:, cols]).any(axis=1)


def usable_rows(X, names: Sequence[str], missing: str) -> np.ndarray:
    """bool [n]: the rows a model of rule `missing` uses: every value finite (`drop`), or at
    least one finite value outside the regime one-hot (`fill`, `native`)."""
    if missing not in MISSING_RULES:
        raise ValueError(f"missing must be one of {MISSING_RULES}, got {missing!r}")
    return complete_rows(X) if missing == "drop" else valued_rows(X, names)


def column_fill(X) -> np.ndarray:
    """float32 [m]: each column's median over its finite values (0 for a column without
    any): the `fill` rule's values, learned on the training rows."""
    X = np.asarray(X, dtype=np.float64)
    out = np.zeros(X.shape[1], dtype=np.float32)
    for j in range(X.shape[1]):
        col = X[:, j]
        col = col[np.isfinite(col)]
        if col.size:
            out[j] = np.median(col)
    return out


def fill_missing(X, fill) -> np.ndarray:
    """X (float32) with each non-finite value replaced by its column's `fill` value."""
    X = np.asarray(X, dtype=np.float32)
    fill = np.asarray(fill, dtype=np.float32)
    if fill.shape != (X.shape[1],):
        raise ValueError(f"fill must have shape ({X.shape[1]},), got {fill.shape}")
    return np.where(np.isfinite(X), X, fill[None, :]).astype(np.float32)


def native_missing(X) -> np.ndarray:
    """X (float32) with inf as NaN: what a NaN-aware model is given under `native`."""
    X = np.asarray(X, dtype=np.float32)
    return np.where(np.isinf(X), np.float32(np.nan), X)
