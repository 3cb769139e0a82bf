"""The code location resolves: every job, schedule and sensor of `pipeline.definitions`,
with the assets they select and the resources every asset requires."""

from __future__ import annotations

from pipeline.definitions import ALL_ASSETS, defs

JOBS = {"historical_build_and_train", "yearly_stages", "lstm_job", "atc_scan_job", "grid_search_job",
        "strategy_search_job", "live_paper_trade", "vacuum_job", "prune_runs_job"}
SCHEDULES = {"nightly_rebuild", "live_after_close", "weekly_vacuum", "daily_prune_runs"}
SENSORS = {"new_symbol_sensor", "build_chain_sensor"}


def test_every_job_resolves_and_selects_assets():
    names = {job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__")}
    assert JOBS <= names, JOBS - names
    for name in JOBS - {"vacuum_job", "prune_runs_job"}:
        job = defs.resolve_job_def(name)
        assert job.asset_layer.executable_asset_keys, name


def test_every_schedule_and_sensor_resolves_with_its_job():
    for name in SCHEDULES:
        schedule = defs.resolve_schedule_def(name)
        assert schedule.job_name in JOBS, (name, schedule.job_name)
    for name in SENSORS:
        defs.resolve_sensor_def(name)


def test_every_asset_has_its_resources_and_at_least_one_check():
    graph = defs.resolve_asset_graph()
    keys = {key for a in ALL_ASSETS for key in a.keys}
    assert keys <= set(graph.get_all_asset_keys())
    checked = {spec.asset_key for a in ALL_ASSETS for spec in a.check_specs}
    unchecked = sorted(k.to_user_string() for k in keys - checked)
    assert not unchecked, f"assets without a check that can fail: {unchecked}"
    required = {r for a in ALL_ASSETS for r in a.required_resource_keys}
    assert required <= set(defs.resources), required - set(defs.resources)
