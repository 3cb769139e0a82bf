"""The settings file: one model, one clear message per mistake, every key documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from config.settings import DEFAULT_CONFIG, Settings, SettingsError, load_settings, parse_settings, read_settings

SETTINGS_DOC = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def test_shipped_settings_file_is_valid():
    s = read_settings(DEFAULT_CONFIG)
    assert s.labels.horizons == [3, 7, 14]
    assert s.device in ("auto", "cpu", "cuda", "rocm")


def test_pipeline_config_env_selects_another_file(tmp_path, monkeypatch):
    other = tmp_path / "other.yaml"
    other.write_text("years: {start: 2015}\ndevice: cpu\n")
    monkeypatch.setenv("PIPELINE_CONFIG", str(other))
    s = load_settings()
    assert s.years.start == 2015 and s.device == "cpu"


def test_overrides_env_applies_over_the_file_in_force_only_and_under_a_commands_flags(tmp_path, monkeypatch):
    """$PIPELINE_CONFIG_OVERRIDES (a command's --experiment, inherited by the processes it
    starts): over the file in force, below the flags given to derive_settings; another file
    read explicitly is read as written."""
    from config.settings import OVERRIDES_ENV, derive_settings

    in_force, other = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for f in (in_force, other):
        f.write_text("years: {start: 2015}\npaths: {data: d}\n")
    monkeypatch.setenv("PIPELINE_CONFIG", str(in_force))
    monkeypatch.setenv(OVERRIDES_ENV, '{"experiment": "env", "device": "cpu"}')
    s = load_settings()
    assert (s.experiment, s.device, s.years.start, s.data_dir) == ("env", "cpu", 2015, tmp_path / "d")
    assert load_settings(in_force) == s and load_settings(other).experiment != "env"
    flagged = derive_settings(in_force, '{"experiment": "flag"}')
    assert (flagged.experiment, flagged.device) == ("flag", "cpu")
    assert derive_settings(other, '{"device": "cpu"}').experiment != "env"


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '"baseline"'])
def test_overrides_env_that_is_not_a_json_mapping_is_one_line_naming_the_variable(tmp_path, monkeypatch, text):
    from config.settings import OVERRIDES_ENV

    f = tmp_path / "a.yaml"
    f.write_text("years: {start: 2015}\n")
    monkeypatch.setenv("PIPELINE_CONFIG", str(f))
    monkeypatch.setenv(OVERRIDES_ENV, text)
    with pytest.raises(SettingsError, match=r"^\$PIPELINE_CONFIG_OVERRIDES: expected a JSON mapping") as err:
        load_settings()
    assert "\n" not in str(err.value)


def test_overrides_env_with_a_value_the_model_refuses_names_the_key(tmp_path, monkeypatch):
    from config.settings import OVERRIDES_ENV

    f = tmp_path / "a.yaml"
    f.write_text("years: {start: 2015}\n")
    monkeypatch.setenv("PIPELINE_CONFIG", str(f))
    monkeypatch.setenv(OVERRIDES_ENV, '{"experiment": "has space"}')
    with pytest.raises(SettingsError, match="experiment"):
        load_settings()


def test_relative_paths_resolve_against_the_settings_file(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("paths: {data: d1}\n")
    assert read_settings(f).data_dir == tmp_path / "d1"


def test_unknown_key_is_named():
    with pytest.raises(SettingsError, match=r"universe\.sourse: unknown key"):
        parse_settings({"universe": {"sourse": "folder"}}, "f.yaml")


def test_wrong_type_names_key_and_expected_type():
    with pytest.raises(SettingsError, match=r"years\.start: Input should be a valid integer.*'soon'"):
        parse_settings({"years": {"start": "soon"}}, "f.yaml")


def test_bad_device_lists_the_allowed_values():
    with pytest.raises(SettingsError) as err:
        parse_settings({"device": "gpu"}, "f.yaml")
    assert "f.yaml" in str(err.value) and "'auto', 'cpu', 'cuda' or 'rocm'" in str(err.value)


def test_thresholds_must_cover_each_horizon():
    with pytest.raises(SettingsError, match="one entry per horizon"):
        parse_settings({"labels": {"horizons": [3, 7], "thresholds": {3: 0.0}}})


@pytest.mark.parametrize(
    "params, message",
    [
        ({"target": [0.0, 0.5]}, "target values are percents > 0"),
        ({"stop_loss": [-0.5, 0.1]}, "stop_loss values are percents < 0"),
        ({"adx7": []}, "adx7 must be a non-empty list"),
    ],
)
def test_invalid_grid_lists_are_rejected(params, message):
    with pytest.raises(SettingsError, match=message):
        parse_settings({"grid_search": {"params": params}})


def test_symbol_outside_the_pattern_is_rejected():
    with pytest.raises(SettingsError, match=r"'\.\./x' does not match"):
        parse_settings({"universe": {"synthetic": {"symbols": ["../x"]}}})


def test_end_year_before_start_is_rejected():
    with pytest.raises(SettingsError, match=r"end \(2001\) must be >= start \(2005\)"):
        parse_settings({"years": {"start": 2005, "end": 2001}})


def test_missing_file_says_how_to_select_one(tmp_path):
    with pytest.raises(SettingsError, match="PIPELINE_CONFIG"):
        read_settings(tmp_path / "nope.yaml")


def _dotted_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        key = f"{prefix}{name}"
        keys.append(key)
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            keys += _dotted_keys(ann, key + ".")
    return keys


def test_every_settings_key_is_documented_in_docs_settings():
    text = SETTINGS_DOC.read_text()
    missing = [k for k in _dotted_keys(Settings) if not re.search(rf"`{re.escape(k)}`", text)]
    assert not missing, f"docs/settings.md does not document: {missing}"


# ---------------------------------------------------------------- backtest.strategy and its parameters


@pytest.mark.parametrize("backtest,line", [
    ({"strategy": "topk"}, r"backtest\.strategy: Input should be 'threshold', 'topk_dropout' or 'long_short' \(got 'topk'\)"),
    ({"strategy": "topk_dropout", "topk": 3, "n_drop": 4},
     r"backtest: Value error, backtest\.n_drop \(4\) is more than backtest\.topk \(3\)"),
    ({"strategy": "topk_dropout", "long_short": True},
     r"backtest: Value error, backtest\.long_short: true is the threshold strategy's map, but backtest\.strategy is "
     r"'topk_dropout'"),
    ({"quantile": 0.6}, r"backtest\.quantile: Input should be less than or equal to 0\.5 \(got 0\.6\)"),
    ({"topk": 0}, r"backtest\.topk: Input should be greater than or equal to 1 \(got 0\)"),
    ({"open_cost": -0.001}, r"backtest\.open_cost: Input should be greater than or equal to 0"),
    ({"close_cost": 1.5}, r"backtest\.close_cost: Input should be less than 1"),
    ({"min_cost": -5}, r"backtest\.min_cost: Input should be greater than or equal to 0"),
    ({"max_turnover": 0}, r"backtest\.max_turnover: Input should be greater than 0"),
    ({"account": 0}, r"backtest\.account: Input should be greater than 0"),
])
def test_a_bad_strategy_setting_is_one_line_naming_it(backtest, line):
    with pytest.raises(SettingsError) as err:
        parse_settings({"backtest": backtest}, "f.yaml")
    lines = str(err.value).splitlines()
    assert lines[0] == "f.yaml: invalid settings" and len(lines) == 2, lines
    assert re.search(line, lines[1]), lines[1]



# ---------------------------------------------------------------- backtest.sweep


@pytest.mark.parametrize("sweep,line", [
    ({"grid": {"topk_": [1]}}, r"backtest\.sweep: Value error, backtest\.sweep\.grid: 'topk_' is not a parameter a "
                               r"sweep can vary; expected one of threshold, topk"),
    ({"grid": {"topk": []}}, r"backtest\.sweep\.grid\.topk: no value"),
    ({"grid": {"topk": [10, 10]}}, r"backtest\.sweep\.grid\.topk: \[10\.0, 10\.0\] repeats a value"),
    ({"grid": {"n_drop": [1.5]}}, r"backtest\.sweep\.grid\.n_drop: \[1\.5\] has a value that is not a whole number"),
    ({"grid": {"threshold": [0.5, 1.5]}}, r"backtest\.sweep\.grid\.threshold: 1\.5 is out of range: Input should be "
                                          r"less than or equal to 1"),
    ({"grid": {"max_turnover": [0.0]}}, r"backtest\.sweep\.grid\.max_turnover: 0\.0 is out of range"),
    ({"grid": {"topk": [2, 5], "n_drop": [1, 3]}}, r"backtest\.sweep\.grid: the point topk=2, n_drop=3 is not a valid "
                                                   r"backtest: backtest\.n_drop \(3\) is more than backtest\.topk \(2\)"),
    ({"grid": {"topk": [10, 20]}, "heatmap": ["topk", "fee_bps"]}, r"backtest\.sweep\.heatmap: fee_bps not in "
                                                                   r"backtest\.sweep\.grid \(topk\)"),
    ({"grid": {"topk": [10, 20]}, "heatmap": ["topk"]}, r"backtest\.sweep\.heatmap: \['topk'\]; expected two"),
    ({"grid": {"topk": [10, 20], "fee_bps": [0, 1]}, "max_points": 3}, r"backtest\.sweep\.grid: 4 combinations, more "
                                                                       r"than backtest\.sweep\.max_points \(3\)"),
    ({"blocks": 7}, r"backtest\.sweep\.blocks: 7 is odd"),
    ({"sort_by": "sharp"}, r"backtest\.sweep\.sort_by: Input should be 'sharpe', 'cagr'"),
    ({"top": 0}, r"backtest\.sweep\.top: Input should be greater than or equal to 1"),
])
def test_a_bad_sweep_setting_is_one_line_naming_it(sweep, line):
    with pytest.raises(SettingsError) as err:
        parse_settings({"backtest": {"strategy": "topk_dropout", "topk": 10, "n_drop": 1, "sweep": sweep}}, "f.yaml")
    lines = str(err.value).splitlines()
    assert lines[0] == "f.yaml: invalid settings" and len(lines) == 2, lines
    assert re.search(line, lines[1]), lines[1]


def test_a_sweep_grid_expands_to_every_combination_over_the_other_settings():
    s = parse_settings({"backtest": {"strategy": "topk_dropout", "fee_bps": 3.0,
                                     "sweep": {"grid": {"topk": [10, 20], "n_drop": [1, 5], "open_cost": [0, 0.001]}}}},
                       "f.yaml")
    points = s.backtest.sweep_points()
    assert [(p.topk, p.n_drop, p.open_cost) for p in points] == [
        (10, 1, 0.0), (10, 1, 0.001), (10, 5, 0.0), (10, 5, 0.001), (20, 1, 0.0), (20, 1, 0.001), (20, 5, 0.0),
        (20, 5, 0.001)]
    assert all(p.strategy == "topk_dropout" and p.fee_bps == 3.0 and not p.sweep.grid for p in points)
    assert isinstance(points[0].topk, int)
    assert Settings().backtest.sweep_points() == []
