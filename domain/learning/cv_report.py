"""Stage `cv_report` (year): purged cross-validation of every specialist per horizon.

For year Y (walk-forward: only labels known by the end of Y), per horizon H and specialist:
PurgedKFold over the rows sorted by date (at most `cv.max_rows` of them: a seeded uniform sample
over every year and symbol, so the cost stops growing with symbols x years^2 on a large store;
each fold row records the `rows` used; the JSON report's also `rows_known`), label intervals [date, date H rows ahead],
embargo `cv.embargo_days`; on each fold, sigmoid (Platt) and isotonic calibrators are fitted on the
training rows (a score -> probability map) and scored on the test rows: AUC, Brier, log
loss. Specialists run in parallel (joblib) over one memory-mapped copy of the scores and
labels. Reports: `reports/<experiment>/cv_report/h{H}/{Y}.json`; the table of fold metrics is the output.
Cost: ~1,000 calibrator fits per demo run, so none pays sklearn's per-call validation: Platt is
a Newton solve (domain.learning.platt), fold metrics are NumPy (domain.learning.calibration),
and isotonic fits get rows sorted once per specialist (the same fit bit for bit).

A horizon whose label has one class in the rows known by Y (a universe that only rose over
H rows) has nothing to calibrate: it is skipped with one warning line naming the stage,
year and horizon (`one_class`), and the other horizons finish; a fold whose training rows
have one class is left out of that specialist's folds.
"""

import tempfile
from pathlib import Path

import numpy as np
import polars as pl
from joblib import Parallel, delayed

from domain.learning.training_data import known_by, one_class, training_frame
from domain.observe import write_json_atomic
from domain.progress import year_done
from domain.learning.calibration import both_classes, fit_calibrator, fold_metrics
from domain.learning.purged_cv import PurgedKFold, row_sample
from kernels.registry.specialists import SPECIALIST_COLUMNS

METHODS = ("sigmoid", "isotonic")  # domain.learning.calibration.METHODS


def _cv_one(scores_path: str, shape: tuple, column: int, y_path: str, folds: list) -> list[dict]:
    """One specialist's folds, reading the shared memory-mapped arrays."""
    scores = np.memmap(scores_path, dtype=np.float32, mode="r", shape=shape)[:, column]
    y = np.memmap(y_path, dtype=np.int8, mode="r", shape=(shape[0],))
    # the isotonic fit sorts its rows by (score, label); handing it each fold's training rows
    # already in that order (one sort per specialist, not one per fold) gives the same fit
    # bit for bit at a quarter of the cost
    order = np.lexsort((y, scores))
    in_train = np.zeros(shape[0], dtype=bool)
    rows = []
    for fold, (train, test) in enumerate(folds):
        if not both_classes(y[train]):  # nothing to calibrate on this fold
            continue
        in_train[:] = False
        in_train[train] = True
        ordered = order[in_train[order]]
        for method in METHODS:
            fit_rows = ordered if method == "isotonic" else train
            cal = fit_calibrator(scores[fit_rows], y[fit_rows], method=method)
            rows.append({"fold": fold, "method": method, **fold_metrics(y[test], cal.predict(scores[test]))})
    return rows


def cv_horizon(frame: pl.DataFrame, horizon: int, *, n_splits: int = 5, embargo_days: int = 5, workers: int = 1,
               year: int | None = None, log=None, max_rows: int | None = None, seed: int = 0) -> list[dict]:
    """Fold metrics of every specialist at one horizon (rows with every score and the label;
    at most `max_rows` of them, a seeded uniform sample: purged_cv.row_sample);
    [] with a `log.warning` when the label has one class there."""
    data = frame.filter(pl.col(f"label_bin_h{horizon}").is_not_null()).drop_nans(SPECIALIST_COLUMNS).drop_nulls(SPECIALIST_COLUMNS)
    known = data.height
    sample = row_sample(known, max_rows, seed)
    if sample is not None:
        data = data[sample]
    if data.height < n_splits * 10:
        return []
    only = one_class(data[f"label_bin_h{horizon}"])
    if only is not None:
        if log is not None:
            log.warning(f"cv_report {year} h{horizon}: the label has one class (all {only}) in the training years; "
                        "horizon skipped")
        return []
    t0 = data["date"].to_numpy().astype("datetime64[D]")
    t1 = data[f"t1_h{horizon}"].to_numpy().astype("datetime64[D]")
    folds = list(PurgedKFold(n_splits, t0, t1, embargo=np.timedelta64(embargo_days, "D")).split())
    with tempfile.TemporaryDirectory() as tmp:
        scores = np.memmap(Path(tmp) / "scores.f32", dtype=np.float32, mode="w+", shape=(data.height, len(SPECIALIST_COLUMNS)))
        scores[:] = data.select(SPECIALIST_COLUMNS).to_numpy().astype(np.float32)
        scores.flush()
        y = np.memmap(Path(tmp) / "y.i8", dtype=np.int8, mode="w+", shape=(data.height,))
        y[:] = data[f"label_bin_h{horizon}"].to_numpy().astype(np.int8)
        y.flush()
        results = Parallel(n_jobs=workers, backend="loky" if workers > 1 else "sequential")(
            delayed(_cv_one)(scores.filename, scores.shape, j, y.filename, folds) for j in range(len(SPECIALIST_COLUMNS))
        )
    return [{"horizon": horizon, "specialist": col, "rows": data.height, "rows_known": known, **r}
            for col, rows in zip(SPECIALIST_COLUMNS, results) for r in rows]


def summarize(rows: list[dict]) -> dict:
    """Mean metrics per specialist and method."""
    out: dict = {}
    for r in rows:
        key = out.setdefault(r["specialist"], {}).setdefault(r["method"], {"auc": [], "brier": [], "log_loss": []})
        for m in ("auc", "brier", "log_loss"):
            if r.get(m) is not None:
                key[m].append(r[m])
    return {s: {meth: {m: (float(np.mean(v)) if v else None) for m, v in d.items()} for meth, d in methods.items()}
            for s, methods in out.items()}


def build_cv_report(specialists: pl.LazyFrame, labels: pl.LazyFrame, years: list[int], settings,
                    log=None) -> tuple[pl.DataFrame, dict]:
    """The cross-validation of every specialist per horizon for each year of `years`
    (walk-forward: labels known by the end of the year). Writes `reports/<experiment>/cv_report/h{H}/{Y}.json`;
    returns the table of fold metrics (with `year`) and the summaries keyed `{Y}/h{H}`.
    `log.warning` is told of a horizon skipped for a one-class label."""
    horizons = settings.labels.horizons
    tables, summary = [], {}
    known = training_frame(specialists, labels, horizons, known_by_year=max(years)) if years else None
    for year in years:
        frame = known_by(known, horizons, year)  # == training_frame(..., known_by_year=year): one read for all years
        for h in horizons:
            rows = cv_horizon(frame, h, n_splits=settings.cv.n_splits, embargo_days=settings.cv.embargo_days,
                              workers=settings.build.worker_count(), year=year, log=log, max_rows=settings.cv.max_rows)
            report = {"year": year, "horizon": h, "symbols": frame["symbol"].n_unique(), "n_splits": settings.cv.n_splits,
                      "embargo_days": settings.cv.embargo_days, "max_rows": settings.cv.max_rows, "summary": summarize(rows), "folds": rows}
            write_json_atomic(settings.stage_reports_dir("cv_report") / f"h{h}" / f"{year}.json", report)
            summary[f"{year}/h{h}"] = report["summary"]
            # rows_known stays in the JSON report: a new table column would refuse the partial
            # overwrite of a cv_report table stored before it (resources.delta_store)
            table_rows = [{k: v for k, v in r.items() if k != "rows_known"} for r in rows]
            tables.append(pl.DataFrame(table_rows).with_columns(pl.lit(year).alias("year")) if rows else None)
        year_done(log, "cv_report", year)
    table = pl.concat([t for t in tables if t is not None], how="diagonal_relaxed") if any(t is not None for t in tables) \
        else pl.DataFrame(schema={"year": pl.Int32})
    return table, summary
