"""docs/settings.md's settings table is generated from the settings model (scripts/settings_table.py):
keys, types with bounds, defaults and descriptions come from config/settings.py only, and a
table that no longer matches the model fails here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "settings_table.py"


def _check(doc: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, str(SCRIPT), "--check", "--doc", str(doc)],
                          capture_output=True, text=True, env=env, cwd=REPO, check=False)


def test_the_settings_table_is_the_one_the_model_renders():
    run = _check(REPO / "docs" / "settings.md")
    assert run.returncode == 0, run.stderr


def test_a_hand_edited_default_in_the_table_is_stale(tmp_path):
    # the class of error the generated table removes: the README said multiprocess while the
    # model (and the shipped file) default to in_process
    doc = tmp_path / "settings.md"
    text = (REPO / "docs" / "settings.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `executor.kind` |"))
    assert "| `in_process` |" in row
    doc.write_text(text.replace(row, row.replace("| `in_process` |", "| `multiprocess` |")))
    run = _check(doc)
    assert (run.returncode, run.stderr.strip()) == (
        1, f"{doc}: the settings table is stale; run python scripts/settings_table.py")


def test_every_field_of_the_model_has_a_row_with_its_description():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import settings_table
    finally:
        sys.path.remove(str(REPO / "scripts"))
    from config.settings import Settings

    rows = {key: (kind, default, meaning) for key, kind, default, meaning in settings_table.rows()}
    assert len(rows) > 150
    assert rows["executor.kind"] == ('"in_process" or "multiprocess" or "dask" or "k8s"', "`in_process`",
                                     Settings.model_fields["executor"].annotation.model_fields["kind"].description)
    assert rows["cv.n_splits"][:2] == ("int >= 2, <= 50", "`5`")
    assert rows["years.end"][:2] == ("int >= 1900, <= 2100, or null", "`null`")
    assert rows["grid_search.dask"][0] == "section"
    assert "root" not in rows  # internal: where the file was read from, not a setting
