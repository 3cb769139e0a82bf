"""Stage `lstm_model` (year): the LSTM specialist of year Y and its scores for year Y.

Walk-forward: the model of year Y is trained on rows whose labels (horizon `lstm.horizon`)
end before a validation block of `lstm.val_days` calendar days that closes at the start of
Y; early stopping watches that block (purged: its rows' labels also end before Y, and no
training label reaches into it). It then scores the rows of Y, so every stored
`spec_lstm_score` comes from a model that never saw those rows. Sequences stay within one
symbol (domain.learning.lstm_training). Weights: `models/<experiment>/lstm_h{H}_{Y}.pt` + JSON (the weights' sha256,
standardizer, architecture, history, window, `table_versions` of its input tables). Runs in `lstm_job` (training on a CPU is slow: see
benchmarks/RESULTS.md).

Live scoring (domain.live.inference): `load_lstm(models_dir, horizon, year)` rebuilds the
saved model of a year (None when its weights or JSON are missing) and
`score_latest(model, window)` scores the one sequence made of the `seq_len` feature rows
ending at a bar (registry order, float32), as `fit_and_score` scores that bar in a batch.
"""

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import torch

from domain.learning.training_data import label_ends
from domain.observe import write_json_atomic
from domain.symbol_chunks import symbol_offsets
from domain.learning.lstm_training import LSTMSpec, Standardizer, predict_lstm, train_lstm
from kernels.registry.features import FEATURE_NAMES
from resources.delta_store import DeltaStore
from resources.verified_files import load_verified, write_verified

TRAINED_ON = ("features", "labels")  # the tables recorded in the JSON sidecar
LSTM_KIND = "lstm"  # the kind its provenance records (domain.learning.provenance)


def lstm_path(models_dir, horizon: int, year: int) -> Path:
    """`models/<experiment>/lstm_h{H}_{Y}.pt` (the JSON sidecar has the same stem)."""
    return Path(models_dir) / f"lstm_h{horizon}_{year}.pt"


def save_weights(state: dict, path: Path) -> str:
    """The state dict written atomically to `path`; returns its sha256 (recorded in the JSON
    sidecar: load_lstm loads only a file that matches it)."""
    return write_verified(path, lambda fh: torch.save(state, fh))


def lstm_frame(features: pl.LazyFrame, labels: pl.LazyFrame, horizon: int, last_year: int) -> pl.DataFrame:
    """Features + the horizon's label and label end, all symbols, years <= last_year, by symbol then date."""
    labs = label_ends(labels.select("symbol", "date", f"label_bin_h{horizon}"), [horizon])
    return (features.select("symbol", "date", *FEATURE_NAMES).join(labs, on=["symbol", "date"], how="inner")
            .filter(pl.col("date").dt.year() <= last_year).sort("symbol", "date").collect())


def fit_and_score(frame: pl.DataFrame, year: int, horizon: int, cfg, device: str, seed: int = 0):
    """(TrainResult, scores of the year's rows as a frame, training window)."""
    year_start = dt.datetime(year, 1, 1)
    val_start = year_start - dt.timedelta(days=cfg.val_days)
    t1 = pl.col(f"t1_h{horizon}")
    known = frame.select(t1.is_not_null() & (t1 < year_start)).to_series().to_numpy()
    date = frame["date"]
    train = (frame.select((pl.col("date") < val_start) & (t1 < val_start)).to_series().fill_null(False).to_numpy()) & known
    val = (frame.select(pl.col("date") >= val_start).to_series().to_numpy()) & known
    X = frame.select(FEATURE_NAMES).to_numpy().astype(np.float32)
    y = frame[f"label_bin_h{horizon}"].cast(pl.Float32).fill_null(np.nan).to_numpy()
    y = np.where(train | val, y, np.nan).astype(np.float32)
    offsets = symbol_offsets(frame["symbol"])
    result = train_lstm(X, y, offsets, train, val, seq_len=cfg.seq_len, hidden=cfg.hidden, layers=cfg.layers,
                        epochs=cfg.epochs, batch_size=cfg.batch_size, max_steps=cfg.max_steps, patience=cfg.patience,
                        device=device, seed=seed)
    in_year = (date >= year_start).to_numpy()
    ends = np.flatnonzero(in_year)
    scores = predict_lstm(result.model, result.standardizer, X, offsets, ends, seq_len=cfg.seq_len, device=device)
    out = frame.filter(pl.Series(in_year)).select("date", "symbol").with_columns(
        pl.Series("spec_lstm_score", scores[ends]).cast(pl.Float32))
    window = {"train_rows": int(train.sum()), "val_rows": int(val.sum()), "val_start": str(val_start.date()),
              "train_to": str(frame.filter(pl.Series(train))["date"].max()) if train.any() else None,
              "val_to": str(frame.filter(pl.Series(val))["date"].max()) if val.any() else None, "horizon": horizon}
    return result, out, window


def train_years(features: pl.LazyFrame, labels: pl.LazyFrame, years: list[int], settings, device: str,
                log=None) -> pl.DataFrame:
    """The LSTM of each year of `years` (walk-forward), saved as `models/<experiment>/lstm_h{H}_{Y}.pt` +
    JSON; returns the out-of-sample scores of the rows of those years. `log.info` is told
    each model's best epoch and throughput."""
    from domain.learning.provenance import provenance

    cfg = settings.lstm
    versions = DeltaStore(settings.data_dir).versions(TRAINED_ON)
    parts = []
    for year in years:
        frame = lstm_frame(features, labels, cfg.horizon, year)
        result, scores, window = fit_and_score(frame, year, cfg.horizon, cfg, device, seed=cfg.seed)
        stem = settings.models_dir / f"lstm_h{cfg.horizon}_{year}"
        sha256 = save_weights(result.model.state_dict(), stem.with_suffix(".pt"))
        write_json_atomic(stem.with_suffix(".json"), {
            "sha256": sha256, "year": year, "features": FEATURE_NAMES, "window": window, "seq_len": result.seq_len,
            "spec": result.spec, "standardizer": result.standardizer.to_dict(), "history": result.history,
            "best_epoch": result.best_epoch, "device": result.device, "precision": result.precision,
            "samples_per_s": result.samples_per_s, "torch": torch.__version__, "table_versions": versions,
            "provenance": provenance(settings, year=year, horizon=cfg.horizon, kind=LSTM_KIND)})
        if log is not None:
            log.info(f"lstm_model {year}: best epoch {result.best_epoch}, {result.samples_per_s:.0f} samples/s on {result.device}")
        parts.append(scores)
    return pl.concat(parts) if parts else pl.DataFrame(schema={"date": pl.Datetime("ns")})


# ---------------------------------------------------------------------------------------
# live scoring: one saved model, one window
# ---------------------------------------------------------------------------------------


@dataclass
class SavedLSTM:
    """The LSTM of `year` as `train_years` saved it: model (eval mode, CPU until first
    scored), standardizer, seq_len and the feature names in the order it was trained on."""

    year: int
    horizon: int
    model: LSTMSpec
    standardizer: Standardizer
    seq_len: int
    features: list[str]


def load_lstm(models_dir, horizon: int, year: int, want: dict | None = None) -> SavedLSTM | None:
    """The saved LSTM of `year` (`lstm_h{H}_{Y}.pt` + JSON), None when either file is
    missing. With `want` (domain.learning.provenance.request), ModelMismatch (one line) unless
    the sidecar's provenance is that experiment, settings hash and kind for (year, horizon)
    and its window ends before `year`. ValueError when the JSON's features are not the registry's (the live window is
    read in registry order); UnverifiedFileError (one line) when the weights are not the
    bytes whose sha256 the JSON recorded, or either file is another user's or world-writable
    (resources.verified_files), and torch loads weights only (weights_only=True)."""
    weights = lstm_path(models_dir, horizon, year)
    side = weights.with_suffix(".json")
    if not (weights.is_file() and side.is_file()):
        return None
    meta = json.loads(side.read_text())
    if want is not None:
        from domain.learning.provenance import check_provenance

        check_provenance(meta, {**want, "year": year, "horizon": horizon}, weights,
                         f"rebuild it (materialize lstm_model for {year} under this experiment)")
    if list(meta["features"]) != list(FEATURE_NAMES):
        raise ValueError(f"{side}: the model was trained on features {meta['features'][:4]}... which are not the "
                         f"registry's FEATURE_NAMES ({len(FEATURE_NAMES)} columns): retrain lstm_model for {year}")
    model = LSTMSpec(**meta["spec"])
    state = load_verified(weights, side, lambda fh: torch.load(fh, map_location="cpu", weights_only=True),
                          rebuild=f"rebuild it (materialize lstm_model for {year})")
    model.load_state_dict(state)
    model.eval()
    return SavedLSTM(year=year, horizon=horizon, model=model, standardizer=Standardizer.from_dict(meta["standardizer"]),
                     seq_len=int(meta["seq_len"]), features=list(meta["features"]))


def score_latest(saved: SavedLSTM, window, device="auto") -> float:
    """P(label = 1) of the sequence `window` [seq_len, F] (the feature rows ending at the bar,
    oldest first, registry order): predict_lstm on that single window. NaN when the window
    is shorter than seq_len or has a non-finite value (no full sequence, as in the batch)."""
    X = np.asarray(window, dtype=np.float32)
    if X.ndim != 2 or X.shape[1] != len(saved.features):
        raise ValueError(f"expected a window [rows, {len(saved.features)}], got {X.shape}")
    if X.shape[0] < saved.seq_len:
        return float("nan")
    X = np.ascontiguousarray(X[-saved.seq_len:])
    n = X.shape[0]
    out = predict_lstm(saved.model, saved.standardizer, X, np.array([0, n], dtype=np.int64), np.array([n - 1]),
                       seq_len=saved.seq_len, batch_size=1, device=device)
    return float(out[-1])
