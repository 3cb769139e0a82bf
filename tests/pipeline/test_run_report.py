"""pipeline.run_report: a failed run's root cause as one line with the exit code the CLI
returns (2: the user's input; 1: the environment or a defect)."""

from __future__ import annotations

import errno

import pytest
from dagster import asset, materialize

from config.errors import InputDataError
from pipeline.run_report import RunFailed, check_run, console_level, console_run_config, quiet_dagster, root_cause
from tests.conftest import project_instance_for_test


class _RemoteTraceback(Exception):
    """Stands in for loky's text copy of a worker's stack (same class name)."""


def _input_error():
    raise InputDataError("/in/AAA.csv", "non-numeric value 'x'", column="close", row=3, expected="a number")


def _our_value_error():
    raise ValueError("--horizon 5: not one of labels.horizons [3, 7, 14]")


def _library_value_error():
    import datetime as dt

    dt.datetime.strptime("2001-13-01", "%Y-%m-%d")  # raised inside the standard library: not the user's input


def _disk_full():
    raise OSError(errno.ENOSPC, "No space left on device", "/data/reports/cv/h7_2016.json")


def _worker_value_error():
    raise ValueError("calibration needs both classes in y") from _RemoteTraceback("Traceback ...\nValueError: ...")


CAUSES = [
    ("input_error_in_the_chain", _input_error,
     "/in/AAA.csv: column 'close', row 3: non-numeric value 'x'; expected a number", 2),
    ("value_error_raised_by_our_code", _our_value_error,
     "boom: --horizon 5: not one of labels.horizons [3, 7, 14]", 2),
    ("value_error_raised_inside_a_library_is_a_defect", _library_value_error,
     "boom: time data '2001-13-01' does not match format '%Y-%m-%d'", 1),
    ("disk_full_names_the_file", _disk_full,
     "disk full (boom: [Errno 28] No space left on device: '/data/reports/cv/h7_2016.json')", 1),
    ("a_worker_traceback_copy_is_skipped", _worker_value_error, "boom: calibration needs both classes in y", 2),
]


@pytest.mark.parametrize("raise_it, line, code", [c[1:] for c in CAUSES], ids=[c[0] for c in CAUSES])
def test_root_cause_is_one_line_with_the_exit_code_of_its_kind(raise_it, line, code):
    @asset
    def boom():
        raise_it()

    with project_instance_for_test() as inst:
        result = materialize([boom], instance=inst, raise_on_error=False)
    cause = root_cause(result)
    assert (cause.line, cause.exit_code, cause.step) == (line, code, "boom")


def test_a_failed_run_when_quiet_raises_the_line_and_writes_its_events_to_a_log(tmp_path, monkeypatch):
    @asset
    def boom():
        _our_value_error()

    from pipeline.instance import get_instance

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    quiet_dagster(True)
    try:
        assert console_level("WARNING") == "CRITICAL"
        result = materialize([boom], instance=get_instance(), raise_on_error=False)
        with pytest.raises(RunFailed) as err:
            check_run(result, "boom job")
    finally:
        quiet_dagster(False)
    assert (err.value.line, err.value.exit_code) == ("boom: --horizon 5: not one of labels.horizons [3, 7, 14]", 2)
    log = tmp_path / "logs" / f"{result.run_id}.log"
    assert err.value.detail == f"(boom job: run {result.run_id} failed; its log: {log})"
    assert "STEP_FAILURE" in log.read_text() and "_our_value_error" in log.read_text()  # the stack is in the log
    assert console_level("WARNING") == "WARNING"


def test_a_quiet_successful_run_prints_each_warning_as_one_line(tmp_path, monkeypatch, capsys):
    from pipeline.instance import get_instance

    @asset
    def calm(context):
        context.log.warning("cv_report 2016 h7: the label has one class (all 1) in the training years; horizon skipped")
        context.log.info("not shown")
        return 1

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    quiet_dagster(True)
    try:
        result = materialize([calm], instance=get_instance(), raise_on_error=False,
                             run_config=console_run_config())
        check_run(result, "calm job")
    finally:
        quiet_dagster(False)
    assert capsys.readouterr().err.splitlines() == [
        "warning: cv_report 2016 h7: the label has one class (all 1) in the training years; horizon skipped"]
    assert not (tmp_path / "logs").exists()  # a run that did not fail leaves no log file


@pytest.mark.parametrize("key, counts, text", [
    ("nan_rows_by_column", {"a158_VSTD5": 1204, "a158_VMA5": 1204, "a158_VMA10": 1100, "f_rsi": 0, "b": 7, "c": 3, "d": 2},
     "a158_VMA5 1,204 NaN rows, a158_VSTD5 1,204, a158_VMA10 1,100 (3 more columns)"),  # ties by name, zeros left out
    ("nan_rows_by_column", {"f_vol_ratio": 92}, "f_vol_ratio 92 NaN rows"),                   # one: no "more"
    ("unexpected_nulls_by_horizon", {"h3": 5, "h7": 12, "h14": 1, "h28": 2},
     "h7 12 unexpected nulls, h3 5, h28 2 (1 more horizon)"),                                  # singular
    ("shares", {"bull": 0.9, "bear": 0.0625, "oscillate": 0.0375}, "shares: bull 0.9, bear 0.0625, oscillate 0.0375"),  # no `_by_`
    ("out_of_range", {"spec_rsi": 0}, None),                                                   # nothing nonzero: nothing said
])
def test_worst_text_names_the_largest_counts_first_with_the_unit_and_how_many_more(key, counts, text):
    from pipeline.run_report import worst_text

    assert worst_text(key, counts) == text


def test_a_failed_check_line_names_its_worst_columns_after_its_counts_and_stays_bounded(tmp_path, monkeypatch, capsys):
    from dagster import AssetCheckResult, AssetCheckSpec, Output

    from pipeline.instance import get_instance

    counts = {f"a158_C{i:03d}": 1000 - i for i in range(158)}

    @asset(check_specs=[AssetCheckSpec("no_nan_after_warmup", asset="wide")])
    def wide():
        yield Output(1)
        yield AssetCheckResult(check_name="no_nan_after_warmup", passed=False,
                               metadata={"rows": 5000, "nan_rows_by_column": counts, "first": ["AAA 2001-01-02"]})

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    check_run(materialize([wide], instance=get_instance(), raise_on_error=False), "wide job")
    line = capsys.readouterr().err.splitlines()[-1]
    assert line == ("warning: check wide/no_nan_after_warmup failed: rows 5000; a158_C000 1,000 NaN rows, a158_C001 999, "
                    "a158_C002 998 (155 more columns) (AAA 2001-01-02)")
