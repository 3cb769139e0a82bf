"""The lineage page opens readable: every asset sits in one of six named groups, and the jobs
still select exactly the assets they did when they selected by group."""

from __future__ import annotations

from pipeline.definitions import ALL_ASSETS, defs

GROUPS = {
    "ingest": {"raw_bars"},
    "features": {"features", "labels", "specialists"},
    "learning": {"regime", "lstm_model", "meta_model", "predictions"},
    "evaluation": {"cv_report", "backtest", "evaluation"},
    "live": {"atc_scan", "paper_trades"},
    "search": {"market_data", "trade_log", "grid_search", "strategy_search"},
}

JOB_ASSETS = {
    "historical_build_and_train": {"raw_bars", "features", "labels", "specialists"},
    "yearly_stages": {"regime", "cv_report", "meta_model", "predictions", "backtest", "evaluation"},
    "lstm_job": {"lstm_model"},
    "atc_scan_job": {"atc_scan"},
    "grid_search_job": {"market_data", "trade_log", "grid_search"},
    "live_paper_trade": {"paper_trades"},
    "strategy_search_job": {"strategy_search"},
}


def test_every_asset_is_in_one_of_the_six_groups_not_eleven():
    groups: dict[str, set[str]] = {}
    for a in ALL_ASSETS:
        for key, group in a.group_names_by_key.items():
            groups.setdefault(group, set()).add(key.to_user_string())
    known = {k for keys in GROUPS.values() for k in keys}
    # an asset added later joins one of the six groups; the six stay the only ones
    assert set(groups) == set(GROUPS), groups
    for name, keys in GROUPS.items():
        assert keys <= groups[name], (name, groups[name])
    assert known <= {k for keys in groups.values() for k in keys}


def test_job_selections_name_the_same_assets_after_regrouping():
    for job, expected in JOB_ASSETS.items():
        keys = {k.to_user_string() for k in defs.resolve_job_def(job).asset_layer.executable_asset_keys}
        assert keys == expected, (job, keys ^ expected)
