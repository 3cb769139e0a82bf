"""A stored model serves only what trained it (domain.learning.provenance): the experiment,
settings, partition and kind it records, and never a year its training window reaches into.
The store cases copy real model files the way a user would, then materialize `predictions`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from config.settings import read_settings
from domain.learning.provenance import ModelMismatch, check_provenance
from tests.conftest import LEARNED_YEAR

WANT = {"experiment": "base", "settings_hash": "8df18f840c87", "year": 2011, "horizon": 7, "kind": "logistic"}
SIDE = {"provenance": dict(WANT), "window": {"train_from": "2001-01-02 00:00:00", "train_to": "2010-12-17 00:00:00"}}
PATH = Path("models/base/meta_h7_2011.npz")


def test_a_model_whose_provenance_is_the_request_serves_it():
    check_provenance(SIDE, WANT, PATH, "rebuild it")


@pytest.mark.parametrize("field, value", [("experiment", "other"), ("year", 2012), ("horizon", 14),
                                          ("kind", "hist_gbm"), ("settings_hash", "3affad4bf797")])
def test_each_field_that_differs_is_one_line_naming_it_and_both_values(field, value):
    side = {**SIDE, "provenance": {**WANT, field: value}}
    with pytest.raises(ModelMismatch) as err:
        check_provenance(side, WANT, PATH, "rebuild it (materialize meta_model for 2011)")
    assert str(err.value) == (f"{PATH}: {field} is {value!r} where the request is {WANT[field]!r}; a model serves only "
                              f"the {field} that trained it: rebuild it (materialize meta_model for 2011)")


def test_a_window_reaching_into_the_scored_year_is_look_ahead_whatever_the_provenance_says():
    side = {**SIDE, "window": {"train_to": "2011-12-20 00:00:00"}}
    with pytest.raises(ModelMismatch, match=r"trained through 2011-12-20, it cannot score 2011 out of sample "
                                            r"\(look-ahead\); expected a model trained before 2011-01-01"):
        check_provenance(side, WANT, PATH, "rebuild it")
    lstm = {**SIDE, "window": {"train_to": "2010-09-01", "val_to": "2011-01-03"}}  # the validation block counts too
    with pytest.raises(ModelMismatch, match="trained through 2011-01-03"):
        check_provenance(lstm, WANT, PATH, "rebuild it")


def test_a_model_saved_before_provenance_was_recorded_is_refused():
    with pytest.raises(ModelMismatch, match=r"records no provenance .* expected a model of experiment 'base', year "
                                            r"2011, horizon 7, kind 'logistic', settings_hash '8df18f840c87'"):
        check_provenance({"window": SIDE["window"]}, WANT, PATH, "rebuild it")


def _copy_year(models: Path, src: int, dst: int, edit=None) -> None:
    """A user's copy of the year `src` models over the year `dst` ones (sha256 sidecar kept:
    the files are intact, only misplaced); `edit` changes the copied sidecar."""
    for h in (3, 7, 14):
        shutil.copyfile(models / f"meta_h{h}_{src}.npz", models / f"meta_h{h}_{dst}.npz")
        side = json.loads((models / f"meta_h{h}_{src}.json").read_text())
        (models / f"meta_h{h}_{dst}.json").write_text(json.dumps(edit(side) if edit else side))


def _predict(cfg: Path, year: int):
    from dagster import materialize

    from assets.predictions import predictions
    from pipeline.definitions import ALL_ASSETS, build_resources
    from pipeline.symbols import register_symbols
    from tests.conftest import LEARNED_SYMBOLS, project_instance_for_test

    with project_instance_for_test() as inst:
        register_symbols(inst, LEARNED_SYMBOLS)
        return materialize(ALL_ASSETS, selection=[predictions], partition_key=str(year), instance=inst,
                           resources=build_resources(str(cfg)), raise_on_error=False)


def _failure(res) -> str:
    from pipeline.run_report import root_cause

    cause = root_cause(res)
    assert cause is not None and cause.exit_code == 2
    return cause.line


def test_a_later_years_model_copied_over_an_earlier_one_is_refused_naming_the_year(learned_copy):
    s = read_settings(learned_copy)
    _copy_year(s.models_dir, LEARNED_YEAR, LEARNED_YEAR - 1)
    res = _predict(learned_copy, LEARNED_YEAR - 1)
    assert not res.success
    assert f"year is {LEARNED_YEAR} where the request is {LEARNED_YEAR - 1}" in _failure(res)


def test_a_copy_whose_sidecar_claims_the_earlier_year_is_refused_as_look_ahead(learned_copy):
    s = read_settings(learned_copy)
    _copy_year(s.models_dir, LEARNED_YEAR, LEARNED_YEAR - 1,
               edit=lambda side: {**side, "provenance": {**side["provenance"], "year": LEARNED_YEAR - 1}})
    res = _predict(learned_copy, LEARNED_YEAR - 1)
    assert not res.success and f"it cannot score {LEARNED_YEAR - 1} out of sample (look-ahead)" in _failure(res)


def test_models_of_another_kind_are_refused_under_settings_that_ask_for_a_tree_model(learned_copy):
    """Logistic models copied into an experiment whose settings say hist_gbm: refused, not
    served as logistic predictions under the tree model's name."""
    cfg = yaml.safe_load(learned_copy.read_text())
    src = read_settings(learned_copy)
    cfg.update(experiment="trees", meta={"model": "hist_gbm"})
    learned_copy.write_text(yaml.safe_dump(cfg))
    dst = read_settings(learned_copy)
    shutil.copytree(src.models_dir, dst.models_dir)
    res = _predict(learned_copy, LEARNED_YEAR)
    assert not res.success
    line = _failure(res)
    assert "experiment is 'default' where the request is 'trees'" in line
