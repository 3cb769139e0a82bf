"""The Dagster code versions of the `features` and `specialists` assets, from the settings'
feature packs, without importing the kernels into the code location.

A code version is a hash of the selected packs' entries (names, versions, columns:
kernels.registry.packs.Selection.features_version / specialists_version), so changing
`features.packs` or `features.plugins` (or an entry's `version`) marks the stored
partitions stale and "materialize stale" rebuilds them. Loading the code location must not
import the kernels (tests/test_architecture.py), so the selection is resolved in a child
process (`python -m domain.feature_packs`) and the result cached in a small JSON file,
keyed by the settings' packs and plugins and the size and mtime of every file that declares
them (kernels/registry, kernels/alpha158, each plugin's package): a warm load is a few
stats and one read. An unusable selection is the child's one line, raised here as a
SettingsError (exit code 2 from the CLI); errors are never cached.

`code_versions` adds the identity of every plugin entry (module, source hash, entry names
and versions), which config.experiments puts in an experiment's settings hash.

Leaf module like config.settings: imports nothing from the project.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from config.settings import PROJECT_ROOT, FeatureSettings, SettingsError

CACHE_ENV = "TRADELAB_CACHE_DIR"


def _cache_dir() -> Path:
    base = os.environ.get(CACHE_ENV) or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tradelab" / "pack_versions"


def _module_files(name: str, paths: tuple[str, ...] = ()) -> list[Path]:
    """The source files of the top-level package of module `name` as found in the plugin
    folders `paths`, else on sys.path (without importing it); empty when not found (the
    child then names the error)."""
    top = name.split(".")[0]
    for entry in (*paths, *sys.path):
        base = Path(entry or ".")
        if (base / top).is_dir():
            return sorted((base / top).rglob("*.py"))
        if (base / f"{top}.py").is_file():
            return [base / f"{top}.py"]
    return []


def _declaring_files(features: FeatureSettings, paths: tuple[str, ...] = ()) -> list[Path]:
    files = sorted((PROJECT_ROOT / "kernels" / "registry").glob("*.py"))
    if (PROJECT_ROOT / "kernels" / "alpha158").is_dir():
        files += sorted((PROJECT_ROOT / "kernels" / "alpha158").rglob("*.py"))
    for name in features.plugins:
        files += _module_files(name, paths)
    return files


def _key(features: FeatureSettings, atc: tuple = (), paths: tuple[str, ...] = ()) -> str:
    stats = []
    for path in _declaring_files(features, paths):
        try:
            st = path.stat()
        except OSError:
            continue
        stats.append((str(path), st.st_size, st.st_mtime_ns))
    doc = {"format": 2, "packs": list(features.packs), "plugins": list(features.plugins), "atc": [list(p) for p in atc],
           "paths": list(paths), "files": stats, "python": sys.version}
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()[:32]


def _resolve(features: FeatureSettings, atc: tuple = (), paths: tuple[str, ...] = ()) -> dict:
    """{features, specialists, plugins}: the versions, computed in a child process (which
    puts the plugin folders `paths` first on its sys.path, as every selecting process does)."""
    path = os.pathsep.join([str(PROJECT_ROOT), *[p for p in sys.path if p]])
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run([sys.executable, "-m", "domain.feature_packs", json.dumps(list(features.packs)),
                          json.dumps(list(features.plugins)), json.dumps([list(p) for p in atc]),
                          json.dumps(list(paths))],
                         cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)
    if out.returncode == 2:
        raise SettingsError(out.stderr.strip().splitlines()[-1])
    if out.returncode != 0:
        raise RuntimeError(f"resolving the feature packs failed (exit {out.returncode}): {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # the last line: a plugin may print while importing


def pack_code_versions(features: FeatureSettings, atc: tuple = (), paths: tuple[str, ...] = ()) -> dict[str, str]:
    """{"features": code version, "specialists": code version} of the settings' packs, the
    `atc` specialist with the parameters `atc` ((name, value) pairs: settings
    `atc.specialist_params()`), so a change of them marks the specialists stale; `paths`:
    the absolute plugin folders (settings `plugin_folders()`)."""
    versions = code_versions(features, atc, paths)
    return {"features": versions["features"], "specialists": versions["specialists"]}


def code_versions(features: FeatureSettings, atc: tuple = (), paths: tuple[str, ...] = ()) -> dict:
    """pack_code_versions and `plugins`: {plugin module: {"source": a hash of its source
    file, "entries": {"<pack>/<entry>": version}}} (domain.feature_packs.plugin_entries;
    {} without plugins), resolved and cached as pack_code_versions."""
    key = _key(features, atc, paths)
    cache = _cache_dir() / f"{key}.json"
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    versions = _resolve(features, atc, paths)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".versions-", suffix=".tmp", dir=cache.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(versions, fh)
            os.replace(tmp, cache)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except OSError:
        pass  # no writable cache: resolved again on the next load
    return versions
