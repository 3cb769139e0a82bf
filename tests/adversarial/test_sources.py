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
    with pytest.warns(UserWarning) as seen:
        assert FolderSource(tmp_path).symbols() == []
    assert [str(w.message) for w in seen] == [f"skipped: {tmp_path}/{line}"]


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
