"""Missing values as a choice (settings meta.missing; domain.learning.matrix and
MetaModel): drop, fill with the training medians, or native NaN for the tree models."""

import numpy as np
import pytest

from config.settings import SettingsError, parse_settings
from domain.learning.matrix import column_fill, fill_missing, usable_rows, valued_rows
from domain.learning.metamodel import train_meta
from domain.learning.persistence import save_meta

NAMES = ["a", "b", "regime_bull"]


def test_the_fill_values_are_each_columns_median_over_its_finite_values_and_zero_for_an_empty_column():
    X = np.array([[1.0, np.nan, np.nan], [3.0, np.inf, np.nan], [10.0, 2.0, np.nan]], np.float32)
    np.testing.assert_array_equal(column_fill(X), np.array([3.0, 2.0, 0.0], np.float32))
    np.testing.assert_array_equal(fill_missing(X, [3.0, 2.0, 0.0]),
                                  np.array([[1, 2, 0], [3, 2, 0], [10, 2, 0]], np.float32))


def test_a_row_with_only_the_regime_one_hot_is_a_warm_up_under_every_rule():
    X = np.array([[np.nan, np.nan, 1.0], [np.nan, 5.0, 0.0], [1.0, 2.0, 1.0]], np.float32)
    np.testing.assert_array_equal(valued_rows(X, NAMES), [False, True, True])
    np.testing.assert_array_equal(usable_rows(X, NAMES, "fill"), [False, True, True])
    np.testing.assert_array_equal(usable_rows(X, NAMES, "native"), [False, True, True])
    np.testing.assert_array_equal(usable_rows(X, NAMES, "drop"), [False, False, True])
    with pytest.raises(ValueError, match="missing must be one of"):
        usable_rows(X, NAMES, "impute")


def _problem(seed=0, n=600):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(np.int8)
    X[::4, 1] = np.nan  # a quarter of column b missing
    return X, y


def test_fill_learns_the_training_medians_and_scores_a_missing_value_as_its_median():
    X, y = _problem()
    model = train_meta(X, y, model="logistic", cv=3, Cs=None, feature_names=["a", "b", "c"], missing="fill")
    median_b = np.median(X[np.isfinite(X[:, 1]), 1])
    assert model.missing == "fill" and model.fill_values[1] == pytest.approx(median_b)
    probe = np.array([[0.3, np.nan, 0.1], [0.3, median_b, 0.1]], np.float32)
    p = model.predict_proba(probe)
    assert np.isfinite(p).all() and p[0] == p[1]
    assert np.isnan(model.predict_proba(np.full((1, 3), np.nan, np.float32))).all()  # no value at all: left out


@pytest.mark.parametrize("kind", ["hist_gbm", "lightgbm"])
def test_native_trees_train_on_the_rows_as_they_are_and_score_rows_with_nan(kind):
    X, y = _problem()
    model = train_meta(X, y, model=kind, cv=3, feature_names=["a", "b", "c"], missing="native")
    assert model.info["n_train"] == len(y) and model.fill_values is None
    p = model.predict_proba(X[:8])
    assert np.isfinite(p).all()  # rows 0 and 4 have b missing: scored, not NaN


def test_native_is_refused_for_the_logistic_model_in_training_and_in_the_settings():
    X, y = _problem()
    with pytest.raises(ValueError, match="missing='native' needs a model that handles NaN"):
        train_meta(X, y, model="logistic", cv=3, missing="native")
    with pytest.raises(SettingsError, match="meta.missing: native needs a model that handles missing values"):
        parse_settings({"meta": {"missing": "native"}})


def test_auto_is_native_for_the_trees_and_fill_for_the_logistic_model():
    assert parse_settings({}).meta.missing_rule() == "fill"
    assert parse_settings({"meta": {"model": "lightgbm"}}).meta.missing_rule() == "native"
    assert parse_settings({"meta": {"model": "hist_gbm", "missing": "drop"}}).meta.missing_rule() == "drop"


def test_the_rule_and_fill_values_survive_the_saved_model(tmp_path):
    from domain.learning.meta import load_meta

    X, y = _problem()
    model = train_meta(X, y, model="logistic", cv=3, Cs=None, feature_names=["a", "b", "c"], missing="fill")
    side = save_meta(model, tmp_path / "m.npz")
    assert side["missing"] == "fill" and side["fill_values"] == pytest.approx(model.fill_values)
    back = load_meta(tmp_path / "m.npz")
    assert back.fill_values == pytest.approx(model.fill_values)
    np.testing.assert_array_equal(back.predict_proba(X[:20]), model.predict_proba(X[:20]))


def test_a_model_saved_before_the_rule_drops_incomplete_rows(tmp_path):
    """A sidecar without `missing` (written before the setting) loads as `drop`: NaN for a
    row with a missing value, as it was scored when it was trained."""
    import json

    from domain.learning.meta import load_meta

    X, y = _problem()
    ok = np.isfinite(X).all(axis=1)
    model = train_meta(X[ok], y[ok], model="logistic", cv=3, Cs=None, feature_names=["a", "b", "c"])
    save_meta(model, tmp_path / "m.npz")
    side = tmp_path / "m.json"
    side.write_text(json.dumps({k: v for k, v in json.loads(side.read_text()).items() if k != "missing"}))
    old = load_meta(tmp_path / "m.npz")
    assert old.missing == "drop" and np.isnan(old.predict_proba(X[:1])).all()  # row 0 lacks b


def _pickled_of_before(model, path) -> None:
    """A model as save_meta wrote it before arrays (format tradelab.meta/1): a joblib pickle
    and a sidecar with its sha256."""
    import io
    import json

    import joblib

    from resources.verified_files import write_verified

    payload = {"format": "tradelab.meta/1", "estimator": model.estimator, "feature_names": model.feature_names,
               "kind": model.kind, "calibration": model.calibration, "window": model.window,
               "versions": model.versions, "info": model.info, "missing": model.missing, "fill_values": model.fill_values}
    buf = io.BytesIO()
    joblib.dump(payload, buf)
    sha = write_verified(path, lambda fh: fh.write(buf.getvalue()))
    path.with_suffix(".json").write_text(json.dumps({**model.metadata(), "sha256": sha, "joblib": path.name}))


@pytest.mark.parametrize("kind", ["logistic", "hist_gbm", "lightgbm"])
def test_migrate_converts_a_verified_pickle_to_arrays_that_predict_the_same_and_moves_it_aside(tmp_path, kind):
    from domain.learning.meta import load_meta
    from domain.learning.persistence import migrate_pickled

    X, y = _problem()
    rule = "fill" if kind == "logistic" else "native"
    model = train_meta(X, y, model=kind, cv=3, Cs=None if kind == "logistic" else 10, feature_names=["a", "b", "c"],
                       missing=rule)
    old = tmp_path / "meta_h7_2011.joblib"
    _pickled_of_before(model, old)
    with pytest.raises(ValueError, match="a pickled meta model of before .* migrate-models"):
        load_meta(tmp_path / "meta_h7_2011.npz")  # never loaded implicitly
    out = migrate_pickled(old, extra=lambda side: {"provenance": {"year": 2011}})
    assert out == tmp_path / "meta_h7_2011.npz" and not old.exists()
    assert sorted(p.name for p in (tmp_path / ".pickled").iterdir()) == ["meta_h7_2011.joblib", "meta_h7_2011.json"]
    back = load_meta(out)
    np.testing.assert_array_equal(back.predict_proba(X[:200]), model.predict_proba(X[:200]))


def test_migrate_refuses_a_pickle_whose_recorded_sha256_differs_and_runs_nothing(tmp_path):
    from domain.learning.persistence import migrate_pickled
    from resources.verified_files import UnverifiedFileError

    X, y = _problem()
    model = train_meta(X, y, model="logistic", cv=3, Cs=None, feature_names=["a", "b", "c"], missing="fill")
    old = tmp_path / "meta_h7_2011.joblib"
    _pickled_of_before(model, old)
    old.write_bytes(old.read_bytes() + b"planted")
    with pytest.raises(UnverifiedFileError, match="sha256 does not match"):
        migrate_pickled(old)
    assert old.exists() and not (tmp_path / "meta_h7_2011.npz").exists()


def test_migrate_models_refuses_a_pickle_renamed_to_another_partition(tmp_path):
    """The command stamps the partition from the file name only when the pickle's recorded
    window is that partition's (the horizon, trained through the year before)."""
    from config.settings import parse_settings
    from pipeline.cli.learning import migrated_provenance

    settings = parse_settings({})
    own = {"kind": "logistic", "window": {"horizon": 7, "train_to": "2010-12-17 00:00:00"}}
    prov = migrated_provenance(settings, tmp_path / "meta_h7_2011.joblib", own)
    assert (prov["year"], prov["horizon"], prov["migrated"]) == (2011, 7, True)
    with pytest.raises(ValueError, match=r"meta_h7_2012.joblib: its training window \(horizon 7, trained through "
                                         r"2010-12-17 00:00:00\) is not that of meta_h7_2012"):
        migrated_provenance(settings, tmp_path / "meta_h7_2012.joblib", own)
    with pytest.raises(ValueError, match="is not that of meta_h14_2011"):
        migrated_provenance(settings, tmp_path / "meta_h14_2011.joblib", own)
