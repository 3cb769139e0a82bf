"""Stage `meta_model` (year): per horizon, a calibrated meta model over the specialists.

Out-of-sample metrics of year Y: AUC, Brier, log loss, and IC (Spearman rank correlation
of the predicted probability with the realised forward return).

Walk-forward: the model of year Y is trained on the rows whose labels were known by the end
of Y-1 (domain.learning.training_data) and scored on the rows of Y, so every figure it reports for
Y is out of sample. Features: the specialist scores, the LSTM score (`lstm_model`: each
year's scores come from a model trained before that year, so they are out of fold for
every row here) when it covers at least half of the training rows, and the regime one-hot
(the seed's "condition by regime"); with settings `meta.inputs: features+specialists` also
the feature registry's columns (kernels.registry.features.FEATURE_NAMES, from the `features`
table joined on symbol and date; the day's values, known at its close like the scores);
with a list (`meta.inputs: [alpha158]`, `[specialists, regime, alpha158]`) exactly the column
groups it names (`input_groups`: specialists, lstm, regime, pack names), nothing else.
Missing values follow settings `meta.missing` (domain.learning.matrix: native, fill or drop;
a row with no input value at all, a warm-up, is left out). Every (year, horizon) records what
it stood on (domain.learning.coverage: rows and symbols used against those available, and
why the rest were left out) in its report and sidecar, and a coverage below
`meta.min_coverage` stops the stage with one line before anything is stored. Model (`meta.model`):
logistic regression, HistGradientBoosting or LightGBM, with isotonic or Platt calibration
(domain.learning.metamodel), its calibration folds purged on the label intervals and, for the
logistic model, its C searched once per fit over those folds (newton-cholesky fits; on at most
`meta.search_rows` training rows, a seeded sample with the same folds). The model records
its column names (`feature_names`, the JSON sidecar's `features`): predictions and live
inference rebuild the matrix from them. Saved as `models/<experiment>/meta_h{H}_{Y}.npz` + JSON
(arrays that cannot run code: domain.learning.portable; the npz's sha256, which `load_meta`
verifies before it reads; the provenance that binds it to its experiment, settings and
partition: domain.learning.provenance; features, versions,
window, and `table_versions`: the Delta table version of each input,
readable again with `pl.scan_delta(path, version=v)`); a calibration curve PNG and the
out-of-sample metrics under `reports/<experiment>/meta_model/`. The (year, horizon) fits are
independent and run in `build.workers` processes; this process writes every file, in year
and horizon order once every fit has succeeded, so the files do not depend on the worker
count and a failed fit stores nothing. The input tables are read
once for all the years (read_inputs); each year's rows are cut from that read (known_by).
"""

from pathlib import Path

import numpy as np
import polars as pl
from scipy.stats import spearmanr

from domain.learning.training_data import known_by, one_class, training_frame
from domain.observe import write_bytes_atomic, write_json_atomic
from domain.progress import year_done
from domain.learning.calibration import fold_metrics
from domain.learning.coverage import check_floor, row_coverage
from domain.learning.matrix import LSTM_COLUMN as MODEL_LSTM_COLUMN
from domain.learning.matrix import REGIME_COLUMNS, regime_one_hot, usable_rows
from domain.learning.metamodel import MetaModel, train_meta
from domain.learning.persistence import load_arrays, meta_from_arrays, save_meta
from domain.learning.purged_cv import PurgedKFold
from kernels.registry.features import FEATURE_NAMES
from kernels.registry.specialists import SPECIALIST_COLUMNS
from resources.delta_store import DeltaStore
from resources.verified_files import UnverifiedFileError, load_verified

TRAINED_ON = ("specialists", "labels", "regime", "lstm_model")  # the tables recorded in the JSON sidecar
LSTM_COLUMN = "spec_lstm_score"
LSTM_MIN_COVERAGE = 0.5  # use the LSTM score when it covers at least this share of training rows
SPECIALISTS_ONLY = "specialists"
WITH_FEATURES = "features+specialists"
META_INPUTS = (SPECIALISTS_ONLY, WITH_FEATURES)  # settings meta.inputs
# the column groups that are not packs, in the matrix's order (before the packs' columns)
SPECIALISTS_GROUP, LSTM_GROUP, REGIME_GROUP = "specialists", "lstm", "regime"
BUILTIN_GROUPS = (SPECIALISTS_GROUP, LSTM_GROUP, REGIME_GROUP)


def load_meta(path, want: dict | None = None) -> MetaModel:
    """The meta model saved at `path` (`meta_h{H}_{Y}.npz`, save_meta), read only once its
    owner, mode and the sha256 recorded in its JSON sidecar are verified
    (resources.verified_files.load_verified: else one UnverifiedFileError line), as arrays
    that cannot run code (allow_pickle=False), and, with `want` (the experiment, settings
    hash, kind, year and horizon asked for: domain.learning.provenance), only when its
    recorded provenance and training window serve that request (else one ModelMismatch
    line). A pickled model of before (`.joblib`) is never loaded: `migrate-models` converts it."""
    import json

    path = Path(path)
    side_path = path.with_suffix(".json")
    if not path.is_file() and path.with_suffix(".joblib").is_file():
        raise UnverifiedFileError(str(path.with_suffix(".joblib")), "a pickled meta model of before (tradelab.meta/1), "
                                  "which is never loaded: it could run code", expected=MIGRATE_HINT)
    try:
        side = json.loads(side_path.read_text())
    except (OSError, ValueError):
        side = {}  # load_verified names the missing or unreadable sidecar
    if want is not None and side:
        from domain.learning.provenance import check_provenance

        check_provenance(side, want, path, f"rebuild it (materialize meta_model for {want.get('year', 'its year')} "
                                           "under this experiment)")
    arrays = load_verified(path, side_path, lambda fh: load_arrays(fh, path),
                           rebuild="rebuild it (materialize meta_model for that year)")
    try:  # the sidecar read above is the one the verified arrays belong to: not replaced meanwhile
        again = json.loads(side_path.read_text())
    except (OSError, ValueError):
        again = None
    if again != side:
        raise UnverifiedFileError(str(side_path), "replaced while the model was read (a rebuild writing it?); "
                                  "not loaded", expected="the load again once the rebuild is done")
    return meta_from_arrays(arrays, side, path)


MIGRATE_HINT = ("`python -m pipeline.cli migrate-models` (it verifies each pickle's recorded sha256, converts it to "
                "arrays and moves it aside), or materialize meta_model again")


def input_groups(inputs: str | list[str]) -> list[str]:
    """The column groups of settings meta.inputs, in the matrix's order (specialists, lstm,
    regime, then the packs as listed): a list names exactly its groups; `specialists` is
    [specialists, lstm, regime], `features+specialists` those and `core`."""
    if isinstance(inputs, (list, tuple)):
        return [g for g in BUILTIN_GROUPS if g in inputs] + [g for g in dict.fromkeys(inputs) if g not in BUILTIN_GROUPS]
    if inputs not in META_INPUTS:
        raise ValueError(f"meta.inputs must be one of {META_INPUTS} or a list, got {inputs!r}")
    return [*BUILTIN_GROUPS, *(["core"] if inputs == WITH_FEATURES else [])]


def feature_columns(inputs: str | list[str], selection=None) -> list[str]:
    """The feature columns a meta model of `inputs` (settings meta.inputs) uses: none for
    `specialists`, the registry's (the `core` pack) for `features+specialists`; for a list,
    the feature columns of each pack it names (specialists, lstm and regime add none here:
    they are not `features` columns), in the list's order. A pack must be selected in
    `selection` (settings `features`, domain.feature_packs; default: core only), else a
    ValueError naming it."""
    if isinstance(inputs, (list, tuple)):
        from kernels.registry.packs import select

        selection = select() if selection is None else selection
        out: list[str] = []
        for name in inputs:
            if name in BUILTIN_GROUPS:
                continue
            pack = selection.pack(name)
            if pack is None:
                raise ValueError(f"meta.inputs: {name!r} is not a selected pack; expected one of "
                                 f"{list(BUILTIN_GROUPS)} or {[p.name for p in selection.packs]} "
                                 "(settings features.packs / features.plugins)")
            out += [c for e in pack.features for c in e.columns if c not in out]
        return out
    if inputs not in META_INPUTS:
        raise ValueError(f"meta.inputs must be one of {META_INPUTS}, got {inputs!r}")
    return list(FEATURE_NAMES) if inputs == WITH_FEATURES else []


def model_columns(groups: list[str], frame_columns, features: list[str]) -> tuple[list[str], list[str]]:
    """(the model's column names, the groups they come from) for `groups` (input_groups) over
    a frame with `frame_columns`: the specialist scores, the LSTM score when the frame has
    it (year_frames drops it below LSTM_MIN_COVERAGE), the regime one-hot when the frame has
    a regime, then the pack `features`; the order of build_meta_matrix."""
    names: list[str] = []
    used: list[str] = []
    if SPECIALISTS_GROUP in groups:
        names += SPECIALIST_COLUMNS
        used.append(SPECIALISTS_GROUP)
    if LSTM_GROUP in groups and LSTM_COLUMN in frame_columns:
        names.append(MODEL_LSTM_COLUMN)
        used.append(LSTM_GROUP)
    if REGIME_GROUP in groups and "regime" in frame_columns:
        names += REGIME_COLUMNS
        used.append(REGIME_GROUP)
    names += [c for c in features if c not in names]
    used += [g for g in groups if g not in BUILTIN_GROUPS]
    return names, used


def legacy_columns(frame_columns, features: list[str] | None) -> list[str]:
    """The columns of a model fitted without explicit names: every built-in group the frame
    has, then `features` (fit_year's default, the matrix before meta.inputs named groups)."""
    return model_columns(list(BUILTIN_GROUPS), frame_columns, features or [])[0]


def frame_matrix(frame: pl.DataFrame, names: list[str]) -> np.ndarray:
    """float32 [rows, len(names)]: the model columns `names` of `frame`, null as NaN: a
    specialist or feature column as stored, `lstm_score` from the stored `spec_lstm_score`
    (NaN when absent), `regime_*` as the one-hot of `regime` (domain.learning.matrix)."""
    n = frame.height
    X = np.empty((n, len(names)), dtype=np.float32)
    regime = regime_one_hot(frame["regime"].to_numpy()) if any(c in REGIME_COLUMNS for c in names) else None
    for j, name in enumerate(names):
        if name in REGIME_COLUMNS:
            X[:, j] = regime[:, REGIME_COLUMNS.index(name)]
        elif name == MODEL_LSTM_COLUMN:
            X[:, j] = (frame[LSTM_COLUMN].cast(pl.Float32).fill_null(float("nan")).to_numpy() if LSTM_COLUMN in frame.columns
                       else np.nan)
        else:
            X[:, j] = frame[name].cast(pl.Float32).fill_null(float("nan")).to_numpy()
    return X


def feature_frame(features: pl.LazyFrame | None, columns: list[str]) -> pl.LazyFrame:
    """symbol, date and `columns` of the stored `features` table (float32); a ValueError
    naming the missing columns when the table (e.g. nothing stored yet) lacks them."""
    have = features.collect_schema().names() if features is not None else []
    missing = [c for c in ("symbol", "date", *columns) if c not in have]
    if missing:
        raise ValueError(f"the meta model's inputs include the feature columns, but the `features` table lacks "
                         f"{missing[:6]}{' ...' if len(missing) > 6 else ''}: materialize `features` for these "
                         "symbols and years first (or set meta.inputs: specialists)")
    return features.select("symbol", "date", *[pl.col(c).cast(pl.Float32) for c in columns])


def join_features(frame: pl.DataFrame, features: pl.LazyFrame | None, columns: list[str]) -> pl.DataFrame:
    """`frame` with the feature `columns` of each (symbol, date) (null where not stored)."""
    if not columns:
        return frame
    feats = feature_frame(features, columns).with_columns(pl.col("date").cast(frame.schema["date"]))
    if frame.height:
        feats = feats.filter(pl.col("date").is_between(frame["date"].min(), frame["date"].max()))
    return frame.lazy().join(feats, on=["symbol", "date"], how="left", maintain_order="left").collect()


def fit_year(frame_train: pl.DataFrame, frame_test: pl.DataFrame, horizon: int, *, n_splits: int, embargo_days: int,
             model: str = "logistic", calibration: str = "isotonic", seed: int = 0, features: list[str] | None = None,
             n_jobs: int | None = None, c_search: str = "once", solver: str = "newton-cholesky",
             search_rows: int | None = None, names: list[str] | None = None, groups: list[str] | None = None,
             missing: str = "drop", min_coverage: float = 0.0, label: str | None = None,
             lgbm_params: dict | None = None, hist_gbm_params: dict | None = None,
             calibration_copies: int | None = None):
    """(model, out-of-sample metrics, test probabilities, test labels) for one horizon.
    `names`: the model's columns (model_columns; default legacy_columns: every built-in group
    the frame has, then `features`), `groups` the input groups they come from (recorded);
    `missing`: the missing-value rule; the metrics carry `coverage` (domain.learning.coverage)
    of the training and the test rows, and a coverage under `min_coverage` raises
    CoverageError naming `label` (default `meta_model h{H}`); `n_jobs`: processes for the
    calibration folds (the same model whatever the number); `lgbm_params`, `hist_gbm_params`:
    the tree models' hyperparameters (settings meta.lightgbm / meta.hist_gbm);
    `calibration_copies` (settings meta.calibration_copies): k calibrated copies, those of the
    last k purged folds (None: one per fold). The metrics carry `importance` (model_importance)."""
    label = label or f"meta_model h{horizon}"
    names = legacy_columns(frame_train.columns, features) if names is None else list(names)
    ybin = f"label_bin_h{horizon}"
    X = frame_matrix(frame_train, names)
    labelled = frame_train[ybin].is_not_null().to_numpy()
    cov_train = row_coverage(X, names, labelled, _symbols(frame_train), missing)
    ok = usable_rows(X, names, missing) & labelled
    if not ok.any():
        empty = [n for n, col in zip(names, X[labelled].T) if not np.isfinite(col).any()]
        need = "a value in every input column" if missing == "drop" else "any input value"
        raise ValueError(f"{label}: none of the {int(labelled.sum())} training rows has {need} (meta.missing {missing}); "
                         f"column(s) without any value: {empty[:12]}{' ...' if len(empty) > 12 else ''}; expected "
                         "meta.inputs whose columns the data can fill (close-only bars leave volume features empty)"
                         + (" or meta.missing: fill" if missing == "drop" else ""))
    check_floor(cov_train, min_coverage, f"{label} training rows")
    train = frame_train.filter(pl.Series(ok))
    X, y = X[ok], frame_train[ybin].to_numpy()[ok].astype(np.int8)
    t0 = train["date"].to_numpy().astype("datetime64[D]")
    t1 = train[f"t1_h{horizon}"].to_numpy().astype("datetime64[D]")
    folds = list(PurgedKFold(n_splits, t0, t1, embargo=np.timedelta64(embargo_days, "D")).split())
    window = {"train_from": str(train["date"].min()), "train_to": str(train["date"].max()), "rows": int(len(y)),
              "horizon": horizon, "inputs": list(groups) if groups is not None else
              (WITH_FEATURES if features else SPECIALISTS_ONLY),
              "input_columns": len(names), "missing": missing}
    model = train_meta(X, y, model=model, calibration=calibration, cv=folds, seed=seed, feature_names=names, window=window,
                       fold_jobs=n_jobs, c_search=c_search, solver=solver, search_rows=search_rows, missing=missing,
                       lgbm_params=lgbm_params, hist_gbm_params=hist_gbm_params, copies=calibration_copies)
    Xt = frame_matrix(frame_test, names)
    labelled_t = frame_test[ybin].is_not_null().to_numpy()
    cov_test = row_coverage(Xt, names, labelled_t, _symbols(frame_test), missing)
    check_floor(cov_test, min_coverage, f"{label} out-of-sample rows")
    okt = model.usable(Xt) & labelled_t
    p = model.predict_proba(Xt[okt])
    yt = frame_test[ybin].to_numpy()[okt].astype(np.int8)
    ret = frame_test[f"label_ret_h{horizon}"].to_numpy()[okt]
    ic = float(spearmanr(p, ret).statistic) if len(p) > 2 and np.ptp(p) > 0 else None
    metrics = {**fold_metrics(yt, p), "ic": ic, "train_rows": int(len(y)),
               "coverage": {"train": cov_train, "test": cov_test},
               "importance": model_importance(model, Xt[okt], yt, seed=seed)}
    return model, metrics, p, yt


PERMUTATION_ROWS = 2_000  # hist_gbm's permutation importance: out-of-sample rows sampled (seeded)
PERMUTATION_REPEATS = 2   # shuffles per column, averaged


def model_importance(model: MetaModel, X=None, y=None, seed: int = 0) -> dict | None:
    """{"kind": what was measured, "values": {column: share}} (largest first, shares summing
    to 1, or all 0 when nothing was measured): LightGBM's total split gain per column,
    averaged over the calibrated copies; the logistic model's mean |coefficient| of the
    standardised columns over the copies; hist_gbm (no built-in importance) the permutation
    importance on the rows `X`, `y` (the year's out-of-sample rows: permutation_importance);
    None for hist_gbm without such rows (none given, under 100, or one class)."""
    names = list(model.feature_names)
    if model.kind == "hist_gbm":
        return permutation_importance(model, X, y, seed)
    return _shares(model, names)


def permutation_importance(model: MetaModel, X, y, seed: int = 0, rows: int = PERMUTATION_ROWS,
                           repeats: int = PERMUTATION_REPEATS) -> dict | None:
    """The AUC the model loses when one column's values are shuffled across rows (the other
    columns kept), averaged over `repeats` seeded shuffles, on at most `rows` rows of `X`
    (a seeded uniform sample): Breiman's permutation importance with the AUC as the score
    (scikit-learn's permutation_importance with scoring="roc_auc", computed here on the
    calibrated model's probabilities). A column whose shuffling does not lower the AUC
    counts 0. None without at least 100 rows of both classes."""
    if X is None or y is None:
        return None
    X, y = np.asarray(X, dtype=np.float32), np.asarray(y, dtype=np.int8)
    if len(y) < 100 or len(np.unique(y)) < 2:
        return None
    rng = np.random.default_rng(seed)
    if len(y) > rows:
        pick = np.sort(rng.choice(len(y), size=rows, replace=False))
        X, y = X[pick], y[pick]
        if len(np.unique(y)) < 2:
            return None
    def auc(rows):  # a row the missing-value rule leaves out counts as no opinion
        return fold_metrics(y, np.nan_to_num(model.predict_proba(rows), nan=0.5))["auc"]

    base = auc(X)
    drops = np.zeros(X.shape[1], dtype=np.float64)
    for j in range(X.shape[1]):
        shuffled = X.copy()
        for _ in range(repeats):
            shuffled[:, j] = X[rng.permutation(len(y)), j]
            drops[j] += (base - auc(shuffled)) / repeats
    return _normalised(np.clip(drops, 0.0, None), list(model.feature_names),
                       f"permutation: mean AUC drop ({len(y):,} out-of-sample rows, {repeats} shuffles)")


def _normalised(raw: np.ndarray, names: list[str], kind: str) -> dict:
    total = float(raw.sum())
    shares = raw / total if total > 0 else raw
    order = np.argsort(-shares, kind="stable")
    return {"kind": kind, "values": {names[j]: round(float(shares[j]), 6) for j in order}}


def _shares(model: MetaModel, names: list[str]) -> dict | None:
    """LightGBM's gain or the logistic model's |coefficients| as shares (model_importance)."""
    if model.kind == "lightgbm":
        bases = getattr(model.estimator, "bases", None) or [cc.estimator.booster_
                                                             for cc in model.estimator.calibrated_classifiers_]
        raw = np.mean([np.asarray(b.feature_importance("gain"), np.float64) for b in bases], axis=0)
        kind = "lightgbm split gain"
    elif model.kind == "logistic":
        from domain.learning.metamodel import logistic_folds

        try:
            raw = np.mean([np.abs(f.coef_t.reshape(-1)) for f in logistic_folds(model.estimator)], axis=0)
        except NotImplementedError:  # a structure the extraction does not know
            return None
        kind = "mean |coefficient| (standardised columns)"
    else:
        return None
    return _normalised(raw, names, kind)


def _symbols(frame: pl.DataFrame) -> np.ndarray:
    """Each row's symbol (one symbol when the frame has no symbol column)."""
    return frame["symbol"].to_numpy() if "symbol" in frame.columns else np.zeros(frame.height, dtype=np.int8)


def year_frames(specialists: pl.LazyFrame, labels: pl.LazyFrame, regime: pl.LazyFrame, lstm_model: pl.LazyFrame,
                horizons: list[int], year: int, log=None, features: pl.LazyFrame | None = None,
                columns: list[str] | None = None, read: tuple | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The training rows of year Y's model (labels known by the end of Y-1) and its test rows
    (the rows of Y), with the LSTM score when it covers LSTM_MIN_COVERAGE of the training rows
    and the feature `columns` of `features` (feature_columns(meta.inputs); none by default).
    `read`: `read_inputs(...)` of a year >= Y, the tables read once for several years (the
    same frames as read here; default: read here)."""
    known, scores = read_inputs(specialists, labels, regime, lstm_model, horizons, year) if read is None else read
    train = known_by(known, horizons, year - 1)
    test = known_by(known, horizons, year).filter(pl.col("date").dt.year() == year)
    if scores is not None:
        train = train.join(scores, on=["symbol", "date"], how="left")
        coverage = train[LSTM_COLUMN].drop_nans().drop_nulls().len() / max(train.height, 1)
        if coverage >= LSTM_MIN_COVERAGE:
            test = test.join(scores, on=["symbol", "date"], how="left")
        else:
            train = train.drop(LSTM_COLUMN)
            if log is not None:
                log.info(f"meta_model {year}: LSTM scores cover {coverage:.0%} of training rows; not used")
    return join_features(train, features, columns or []), join_features(test, features, columns or [])


def read_inputs(specialists: pl.LazyFrame, labels: pl.LazyFrame, regime: pl.LazyFrame, lstm_model: pl.LazyFrame,
                horizons: list[int], last_year: int) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """(training_frame known by `last_year`, the LSTM scores or None when none are stored):
    one read of the tables for the frames of every year up to `last_year` (year_frames cuts
    each year's with known_by)."""
    known = training_frame(specialists, labels, horizons, known_by_year=last_year, regime=regime)
    scores = (lstm_model.select("symbol", "date", LSTM_COLUMN).collect()
              if LSTM_COLUMN in lstm_model.collect_schema().names() else None)
    return known, scores


def horizon_frame(frame: pl.DataFrame, horizon: int, columns: list[str] | None, labelled: bool = False) -> pl.DataFrame:
    """The columns of `frame` that fit_year reads for `horizon` (symbol, date, the label, its end and
    return, the scores, the LSTM score and regime when present, the feature `columns`), and
    with `labelled` only the rows with that label: what a worker process is sent, in the
    frame's row order (fit_year keeps the labelled rows itself, so the model is the same)."""
    keep = ["symbol", "date", f"t1_h{horizon}", f"label_bin_h{horizon}", f"label_ret_h{horizon}", *SPECIALIST_COLUMNS,
            LSTM_COLUMN, "regime", *(columns or [])]
    out = frame.select([c for c in dict.fromkeys(keep) if c in frame.columns])
    return out.filter(pl.col(f"label_bin_h{horizon}").is_not_null()) if labelled else out


def _fit_task(train: pl.DataFrame, test: pl.DataFrame, h: int, year: int, fit: dict, names: list[str],
              groups: list[str]) -> tuple:
    """One (year, horizon) fit, run in a worker process: (model, metrics, calibration PNG
    bytes or None). Every fit is seeded and independent, so the result does not depend on
    the process or the order."""
    from domain.learning.plots import calibration_png_bytes

    model, metrics, p, y = fit_year(train, test, h, **fit, names=names, groups=groups, label=f"meta_model {year} h{h}")
    png = (calibration_png_bytes(y, p, title=f"meta h{h}, out of sample {year}")
           if len(y) and len(np.unique(y)) == 2 else None)
    return model, metrics, png


def _year_tasks(specialists, labels, regime, lstm_model, horizons, years, log, features, columns, groups):
    """(year, h, train rows, test rows, (test symbols, train symbols), model columns, their
    groups, notes) per year and horizon to fit, built lazily (one year's frames at a time,
    as the workers ask for work)."""
    read = read_inputs(specialists, labels, regime, lstm_model, horizons, max(years)) if years else None
    for year in years:
        train, test = year_frames(specialists, labels, regime, lstm_model, horizons, year, log, features, columns, read)
        names, used = model_columns(groups, train.columns, columns)
        notes = [f"input group {g!r} not used: " + ("the LSTM scores cover too few training rows" if g == LSTM_GROUP
                                                     else "no regime is stored")
                 for g in groups if g not in used]
        for h in horizons:
            if train.filter(pl.col(f"label_bin_h{h}").is_not_null()).height < 200:
                if log is not None:
                    log.warning(f"meta_model {year} h{h}: too little history before {year}; skipped")
                continue
            only = one_class(train[f"label_bin_h{h}"])
            if only is not None:  # nothing to learn or calibrate (a universe that only rose over h rows)
                if log is not None:
                    log.warning(f"meta_model {year} h{h}: the label has one class (all {only}) in the training years; "
                                "horizon skipped")
                continue
            yield (year, h, horizon_frame(train, h, columns, labelled=True), horizon_frame(test, h, columns),
                   (test["symbol"].n_unique(), train["symbol"].n_unique()), names, used, notes)


def build_meta_models(specialists: pl.LazyFrame, labels: pl.LazyFrame, regime: pl.LazyFrame, lstm_model: pl.LazyFrame,
                      years: list[int], settings, log=None, features: pl.LazyFrame | None = None,
                      c_search: str = "once", solver: str = "newton-cholesky") -> tuple[pl.DataFrame, dict]:
    """The meta model of each year of `years` per horizon (walk-forward), saved under
    `models/<experiment>/meta_h{H}_{Y}.*`, with its calibration PNG and out-of-sample metrics under
    `reports/<experiment>/meta_model/`. Returns the table of headline metrics and the metrics keyed `{Y}/h{H}`.
    `log` (info/warning) is told about skipped horizons and unused LSTM scores. `features`
    (the stored table) is read only when settings `meta.inputs` asks for its columns.
    The (year, horizon) fits run in `build.workers` processes (one: in this process); files
    are written here once every fit has succeeded (a CoverageError or any failure stores
    nothing), in year and horizon order, and are the same whatever the worker count.
    `c_search`, `solver`: domain.learning.metamodel.train_meta's (the stage uses the defaults)."""
    from joblib import Parallel, delayed

    from domain.feature_packs import feature_selection

    from domain.learning.provenance import request

    horizons = settings.meta.horizons or settings.labels.horizons
    groups = input_groups(settings.meta.inputs)
    asked = request(settings, kind=settings.meta.model)  # each model's provenance adds its year and horizon
    columns = feature_columns(settings.meta.inputs, feature_selection(settings))
    versions = {a: DeltaStore(settings.table_root(a)).versions([a])[a]
                for a in TRAINED_ON + (("features",) if columns else ())}
    fit = {"n_splits": settings.cv.n_splits, "embargo_days": settings.cv.embargo_days, "model": settings.meta.model,
           "calibration": settings.meta.calibration, "seed": settings.meta.seed, "features": columns,
           "c_search": c_search, "solver": solver, "search_rows": settings.meta.search_rows,
           "missing": settings.meta.missing_rule(), "min_coverage": settings.meta.min_coverage,
           "lgbm_params": settings.meta.lightgbm.estimator_params(),
           "hist_gbm_params": settings.meta.hist_gbm.estimator_params(),
           "calibration_copies": settings.meta.calibration_copies}
    workers = min(settings.build.worker_count(), len(years) * len(horizons))
    task_args = (specialists, labels, regime, lstm_model, horizons, years, log, features, columns, groups)
    keys = []
    if workers <= 1:
        def fits():
            for y, h, tr, te, sym, names, used, notes in _year_tasks(*task_args):
                keys.append((y, h, sym, used, notes))
                yield _fit_task(tr, te, h, y, fit, names, used)

        results = fits()
    else:
        def calls():
            for y, h, tr, te, sym, names, used, notes in _year_tasks(*task_args):
                keys.append((y, h, sym, used, notes))
                yield delayed(_fit_task)(tr, te, h, y, fit, names, used)

        results = Parallel(n_jobs=workers, backend="loky", return_as="generator", pre_dispatch="n_jobs")(calls())
    done, logged = [], set()
    for i, result in enumerate(results):  # every fit first: a failure stores nothing
        done.append((keys[i], result))
        for y in [y for y in years if y < keys[i][0] and y not in logged]:  # earlier years are complete
            year_done(log, "meta_model", y)
            logged.add(y)
    rows, previews = [], {}
    reports = settings.stage_reports_dir("meta_model")
    for (year, h, (symbols, train_symbols), used, notes), (model, metrics, png) in done:
        stem = settings.models_dir / f"meta_h{h}_{year}"
        save_meta(model, stem.with_suffix(".npz"), extra={"table_versions": versions,
                                                        "provenance": {**asked, "year": year, "horizon": h},
                                                        "coverage": metrics["coverage"]})
        if png is not None:
            write_bytes_atomic(reports / f"calibration_h{h}_{year}.png", png)
        write_json_atomic(reports / f"h{h}_{year}.json",
                          {"year": year, "horizon": h, "symbols": symbols, "train_symbols": train_symbols,
                           "inputs": used, "input_columns": model.n_features, "missing": model.missing,
                           **({"notes": notes} if notes else {}), **metrics})
        # the table keeps its columns (a stored table's schema); coverage is in the reports and metadata
        rows.append({"year": year, "horizon": h, **{k: metrics[k] for k in ("auc", "brier", "log_loss", "ic", "n", "train_rows")}})
        top = dict(list(((metrics.get("importance") or {}).get("values") or {}).items())[:10])
        previews[f"{year}/h{h}"] = {k: v for k, v in metrics.items() if k not in ("coverage", "importance")} | {
            "importance_top10": top} | {
            "coverage": {split: {k: c[k] for k in ("rows_used", "rows_available", "symbols_used", "symbols_available")}
                         for split, c in metrics["coverage"].items()}}
    for y in years:
        if y not in logged:
            year_done(log, "meta_model", y)
    table = pl.DataFrame(rows) if rows else pl.DataFrame(schema={"year": pl.Int32})
    return table, previews
