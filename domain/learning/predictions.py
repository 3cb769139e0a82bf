"""Stage `predictions` (year): every symbol's meta-model probabilities for the days of Y.

    p_h{H}[symbol, date] = meta_h{H}_{Y}.predict_proba(X[symbol, date])   for date in Y

X is the matrix the model was trained on (domain.learning.metamodel.build_meta_matrix): the
specialist scores of the day, the LSTM score when the model uses it, the regime one-hot, and
the feature registry's columns of the day (the `features` table) when the model was trained
with them (meta.inputs: features+specialists; read from the model's feature names, so a
change of the setting after training does not change what a stored model is fed).
The model of year Y was trained on labels known by the end of Y-1 (`meta_model`), so every
probability stored here is out of sample. A day its model's missing-value rule leaves out
(settings meta.missing: under `drop` any missing input; under `fill` and `native` only a day
without any input value, a warm-up) gets NaN, as does a horizon whose model of Y does not
exist (too little history before Y). The matrix is built from the model's own column names
(domain.learning.meta.frame_matrix), so a model gets exactly the columns it was trained on. Rows: every (symbol, date) of Y with specialist scores, labelled or not:
the last days of a year have no realised label yet but still have a prediction.

Columns: symbol, date, regime (int8, null when untagged), p_h3, p_h7, p_h14 (float32).
`score_rows` is the one function that turns scores into probabilities; the inference path
(domain.live.inference) calls it too, so batch and live predictions cannot drift apart.
"""

from pathlib import Path

import numpy as np
import polars as pl

from domain.learning.meta import LSTM_COLUMN as STORED_LSTM_COLUMN
from domain.learning.meta import frame_matrix, join_features, load_meta
from domain.learning.matrix import LSTM_COLUMN as MODEL_LSTM_FEATURE
from domain.learning.matrix import REGIME_COLUMNS
from domain.learning.metamodel import MetaModel
from kernels.registry.specialists import SPECIALIST_COLUMNS

_BASE_COLUMNS = frozenset((*SPECIALIST_COLUMNS, MODEL_LSTM_FEATURE, *REGIME_COLUMNS))


def extra_columns(model: MetaModel) -> list[str]:
    """The model's columns beyond the specialists, LSTM and regime (the registry features
    of a `features+specialists` model), in the model's order."""
    return [c for c in model.feature_names if c not in _BASE_COLUMNS]


def models_features(models: dict[int, MetaModel]) -> list[str]:
    """The union of the models' extra columns (first seen order)."""
    return list(dict.fromkeys(c for m in models.values() for c in extra_columns(m)))


def model_path(models_dir: Path, horizon: int, year: int) -> Path:
    return Path(models_dir) / f"meta_h{horizon}_{year}.npz"


def load_year_models(models_dir: Path, year: int, horizons: list[int], want: dict | None = None) -> dict[int, MetaModel]:
    """The meta models of `year` that exist, by horizon, each verified before it is unpickled
    (domain.learning.meta.load_meta: a file planted or changed since it was written is
    refused) and, with `want` (domain.learning.provenance.request), refused unless it was
    trained for that experiment, settings, kind, year and horizon, before the year."""
    return {h: load_meta(model_path(models_dir, h, year), None if want is None else {**want, "year": year, "horizon": h})
            for h in horizons if _stored(model_path(models_dir, h, year))}


def _stored(path: Path) -> bool:
    """Whether a model is stored at `path`, or a pickled one of before beside it (which
    load_meta refuses, naming migrate-models, instead of scoring the year as modelless)."""
    return path.exists() or path.with_suffix(".joblib").exists()


def score_rows(frame: pl.DataFrame, models: dict[int, MetaModel], horizons: list[int]) -> dict[str, np.ndarray]:
    """p_h{H} float32 [rows] for the rows of `frame` (specialist columns, optional `regime`
    and `spec_lstm_score`, the stored name of the model's `lstm_score` feature, and the
    feature columns a model uses: extra_columns); NaN where a horizon has no model or a
    row's inputs are incomplete (a null feature too). A model's feature column missing from
    `frame` is a ValueError."""
    n = frame.height
    out = {}
    for h in horizons:
        model = models.get(h)
        if model is None or n == 0:
            out[f"p_h{h}"] = np.full(n, np.nan, dtype=np.float32)
            continue
        need = [*extra_columns(model), *(c for c in model.feature_names if c in SPECIALIST_COLUMNS),
                *(["regime"] if any(c in REGIME_COLUMNS for c in model.feature_names) else [])]
        if missing := [c for c in need if c not in frame.columns]:
            raise ValueError(f"meta model h{h} uses the columns {missing[:6]}, which the scoring frame lacks")
        out[f"p_h{h}"] = model.predict_proba(frame_matrix(frame, list(model.feature_names)))
    return out


def scoring_frame(specialists: pl.LazyFrame, regime: pl.LazyFrame | None, lstm: pl.LazyFrame | None,
                  year: int, features: pl.LazyFrame | None = None, columns: list[str] | None = None) -> pl.DataFrame:
    """The rows of `year`: symbol, date, the specialist scores, regime and LSTM score when
    stored, and the feature `columns` of `features` (null where a day has none)."""
    lo, hi = pl.datetime(year, 1, 1), pl.datetime(year + 1, 1, 1)
    frame = specialists.select("symbol", "date", *SPECIALIST_COLUMNS).filter(
        (pl.col("date") >= lo) & (pl.col("date") < hi))
    if regime is not None and "regime" in regime.collect_schema().names():
        frame = frame.join(regime.select("date", pl.col("regime").cast(pl.Int8)), on="date", how="left")
    else:
        frame = frame.with_columns(pl.lit(None, dtype=pl.Int8).alias("regime"))
    if lstm is not None and STORED_LSTM_COLUMN in lstm.collect_schema().names():
        frame = frame.join(lstm.select("symbol", "date", STORED_LSTM_COLUMN), on=["symbol", "date"], how="left")
    return join_features(frame.sort("date", "symbol").collect(), features, columns or [])


def predict_year(specialists: pl.LazyFrame, regime: pl.LazyFrame | None, lstm: pl.LazyFrame | None, year: int,
                 models: dict[int, MetaModel], horizons: list[int], features: pl.LazyFrame | None = None) -> pl.DataFrame:
    """The predictions of `year`; `features` is read only when a model uses feature columns."""
    frame = scoring_frame(specialists, regime, lstm, year, features, models_features(models))
    probs = score_rows(frame, models, horizons)
    return frame.select("symbol", "date", "regime").with_columns(
        *[pl.Series(k, v, dtype=pl.Float32) for k, v in probs.items()])


def prediction_coverage(df: pl.DataFrame, h: int, has_model: bool) -> dict:
    """What the year's p_h{H} stands on: `share` of rows with a probability, `rows_predicted`
    of `rows` (every row with specialist scores), the symbols of each, and `why` the rest
    have none (no model of the year, or the rows its missing-value rule leaves out)."""
    p = df[f"p_h{h}"].is_not_nan().fill_null(False)
    n, k = df.height, int(p.sum())
    why = None if k == n else ("no meta model of the year" if not has_model
                               else "inputs the model's missing-value rule leaves out (meta.missing)")
    return {"share": round(k / n, 4) if n else 0.0, "rows_predicted": k, "rows": n,
            "symbols_predicted": df["symbol"].filter(p).n_unique(), "symbols": df["symbol"].n_unique(), "why": why}


def predict_years(specialists: pl.LazyFrame, regime: pl.LazyFrame | None, lstm: pl.LazyFrame | None, years: list[int],
                  models_dir: Path, horizons: list[int], log=None,
                  features: pl.LazyFrame | None = None, want: dict | None = None) -> tuple[pl.DataFrame, dict]:
    """The predictions of every year of `years` from that year's meta models; returns the
    table and, per year and horizon, prediction_coverage. `log.warning` is told of a year
    without models (its probabilities are all NaN). `want`: what every model must have been
    trained for (load_year_models)."""
    frames, coverage = [], {}
    for year in years:
        models = load_year_models(models_dir, year, horizons, want)
        if not models and log is not None:
            log.warning(f"predictions {year}: no meta model of {year} in {models_dir}; all NaN")
        df = predict_year(specialists, regime, lstm, year, models, horizons, features)
        frames.append(df)
        coverage[str(year)] = {f"h{h}": prediction_coverage(df, h, h in models) for h in horizons}
    table = pl.concat(frames) if frames else pl.DataFrame()
    return table, coverage
