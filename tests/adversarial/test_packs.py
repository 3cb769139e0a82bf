"""Feature packs and plugins a careless user gives: each row is the `features`
settings, the plugin module(s) they name, and the exact line the settings must produce
(SettingsError; exit code 2 from the CLI). Nothing is stored before the line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from config.settings import SettingsError, parse_settings
from domain.feature_packs import feature_selection

HEAD = "import numpy as np\nfrom kernels.registry.packs import Batch, Formula, Pack, Specialist\n"
ID = "lambda c: c"
EXPECT_PACKS = "expected PACKS = [Pack(name, features=(...), specialists=(...))] (kernels.registry.packs)"

PACKS_REFUSED = [
    ("unknown_pack", {"packs": ["core", "alpha_159"]}, {},
     "features.packs: unknown pack 'alpha_159'; expected one of ['alpha158', 'core']"),
    ("plugin_module_that_does_not_exist", {"plugins": ["no_such_research.features"]}, {},
     "features.plugins: module 'no_such_research.features' cannot be imported (ModuleNotFoundError: No module named "
     "'no_such_research'); expected an importable module on sys.path (name its folder in features.plugin_paths) that defines PACKS"),
    ("plugin_module_that_fails_while_importing", {"plugins": ["adv_raises"]}, {"adv_raises": "raise RuntimeError('half written')\n"},
     "features.plugins: module 'adv_raises' cannot be imported (RuntimeError: half written); expected an importable "
     "module on sys.path (name its folder in features.plugin_paths) that defines PACKS"),
    ("plugin_module_without_packs", {"plugins": ["adv_no_packs"]}, {"adv_no_packs": "FEATURES = []\n"},
     f"features.plugins: module 'adv_no_packs' defines no PACKS; {EXPECT_PACKS}"),
    ("plugin_packs_that_are_not_packs", {"plugins": ["adv_not_packs"]}, {"adv_not_packs": "PACKS = ['my_pack']\n"},
     f"features.plugins: module 'adv_not_packs' defines no PACKS; {EXPECT_PACKS}"),
    ("feature_entry_without_a_name", {"plugins": ["adv_no_name"]},
     {"adv_no_name": HEAD + f"PACKS = [Pack('p', features=(Formula('', {ID}),))]\n"},
     "features.plugins: module 'adv_no_name', pack 'p', entry 0: no name; expected a non-empty name"),
    ("feature_entry_without_a_formula", {"plugins": ["adv_no_formula"]},
     {"adv_no_formula": HEAD + "PACKS = [Pack('p', features=(Formula('my_x', None),))]\n"},
     "features.plugins: module 'adv_no_formula', pack 'p', entry 'my_x': no formula; expected a callable fn"),
    ("specialist_without_a_function", {"plugins": ["adv_no_fn"]},
     {"adv_no_fn": HEAD + "PACKS = [Pack('p', specialists=(Specialist('mom', None, ('close',), 10),))]\n"},
     "features.plugins: module 'adv_no_fn', pack 'p', entry 'mom': no formula; expected a callable fn"),
    ("feature_entry_that_is_a_plain_string", {"plugins": ["adv_str_entry"]},
     {"adv_str_entry": HEAD + "PACKS = [Pack('p', features=('f_x',))]\n"},
     "features.plugins: module 'adv_str_entry', pack 'p', entry 0: a str; expected one of ['Feature', 'Formula', "
     "'Batch'] (kernels.registry.packs)"),
    ("batch_without_columns", {"plugins": ["adv_batch_empty"]},
     {"adv_batch_empty": HEAD + "PACKS = [Pack('p', features=(Batch('b', (), lambda a, o, d: {}, ('close',)),))]\n"},
     "features.plugins: module 'adv_batch_empty', pack 'p', entry 'b': no columns; expected a tuple of column names"),
    ("feature_column_that_core_already_makes", {"plugins": ["adv_clash"]},
     {"adv_clash": HEAD + f"PACKS = [Pack('p', features=(Formula('f_ret1', {ID}),))]\n"},
     "features.plugins: module 'adv_clash', pack 'p': column 'f_ret1' is already made by pack 'core'; expected a new "
     "column name"),
    ("specialist_that_core_already_has", {"plugins": ["adv_spec_clash"]},
     {"adv_spec_clash": HEAD + "PACKS = [Pack('p', specialists=(Specialist('rsi', lambda p: p, ('close',), 14),))]\n"},
     "features.plugins: module 'adv_spec_clash', pack 'p': column 'spec_rsi_score' is already made by pack 'core'; "
     "expected a new column name"),
    ("feature_named_like_a_key_column", {"plugins": ["adv_date"]},
     {"adv_date": HEAD + f"PACKS = [Pack('p', features=(Formula('date', {ID}),))]\n"},
     "features.plugins: module 'adv_date', pack 'p': column 'date' is already made by the table's key columns; "
     "expected a new column name"),
    ("two_plugins_making_one_column", {"plugins": ["adv_one", "adv_two"]},
     {"adv_one": HEAD + f"PACKS = [Pack('one', features=(Formula('my_x', {ID}),))]\n",
      "adv_two": HEAD + f"PACKS = [Pack('two', features=(Formula('my_x', {ID}),))]\n"},
     "features.plugins: module 'adv_two', pack 'two': column 'my_x' is already made by pack 'one'; expected a new "
     "column name"),
    ("feature_column_named_like_sql", {"plugins": ["adv_sql"]},
     {"adv_sql": HEAD + f"PACKS = [Pack('p', features=(Formula('my col; DROP', {ID}),))]\n"},
     "features.plugins: module 'adv_sql', pack 'p', entry 'my col; DROP': column 'my col; DROP' is not a column name; "
     "expected letters, digits and _, starting with a letter"),
    ("batch_column_starting_with_a_digit", {"plugins": ["adv_digit"]},
     {"adv_digit": HEAD + "PACKS = [Pack('p', features=(Batch('b', ('my_ok', '1x'), lambda a, o, d: {}, ('close',)),))]\n"},
     "features.plugins: module 'adv_digit', pack 'p', entry 'b': column '1x' is not a column name; expected letters, "
     "digits and _, starting with a letter"),
    ("specialist_named_with_a_dash", {"plugins": ["adv_dash"]},
     {"adv_dash": HEAD + "PACKS = [Pack('p', specialists=(Specialist('mom-10', lambda p: p, ('close',), 10),))]\n"},
     "features.plugins: module 'adv_dash', pack 'p', entry 'mom-10': specialist name 'mom-10' is not a column name; "
     "expected letters, digits and _, starting with a letter"),
    ("plugin_paths_folder_that_does_not_exist", {"plugins": ["adv_x"], "plugin_paths": ["no_such_folder"]}, {},
     "(top level): Value error, features.plugin_paths: {root}/no_such_folder is not a folder; expected a folder "
     "holding the plugin modules (relative paths start at the settings file's folder)"),
    ("plugin_not_in_its_plugin_paths_folder", {"plugins": ["adv_elsewhere"], "plugin_paths": ["."]}, {},
     "features.plugins: module 'adv_elsewhere' cannot be imported (ModuleNotFoundError: No module named "
     "'adv_elsewhere'); expected an importable module in features.plugin_paths ['{root}'] or on sys.path that "
     "defines PACKS"),
    ("plugin_pack_named_with_a_space", {"plugins": ["adv_pack_space"]},
     {"adv_pack_space": HEAD + f"PACKS = [Pack('my pack', features=(Formula('my_x', {ID}),))]\n"},
     "features.plugins: module 'adv_pack_space', pack 'my pack': 'my pack' is not a pack name; expected letters, "
     "digits and _, starting with a letter or _ (as features.packs and meta.inputs name it)"),
    ("plugin_pack_named_core", {"plugins": ["adv_core"]},
     {"adv_core": HEAD + f"PACKS = [Pack('core', features=(Formula('my_x', {ID}),))]\n"},
     "features.plugins: module 'adv_core', pack 'core': the pack name is already used by 'kernels.registry.packs'; "
     "expected a new pack name"),
    ("module_name_with_a_space", {"plugins": ["my research"]}, {},
     "features.plugins: Value error, 'my research' is not a pack or module name (letters, digits, _ and dots) "
     "(got ['my research'])"),
    ("pack_listed_twice", {"packs": ["core", "core"]}, {},
     "features.packs: Value error, a name is listed twice: ['core'] (got ['core', 'core'])"),
    ("no_pack_at_all", {"packs": []}, {},
     "features.packs: List should have at least 1 item after validation, not 0 (got [])"),
]


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A folder on sys.path for the rows' modules (removed from sys.modules afterwards)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("adv_"):
            del sys.modules[name]


@pytest.mark.parametrize("features, modules, line", [r[1:] for r in PACKS_REFUSED], ids=[r[0] for r in PACKS_REFUSED])
def test_unusable_packs_and_plugins_are_one_line_naming_the_setting(plugin_dir, features, modules, line):
    for name, source in modules.items():
        (plugin_dir / f"{name}.py").write_text(source)
    with pytest.raises(SettingsError) as err:
        feature_selection(parse_settings({"features": features}, "f.yaml", root=plugin_dir))
    assert str(err.value).splitlines()[-1].strip() == line.format(root=plugin_dir)


def test_the_cli_exits_2_with_the_line_before_anything_is_stored(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    cfg = tmp_path / "settings.yaml"
    cfg.write_text(f"paths: {{data: {tmp_path / 'data'}, reports: {tmp_path / 'reports'}, models: {tmp_path / 'models'}}}\n"
                   "features: {plugins: [no_such_research.features]}\n")
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "home"), "PYTHONPATH": str(repo)}
    (tmp_path / "home").mkdir()
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "build-features", "--symbols", "AAA", "--years", "2020"],
                         env=env, cwd=repo, capture_output=True, text=True)
    lines = [x for x in out.stderr.strip().splitlines() if not x.startswith("tradelab: device ")]
    assert (out.returncode, lines) == (2, [
        "error: features.plugins: module 'no_such_research.features' cannot be imported (ModuleNotFoundError: No module "
        "named 'no_such_research'); expected an importable module on sys.path (name its folder in features.plugin_paths) that defines PACKS"])
    assert not (tmp_path / "data").exists()


# (id, the plugin module's source after HEAD, the exact line the features/specialists stage raises)
PLUGINS_FAILING = [
    ("formula_that_raises", 'PACKS = [Pack("p", features=(Formula("x", lambda c: 1 / 0),))]\n',
     "features plugin adv_run.x (column x): raised ZeroDivisionError: division by zero; expected a formula that "
     "runs on the bars and returns one value per row"),
    ("formula_that_raises_a_two_line_message",
     'def f(c):\n    raise ValueError("first\\n  second")\nPACKS = [Pack("p", features=(Formula("x", f),))]\n',
     "features plugin adv_run.x (column x): raised ValueError: first second; expected a formula that runs on the "
     "bars and returns one value per row"),
    ("formula_that_returns_a_short_array", 'PACKS = [Pack("p", features=(Formula("x", lambda c: c[:-1]),))]\n',
     "features plugin adv_run.x (column x): returned 5 values for a symbol of 6 rows; expected one value per row "
     "of the symbol"),
    ("formula_that_returns_none", 'PACKS = [Pack("p", features=(Formula("x", lambda c: None),))]\n',
     "features plugin adv_run.x (column x): returned None for a symbol of 6 rows; expected one value per row "
     "of the symbol"),
    ("formula_that_returns_a_scalar", 'PACKS = [Pack("p", features=(Formula("x", lambda c: 1.0),))]\n',
     "features plugin adv_run.x (column x): returned a single float for a symbol of 6 rows; expected one value "
     "per row of the symbol"),
    ("formula_that_returns_a_2d_array", 'PACKS = [Pack("p", features=(Formula("x", lambda c: np.c_[c, c]),))]\n',
     "features plugin adv_run.x (column x): returned an array of shape (6, 2) for a symbol of 6 rows; expected one "
     "value per row of the symbol"),
    ("batch_that_returns_a_column_too_long",
     'PACKS = [Pack("p", features=(Batch("b", ("u", "v"), lambda a, o, d: {"u": a["close"], '
     '"v": np.r_[a["close"], 1.0]}, ("close",)),))]\n',
     "features plugin adv_run.b (column v): returned 13 values for 12 rows; expected one value per row (an array "
     "of length 12)"),
    ("batch_without_a_declared_column",
     'PACKS = [Pack("p", features=(Batch("b", ("u", "v"), lambda a, o, d: {"u": a["close"]}, ("close",)),))]\n',
     "features plugin adv_run.b (column u, v): returned no column 'v' (1 of 2 columns missing); expected every "
     "column the entry declares"),
    ("batch_that_returns_a_list", 'PACKS = [Pack("p", features=(Batch("b", ("u",), lambda a, o, d: [1], ("close",)),))]\n',
     "features plugin adv_run.b (column u): returned 1 value; expected a dict {column: array of one value per row}"),
    ("specialist_that_raises", 'def s(p):\n    raise KeyError("volume")\nPACKS = [Pack("p", specialists=(Specialist("s", s, ("close",), 0),))]\n',
     "features plugin adv_run.s (column spec_s_score): raised KeyError: 'volume'; expected a score function that "
     "runs on the symbol's panel and returns one value per row"),
    ("specialist_that_returns_a_short_array",
     'PACKS = [Pack("p", specialists=(Specialist("s", lambda p: p.col("close")[1:], ("close",), 0),))]\n',
     "features plugin adv_run.s (column spec_s_score): returned 5 values for a symbol of 6 rows; expected one value "
     "per row (an array of length 6)"),
]


def _two_symbols() -> tuple[dict[str, np.ndarray], np.ndarray]:
    close = np.arange(1.0, 13.0, dtype=np.float32)
    arrays = {"open": close, "high": close + 1, "low": close - 1, "close": close, "volume": close * 100}
    return arrays, np.array([0, 6, 12], dtype=np.int64)


@pytest.mark.parametrize("source, line", [r[1:] for r in PLUGINS_FAILING], ids=[r[0] for r in PLUGINS_FAILING])
def test_a_plugin_entry_that_fails_while_computing_is_one_line_naming_module_entry_and_column(plugin_dir, source, line):
    """Whatever the plugin's formula does (raise, return a short array, None, a scalar, 2-D),
    the stage raises a SettingsError (exit 2 from the CLI) of one line naming the module,
    the entry and the column, what happened and what was expected: no NumPy broadcast message."""
    from domain.features import features_by_symbol
    from domain.specialists import specialists_by_symbol

    from kernels.registry.packs import select

    select.cache_clear()  # each row's module is a new adv_run
    (plugin_dir / "adv_run.py").write_text(HEAD + source)
    arrays, offsets = _two_symbols()
    with pytest.raises(SettingsError) as err:
        if "specialists=" in source:
            specialists_by_symbol(arrays, offsets, packs=((), ("adv_run",)))
        else:
            features_by_symbol(arrays, offsets, backend="cpu", dtype=np.float32, packs=((), ("adv_run",)))
    assert str(err.value) == line


def test_a_plugin_that_raises_exits_2_from_build_features_with_its_line(tmp_path):
    """The same failure as the user meets it, a real `build-features` process: exit 2 and one
    `error:` line naming the module, entry and column; nothing else on stderr."""
    from tests.adversarial.test_cli_errors import settings, user_lines

    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "adv_cli_raises.py").write_text(
        HEAD + 'PACKS = [Pack("p", features=(Formula("boom", lambda c: c[:3]),))]\n')
    settings(tmp_path, features={"plugins": ["adv_cli_raises"]})
    env = {**os.environ, "PIPELINE_CONFIG": str(tmp_path / "conf" / "settings.yaml"), "DAGSTER_HOME": str(tmp_path / "home"),
           "PYTHONPATH": os.pathsep.join([str(repo), str(tmp_path / "plug")])}
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "build-features"], env=env, cwd=repo,
                         capture_output=True, text=True, timeout=300)
    assert (out.returncode, user_lines(out.stderr)[:1]) == (2, [
        "error: features plugin adv_cli_raises.boom (column boom): returned 3 values for a symbol of 248 rows; "
        "expected one value per row of the symbol"]), out.stderr[-3000:]
    assert not any("Traceback" in x or "broadcast" in x for x in user_lines(out.stderr)), out.stderr[-3000:]


def test_a_built_in_entrys_failure_stays_the_projects_own_error_not_the_users():
    """Only a plugin's failure is the user's (exit 2); a `core` entry that fails is a bug of
    the project: its own exception goes on, unchanged."""
    from domain.feature_packs import entry_failure
    from kernels.registry.features import EntryError
    from kernels.registry.packs import select

    cause = ZeroDivisionError("a core formula's bug")
    err = EntryError("f_ret1", "f_ret1", "raised ZeroDivisionError: a core formula's bug", "one value per row")
    err.__cause__ = cause
    assert entry_failure(select(), err) is cause
