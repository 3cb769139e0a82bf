"""grid-search flags that the settings model refuses: each row is one command line (on the
assets path, or a direct run on files) and the exact line it must print, with exit code 2.
The bounds are the model's (config.settings.GridSearch), read from its fields; nothing runs
and nothing is written. A settings FILE with the same value is refused at load, naming the key."""

from __future__ import annotations

import pytest

from config.settings import SettingsError, parse_settings
from tests.test_adversarial import _user_lines

BAD_PARAMS = '{"target": [0.0, 0.4]}'
UNKNOWN_PARAM = '{"adx99": [0, 20]}'

FLAGS_REFUSED = [
    ("trials_zero", ["--trials", "0"], "error: --trials 0: expected a whole number >= 1"),
    ("top_above_the_model_bound", ["--top", "1001"], "error: --top 1001: expected a whole number from 1 to 1000"),
    ("lower_case_ticker", ["--tickers", "SOXL,soxl"],
     "error: --tickers: 'soxl' is not a ticker; expected names matching [A-Z0-9._-]{1,16}"),
    ("params_target_not_positive", ["--params", "{params_bad}"],
     "error: --params {params_bad}: params: target values are percents > 0, got [0.0, 0.4]"),
    ("params_unknown_key", ["--params", "{params_unknown}"],
     "error: --params {params_unknown}: params.adx99: Extra inputs are not permitted"),
]
DIRECT = ["--market-data", "{md}", "--trade-log", "{log}", "--out", "{out}"]


@pytest.mark.parametrize("direct", [False, True], ids=["assets_path", "direct_run"])
@pytest.mark.parametrize("flags, line", [r[1:] for r in FLAGS_REFUSED], ids=[r[0] for r in FLAGS_REFUSED])
def test_grid_flags_outside_the_settings_model_are_one_line_with_exit_code_2(flags, line, direct, make_settings,
                                                                            monkeypatch, tmp_path, capsys):
    from pipeline.cli import main

    (tmp_path / "md").mkdir()
    (tmp_path / "log.csv").write_text("not read: the flags are refused first\n")
    (tmp_path / "bad.yaml").write_text(BAD_PARAMS)
    (tmp_path / "unknown.yaml").write_text(UNKNOWN_PARAM)
    names = {"md": tmp_path / "md", "log": tmp_path / "log.csv", "out": tmp_path / "out.json",
             "params_bad": tmp_path / "bad.yaml", "params_unknown": tmp_path / "unknown.yaml"}
    def named(text: str) -> str:
        for key, path in names.items():
            text = text.replace("{" + key + "}", str(path))
        return text

    argv = ["grid-search", *[named(a) for a in flags + (DIRECT if direct else [])]]
    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings()))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(argv) == 2
    assert _user_lines(capsys.readouterr().err) == [named(line)]
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "home").exists()


SETTINGS_REFUSED = [
    ("grid_ticker_lower_case", {"grid_search": {"tickers": ["soxl"]}},
     "grid_search.tickers: Value error, 'soxl' is not a ticker; expected names matching [A-Z0-9._-]{1,16} (got ['soxl'])"),
    ("grid_ticker_with_a_space", {"grid_search": {"tickers": ["SOXL", "BRK A"]}},
     "grid_search.tickers: Value error, 'BRK A' is not a ticker; expected names matching [A-Z0-9._-]{1,16} "
     "(got ['SOXL', 'BRK A'])"),
]


@pytest.mark.parametrize("data, line", [r[1:] for r in SETTINGS_REFUSED], ids=[r[0] for r in SETTINGS_REFUSED])
def test_grid_settings_the_engines_cannot_take_are_refused_at_load(data, line):
    with pytest.raises(SettingsError) as err:
        parse_settings(data, "f.yaml")
    assert str(err.value).splitlines() == ["f.yaml: invalid settings", f"  {line}"]
