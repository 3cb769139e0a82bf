"""Bad input to the user-folder source, as a user's long table really has it: each row is one
file and the exact line it must produce. Nothing of such a file is dropped in silence: an
empty symbol names its row, whether the folder is listed (`symbols sync`, the sensor: the
file is skipped with this line as the warning) or a symbol of it is read (the run fails
with this line)."""

from __future__ import annotations

import pytest

from config.errors import InputDataError
from domain.sources.folder import FolderSource

HEAD = "symbol,date,open,high,low,close\n"
BAR = "2010-01-04,1,2,0.5,1.5\n"
EXPECTED_SYMBOL = "expected the symbol: a name matching [A-Z0-9._-]{1,16} (lower case is upper-cased)"

LONG_TABLES_REFUSED = [
    ("empty_symbol_names_its_row", HEAD + "AAA," + BAR + "," + BAR,
     f"long.csv: column 'symbol', row 2: empty symbol; {EXPECTED_SYMBOL}"),
    ("blank_symbol_names_its_row", HEAD + "AAA," + BAR + "   ," + BAR + "AAA,2010-01-05,1,2,0.5,1.5\n",
     f"long.csv: column 'symbol', row 2: empty symbol; {EXPECTED_SYMBOL}"),
    ("half_the_rows_without_a_symbol_is_not_half_a_file", HEAD + "".join(
        f"AAA,2010-01-{d:02d},1,2,0.5,1.5\n,2010-01-{d:02d},1,2,0.5,1.5\n" for d in range(4, 29)),
     f"long.csv: column 'symbol', row 2: empty symbol; {EXPECTED_SYMBOL}"),
    ("ticker_column_empty_on_the_first_row", "Ticker,Date,Open,High,Low,Close\n," + BAR,
     f"long.csv: column 'Ticker', row 1: empty symbol; {EXPECTED_SYMBOL}"),
    ("symbol_that_would_be_a_path_names_its_row", HEAD + "aaa," + BAR + "../x," + BAR,
     f"long.csv: column 'symbol', row 2: symbol '../x' is not allowed; {EXPECTED_SYMBOL}"),
]


@pytest.mark.parametrize("text, line", [r[1:] for r in LONG_TABLES_REFUSED], ids=[r[0] for r in LONG_TABLES_REFUSED])
def test_a_long_table_with_a_bad_symbol_value_is_refused_with_its_row(tmp_path, text, line):
    (tmp_path / "long.csv").write_text(text)
    with pytest.raises(InputDataError) as err:
        FolderSource(tmp_path).history(["AAA"])
    assert str(err.value) == f"{tmp_path}/{line}"
    with pytest.raises(InputDataError) as err:  # the folder's only file is skipped: no usable file
        FolderSource(tmp_path).symbols()
    why = line.rsplit("; expected ", 1)[0]
    assert str(err.value) == (f"{tmp_path}: no usable file: 1 skipped ({why}); expected one CSV or Parquet file per "
                              "symbol (named by its symbol, e.g. AAPL.csv) or a table with a symbol column "
                              "(universe.folder.path)")


def test_lowercase_and_padded_symbol_values_are_the_symbol_like_a_file_name(tmp_path):
    """`goog.csv` is GOOG, so a long table's ` goog ` is GOOG too: no row and no file is lost."""
    (tmp_path / "long.csv").write_text(HEAD + "AAA," + BAR + " bbb ," + BAR + "Bbb,2010-01-05,1,2,0.5,1.5\n")
    src = FolderSource(tmp_path)
    assert src.symbols() == ["AAA", "BBB"]
    df = src.history(["AAA", "BBB"])
    assert df.group_by("symbol").len().sort("symbol").rows() == [("AAA", 1), ("BBB", 2)]


def test_symbols_sync_names_the_row_of_an_empty_symbol_in_one_line_and_registers_the_rest(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    folder = tmp_path / "ud"
    folder.mkdir()
    (folder / "long.csv").write_text(HEAD + "AAA," + BAR + "," + BAR)
    (folder / "bbb.csv").write_text("date,open,high,low,close\n" + BAR)
    cfg = tmp_path / "s.yaml"
    cfg.write_text(f"universe: {{source: folder, folder: {{path: {folder}}}}}\nyears: {{start: 2010}}\n")
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "symbols", "sync"], cwd=Path(__file__).parents[2],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["registered 1 new symbol(s); 1 in all: BBB"]
    assert out.stderr.splitlines()[1:] == [
        f"warning: skipped: {folder}/long.csv: column 'symbol', row 2: empty symbol; {EXPECTED_SYMBOL}"]


NO_USABLE_FILE = ("expected one CSV or Parquet file per symbol (named by its symbol, e.g. AAPL.csv) or a table "
                  "with a symbol column (universe.folder.path)")

# (id, {file name: bytes}, the exact line FolderSource.symbols raises ({f}: the folder))
FOLDERS_WITHOUT_A_USABLE_FILE = [
    ("empty_folder", {}, "{f}: no usable file: the folder has no file; " + NO_USABLE_FILE),
    ("only_an_empty_file_an_odd_name_and_notes",
     {"BBB.csv": b"", "bad name.csv": b"date,open,high,low,close\n" + BAR.encode(), "notes.txt": b"x"},
     "{f}: no usable file: 3 skipped (BBB.csv: the file is empty; bad name.csv: symbol 'BAD NAME' is not allowed; "
     "notes.txt: not a .csv, .parquet or .pq file); " + NO_USABLE_FILE),
    ("a_file_name_with_a_newline", {"ev\nil.csv": b"date,open,high,low,close\n" + BAR.encode()},
     "{f}: no usable file: 1 skipped ('{f}/ev\\nil.csv': symbol 'EV\\nIL' is not allowed); " + NO_USABLE_FILE),
    ("eleven_misnamed_files", {f"x y{i:02d}.csv": b"date\n" for i in range(11)},
     "{f}: no usable file: 11 skipped (" + "; ".join(f"x y{i:02d}.csv: symbol 'X Y{i:02d}' is not allowed"
                                                      for i in range(10)) + "; ... and 1 more); " + NO_USABLE_FILE),
]


@pytest.mark.parametrize("files, line", [r[1:] for r in FOLDERS_WITHOUT_A_USABLE_FILE],
                         ids=[r[0] for r in FOLDERS_WITHOUT_A_USABLE_FILE])
def test_a_folder_without_a_usable_file_is_one_line_naming_each_file_skipped_and_why(tmp_path, files, line):
    folder = tmp_path / "raw"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    with pytest.raises(InputDataError) as err:
        FolderSource(folder).symbols()
    assert str(err.value) == line.format(f=folder)


def test_a_semicolon_file_with_decimal_commas_is_one_line_naming_the_separator(tmp_path):
    """A European spreadsheet's export: polars' own multi-line hint (about its options) is
    replaced by what the file should be."""
    (tmp_path / "AAA.csv").write_text("date;open;high;low;close;volume\n2010-01-04;1,5;2,5;0,5;1,5;100\n")
    with pytest.raises(InputDataError) as err:
        FolderSource(tmp_path).history(["AAA"])
    assert str(err.value) == (f"{tmp_path}/AAA.csv: cannot be read: found more fields than defined in 'Schema'; "
                              "expected a comma-separated CSV with '.' decimals (this file's header is separated by ';')")


def test_a_parser_message_on_several_lines_becomes_one_line():
    err = InputDataError("/d/AAA.csv", "cannot be read: found more fields\n\nConsider setting 'x=True'.",
                         expected="a CSV\nor Parquet file")
    assert str(err) == "/d/AAA.csv: cannot be read: found more fields; Consider setting 'x=True'.; expected a CSV; or Parquet file"


def test_build_features_on_a_folder_whose_files_are_all_skipped_exits_2_with_one_line(tmp_path):
    """Before: a Python UserWarning with its source line and exit 0 with "0 symbols"."""
    from tests.adversarial.test_cli_errors import cli, settings, user_lines

    settings(tmp_path)
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "BBB.csv").write_bytes(b"")
    (raw / "my notes.csv").write_text("date,open,high,low,close\n" + BAR)
    out = cli(tmp_path, ["build-features", "--raw", str(raw)])
    assert (out.returncode, user_lines(out.stderr)) == (2, [
        f"error: {raw}: no usable file: 2 skipped (BBB.csv: the file is empty; my notes.csv: symbol 'MY NOTES' is not "
        f"allowed); {NO_USABLE_FILE}"]), out.stderr[-3000:]


def test_build_features_prints_each_skipped_file_once_as_a_warning_line(tmp_path):
    from tests.adversarial.test_cli_errors import cli, settings, user_lines

    settings(tmp_path)
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "BBB.csv").write_bytes(b"")
    (raw / "AAA.csv").write_text("date,open,high,low,close\n" + "".join(
        f"2001-01-{d:02d},1,2,0.5,1.5\n" for d in range(2, 31)))
    out = cli(tmp_path, ["build-features", "--raw", str(raw), "--years", "2001"])
    assert out.returncode == 0, out.stderr[-3000:]
    assert [x for x in user_lines(out.stderr) if "BBB" in x or "Warning" in x] == [
        f"warning: skipped: {raw}/BBB.csv: the file is empty; expected a header and at least one row of OHLCV data"]
