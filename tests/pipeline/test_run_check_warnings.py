"""A run that succeeds with failed asset checks says so on the command line: one
`warning: check ASSET/CHECK failed: ...` line per failed check (pipeline.run_report.failed_check_lines, for every run a command launches);
`--strict` turns a date that is not an exchange session into a refused file."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.test_adversarial import _user_lines


def _sessions(n: int) -> list[dt.date]:
    import exchange_calendars as xcals

    return [d.date() for d in xcals.get_calendar("XNYS", start="2001-01-02", end="2001-12-31").sessions[:n]]


@pytest.fixture
def split_folder(tmp_path):
    """AAA: 60 sessions of 2001 with an unadjusted 2:1 split on the 31st and one bar on a
    Sunday; close-only (no volume column). The years are the default 2000.. (the year
    partitions are fixed when pipeline.definitions is first imported)."""
    days = _sessions(60)
    closes = [100.0 + 0.1 * i if i < 30 else 50.0 + 0.05 * i for i in range(60)]
    rows = [(d, c) for d, c in zip(days, closes)] + [(dt.date(2001, 1, 7), 101.0)]
    folder = tmp_path / "user_data"
    folder.mkdir()
    (folder / "AAA.csv").write_text("date,open,high,low,close\n" + "".join(f"{d},{c},{c},{c},{c}\n" for d, c in rows))
    return folder


def test_build_features_prints_one_warning_line_per_failed_check(split_folder, make_settings, monkeypatch, tmp_path,
                                                                   capsys):
    from pipeline.cli import main

    cfg = make_settings(universe={"source": "folder", "folder": {"path": str(split_folder)}}, years={"start": 2000, "end": 2001})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["build-features"]) == 0
    warnings = [line for line in _user_lines(capsys.readouterr().err) if line.startswith("warning")]
    assert warnings == [
        "warning: check raw_bars/exchange_sessions failed: calendar XNYS, non_sessions 1 (AAA 2001-01-07 (Sunday))",
        "warning: check raw_bars/plausible_moves failed: jumps 1, max_move 1.5 (AAA 2001-02-14 close 102.9 -> 51.5)"]


def test_build_features_strict_refuses_the_file_with_a_sunday(split_folder, make_settings, monkeypatch, tmp_path, capsys):
    from pipeline.cli import main

    cfg = make_settings(universe={"source": "folder", "folder": {"path": str(split_folder)}}, years={"start": 2000, "end": 2001})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["build-features", "--strict"]) != 0
    err = "\n".join(_user_lines(capsys.readouterr().err))
    assert (f"{split_folder / 'AAA.csv'}: column 'date', row 61: date 2001-01-07 (Sunday) is not a session of XNYS "
            "(1 of 61 dates); expected exchange-session dates (ingest.strict; ingest.calendar XNYS)") in err


def test_build_all_strict_runs_the_chain_on_settings_with_ingest_strict(split_folder, make_settings, monkeypatch, tmp_path):
    import pipeline.runs
    from config.settings import derive_settings, read_settings
    from pipeline.cli import main

    cfg = make_settings(universe={"source": "folder", "folder": {"path": str(split_folder)}}, years={"start": 2000, "end": 2001})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    seen = []
    monkeypatch.setattr(pipeline.runs, "run_graph", lambda *a, settings_path=None, overrides=None, **k: seen.append(
        (settings_path == str(cfg), overrides,
         (derive_settings(settings_path, overrides) if overrides else read_settings(settings_path)).ingest.strict)))
    assert main(["build-all", "--strict"]) == 0 and main(["build-all"]) == 0
    # the settings in force, with the flag as an in-memory override (no derived file)
    assert seen == [(True, '{"ingest": {"strict": true}}', True), (True, None, False)]


def test_a_failed_feature_check_names_its_worst_columns_and_counts(make_settings, monkeypatch, tmp_path, capsys):
    """A flat series (every price 100, every volume 1,000) leaves correlations and volume
    ratios without a value after their warm-ups: the warning line names the worst columns
    with their NaN rows and how many more columns have some, on one line."""
    from pipeline.cli import main

    folder = tmp_path / "flat"
    folder.mkdir()
    (folder / "AAA.csv").write_text("date,open,high,low,close,volume\n"
                                    + "".join(f"{d},100,100,100,100,1000\n" for d in _sessions(120)))
    cfg = make_settings(universe={"source": "folder", "folder": {"path": str(folder)}}, years={"start": 2000, "end": 2001},
                        features={"packs": ["core", "alpha158"]})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["build-features"]) == 0
    warnings = [line for line in _user_lines(capsys.readouterr().err) if line.startswith("warning")]
    assert warnings == ["warning: check features/no_nan_after_warmup failed: a158_CORR10 119 NaN rows, a158_CORR20 119, "
                        "a158_CORR30 119 (13 more columns)"]
