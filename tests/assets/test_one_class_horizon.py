"""A horizon whose label has one class: a tiny universe whose prices rise
over every 7 and 14 rows (a 3 % drop every 7th session, 0.8-1.2 % rises otherwise), so
label_bin_h7 and label_bin_h14 are all 1 while h3 has both classes. cv_report and
meta_model skip h7 and h14 with one warning line each and finish h3; predictions, backtest
(which trades p_h7 by default) and evaluation cope with the missing horizons."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
from dagster import materialize
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from config.settings import read_settings
from domain.sources.synthetic import xnys_sessions
from pipeline.definitions import ALL_ASSETS, build_resources
from resources.delta_store import DeltaStore
from tests.conftest import run_assets

SYMS, YEARS, YEAR = ["AAA", "BBB", "CCC"], [2000, 2001, 2002, 2003], 2003


def _rising_folder(folder):
    folder.mkdir()
    days = xnys_sessions(dt.date(2000, 1, 1), dt.date(2003, 12, 31))
    rng = np.random.default_rng(5)
    for k, sym in enumerate(SYMS):
        step = np.where((np.arange(len(days)) + k) % 7 == 0, -0.03, rng.uniform(0.008, 0.012, len(days)))
        close = 20.0 * np.cumprod(1.0 + step)
        pl.DataFrame({"date": days, "open": close, "high": close * 1.01, "low": close * 0.99, "close": close,
                      "volume": rng.integers(1_000, 5_000, len(days))}).write_csv(folder / f"{sym}.csv")


def _warnings(instance, result) -> list[str]:
    return [e.user_message for e in instance.all_logs(result.run_id) if e.dagster_event is None and e.level == 30]


def test_a_one_class_horizon_is_skipped_with_a_warning_and_the_other_horizons_and_stages_finish(make_settings, instance, tmp_path):
    from assets.features import features
    from assets.labels import labels
    from assets.raw_bars import raw_bars
    from assets.specialists import specialists

    _rising_folder(tmp_path / "rising")
    cfg = make_settings(universe={"source": "folder", "folder": {"path": str(tmp_path / "rising")}},
                        years={"start": 2000, "end": 2003})
    settings = read_settings(cfg)
    assert run_assets([raw_bars, features, specialists, labels], cfg, instance, SYMS, YEARS).success
    stored = DeltaStore(settings.data_dir).scan("labels").filter(pl.col("date").dt.year() < YEAR).collect()
    assert stored["label_bin_h7"].drop_nulls().unique().to_list() == [1]  # the premise: h7 and h14 only rose
    assert stored["label_bin_h14"].drop_nulls().unique().to_list() == [1]
    assert sorted(stored["label_bin_h3"].drop_nulls().unique().to_list()) == [0, 1]
    run = lambda selection, **kw: materialize(ALL_ASSETS, selection=selection, instance=instance,  # noqa: E731
                                              resources=build_resources(str(cfg)), raise_on_error=False, **kw)
    assert run(["regime"], tags={ASSET_PARTITION_RANGE_START_TAG: "2000", ASSET_PARTITION_RANGE_END_TAG: "2003"}).success

    res = run(["cv_report", "meta_model", "predictions"], partition_key=str(YEAR))
    assert res.success
    assert {e.check_name: e.passed for e in res.get_asset_check_evaluations()} == {
        "fold_metrics_valid": True, "out_of_sample_metrics_valid": True, "probabilities_in_unit_interval": True}
    assert _warnings(instance, res) == [
        f"cv_report {YEAR} h7: the label has one class (all 1) in the training years; horizon skipped",
        f"cv_report {YEAR} h14: the label has one class (all 1) in the training years; horizon skipped",
        f"meta_model {YEAR} h7: the label has one class (all 1) in the training years; horizon skipped",
        f"meta_model {YEAR} h14: the label has one class (all 1) in the training years; horizon skipped",
    ]
    cv = json.loads((settings.stage_reports_dir("cv_report") / "h3" / f"{YEAR}.json").read_text())
    assert len({r["fold"] for r in cv["folds"]}) == 5  # h3 finished: five folds
    assert json.loads((settings.stage_reports_dir("cv_report") / "h7" / f"{YEAR}.json").read_text())["folds"] == []
    assert sorted(p.name for p in settings.models_dir.glob("meta_h*.npz")) == [f"meta_h3_{YEAR}.npz"]
    preds = DeltaStore(settings.experiment_data_dir).scan("predictions").filter(pl.col("date").dt.year() == YEAR).collect()
    assert preds["p_h3"].is_not_nan().all() and preds["p_h7"].is_nan().all() and preds["p_h14"].is_nan().all()

    for stage in ("backtest", "evaluation"):  # the backtest trades p_h7 by default: no model, no trade
        assert run([stage], partition_key=str(YEAR)).success, stage
