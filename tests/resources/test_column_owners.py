"""A column has one owner (resources.column_owners, domain.feature_packs.claim_owners): two
plugins whose formulas share one column name cannot both write it into the shared
`features` table. The plugin modules are real files in tmp_path, found through
`features.plugin_paths`; the table is a real Delta table; concurrent claimers are real
processes."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest

from config.partitions import SymbolYear
from config.settings import parse_settings
from domain.feature_packs import claim_owners, column_owners, feature_selection
from kernels.registry.packs import select
from resources.column_owners import OWNERS_FILE, ColumnOwnerError, claim_columns, read_owners
from resources.delta_store import DeltaStore
from tests.resources.test_delta_store import REPO, worker_env

HEAD = "import numpy as np\nfrom kernels.registry.packs import Formula, Pack\n\n"
TWICE = HEAD + "def my_int(close):\n    return close * 2\n\nPACKS = [Pack('lab', features=(Formula('my_int', my_int),))]\n"
THRICE = HEAD + "def my_int(close):\n    return close * 3\n\nPACKS = [Pack('lab', features=(Formula('my_int', my_int),))]\n"
KEY = SymbolYear("AAA", 2012)


@pytest.fixture(autouse=True)
def clean_imports():
    """Each test imports its plugin modules afresh (select caches by name, Python by module)."""
    before, path = set(sys.modules), list(sys.path)
    select.cache_clear()
    yield
    for name in set(sys.modules) - before:
        if name.startswith("lab"):
            del sys.modules[name]
    sys.path[:] = path
    select.cache_clear()


def plugin(folder: Path, module: str, source: str) -> Path:
    """A plugin module file `module`.py in `folder` (created); returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(source)
    return folder


def selection(root: Path, module: str, folder: str, packs: tuple = ("core",)):
    settings = parse_settings({"features": {"packs": list(packs), "plugins": [module], "plugin_paths": [folder]}},
                              "s.yaml", root=root)
    return feature_selection(settings)


def write_my_int(store: DeltaStore, values: list[float]) -> None:
    dates = [dt.datetime(2012, 1, d) for d in range(2, 2 + len(values))]
    store.write("features", KEY, pl.DataFrame({"date": dates, "symbol": ["AAA"] * len(values), "my_int": values},
                                              schema_overrides={"my_int": pl.Float32}))


def test_two_plugin_modules_defining_my_int_differently_the_second_is_refused_naming_both(tmp_path):
    plugin(tmp_path / "a", "lab_a", TWICE)
    plugin(tmp_path / "b", "lab_b", THRICE)
    store = DeltaStore(tmp_path / "data")
    first = selection(tmp_path, "lab_a", "a", packs=("lab",))
    assert claim_owners(store, "features", first) == ["my_int"]
    write_my_int(store, [2.0, 4.0])

    second = selection(tmp_path, "lab_b", "b", packs=("lab",))
    with pytest.raises(ColumnOwnerError) as err:
        claim_owners(store, "features", second)
    line = str(err.value)
    assert "\n" not in line and line.startswith("features: column 'my_int' of lab_b:lab/my_int (source sha256 ")
    assert "it is already made by lab_a:lab/my_int (source sha256 " in line
    assert "rename the new definition's column (e.g. my_int_v2)" in line
    assert read_owners(store.asset_dir("features"))["my_int"]["owner"] == "lab_a:lab/my_int"  # nothing recorded
    assert store.read("features")["my_int"].to_list() == [2.0, 4.0]


def test_the_same_module_edited_in_another_folder_is_refused_as_a_changed_definition(tmp_path):
    plugin(tmp_path / "exp1", "lab_same", TWICE)
    plugin(tmp_path / "exp2", "lab_same", THRICE)
    store = DeltaStore(tmp_path / "data")
    claim_owners(store, "features", selection(tmp_path, "lab_same", "exp1", packs=("lab",)))
    write_my_int(store, [2.0])
    del sys.modules["lab_same"]
    select.cache_clear()
    sys.path.remove(str(tmp_path / "exp1"))

    edited = selection(tmp_path, "lab_same", "exp2", packs=("lab",))
    with pytest.raises(ColumnOwnerError, match=r"column 'my_int' of lab_same:lab/my_int \(source sha256 \w+\) is "
                                               r"refused: its definition changed \(source sha256 \w+ recorded, \w+ now\)"):
        claim_owners(store, "features", edited)


def test_the_same_definition_claims_again_and_an_unrelated_edit_of_its_module_changes_nothing(tmp_path):
    folder = plugin(tmp_path / "p", "lab_grow", TWICE)
    store = DeltaStore(tmp_path / "data")
    claim_owners(store, "features", selection(tmp_path, "lab_grow", "p", packs=("lab",)))
    assert claim_owners(store, "features", selection(tmp_path, "lab_grow", "p", packs=("lab",))) == []

    grown = TWICE.replace("PACKS = [Pack('lab', features=(Formula('my_int', my_int),))]",
                          "def my_half(close):\n    return close / 2\n\n"
                          "PACKS = [Pack('lab', features=(Formula('my_int', my_int), Formula('my_half', my_half)))]")
    plugin(folder, "lab_grow", grown)
    del sys.modules["lab_grow"]
    select.cache_clear()
    assert claim_owners(store, "features", selection(tmp_path, "lab_grow", "p", packs=("lab",))) == ["my_half"]


def test_a_helper_the_formula_calls_is_part_of_its_definition(tmp_path):
    source = HEAD + ("def scale():\n    return {k}\n\ndef my_int(close):\n    return close * scale()\n\n"
                     "PACKS = [Pack('lab', features=(Formula('my_int', my_int),))]\n")
    plugin(tmp_path / "p", "lab_helper", source.format(k=2))
    before = column_owners(selection(tmp_path, "lab_helper", "p", packs=("lab",)))["my_int"]
    plugin(tmp_path / "p", "lab_helper", source.format(k=3))
    del sys.modules["lab_helper"]
    select.cache_clear()
    after = column_owners(selection(tmp_path, "lab_helper", "p", packs=("lab",)))["my_int"]
    assert before["owner"] == after["owner"] and before["source_sha256"] != after["source_sha256"]


def test_a_plugin_column_that_core_makes_in_another_experiment_is_refused(tmp_path):
    plugin(tmp_path / "p", "lab_ret", HEAD + "PACKS = [Pack('lab', features=(Formula('f_ret1', lambda c: c),))]\n")
    store = DeltaStore(tmp_path / "data")
    claim_owners(store, "features", feature_selection(None))
    with pytest.raises(ColumnOwnerError, match=r"it is already made by kernels\.registry\.packs:core/f_ret1 "
                                               r"\(source sha256 none \(built-in pack\)\)"):
        claim_owners(store, "features", selection(tmp_path, "lab_ret", "p", packs=("lab",)))


@pytest.mark.parametrize("column", ["my col; DROP", "1x", "date", "", "my-x"])
def test_a_bad_column_name_is_refused_by_the_store_and_nothing_is_recorded(tmp_path, column):
    store = DeltaStore(tmp_path / "data")
    with pytest.raises(ColumnOwnerError, match="is not a column name; expected letters, digits and _"):
        store.claim_columns("features", {column: {"owner": "lab:p/e", "source_sha256": "ab" * 32}})
    assert read_owners(store.asset_dir("features")) == {}


def test_columns_are_claimed_in_the_shared_tables_only(tmp_path):
    with pytest.raises(ValueError, match="columns are claimed in the shared tables only"):
        DeltaStore(tmp_path / "data").claim_columns("labels", {"x": {"owner": "a", "source_sha256": None}})


def test_vacuum_leaves_the_owners_record(tmp_path):
    store = DeltaStore(tmp_path / "data")
    store.claim_columns("features", {"my_int": {"owner": "lab:p/my_int", "source_sha256": "ab" * 32}})
    write_my_int(store, [1.0])
    write_my_int(store, [2.0])
    store.vacuum("features", retention_hours=0, enforce_retention_duration=False)
    assert read_owners(store.asset_dir("features")) == {"my_int": {"owner": "lab:p/my_int", "source_sha256": "ab" * 32}}


CLAIMER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from resources.column_owners import ColumnOwnerError, claim_columns
    table, sha, go = sys.argv[1], sys.argv[2], float(sys.argv[3])
    time.sleep(max(0.0, go - time.time()))
    try:
        claim_columns(Path(table), {"my_int": {"owner": "lab:p/my_int", "source_sha256": sha}})
        print("won")
    except ColumnOwnerError:
        print("refused")
""")


def test_processes_claiming_one_column_with_different_definitions_at_once_get_one_winner(tmp_path):
    table = tmp_path / "data" / "features"
    go = time.time() + 3.0  # every process is started (imports done) before it claims
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER, str(table), f"{i:064x}", str(go)], cwd=REPO,
                              env=worker_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(6)]
    results = [p.communicate(timeout=120) for p in procs]
    outcomes = [out.strip() for out, _ in results]
    assert sorted(outcomes) == ["refused"] * 5 + ["won"], results
    winner = f"{outcomes.index('won'):064x}"
    assert json.loads((table / OWNERS_FILE).read_text())["columns"]["my_int"]["source_sha256"] == winner
    assert claim_columns(table, {"my_int": {"owner": "lab:p/my_int", "source_sha256": winner}}) == []


def test_every_entry_type_of_a_plugin_has_an_owner_and_a_definition_hash_per_column(tmp_path):
    source = ("from kernels.registry.packs import Batch, Feature, Formula, Pack, Specialist\n"
              "def both(arrays, offsets, dtype):\n    return {'my_b1': arrays['close'], 'my_b2': arrays['close']}\n"
              "PACKS = [Pack('lab', features=(Feature('my_f', lambda k: k.column('close'), warmup_rows=0),\n"
              "                               Formula('my_x', lambda c: c),\n"
              "                               Batch('my_batch', ('my_b1', 'my_b2'), both, ('close',))),\n"
              "              specialists=(Specialist('my_s', lambda p: p.col('close'), ('close',), 0),))]\n")
    plugin(tmp_path / "p", "lab_types", source)
    owners = column_owners(selection(tmp_path, "lab_types", "p", packs=("lab",)))
    assert {c: o["owner"] for c, o in owners.items()} == {
        "my_f": "lab_types:lab/my_f", "my_x": "lab_types:lab/my_x", "my_b1": "lab_types:lab/my_batch",
        "my_b2": "lab_types:lab/my_batch", "spec_my_s_score": "lab_types:lab/my_s"}
    hashes = {c: o["source_sha256"] for c, o in owners.items()}
    assert all(len(h) == 64 for h in hashes.values()) and hashes["my_b1"] == hashes["my_b2"]
    assert len({hashes[c] for c in ("my_f", "my_x", "my_b1", "spec_my_s_score")}) == 4


def test_the_record_is_readable_as_the_tables_files_are_mode_0666_less_the_umask(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        store = DeltaStore(tmp_path / "data")
        store.claim_columns("features", {"my_int": {"owner": "lab:p/my_int", "source_sha256": "ab" * 32}})
    finally:
        os.umask(old)
    assert stat.S_IMODE((store.asset_dir("features") / OWNERS_FILE).stat().st_mode) == 0o644
    assert [p.name for p in store.asset_dir("features").iterdir() if p.suffix == ".tmp"] == []
