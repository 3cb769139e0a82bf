"""experiment_summary: one partition per experiment, each materialization the experiment's
headline figures as numeric metadata (what the UI plots by partition, the experiment's name
on each point) and a link to its HTML report; no experiment is frozen by the run."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, materialize

from assets.experiment_summary import experiment_summary
from config.partitions import EXPERIMENTS
from pipeline.definitions import build_resources
from resources.partitions import experiment_partitions, register_experiments
from tests.experiment_reports import write_experiment


def test_the_partitions_are_the_experiments_and_each_has_its_figures_as_numbers(make_settings, instance):
    cfg = make_settings()
    reports = cfg.parent / "reports"
    write_experiment(reports, "baseline", auc=0.512, rank_ic=0.011, sharpe=0.42, cagr=0.051)
    write_experiment(reports, "trees", auc=0.537, rank_ic=0.043, sharpe=0.77, cagr=0.083)
    assert experiment_partitions.name == EXPERIMENTS
    assert register_experiments(instance, ["baseline", "trees", "baseline"]) == ["baseline", "trees"]
    assert register_experiments(instance, ["trees"]) == []  # registered once
    for name in ("baseline", "trees"):
        res = materialize([experiment_summary], partition_key=name, instance=instance, resources=build_resources(str(cfg)))
        assert res.success
        assert {e.check_name: e.passed for e in res.get_asset_check_evaluations()} == {"report_self_contained": True}
    assert instance.get_dynamic_partitions(EXPERIMENTS) == ["baseline", "trees"]
    records = instance.fetch_materializations(AssetKey("experiment_summary"), limit=10).records
    meta = {r.partition_key: r.asset_materialization.metadata for r in records}
    assert sorted(meta) == ["baseline", "trees"]
    for name, auc, ic, sharpe in (("baseline", 0.512, 0.011, 0.42), ("trees", 0.537, 0.043, 0.77)):
        m = meta[name]
        assert (m["h7_auc"].value, m["h7_rank_ic"].value, m["backtest_sharpe"].value) == (auc, ic, sharpe)
        assert type(m["h7_auc"]).__name__ == "FloatMetadataValue" and m["symbols"].value == 3
        assert m["experiment"].value == name
        report = Path(m["report"].value)
        assert report == reports / name / "experiment_summary" / "report.html" and report.is_file()
        assert m["report_url"].value == report.resolve().as_uri()
    # the run read the reports only: the settings' own experiment was neither created nor frozen
    assert not (reports / "default").exists()


def test_an_unregistered_or_unknown_experiment_fails_the_run_with_its_name(make_settings, instance):
    cfg = make_settings()
    register_experiments(instance, ["ghost"])
    with pytest.raises(ValueError, match="report: no experiment 'ghost' under"):
        materialize([experiment_summary], partition_key="ghost", instance=instance, resources=build_resources(str(cfg)))


def test_the_check_fails_a_report_that_reaches_outside_its_file():
    from domain.checks import report_self_contained

    png = "data:image/png;base64,iVBORw0KGgo="
    assert report_self_contained(f'<img alt=a src="{png}">') == (True, {"images": 1, "bad_images": [],
                                                                         "references": []})
    passed, meta = report_self_contained('<img alt=a src="https://example.org/a.png"><link href="x.css">')
    assert not passed and meta == {"images": 1, "bad_images": [0], "references": ["//", "<link", "href=", "https:"]}
