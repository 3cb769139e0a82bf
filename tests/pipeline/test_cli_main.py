"""pipeline.cli.main's failure path: one line, the exit code of its kind."""

from __future__ import annotations

import pytest

from config.errors import InputDataError


def _wrapped_input_error(args):
    try:
        raise InputDataError("/in/AAA.csv", "duplicate date 2001-01-02", column="date", row=2, expected="one row per date")
    except InputDataError as err:
        raise KeyError("a framework's wrapper") from err


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_main_finds_an_input_error_inside_a_wrapping_exception(monkeypatch, make_settings, tmp_path, capsys, verbose):
    """A run started with raise_on_error (Dagster wraps the step's error): still the input's
    line and exit 2; --verbose adds the stack before it."""
    import pipeline.cli as cli
    from pipeline.cli import search

    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings()))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(search, "cmd_grid_data", _wrapped_input_error)
    assert cli.main(["grid-data", "--out", str(tmp_path / "g"), *(["--verbose"] if verbose else [])]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("tradelab: device ")]
    assert err[-1] == "error: /in/AAA.csv: column 'date', row 2: duplicate date 2001-01-02; expected one row per date"
    assert ("Traceback (most recent call last):" in err) == verbose
