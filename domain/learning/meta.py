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
with a list of pack names (`meta.inputs: [specialists, alpha158]`) those packs' columns.
Rows missing any feature are left out (a feature's warm-up too). Model (`meta.model`):
logistic regression, HistGradientBoosting or LightGBM, with isotonic or Platt calibration
(domain.learning.metamodel), its calibration folds purged on the label intervals and, for the
logistic model, its C searched once per fit over those folds (newton-cholesky fits; on at most
`meta.search_rows` training rows, a seeded sample with the same folds). The model records
its column names (`feature_names`, the JSON sidecar's `features`): predictions and live
inference rebuild the matrix from them. Saved as `models/<experiment>/meta_h{H}_{Y}.joblib` + JSON
(the payload's sha256, which `load_meta` verifies before it unpickles; features, versions,
window, and `table_versions`: the Delta table version of each input,
readable again with `pl.scan_delta(path, version=v)`); a calibration curve PNG and the
out-of-sample metrics under `reports/<experiment>/meta_model/`. The (year, horizon) fits are
independent and run in `build.workers` processes; this process writes every file, in year
and horizon order, so the files do not depend on the worker count. The input tables are read
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
from domain.learning.matrix import build_meta_matrix, complete_rows
from domain.learning.metamodel import MetaModel, train_meta
from domain.learning.persistence import meta_from_payload, save_meta
from domain.learning.purged_cv import PurgedKFold
from kernels.registry.features import FEATURE_NAMES
from kernels.registry.specialists import SPECIALIST_COLUMNS
from resources.delta_store import DeltaStore
from resources.verified_files import load_verified

TRAINED_ON = ("specialists", "labels", "regime", "lstm_model")  # the tables recorded in the JSON sidecar
LSTM_COLUMN = "spec_lstm_score"
LSTM_MIN_COVERAGE = 0.5  # use the LSTM score when it covers at least this share of training rows
SPECIALISTS_ONLY = "specialists"
WITH_FEATURES = "features+specialists"
META_INPUTS = (SPECIALISTS_ONLY, WITH_FEATURES)  # settings meta.inputs


def load_meta(path_joblib) -> MetaModel:
    """The meta model saved at `path_joblib` (save_meta), unpickled only once its owner,
    mode and the sha256 recorded in its JSON sidecar are verified
    (resources.verified_files.load_verified: else one UnverifiedFileError line, nothing run)."""
    import joblib

    path = Path(path_joblib)
    payload = load_verified(path, path.with_suffix(".json"), joblib.load,
                            rebuild="rebuild it (materialize meta_model for that year)")
    return meta_from_payload(payload, path)


def feature_columns(inputs: str | list[str], selection=None) -> list[str]:
    """The feature columns a meta model of `inputs` (settings meta.inputs) uses: none for
    `specialists`, the registry's (the `core` pack) for `features+specialists`; for a list,
    the feature columns of each pack it names (`specialists` adds none: the scores are
    always in), in the list's order. A pack must be selected in `selection` (settings
    `features`, domain.feature_packs; default: core only), else a ValueError naming it."""
    if isinstance(inputs, (list, tuple)):
        from kernels.registry.packs import select

        selection = select() if selection is None else selection
        out: list[str] = []
        for name in inputs:
            if name == SPECIALISTS_ONLY:
                continue
            pack = selection.pack(name)
            if pack is None:
                raise ValueError(f"meta.inputs: {name!r} is not a selected pack; expected specialists or one of "
                                 f"{[p.name for p in selection.packs]} (settings features.packs / features.plugins)")
            out += [c for e in pack.features for c in e.columns if c not in out]
        return out
    if inputs not in META_INPUTS:
        raise ValueError(f"meta.inputs must be one of {META_INPUTS}, got {inputs!r}")
    return list(FEATURE_NAMES) if inputs == WITH_FEATURES else []


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


def _matrix(frame: pl.DataFrame, horizon: int, features: list[str] | None = None):
    scores = frame.select(SPECIALIST_COLUMNS).to_numpy().astype(np.float32)
    regime = frame["regime"].to_numpy() if "regime" in frame.columns else None
    lstm = frame[LSTM_COLUMN].to_numpy().astype(np.float32) if LSTM_COLUMN in frame.columns else None
    feats = (frame.select([pl.col(c).cast(pl.Float32).fill_null(float("nan")) for c in features]).to_numpy()
             if features else None)
    X, names = build_meta_matrix(scores, lstm, regime, specialist_names=SPECIALIST_COLUMNS, features=feats,
                                 feature_columns=features or None)
    y = frame[f"label_bin_h{horizon}"].to_numpy()
    return X, y, names


def fit_year(frame_train: pl.DataFrame, frame_test: pl.DataFrame, horizon: int, *, n_splits: int, embargo_days: int,
             model: str = "logistic", calibration: str = "isotonic", seed: int = 0, features: list[str] | None = None,
             n_jobs: int | None = None, c_search: str = "once", solver: str = "newton-cholesky",
             search_rows: int | None = None):
    """(model, out-of-sample metrics, test probabilities, test labels) for one horizon;
    `features`: the registry feature columns of the frames to use too (feature_columns);
    `n_jobs`: processes for the calibration folds (the same model whatever the number)."""
    train = frame_train.filter(pl.col(f"label_bin_h{horizon}").is_not_null())
    X, y, names = _matrix(train, horizon, features)
    ok = complete_rows(X)
    if not ok.any():
        empty = [n for n, col in zip(names, X.T) if not np.isfinite(col).any()]
        raise ValueError(f"meta_model h{horizon}: none of the {len(y)} training rows has a value in every input column; "
                         f"column(s) without any value: {empty[:12]}{' ...' if len(empty) > 12 else ''}; expected "
                         "meta.inputs whose columns the data can fill (close-only bars leave volume features empty)")
    train, X, y = train.filter(pl.Series(ok)), X[ok], y[ok].astype(np.int8)
    t0 = train["date"].to_numpy().astype("datetime64[D]")
    t1 = train[f"t1_h{horizon}"].to_numpy().astype("datetime64[D]")
    folds = list(PurgedKFold(n_splits, t0, t1, embargo=np.timedelta64(embargo_days, "D")).split())
    window = {"train_from": str(train["date"].min()), "train_to": str(train["date"].max()), "rows": int(len(y)),
              "horizon": horizon, "inputs": WITH_FEATURES if features else SPECIALISTS_ONLY}
    model = train_meta(X, y, model=model, calibration=calibration, cv=folds, seed=seed, feature_names=names, window=window,
                       fold_jobs=n_jobs, c_search=c_search, solver=solver, search_rows=search_rows)
    test = frame_test.filter(pl.col(f"label_bin_h{horizon}").is_not_null())
    Xt, yt, _ = _matrix(test, horizon, features)
    okt = complete_rows(Xt)
    p = model.predict_proba(Xt[okt])
    ret = test[f"label_ret_h{horizon}"].to_numpy()[okt]
    ic = float(spearmanr(p, ret).statistic) if len(p) > 2 and np.ptp(p) > 0 else None
    metrics = {**fold_metrics(yt[okt].astype(np.int8), p), "ic": ic, "train_rows": int(len(y))}
    return model, metrics, p, yt[okt].astype(np.int8)


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
    """The columns of `frame` that fit_year reads for `horizon` (date, the label, its end and
    return, the scores, the LSTM score and regime when present, the feature `columns`), and
    with `labelled` only the rows with that label: what a worker process is sent, in the
    frame's row order (fit_year keeps the labelled rows itself, so the model is the same)."""
    keep = ["date", f"t1_h{horizon}", f"label_bin_h{horizon}", f"label_ret_h{horizon}", *SPECIALIST_COLUMNS,
            LSTM_COLUMN, "regime", *(columns or [])]
    out = frame.select([c for c in dict.fromkeys(keep) if c in frame.columns])
    return out.filter(pl.col(f"label_bin_h{horizon}").is_not_null()) if labelled else out


def _fit_task(train: pl.DataFrame, test: pl.DataFrame, h: int, year: int, fit: dict) -> tuple:
    """One (year, horizon) fit, run in a worker process: (model, metrics, calibration PNG
    bytes or None). Every fit is seeded and independent, so the result does not depend on
    the process or the order."""
    from domain.learning.plots import calibration_png_bytes

    model, metrics, p, y = fit_year(train, test, h, **fit)
    png = (calibration_png_bytes(y, p, title=f"meta h{h}, out of sample {year}")
           if len(y) and len(np.unique(y)) == 2 else None)
    return model, metrics, png


def _year_tasks(specialists, labels, regime, lstm_model, horizons, years, log, features, columns):
    """(year, h, train rows, test rows, (test symbols, train symbols)) per year and horizon
    to fit, built lazily (one year's frames at a time, as the workers ask for work)."""
    read = read_inputs(specialists, labels, regime, lstm_model, horizons, max(years)) if years else None
    for year in years:
        train, test = year_frames(specialists, labels, regime, lstm_model, horizons, year, log, features, columns, read)
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
                   (test["symbol"].n_unique(), train["symbol"].n_unique()))


def build_meta_models(specialists: pl.LazyFrame, labels: pl.LazyFrame, regime: pl.LazyFrame, lstm_model: pl.LazyFrame,
                      years: list[int], settings, log=None, features: pl.LazyFrame | None = None,
                      c_search: str = "once", solver: str = "newton-cholesky") -> tuple[pl.DataFrame, dict]:
    """The meta model of each year of `years` per horizon (walk-forward), saved under
    `models/<experiment>/meta_h{H}_{Y}.*`, with its calibration PNG and out-of-sample metrics under
    `reports/<experiment>/meta_model/`. Returns the table of headline metrics and the metrics keyed `{Y}/h{H}`.
    `log` (info/warning) is told about skipped horizons and unused LSTM scores. `features`
    (the stored table) is read only when settings `meta.inputs` asks for its columns.
    The (year, horizon) fits run in `build.workers` processes (one: in this process); files
    are written here, in year and horizon order, and are the same whatever the worker count.
    `c_search`, `solver`: domain.learning.metamodel.train_meta's (the stage uses the defaults)."""
    from joblib import Parallel, delayed

    from domain.feature_packs import feature_selection

    horizons = settings.meta.horizons or settings.labels.horizons
    columns = feature_columns(settings.meta.inputs, feature_selection(settings))
    versions = {a: DeltaStore(settings.table_root(a)).versions([a])[a]
                for a in TRAINED_ON + (("features",) if columns else ())}
    fit = {"n_splits": settings.cv.n_splits, "embargo_days": settings.cv.embargo_days, "model": settings.meta.model,
           "calibration": settings.meta.calibration, "seed": settings.meta.seed, "features": columns,
           "c_search": c_search, "solver": solver, "search_rows": settings.meta.search_rows}
    workers = min(settings.build.worker_count(), len(years) * len(horizons))
    tasks = list(_year_tasks(specialists, labels, regime, lstm_model, horizons, years, log, features, columns)) \
        if workers <= 1 else None
    rows, previews = [], {}
    reports = settings.stage_reports_dir("meta_model")
    if tasks is not None:
        keys = [(y, h, sym) for y, h, _, _, sym in tasks]
        results = (_fit_task(tr, te, h, y, fit) for y, h, tr, te, _ in tasks)
    else:
        keys = []
        gen = _year_tasks(specialists, labels, regime, lstm_model, horizons, years, log, features, columns)

        def calls():
            for y, h, tr, te, sym in gen:
                keys.append((y, h, sym))
                yield delayed(_fit_task)(tr, te, h, y, fit)

        results = Parallel(n_jobs=workers, backend="loky", return_as="generator", pre_dispatch="n_jobs")(calls())
    logged = set()
    for i, (model, metrics, png) in enumerate(results):
        year, h, (symbols, train_symbols) = keys[i]
        for y in [y for y in years if y < year and y not in logged]:  # earlier years are complete
            year_done(log, "meta_model", y)
            logged.add(y)
        stem = settings.models_dir / f"meta_h{h}_{year}"
        sidecar = save_meta(model, stem.with_suffix(".joblib"), stem.with_suffix(".json"))
        write_json_atomic(stem.with_suffix(".json"), {**sidecar, "table_versions": versions})
        if png is not None:
            write_bytes_atomic(reports / f"calibration_h{h}_{year}.png", png)
        write_json_atomic(reports / f"h{h}_{year}.json",
                          {"year": year, "horizon": h, "symbols": symbols, "train_symbols": train_symbols, **metrics})
        rows.append({"year": year, "horizon": h, **{k: metrics[k] for k in ("auc", "brier", "log_loss", "ic", "n", "train_rows")}})
        previews[f"{year}/h{h}"] = metrics
    for y in years:
        if y not in logged:
            year_done(log, "meta_model", y)
    table = pl.DataFrame(rows) if rows else pl.DataFrame(schema={"year": pl.Int32})
    return table, previews
