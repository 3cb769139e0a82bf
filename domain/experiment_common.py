"""`compare --common`: the evaluation figures of experiments recomputed on the rows they share.

Experiments that stand on different rows (other symbols, years, a coverage floor, a model that
predicts NaN where another predicts) cannot be read side by side. `common_figures(settings,
names)` takes, per horizon H, the (symbol, date) rows where every named experiment's stored
`predictions` (settings.table_root: data/experiments/<name>/predictions) has a finite p_h{H},
joins each experiment's predictions on those rows with the shared `labels` table, and
evaluates them with domain.evaluation.evaluate_horizon (the stage's own metrics, at the
settings' evaluation.min_symbols_per_day): the overall scope and each year, so that the
paired t-statistics of `compare` are over the same rows too. The backtest is not recomputed.
"""

from __future__ import annotations

import polars as pl

from config.settings import Settings
from domain.evaluation import evaluate_horizon, outcomes
from domain.experiment_compare import EVAL_FIGURES
from resources.delta_store import DeltaStore


def _predictions(settings: Settings, name: str) -> pl.LazyFrame:
    """The stored predictions of experiment `name`; ValueError (one line) when it has none."""
    store = DeltaStore(settings.model_copy(update={"experiment": name}).table_root("predictions"))
    if not store.exists("predictions"):
        raise ValueError(f"compare --common: experiment {name!r} has no stored predictions under "
                         f"{store.asset_dir('predictions')}; expected the table `train-meta` stores (run "
                         f"`python -m pipeline.cli --experiment {name} train-meta`)")
    return store.scan("predictions")


def _horizons(frames: dict[str, pl.LazyFrame], labels: pl.LazyFrame) -> list[int]:
    """The horizons every experiment predicts and the labels table holds."""
    have = [set(f.collect_schema().names()) for f in frames.values()]
    label_cols = set(labels.collect_schema().names())
    common = set.intersection(*have)
    return sorted(int(c[3:]) for c in common if c.startswith("p_h") and c[3:].isdigit()
                  and f"label_bin_h{c[3:]}" in label_cols)


def shared_rows(frames: dict[str, pl.LazyFrame], h: int) -> pl.DataFrame:
    """The (symbol, date) rows where every experiment of `frames` has a finite p_h{h}."""
    keys = None
    for frame in frames.values():
        rows = frame.filter(pl.col(f"p_h{h}").is_finite()).select("symbol", "date").unique()
        keys = rows if keys is None else keys.join(rows, on=["symbol", "date"], how="inner")
    return keys.collect().sort("symbol", "date")


def _figures(report: dict) -> dict[str, float | None]:
    return {f: report.get(f) for f in EVAL_FIGURES}


def common_figures(settings: Settings, names: list[str]) -> dict:
    """{"horizons": {"h{H}": {"rows": shared rows, "evaluated": those with a realised label}},
    "overall": {name: {"h{H} <figure>": value}}, "yearly": {name: {"h{H} <figure>": {year:
    value}}}} of `names` on their shared rows (see the module doc); ValueError (one line) for an
    experiment without stored predictions or with no horizon in common."""
    frames = {n: _predictions(settings, n) for n in names}
    labels = DeltaStore(settings.data_dir).scan("labels")
    horizons = _horizons(frames, labels)
    if not horizons:
        raise ValueError(f"compare --common: {', '.join(names)} predict no horizon in common that the labels table "
                         "holds; expected the same labels.horizons")
    min_symbols = settings.evaluation.min_symbols_per_day
    out: dict = {"horizons": {}, "overall": {n: {} for n in names}, "yearly": {n: {} for n in names}}
    for h in horizons:
        keys = shared_rows(frames, h)
        for n in names:
            rows = frames[n].select("symbol", "date", "regime", f"p_h{h}").join(keys.lazy(), on=["symbol", "date"],
                                                                                how="semi")
            joined = outcomes(rows, labels, [h])
            report = evaluate_horizon(joined, h, min_symbols)
            out["horizons"][f"h{h}"] = {"rows": keys.height, "evaluated": report.get("n")}
            years = sorted(joined["date"].dt.year().unique().to_list())
            by_year = {y: _figures(evaluate_horizon(joined.filter(pl.col("date").dt.year() == y), h, min_symbols))
                       for y in years}
            for f, v in _figures(report).items():
                out["overall"][n][f"h{h} {f}"] = v
                out["yearly"][n][f"h{h} {f}"] = {y: figs[f] for y, figs in by_year.items() if figs[f] is not None}
    return out
