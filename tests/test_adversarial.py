"""Bad input as a careless or hostile user gives it: each row is one input and the exact
line it must produce. Settings that cannot work are refused when they are loaded, with the
file, the key and what is allowed, before anything is stored."""

from __future__ import annotations

import datetime as dt

import pytest

from config.settings import SettingsError, parse_settings

NEXT_YEAR = dt.date.today().year + 1


def _user_lines(stderr: str) -> list[str]:
    """A command's stderr without the runtime line every command prints first."""
    return [line for line in stderr.strip().splitlines() if not line.startswith("tradelab: device ")]

SETTINGS_REFUSED = [
    ("empty_synthetic_symbol_list", {"universe": {"synthetic": {"symbols": []}}},
     "universe.synthetic.symbols: Value error, an empty list names no symbol: give at least one, or leave the key out (got [])"),
    ("empty_packaged_symbol_list", {"universe": {"packaged": {"symbols": []}}},
     "universe.packaged.symbols: List should have at least 1 item after validation, not 0 (got [])"),
    ("empty_demo_symbol_list", {"demo": {"symbols": []}},
     "demo.symbols: Value error, an empty list names no symbol: give at least one, or leave the key out (got [])"),
    ("start_year_in_the_future", {"years": {"start": NEXT_YEAR}},
     f"years: Value error, start ({NEXT_YEAR}) is after this year ({NEXT_YEAR - 1}): no bar exists yet"),
    ("negative_synthetic_seed", {"universe": {"synthetic": {"seed": -1}}},
     "universe.synthetic.seed: Input should be greater than or equal to 0 (got -1)"),
    ("negative_smart_search_seed", {"grid_search": {"smart": {"seed": -3}}},
     "grid_search.smart.seed: Input should be greater than or equal to 0 (got -3)"),
    ("end_date_before_the_first_year", {"years": {"start": 2010}, "universe": {"synthetic": {"end_date": "2005-06-30"}}},
     "(top level): Value error, universe.synthetic.end_date (2005-06-30) is before years.start (2010): no bar would be generated"),
]


@pytest.mark.parametrize("data, line", [r[1:] for r in SETTINGS_REFUSED], ids=[r[0] for r in SETTINGS_REFUSED])
def test_settings_that_cannot_work_are_refused_at_load(data, line):
    with pytest.raises(SettingsError) as err:
        parse_settings(data, "f.yaml")
    assert str(err.value).splitlines() == ["f.yaml: invalid settings", f"  {line}"]


def test_a_data_path_that_cannot_be_written_is_refused_at_load(tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    with pytest.raises(SettingsError) as err:
        parse_settings({"paths": {"data": "a_file/data"}}, "f.yaml", root=tmp_path)
    assert str(err.value).splitlines()[1] == (
        f"  (top level): Value error, paths.data ({tmp_path / 'a_file' / 'data'}) cannot be written: "
        f"{tmp_path / 'a_file'} is not a writable folder")


def test_three_first_uses_at_once_leave_one_working_instance(tmp_path):
    """Real processes started together on a fresh DAGSTER_HOME: each opens the instance and
    reads from it; afterwards a fourth finds one consistent schema (no second alembic head)."""
    import os
    import subprocess
    import sys

    code = ("from pipeline.instance import get_instance; i = get_instance(); "
            "print(len(i.get_runs()), len(i.get_dynamic_partitions('symbols')))")
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [e[-800:] for _, e in outs]
    after = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert after.returncode == 0 and after.stdout.split() == ["0", "0"], after.stderr[-800:]


def test_stored_files_are_readable_by_the_group_as_a_shared_folder_needs(tmp_path):
    import os

    import polars as pl

    import datetime as dt

    from config.partitions import SymbolYear
    from domain.observe import write_json_atomic
    from resources.delta_store import DeltaStore

    old = os.umask(0o022)
    try:
        store = DeltaStore(tmp_path / "data")
        store.write("raw_bars", SymbolYear("AAA", 2010), pl.DataFrame({"date": [dt.datetime(2010, 1, 4)], "symbol": ["AAA"],
                                                                       "x": [1.0]}))
        report = write_json_atomic(tmp_path / "r.json", {"a": 1})
    finally:
        os.umask(old)
    table = store.asset_dir("raw_bars")
    files = [p for p in table.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files) and any(p.parent.name == "_delta_log" for p in files)
    assert {oct(p.stat().st_mode & 0o777) for p in files} == {"0o644"}
    assert {oct(p.stat().st_mode & 0o777) for p in [table, *table.rglob("*")] if p.is_dir()} == {"0o755"}
    assert (report.stat().st_mode & 0o777) == 0o644


BAD_BARS = [
    ("close_that_overflows_float32", {"close": "1e300"}, "column 'close', row 2: '1e300' does not fit the stored float32; "
     "expected a number between 1.18e-38 and 3.40e+38"),
    ("close_that_underflows_float32", {"close": "1e-300"}, "column 'close', row 2: '1e-300' does not fit the stored float32; "
     "expected a number between 1.18e-38 and 3.40e+38"),
    ("volume_that_overflows_float32", {"volume": "1e300"}, "column 'volume', row 2: '1e300' does not fit the stored float32; "
     "expected a number between 1.18e-38 and 3.40e+38"),
    ("close_above_high", {"close": "12.5"}, "column 'close', row 2: close 12.5 outside [low 9.0, high 11.0]; "
     "expected low <= close <= high"),
    ("open_below_low", {"open": "8"}, "column 'open', row 2: open 8.0 outside [low 9.0, high 11.0]; expected low <= open <= high"),
]


@pytest.mark.parametrize("change, line", [r[1:] for r in BAD_BARS], ids=[r[0] for r in BAD_BARS])
def test_bars_that_would_be_stored_wrong_are_refused(change, line):
    import polars as pl

    from config.errors import InputDataError
    from domain.sources.conform import conform_bars

    row = {"date": "2020-01-03", "open": "10", "high": "11", "low": "9", "close": "10", "volume": "1000"}
    rows = [{"date": "2020-01-02", "open": "10", "high": "11", "low": "9", "close": "10", "volume": "1000"}, {**row, **change}]
    with pytest.raises(InputDataError) as err:
        conform_bars(pl.DataFrame(rows), "AAA.csv", "AAA")
    assert str(err.value) == f"AAA.csv: {line}"


def test_infer_of_an_unknown_symbol_is_one_line_with_exit_code_2(learned_store, monkeypatch, capsys):
    from pipeline.cli import main

    monkeypatch.setenv("PIPELINE_CONFIG", str(learned_store))
    assert main(["infer", "NOPE", "--now", "2003-06-02"]) == 2
    err = _user_lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("error: no raw_bars stored for symbol 'NOPE'")


def test_infer_far_after_the_data_warns_and_prints_valid_json(learned_store, monkeypatch, capsys):
    import json

    from pipeline.cli import main

    monkeypatch.setenv("PIPELINE_CONFIG", str(learned_store))
    assert main(["infer", "AAA", "--now", "2004-03-01"]) == 0
    out = capsys.readouterr()
    assert "\n".join(_user_lines(out.err)) == ("warning: AAA: the latest stored bar is 2003-12-31, 61 days before 2004-03-01; "
                               "build the new bars first (live-paper-trade does)")

    def no_bare_constants(name):
        raise AssertionError(f"bare {name} in the JSON")

    payload = json.loads(out.out, parse_constant=no_bare_constants)
    assert payload["symbol"] == "AAA" and payload["date"].startswith("2003-12-31")
    assert main(["infer", "AAA", "--now", "not-a-date"]) == 2
    assert "\n".join(_user_lines(capsys.readouterr().err)) == ("error: --now not-a-date: expected an ISO date or date-time, "
                                               "e.g. 2024-03-15 or 2024-03-15T16:00")


CLI_REFUSED = [
    ("top_negative", ["grid-search", "--top", "-5"], "error: --top -5: expected a whole number from 1 to 1000"),
    ("top_zero", ["grid-search", "--top", "0"], "error: --top 0: expected a whole number from 1 to 1000"),
    ("min_trades_negative", ["grid-search", "--min-trades", "-3"], "error: --min-trades -3: expected a whole number >= 1"),
    ("params_missing", ["grid-search", "--params", "/nonexistent/p.yaml"],
     "error: --params /nonexistent/p.yaml: file not found; expected a YAML file of grid values"),
    ("too_many_tickers", ["grid-search", "--tickers", ",".join(f"T{i}" for i in range(128))],
     "error: --tickers: 128 tickers; expected at most 127"),
    ("years_backwards", ["build-features", "--years", "2012-2010"],
     "error: --years 2012-2010: the range 2012-2010 runs backwards; expected 2010-2012"),
    ("years_not_a_year", ["build-features", "--years", "20x1"],
     "error: --years 20x1: '20x1' is not a year or a range; expected e.g. 2005, 2005-2010 or 2005,2006"),
]


@pytest.mark.parametrize("argv, line", [r[1:] for r in CLI_REFUSED], ids=[r[0] for r in CLI_REFUSED])
def test_cli_flags_that_cannot_work_are_one_line_with_exit_code_2(argv, line, make_settings, monkeypatch, tmp_path, capsys):
    from pipeline.cli import main

    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings()))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(argv) == 2
    assert _user_lines(capsys.readouterr().err) == [line]


def test_grid_out_that_is_a_folder_is_refused(tmp_path, capsys):
    from pipeline.cli import main

    argv = ["grid-search", "--market-data", str(tmp_path), "--trade-log", str(tmp_path / "t.csv"), "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "\n".join(_user_lines(capsys.readouterr().err)) == f"error: --out {tmp_path}: is a folder; expected the path of the JSON report to write"


def test_trade_logs_and_market_files_that_cannot_be_read_are_one_line(tmp_path):
    import polars as pl

    from config.errors import InputDataError
    from domain.gridsearch.inputs import market_files, read_trade_log

    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(InputDataError) as err:
        read_trade_log(empty, ["SOXL"], pl.DataFrame())
    assert str(err.value) == f"{empty}: the file is empty; expected a header with the trade-log columns and rows"
    latin = tmp_path / "latin.csv"
    from domain.gridsearch.inputs import TRADE_COLUMNS

    header = ",".join(TRADE_COLUMNS)
    latin.write_bytes(f"{header}\n".encode() + ("2024-03-04,caf\xe9" + ",1" * (len(TRADE_COLUMNS) - 2) + "\n").encode("latin-1"))
    with pytest.raises(InputDataError, match=r"latin\.csv: .*; expected a UTF-8 CSV file with the trade-log columns"):
        read_trade_log(latin, ["SOXL"], pl.DataFrame())
    folder = tmp_path / "market"
    folder.mkdir()
    (folder / "Raw_Market_data_45-04-2024.csv").write_text("x\n")
    with pytest.raises(InputDataError) as err:
        market_files(folder)
    assert str(err.value) == (f"{folder / 'Raw_Market_data_45-04-2024.csv'}: the name's date 45-04-2024 is not a date; "
                              "expected Raw_Market_data_MM-DD-YYYY.csv with a real month and day")


def test_a_bad_file_inside_a_dagster_run_is_one_line_first(tmp_path, make_settings, monkeypatch, capsys):
    """build-features over a user folder with a bad cell: the command's error is the input
    line (file, row, column, expected) with exit code 2, then where the run's log is; none
    of Dagster's events on the console (they go to the log file)."""
    import re

    from pipeline.cli import main

    folder = tmp_path / "user_data"
    folder.mkdir()
    (folder / "AAA.csv").write_text("date,open,high,low,close,volume\n2001-01-02,10,11,9,10,100\n2001-01-03,10,11,9,abc,100\n")
    cfg = make_settings(universe={"source": "folder", "folder": {"path": str(folder)}}, years={"start": 2001, "end": 2001})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["build-features"]) == 2
    err = _user_lines(capsys.readouterr().err)
    assert err[0].startswith("build-features: 1 symbols") and len(err) == 3, err
    assert err[1] == f"error: {folder / 'AAA.csv'}: column 'close', row 2: non-numeric value 'abc'; expected a number"
    m = re.fullmatch(r"\(historical_build_and_train AAA\.\.AAA x 2001\.\.2001: run (\S+) failed; its log: (\S+)\)", err[2])
    assert m, err[2]
    log = tmp_path / "home" / "logs" / f"{m.group(1)}.log"
    assert m.group(2) == str(log) and "STEP_FAILURE" in log.read_text()


def test_every_command_prints_the_runtime_line_first(make_settings, monkeypatch, tmp_path, capsys):
    from pipeline.cli import main

    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings()))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["symbols", "list"]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("tradelab: device cpu (cpu, policy auto), backend cpu; OMP_NUM_THREADS=")
    assert all(f" {name} " in first + " " for name in ("torch", "numba", "polars", "dagster"))
