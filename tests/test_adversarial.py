"""Bad input as a careless or hostile user gives it: each row is one input and the exact
line it must produce. Settings that cannot work are refused when they are loaded, with the
file, the key and what is allowed, before anything is stored."""

from __future__ import annotations

import datetime as dt

import pytest

from config.settings import SettingsError, parse_settings

NEXT_YEAR = dt.date.today().year + 1

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

    from config.partitions import SymbolYear
    from domain.observe import write_json_atomic
    from resources.parquet_store import ParquetStore

    old = os.umask(0o022)
    try:
        store = ParquetStore(tmp_path)
        store.write("raw_bars", SymbolYear("AAA", 2010), pl.DataFrame({"x": [1.0]}))
        report = write_json_atomic(tmp_path / "r.json", {"a": 1})
    finally:
        os.umask(old)
    assert (store.partition_path("raw_bars", "AAA", 2010).stat().st_mode & 0o777) == 0o644
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
