"""Plugins are found through `features.plugin_paths`, never PYTHONPATH, in every command:
the code location as the UI loads it (`dagster definitions validate -w workspace.yaml`),
`python -m pipeline.cli build-features` and `dagster asset materialize -m
pipeline.definitions` run as real processes with PYTHONPATH unset, the plugin module a
real file in a folder named relative to the settings file (its chunks computed in a
process pool, its steps in Dagster's multiprocess executor). A second experiment whose
plugin defines the same column differently is refused with exit code 2 and one line
naming both owners, and the shared `features` table keeps the first's values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

from config.partitions import SymbolYear
from resources.column_owners import read_owners
from resources.delta_store import DeltaStore

REPO = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).parent / "dagster")
PLUGIN = ("import numpy as np\nfrom kernels.registry.packs import Formula, Pack\n\n"
          "def my_int(close):\n    return close * {k}\n\n"
          "PACKS = [Pack('{pack}', features=(Formula('my_int', my_int),))]\n")


def experiment(tmp_path: Path, name: str, k: int, **extra) -> Path:
    """Settings `conf/<name>.yaml` whose plugin `lab_<name>` (my_int = close * k) lives in
    `conf/plugins_<name>/`, named relative to the settings file; data shared in tmp_path."""
    conf = tmp_path / "conf"
    (conf / f"plugins_{name}").mkdir(parents=True)
    (conf / f"plugins_{name}" / f"lab_{name}.py").write_text(PLUGIN.format(k=k, pack=f"lab_{name}"))
    data = {"experiment": name, "paths": {p: str(tmp_path / p) for p in ("data", "reports", "models")},
            "years": {"start": 2001, "end": 2002},
            "universe": {"source": "synthetic", "synthetic": {"symbols": ["AAA"], "seed": 3, "end_date": "2002-12-31"}},
            "features": {"packs": ["core"], "plugins": [f"lab_{name}"], "plugin_paths": [f"plugins_{name}"]},
            "build": {"executor": "process", "workers": 2}, **extra}
    path = conf / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _installed_elsewhere() -> bool:
    """Whether the environment's installed project is another checkout than this one (a
    git worktree sharing a virtualenv): its step processes would import that one's code."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", "import domain; print(domain.__file__)"], cwd="/", env=env,
                         capture_output=True, text=True)
    return out.returncode == 0 and not Path(out.stdout.strip()).resolve().is_relative_to(REPO)


def run(tmp_path: Path, cfg: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """`argv` in a real process from the repository, PYTHONPATH unset (or, where the installed
    project is another checkout, this repository alone: never a plugin folder), a cold
    pack-versions cache."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if _installed_elsewhere():
        env["PYTHONPATH"] = str(REPO)
    env.update(PIPELINE_CONFIG=str(cfg), DAGSTER_HOME=str(tmp_path / "home"), TRADELAB_CACHE_DIR=str(tmp_path / "cache"))
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def build_features(tmp_path: Path, cfg: Path, years: str) -> subprocess.CompletedProcess:
    return run(tmp_path, cfg, [sys.executable, "-m", "pipeline.cli", "build-features", "--symbols", "AAA", "--years", years])


def my_int_is_close_times(store: DeltaStore, key: SymbolYear, k: int) -> bool:
    feats, bars = store.read("features", [key]), store.read("raw_bars", [key])
    return feats.height > 200 and np.allclose(feats["my_int"].to_numpy(), bars["close"].to_numpy() * k, rtol=1e-6)


def test_a_plugin_in_plugin_paths_is_found_with_pythonpath_unset_by_the_cli_and_dagster_asset_materialize(tmp_path):
    cfg = experiment(tmp_path, "a", k=2, executor={"kind": "multiprocess", "max_concurrent": 2})
    # the code location as the UI loads it (workspace.yaml): the code versions hold the plugin's entry
    out = run(tmp_path, cfg, [DAGSTER, "definitions", "validate", "-w", str(REPO / "workspace.yaml")])
    assert out.returncode == 0 and "Validation successful for code location tradelab" in out.stdout + out.stderr, out.stderr[-3000:]
    cached = [json.loads(p.read_text()) for p in (tmp_path / "cache").rglob("*.json")]
    assert cached and all(v["plugins"]["lab_a"]["entries"] == {"lab_a/my_int": "1"} for v in cached)

    out = build_features(tmp_path, cfg, "2001")
    assert out.returncode == 0, out.stderr[-3000:]
    store = DeltaStore(tmp_path / "data")
    assert my_int_is_close_times(store, SymbolYear("AAA", 2001), 2)

    out = run(tmp_path, cfg, [DAGSTER, "asset", "materialize", "-m", "pipeline.definitions", "--select",
                              "raw_bars,features", "--partition", "AAA|2002"])
    assert out.returncode == 0, out.stderr[-3000:]
    assert my_int_is_close_times(store, SymbolYear("AAA", 2002), 2)
    assert read_owners(store.asset_dir("features"))["my_int"]["owner"] == "lab_a:lab_a/my_int"
    assert read_owners(store.asset_dir("specialists"))["spec_rsi_score"] == {
        "owner": "kernels.registry.packs:core/rsi", "source_sha256": None}  # the specialists table's owners too


def test_a_second_experiment_defining_my_int_differently_exits_2_naming_both_and_writes_nothing(tmp_path):
    first, second = experiment(tmp_path, "a", k=2), experiment(tmp_path, "b", k=3)
    assert build_features(tmp_path, first, "2001").returncode == 0
    store = DeltaStore(tmp_path / "data")
    version = store.version("features")

    out = build_features(tmp_path, second, "2001")
    lines = [x for x in out.stderr.strip().splitlines() if not x.startswith(("tradelab: device ", "build-features: "))]
    assert out.returncode == 2, out.stderr[-3000:]
    assert lines[0].startswith("error: features: column 'my_int' of lab_b:lab_b/my_int (source sha256 "), lines
    assert "is refused: it is already made by lab_a:lab_a/my_int (source sha256 " in lines[0]
    assert "rename the new definition's column (e.g. my_int_v2)" in lines[0]
    assert store.version("features") == version and my_int_is_close_times(store, SymbolYear("AAA", 2001), 2)
