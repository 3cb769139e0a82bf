"""Named experiments, bad input: each row is one CLI command in a real
process with a bad experiment name, a comparison of experiments that do not exist, or changed
model settings under a name that has results; it prints exactly one line and exits 2, and
nothing stored is changed (the frozen experiment's manifest and models stay as they were)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.test_cli_errors import cli, settings  # real processes, tmp_path's settings


def _experiment_with_results(tmp_path: Path, name: str) -> None:
    """Experiment `name` frozen with the default (logistic) settings, a model file its result."""
    from config.experiments import freeze_experiment
    from config.settings import read_settings

    s = read_settings(settings(tmp_path, experiment=name))
    freeze_experiment(s)
    s.models_dir.mkdir(parents=True)
    (s.models_dir / "meta_h7_2001.joblib").write_bytes(b"model")


def _nothing(tmp_path: Path) -> None:
    settings(tmp_path)


def _baseline(tmp_path: Path) -> None:
    _experiment_with_results(tmp_path, "baseline")
    settings(tmp_path)  # back to the default experiment


def _baseline_then_tree_model(tmp_path: Path) -> None:
    _experiment_with_results(tmp_path, "baseline")
    settings(tmp_path, meta={"model": "hist_gbm"})


def _two_experiments(tmp_path: Path) -> None:
    _experiment_with_results(tmp_path, "baseline")
    _experiment_with_results(tmp_path, "tree")
    settings(tmp_path)


def _baseline_then_backtest_threshold(tmp_path: Path) -> None:
    _experiment_with_results(tmp_path, "baseline")
    settings(tmp_path, backtest={"threshold": 0.6})


FIGURES = ", ".join([f"h{h}_{f}" for h in (3, 7, 14) for f in ("auc", "pr_auc", "brier", "rank_ic", "icir",
                                                                 "long_short_sharpe")]
                    + [f"backtest_{f}" for f in ("sharpe", "cagr", "max_drawdown", "annual_turnover",
                                                   "excess_return", "information_ratio")])

# (id, setup(tmp_path), argv, the exact line on stderr ({tmp}: tmp_path; {hash}: baseline's), exit code)
ROWS = [
    ("experiment_name_with_a_space", _nothing, ["experiments", "--experiment", "my run"],
     "error: --experiment 'my run': not an experiment name; expected 1-64 letters, digits, '.', '_' or '-', "
     "starting with a letter or digit", 2),
    ("experiment_name_with_a_trailing_newline", _nothing, ["evaluate", "--experiment=evil\n"],
     "error: --experiment 'evil\\n': not an experiment name; expected 1-64 letters, digits, '.', '_' or '-', "
     "starting with a letter or digit", 2),
    ("experiment_name_with_a_slash", _nothing, ["evaluate", "--experiment", "a/b"],
     "error: --experiment 'a/b': not an experiment name; expected 1-64 letters, digits, '.', '_' or '-', "
     "starting with a letter or digit", 2),
    ("experiment_name_dot_dot", _nothing, ["evaluate", "--experiment", ".."],
     "error: --experiment '..': not an experiment name; expected 1-64 letters, digits, '.', '_' or '-', "
     "starting with a letter or digit", 2),
    ("experiment_name_of_65_characters", _nothing, ["evaluate", "--experiment", "a" * 65],
     f"error: --experiment '{'a' * 65}': not an experiment name; expected 1-64 letters, digits, '.', '_' or '-', "
     "starting with a letter or digit", 2),
    ("experiment_name_in_unicode", _nothing, ["evaluate", "--experiment", "café"],
     "error: --experiment 'café': not an experiment name; expected 1-64 letters, digits, '.', '_' or '-', "
     "starting with a letter or digit", 2),
    ("experiment_flag_without_a_name", _nothing, ["evaluate", "--experiment"],
     "error: --experiment: a name is missing; expected e.g. --experiment baseline", 2),
    ("experiment_named_as_a_stage_folder", _nothing, ["--experiment", "evaluation", "evaluate"],
     "error: --experiment 'evaluation': the name of a stage's report folder; expected another experiment name", 2),
    ("compare_an_unknown_experiment", _baseline, ["compare", "baseline", "momentum"],
     "error: compare: no experiment 'momentum' under {tmp}/reports (known: baseline); "
     "expected the name of a run's --experiment", 2),
    ("compare_one_experiment", _baseline, ["compare", "baseline"],
     "error: compare: 1 experiment named; expected two or more, e.g. compare baseline momentum", 2),
    ("compare_an_experiment_with_itself", _baseline, ["compare", "baseline", "baseline"],
     "error: compare: an experiment is named twice in baseline baseline; expected distinct names", 2),
    ("changed_model_setting_under_a_name_with_results", _baseline_then_tree_model,
     ["evaluate", "--experiment", "baseline"],
     "error: {tmp}/reports/baseline/experiment.json: experiment 'baseline' has results built with settings {hash}, "
     "these are {new} (meta.missing \"fill\" -> \"native\"; meta.model \"logistic\" -> \"hist_gbm\"); use another --experiment name, or move "
     "{tmp}/reports/baseline and {tmp}/models/baseline away to rebuild it", 2),
    ("changed_backtest_threshold_under_a_name_with_results", _baseline_then_backtest_threshold,
     ["backtest", "--experiment", "baseline"],
     "error: {tmp}/reports/baseline/experiment.json: experiment 'baseline' has results built with settings "
     "8df18f840c87, these are {new} (backtest.threshold default -> 0.6); use another --experiment name, or move "
     "{tmp}/reports/baseline and {tmp}/models/baseline away to rebuild it", 2),
    ("rank_by_an_unknown_figure", _baseline, ["experiments", "--by", "h7_sharpe"],
     f"error: experiments --by h7_sharpe: not a figure; expected one of {FIGURES}", 2),
    ("compare_common_without_predictions", _two_experiments, ["compare", "baseline", "tree", "--common"],
     "error: compare --common: experiment 'baseline' has no stored predictions under "
     "{tmp}/data/experiments/baseline/predictions; expected the table `train-meta` stores (run "
     "`python -m pipeline.cli --experiment baseline train-meta`)", 2),
]


@pytest.mark.parametrize("setup, argv, line, code", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_experiment_input_is_one_line_and_changes_nothing(tmp_path, setup, argv, line, code):
    from config.experiments import settings_hash
    from config.settings import read_settings

    setup(tmp_path)
    manifest = tmp_path / "reports" / "baseline" / "experiment.json"
    before = manifest.read_text() if manifest.exists() else None
    out = cli(tmp_path, argv)
    hashes = {"hash": settings_hash(read_settings(tmp_path / "conf" / "settings.yaml").model_copy(
        update={"meta": read_settings(tmp_path / "conf" / "settings.yaml").meta.model_copy(update={"model": "logistic"})})),
        "new": settings_hash(read_settings(tmp_path / "conf" / "settings.yaml"))}
    lines = [x for x in out.stderr.strip().splitlines() if not x.startswith("tradelab: device ")]
    assert (lines, out.returncode) == ([line.format(tmp=tmp_path, **hashes)], code), out.stderr
    assert (manifest.read_text() if manifest.exists() else None) == before  # nothing stored changed


BAD_NAMES = ["evil\n", "evil\x00", "a/b", "..", "a" * 65, "café", "ｅｘｐ", "evil\r", ""]


@pytest.mark.parametrize("name", BAD_NAMES, ids=["trailing_newline", "nul", "slash", "dot_dot", "65_characters",
                                                 "unicode_letter", "fullwidth_letters", "carriage_return", "empty"])
def test_a_bad_experiment_name_is_refused_whole_by_the_flag_and_the_settings(name):
    """The name matches in full: a trailing newline (which `$` would let through), NUL, a path
    separator, `..`, 65 characters and non-ASCII letters are refused by `--experiment` and by
    the settings' `experiment`, each with a one-line message (the name as Python writes it)."""
    from pydantic import ValidationError

    from config.settings import Settings
    from pipeline.cli.experiments import take_experiment_flag

    with pytest.raises(ValueError) as flag:
        take_experiment_flag(["evaluate", f"--experiment={name}"])
    assert str(flag.value).startswith(f"--experiment {name!r}: ") and "\n" not in str(flag.value)
    with pytest.raises(ValidationError) as model:
        Settings(experiment=name)
    assert f"{name!r} is not an experiment name" in str(model.value)


@pytest.mark.parametrize("name", ["a", "A1.b_c-d", "2024", "x" * 64], ids=["one_letter", "every_kind_of_character",
                                                                          "digits", "64_characters"])
def test_a_good_experiment_name_is_taken_as_is(name):
    from pipeline.cli.experiments import take_experiment_flag

    assert take_experiment_flag(["evaluate", "--experiment", name]) == (["evaluate"], name)


def test_a_refused_name_with_a_newline_makes_no_report_folder(tmp_path):
    """`--experiment=$'evil\\n'` from a shell: exit 2, one line, and nothing under reports/."""
    settings(tmp_path)
    out = cli(tmp_path, ["evaluate", "--experiment=evil\n"])
    lines = [x for x in out.stderr.strip().splitlines() if not x.startswith("tradelab: device ")]
    assert (out.returncode, len(lines)) == (2, 1), out.stderr
    reports = tmp_path / "reports"
    assert not reports.exists() or list(reports.iterdir()) == []
