"""A user folder as it really is: partial downloads, stray files, links and deleted symbols.
One bad file never blocks the others; a link out of the folder is refused; a symbol whose
file is gone is removed with `symbols remove` or `symbols sync --prune`."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from domain.sources.folder import FolderSource

REPO = Path(__file__).resolve().parents[2]
BARS = "date,open,high,low,close,volume\n2020-01-02,10,11,9,10,100\n2020-01-03,10,11,9,10.5,120\n"


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "user_data"
    d.mkdir()
    (d / "AAA.csv").write_text(BARS)
    (d / "BBB.csv").write_text(BARS)
    (d / "CCC.csv").write_bytes(b"")  # a partial download
    (d / "my notes.csv").write_text("whatever\n")  # not a symbol name
    return d


def test_a_zero_byte_or_misnamed_file_is_a_warning_not_a_failure(folder):
    with pytest.warns(UserWarning) as seen:
        assert FolderSource(folder).symbols() == ["AAA", "BBB"]
    messages = [str(w.message) for w in seen]
    assert any("CCC.csv: the file is empty" in m for m in messages)
    assert any("my notes.csv: symbol 'MY NOTES' is not allowed" in m for m in messages)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading AAA says nothing of the files listing named
        assert FolderSource(folder).history(["AAA"])["symbol"].unique().to_list() == ["AAA"]


def test_a_wanted_symbol_without_a_readable_file_names_the_fix(folder):
    (folder / "BBB.csv").unlink()
    with pytest.raises(ValueError, match=r"no file holds symbol\(s\) \['BBB'\].*symbols remove NAME"):
        FolderSource(folder).history(["AAA", "BBB"])


def test_a_link_out_of_the_folder_is_refused(folder, tmp_path):
    outside = tmp_path / "secret.csv"
    outside.write_text(BARS)
    os.symlink(outside, folder / "EVIL.csv")
    with pytest.warns(UserWarning, match="EVIL.csv: is a link to .*secret.csv, outside the folder"):
        assert "EVIL" not in FolderSource(folder).symbols()
    os.symlink(folder / "AAA.csv", folder / "AAA2.csv")  # a link inside the folder is fine
    with pytest.warns(UserWarning):
        assert "AAA2" in FolderSource(folder).symbols()


def _cli(args, folder, home):
    cfg = folder.parent / "s.yaml"
    cfg.write_text(f"universe: {{source: folder, folder: {{path: {folder}}}}}\nyears: {{start: 2020}}\n")
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "symbols", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_symbols_remove_and_sync_prune_unregister_deleted_symbols(folder, tmp_path):
    home = tmp_path / "home"
    assert _cli(["sync"], folder, home).stdout.startswith("registered 2 new symbol(s); 2 in all: AAA, BBB")
    (folder / "BBB.csv").unlink()
    assert _cli(["sync"], folder, home).stdout.strip() == (
        f"registered 0 new symbol(s); 2 in all; 1 registered symbol(s) not in source folder:{folder}, left out of every "
        "run: BBB (`symbols sync --prune` unregisters them)")
    assert _cli(["sync", "--prune"], folder, home).stdout.startswith("registered 0 new symbol(s); 1 in all; removed 1: BBB")
    assert _cli(["remove", "AAA"], folder, home).stdout.strip() == "removed AAA; 0 symbol(s) left"
    bad = _cli(["remove", "ZZZ"], folder, home)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[1:] == [
        "error: symbols remove: ['ZZZ'] not registered; registered: 0 (see `symbols list`)"]
