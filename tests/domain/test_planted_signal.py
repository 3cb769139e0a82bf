"""A signal planted in the synthetic market is found end to end, and none that is
not there.

The synthetic market (domain.sources.synthetic, `universe.synthetic.planted`) can carry a
known effect: each day's RSI(14) score moves the returns of the next 7 days (linear: a
reversal; nonlinear: momentum inside a band of the score, reversal outside it, a shape no
linear model can use). The tests build a tiny universe through Dagster (raw_bars, features,
specialists, labels, regime, cv_report, meta_model, predictions, evaluation: the same
assets and code paths as `make demo`) and read the out-of-sample figures of 2003, the year
whose meta model is trained on 2000-2002 only.

Rank IC here: the Spearman correlation of p_h7 with the realised 7-day return across the
symbols of each day, averaged over the days of 2003 (a cross-sectional IC: the common market
move drops out); the evaluation report's `ic` is the same correlation over all rows pooled.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from dagster import materialize
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from tests.conftest import project_instance_for_test, run_assets

SYMBOLS = ["AAA", "BBB", "CCC", "DDD", "EEE", "FFF"]
YEARS = [2000, 2001, 2002, 2003]
OOS_YEAR = 2003
H = 7
CV_SPLITS = 3  # purged folds (cv_report, the meta model's calibration): 3 keeps the module CI-fast
STRENGTH = 0.3  # strong: the generator's own RSI score predicts the 7-day sign with AUC ~0.69


def _write_settings(root: Path, kind: str, strength: float, model: str = "logistic", out: str = "") -> Path:
    """Settings of a planted universe under `root` (reports/models under `out` when given, so
    two models can be scored on the same data)."""
    data = {
        "paths": {"data": str(root / "data"), "reports": str(root / out / "reports"), "models": str(root / out / "models")},
        "years": {"start": YEARS[0], "end": YEARS[-1]},
        "universe": {"source": "synthetic", "synthetic": {
            "symbols": SYMBOLS, "seed": 3, "end_date": f"{YEARS[-1]}-12-31",
            "planted": {"strength": strength, "kind": kind, "horizon": H}}},
        "labels": {"horizons": [H], "thresholds": {H: 0.0}},
        "meta": {"model": model},
        "cv": {"n_splits": CV_SPLITS, "embargo_days": 5},
    }
    path = root / out / "settings.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def _yearly(cfg: Path, instance, selection, partition_key: str | None = None, tags: dict | None = None):
    from pipeline.definitions import ALL_ASSETS, build_resources

    return materialize(ALL_ASSETS, selection=selection, partition_key=partition_key, instance=instance,
                       resources=build_resources(str(cfg)), tags=tags)


def _build(cfg: Path, instance) -> None:
    """The symbol x year stages, then the regime of every year (one run each)."""
    from assets.features import features
    from assets.labels import labels
    from assets.raw_bars import raw_bars
    from assets.regime import regime
    from assets.specialists import specialists

    assert run_assets([raw_bars, features, specialists, labels], cfg, instance, SYMBOLS, YEARS).success
    assert _yearly(cfg, instance, [regime], tags={ASSET_PARTITION_RANGE_START_TAG: str(YEARS[0]),
                                                  ASSET_PARTITION_RANGE_END_TAG: str(YEARS[-1])}).success


def _scan(cfg: Path, asset: str) -> pl.LazyFrame:
    from config.settings import read_settings

    return pl.scan_parquet(str(read_settings(cfg).table_root(asset) / asset / "**" / "*.parquet"), hive_partitioning=True)


def _report(cfg: Path, *parts: str) -> dict:
    from config.settings import read_settings

    return json.loads(read_settings(cfg).reports_dir.joinpath(*parts).read_text())


def cross_sectional_ic(frame: pl.DataFrame, p: str, ret: str) -> tuple[float, int]:
    """Mean over days of the Spearman correlation of `p` with `ret` across that day's symbols
    (days with fewer than 3 symbols or a constant column are left out); and the day count."""
    ranked = frame.drop_nulls([p, ret]).filter(pl.col(p).is_not_nan()).with_columns(
        pl.col(p).rank().over("date").alias("_rp"), pl.col(ret).rank().over("date").alias("_rr"))
    daily = ranked.group_by("date").agg(pl.corr("_rp", "_rr").alias("ic"), pl.len().alias("n"))
    daily = daily.filter((pl.col("n") >= 3) & pl.col("ic").is_not_nan() & pl.col("ic").is_not_null())
    return float(daily["ic"].mean()), daily.height


@pytest.fixture(scope="module")
def linear_store(tmp_path_factory):
    """The linear planted universe through the whole chain; 2003 scored out of sample."""
    from assets.cv_report import cv_report
    from assets.evaluation import evaluation
    from assets.meta_model import meta_model
    from assets.predictions import predictions

    cfg = _write_settings(tmp_path_factory.mktemp("planted_linear"), "linear", STRENGTH)
    with project_instance_for_test() as instance:
        _build(cfg, instance)
        assert _yearly(cfg, instance, [cv_report, meta_model, predictions, evaluation], str(OOS_YEAR)).success
    return cfg


def test_a_planted_linear_signal_is_recovered_out_of_sample_end_to_end(linear_store):
    """features -> specialists -> purged CV -> meta -> predictions -> evaluation, through
    Dagster: the meta model of 2003 (trained on 2000-2002) scores 2003 with AUC >= 0.55 and a
    cross-sectional rank IC >= 0.05; the purged CV of the rsi specialist sees it too."""
    ev = _report(linear_store, "evaluation", f"{OOS_YEAR}.json")[f"h{H}"]
    outcome = _scan(linear_store, "predictions").join(
        _scan(linear_store, "labels").select("symbol", "date", f"label_ret_h{H}"), on=["symbol", "date"]).collect()
    ic_daily, days = cross_sectional_ic(outcome, f"p_h{H}", f"label_ret_h{H}")
    cv = _report(linear_store, "cv_report", f"h{H}", f"{OOS_YEAR}.json")["summary"]["spec_rsi_score"]
    print(f"\nplanted linear s={STRENGTH}: eval {OOS_YEAR} AUC {ev['auc']:.3f} pooled IC {ev['ic']:.3f} "
          f"n {ev['n']}; cross-sectional IC {ic_daily:.3f} over {days} days; cv rsi {json.dumps(cv)}")
    assert ev["n"] > 1000
    assert ev["auc"] >= 0.55
    assert ic_daily >= 0.05 and days > 200
    assert ev["ic"] >= 0.05


NONLINEAR_STRENGTH = 0.5


@pytest.fixture(scope="module")
def nonlinear_reports(tmp_path_factory):
    """The nonlinear planted universe built once; the meta model of 2003 trained twice on it,
    logistic and hist_gbm (reports and models apart, the data shared). Their out-of-sample
    reports (reports/<experiment>/meta_model/h7_2003.json), by model."""
    from assets.meta_model import meta_model

    root = tmp_path_factory.mktemp("planted_nonlinear")
    cfgs = {m: _write_settings(root, "nonlinear", NONLINEAR_STRENGTH, m, out=m) for m in ("logistic", "hist_gbm")}
    out = {}
    with project_instance_for_test() as instance:
        _build(cfgs["logistic"], instance)
        for m, cfg in cfgs.items():
            assert _yearly(cfg, instance, [meta_model], str(OOS_YEAR)).success
            out[m] = _report(cfg, "meta_model", f"h{H}_{OOS_YEAR}.json")
    return out


def test_a_planted_nonlinear_signal_is_found_by_the_tree_model_and_not_by_the_linear_one(nonlinear_reports):
    """kind nonlinear (momentum inside a band of the RSI score, reversal outside it): the
    meta model's out-of-sample AUC of 2003 with meta.model hist_gbm beats logistic clearly;
    the logistic model sees little of it (the planted shape is nearly uncorrelated with the
    score itself)."""
    lin, tree = nonlinear_reports["logistic"], nonlinear_reports["hist_gbm"]
    print(f"\nplanted nonlinear s={NONLINEAR_STRENGTH}: out of sample {OOS_YEAR} h{H}: logistic AUC {lin['auc']:.3f} "
          f"IC {lin['ic']:.3f}; hist_gbm AUC {tree['auc']:.3f} IC {tree['ic']:.3f} (n {tree['n']})")
    assert tree["n"] == lin["n"] > 1000
    assert tree["auc"] >= 0.55
    assert tree["auc"] >= lin["auc"] + 0.03


def _walk_forward(specialists: pl.LazyFrame, labels: pl.LazyFrame, regime: pl.LazyFrame, years, extra=None,
                  only_extra: bool = False):
    """Out-of-sample (p, y, year of the row) over `years`: for each Y the meta model trained on the labels
    known by the end of Y-1 (purged calibration folds), scored on Y: domain.learning's
    training_frame + fit_year, the functions the meta_model asset runs. `extra`: a column
    joined onto the rows and used as a model input in place of spec_seller_exhaustion (which
    keeps the matrix shape); with `only_extra` the other specialist scores are zeroed, so
    `extra` (and the regime) is all the model sees."""
    from domain.learning.meta import fit_year
    from domain.learning.training_data import training_frame

    ps, ys = [], []
    for y in years:
        train = training_frame(specialists, labels, [H], known_by_year=y - 1, regime=regime)
        test = training_frame(specialists, labels, [H], known_by_year=y, regime=regime).filter(pl.col("date").dt.year() == y)
        if extra is not None:
            train, test = (f.join(extra, on=["symbol", "date"], how="left").with_columns(
                pl.col("extra").alias("spec_seller_exhaustion_score")).drop("extra") for f in (train, test))
            if only_extra:
                others = [c for c in train.columns if c.startswith("spec_") and c != "spec_seller_exhaustion_score"]
                train, test = (f.with_columns(*[pl.lit(0.0, pl.Float32).alias(c) for c in others]) for f in (train, test))
        _, _, p, yt = fit_year(train, test, H, n_splits=CV_SPLITS, embargo_days=5)
        ps.append(p)
        ys.append(yt)
    return np.concatenate(ps), np.concatenate(ys), np.repeat(years, [len(x) for x in ys])


def _auc(y, p) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p))


def test_canary_labels_permuted_within_each_year_leave_nothing_to_find(linear_store):
    """Canary 1 (leakage through the pipeline's training path). On the planted universe, whose
    specialist scores really do predict the labels, the labels are shuffled across the rows of
    each year (symbols and days mixed, the label intervals t0..t1 left in place). Whatever
    the meta model then scores out of sample can only come from leakage: the features
    carrying the label, a training window reaching into the test year, calibration folds
    seeing their own test rows. The walk-forward AUC of 2001, 2002 and 2003, each year's AUC
    weighted by its rows (~4,400 rows: under shuffled labels its standard error is
    ~sqrt(1 / (3 n)) ~ 0.009, so 0.5 +- 0.03 is over 3 errors), must stay within 0.5 +- 0.03 (years
    apart: pooling them would mix each model's level with each year's share of rising labels,
    a between-year effect that is not leakage: pooled it is 0.482 here),
    while the same procedure on the true labels finds the planted signal (the canary can sing:
    the meta_model asset's own out-of-sample AUC of 2003, the same fit_year on the same rows).

    Scope: the Dagster-built store's specialists, labels and regime, run through
    domain.learning's training_frame + fit_year (what the meta_model asset calls), not through
    the meta_model asset itself: one asset run per permutation would exceed the CI budget."""
    spec, labs, reg = (_scan(linear_store, a).collect() for a in ("specialists", "labels", "regime"))
    rng = np.random.default_rng(16)
    cols = [f"label_bin_h{H}", f"label_ret_h{H}"]
    labs = labs.sort("date", "symbol")
    shuffled = []
    for year in labs["date"].dt.year().unique().sort().to_list():
        part = labs.filter(pl.col("date").dt.year() == year)
        order = rng.permutation(part.height)
        shuffled.append(part.with_columns(*[pl.col(c).gather(order) for c in cols]))
    permuted = pl.concat(shuffled)
    p, y, year = _walk_forward(spec.lazy(), permuted.lazy(), reg.lazy(), [2001, 2002, OOS_YEAR])
    per_year = {int(g): _auc(y[year == g], p[year == g]) for g in np.unique(year)}
    auc = float(sum(per_year[g] * (year == g).sum() for g in per_year) / len(y))
    auc_true = _report(linear_store, "meta_model", f"h{H}_{OOS_YEAR}.json")["auc"]
    print(f"\ncanary 1: permuted labels AUC {auc:.3f} (n {len(y)}; by year "
          f"{ {g: round(a, 3) for g, a in per_year.items()} }, pooled {_auc(y, p):.3f}); true labels AUC {auc_true:.3f}")
    assert len(y) > 4000
    assert abs(auc - 0.5) <= 0.03
    assert all(abs(a - 0.5) <= 0.05 for a in per_year.values())  # one year: ~1,450 rows, error ~0.015
    assert auc_true >= 0.6


def _leak(bars: pl.DataFrame) -> pl.DataFrame:
    """The leaky feature: day t+1's return, stored on day t's row."""
    return bars.sort("symbol", "date").select(
        "symbol", "date",
        (pl.col("close").shift(-1).over("symbol") / pl.col("close") - 1.0).cast(pl.Float32).alias("extra"))


def test_canary_a_feature_built_from_the_next_days_return_is_refused(linear_store):
    """Canary 2 (a look-ahead feature). Day t+1's return stored on day t's row is a leak that
    purged CV and the walk-forward split cannot see: purging removes training rows whose LABEL
    window overlaps the test rows, but a feature that reads the future is just as available
    on the test rows, so it scores out of sample as well as in sample. This test shows it
    (a walk-forward meta model whose only score is the leak, its calibration folds purged,
    reaches AUC >= 0.6 on 2003, labels it never trained on) and that kernels.leakage.assert_causal refuses it: cut the series after row t
    and the feature's value at t changes. test_every_registered_feature_and_specialist_is_causal
    runs the same check over the registries, so a leaky feature added there fails CI."""
    from kernels.leakage import LookaheadError, assert_causal

    spec, labs, reg = (_scan(linear_store, a) for a in ("specialists", "labels", "regime"))
    bars = _scan(linear_store, "raw_bars").collect()
    p, y, _ = _walk_forward(spec, labs, reg, [OOS_YEAR], extra=_leak(bars), only_extra=True)
    leak_only = _auc(y, p)
    print(f"\ncanary 2: out-of-sample AUC {OOS_YEAR} of a meta model whose only score is the t+1 return: {leak_only:.3f}")
    assert leak_only >= 0.6  # purged CV + walk-forward let it through: the check below is what stops it

    close = bars.filter(pl.col("symbol") == SYMBOLS[0]).sort("date")["close"].to_numpy()
    next_day = lambda c: np.append(c["close"][1:] / c["close"][:-1] - 1.0, np.nan)  # noqa: E731
    with pytest.raises(LookaheadError, match="looks ahead"):
        assert_causal("next_day_return", next_day, {"close": close})
    assert_causal("previous_day_return", lambda c: np.insert(c["close"][1:] / c["close"][:-1] - 1.0, 0, np.nan),
                  {"close": close})


def test_every_registered_feature_and_specialist_is_causal(linear_store):
    """The look-ahead check over the feature and specialist registries on one planted symbol:
    every value at row t is the same when the rows after t are cut off, so the planted effect
    is recovered from the past only (and a leaky registry entry would fail here)."""
    from kernels.leakage import assert_causal
    from kernels.panel import Panel
    from kernels.registry.features import FEATURE_NAMES, compute_features
    from kernels.registry.specialists import PANEL_COLUMNS, SPECIALIST_COLUMNS, run_specialists

    bars = _scan(linear_store, "raw_bars").filter(pl.col("symbol") == SYMBOLS[1]).sort("date").head(600).collect()
    cols = {c: bars[c].to_numpy() for c in PANEL_COLUMNS}
    cuts = np.array([10, 40, 150, 320, 598])  # in the warm-ups, after them, and the last row with a future
    for name in FEATURE_NAMES:
        assert_causal(name, lambda c, n=name: compute_features(
            {k: c[k] for k in ("high", "low", "close")}, np.array([0, len(c["close"])]), backend="cpu", dtype=np.float32)[n],
            cols, cuts)
    for column in SPECIALIST_COLUMNS:
        assert_causal(column, lambda c, k=column: run_specialists(Panel.from_columns(c))[k], cols, cuts)


def _frame_sha256(frame: pl.DataFrame) -> str:
    import hashlib

    h = hashlib.sha256()
    for c in frame.columns:
        col = frame[c]
        h.update(c.encode())
        h.update(col.str.join("|").item().encode() if col.dtype == pl.String else col.to_numpy().tobytes())
    return h.hexdigest()


# SyntheticMarket(5, 2000-01-01, 2003-12-31).generate(["AAA", "BBB"]) as generated before the
# planted signal existed (commit d7212c4), hashed with _frame_sha256.
MARKET_BEFORE_PLANTED_SHA256 = "865f4499bf9d789ecd32098d5ac3f5fa1cb057d23515aae182bcd6fa263cb26a"


def test_strength_zero_is_the_market_without_a_planted_signal_byte_for_byte(make_settings):
    from config.settings import read_settings
    from domain.sources import make_source
    from domain.sources.synthetic import Planted, SyntheticMarket

    args = (5, dt.date(2000, 1, 1), dt.date(2003, 12, 31))
    plain = SyntheticMarket(*args).generate(["AAA", "BBB"])
    assert _frame_sha256(plain) == MARKET_BEFORE_PLANTED_SHA256
    for kind in ("linear", "nonlinear"):
        assert SyntheticMarket(*args, Planted(0.0, kind, 3)).generate(["AAA", "BBB"]).equals(plain)
    planted = SyntheticMarket(*args, Planted(0.2, "linear", 7)).generate(["AAA", "BBB"])
    assert not np.allclose(planted["close"].to_numpy(), plain["close"].to_numpy())
    # through the settings: no `planted` key and strength 0 are the same source, same fingerprints
    unset = make_source(read_settings(make_settings()))
    zero = make_source(read_settings(make_settings(universe={"synthetic": {"planted": {"strength": 0.0, "kind": "nonlinear"}}})))
    assert unset.history(["AAA"]).equals(zero.history(["AAA"])) and unset.fingerprints() == zero.fingerprints()
    strong = make_source(read_settings(make_settings(universe={"synthetic": {"planted": {"strength": 0.3}}})))
    assert strong.fingerprints() != unset.fingerprints()


def test_the_planted_drift_is_causal_in_the_generator():
    """The signal of day t moves the returns after t only: a market that ends earlier is the
    prefix of a longer one, and a symbol does not depend on the others generated with it."""
    from domain.sources.synthetic import Planted, SyntheticMarket

    for kind in ("linear", "nonlinear"):
        planted = Planted(0.5, kind, 7)
        long = SyntheticMarket(5, dt.date(2000, 1, 1), dt.date(2003, 12, 31), planted).generate(["AAA", "BBB"])
        short = SyntheticMarket(5, dt.date(2000, 1, 1), dt.date(2001, 6, 30), planted).generate(["BBB"])
        assert long.filter(pl.col("symbol") == "BBB").head(short.height).equals(short)


def test_hist_gbm_meta_model_learns_a_u_shape_and_round_trips(tmp_path):
    """meta.model hist_gbm on arrays: a label that depends on |x| only (no linear trace) is
    learned out of sample by the trees far better than by the logistic model; saved and
    loaded, the model predicts the same probabilities. (The logistic meta model is not quite
    blind to it: its calibrated copies, fitted on different folds, can take opposite signs on
    x, and the mean of an increasing and a decreasing isotonic map is a U: AUC 0.63 here.)"""
    from domain.learning.meta import load_meta
    from domain.learning.metamodel import train_meta
    from domain.learning.persistence import save_meta

    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 3)).astype(np.float32)
    y = (np.abs(X[:, 0]) + 0.5 * rng.standard_normal(3000) > 0.9).astype(np.int8)
    tree = train_meta(X[:2000], y[:2000], model="hist_gbm", cv=3)
    lin = train_meta(X[:2000], y[:2000], model="logistic", cv=3, Cs=None)
    auc_tree, auc_lin = _auc(y[2000:], tree.predict_proba(X[2000:])), _auc(y[2000:], lin.predict_proba(X[2000:]))
    assert auc_tree >= 0.8 and auc_tree >= auc_lin + 0.15, (auc_tree, auc_lin)
    assert tree.info["base"] == "HistGradientBoostingClassifier" and tree.info["hist_gbm_params"]["max_iter"] == 200
    save_meta(tree, tmp_path / "m.npz")
    np.testing.assert_array_equal(load_meta(tmp_path / "m.npz").predict_proba(X[2000:]), tree.predict_proba(X[2000:]))
