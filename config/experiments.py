"""Named experiments: what makes one differ, and its frozen settings.

An experiment is a name (settings `experiment`, CLI `--experiment NAME`, default `default`)
under which models (`models/<name>/`), reports (`reports/<name>/<stage>/`) and the tables
that depend on the models (config.settings.EXPERIMENT_TABLES, under
`data/experiments/<name>/`) are kept apart from every other experiment's.

`settings_hash(settings)`: 12 hex digits of the SHA-256 of the settings that reach the models
(MODEL_KEYS: feature packs, labels and horizons, meta.* except the horizons selection, the
LSTM, the CV splits, the halo). Two experiments with the same hash build the same models.

`freeze_experiment(settings)` records `reports/<name>/experiment.json` (the name, the hash
and those settings) on the first run of the experiment, and refuses (ExperimentFrozen, one
line) a run whose hash differs once the experiment has results (a file under its models
folder or the reports of a model-dependent stage). The first writer wins: the manifest is created with
a hard link of a complete temporary file, which fails when another process created it first.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tempfile
from pathlib import Path

from config.settings import EXPERIMENT_TABLES, Settings, SettingsError

MANIFEST = "experiment.json"
EXPERIMENT_TAG = "tradelab/experiment"
HASH_TAG = "tradelab/settings_hash"
# The settings that reach the models. meta.horizons only selects which horizons a command
# trains (train-meta --horizon): it changes no model, so it is left out.
MODEL_KEYS = ("features", "labels", "meta", "lstm", "cv", "halo")


class ExperimentFrozen(SettingsError):
    """A run under an experiment name whose results were built with other settings."""


# Settings added after experiments existed, left out of the hash while at their default so
# that an experiment built before keeps its hash: at the defaults they change no model of a
# store below the caps (cv.max_rows, meta.search_rows: the samples start above them). Any
# other value is in the hash like every model setting.
ADDED_LATER = {"cv": ("max_rows",), "meta": ("search_rows",)}


def model_settings(settings: Settings) -> dict:
    """The settings that reach the models, as JSON-ready values (MODEL_KEYS; ADDED_LATER
    keys only when set to other than their default)."""
    data = settings.model_dump(mode="json", include=set(MODEL_KEYS))
    data["meta"].pop("horizons", None)
    for section, keys in ADDED_LATER.items():
        fields = type(getattr(settings, section)).model_fields
        for key in keys:
            if data[section].get(key) == fields[key].default:
                data[section].pop(key)
    return data


def settings_hash(settings: Settings) -> str:
    text = json.dumps(model_settings(settings), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def experiment_tags(settings: Settings) -> dict[str, str]:
    """The Dagster run tags of every run launched under the settings' experiment."""
    return {EXPERIMENT_TAG: settings.experiment, HASH_TAG: settings_hash(settings)}


def manifest_path(settings: Settings) -> Path:
    return settings.reports_dir / MANIFEST


def read_manifest(folder: Path) -> dict | None:
    """The manifest of the experiment whose reports are `folder` (None when absent or unreadable)."""
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def has_results(settings: Settings) -> bool:
    """Whether the experiment has results of its models: a file under its models folder or
    under the report folder of a model-dependent stage (EXPERIMENT_TABLES, paper_trades).
    Sidecars of the shared stages (raw_bars .. specialists) are no results."""
    folders = [settings.models_dir, *(settings.reports_dir / s for s in (*EXPERIMENT_TABLES, "paper_trades"))]
    return any(f.is_dir() and any(p.is_file() for p in f.rglob("*")) for f in folders)


def _differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    keys = sorted(set(old) | set(new))
    out: list[str] = []
    for k in keys:
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{k}.")
        elif a != b:
            out.append(f"{prefix}{k} {json.dumps(a)} -> {json.dumps(b)}")
    return out


def _write_new(path: Path, payload: dict, replace: bool) -> bool:
    """Write `payload` at `path` atomically; without `replace`, only when `path` does not
    exist yet (False when another process created it first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(payload, indent=2) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


def freeze_experiment(settings: Settings) -> dict:
    """The experiment's manifest, written on its first run; ExperimentFrozen when the
    experiment has results built with settings of another hash."""
    path, digest = manifest_path(settings), settings_hash(settings)
    payload = {"experiment": settings.experiment, "settings_hash": digest,
               "created_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "settings": model_settings(settings)}
    for _ in range(3):
        old = read_manifest(settings.reports_dir)
        if old is None:
            if _write_new(path, payload, replace=path.exists()):  # an unreadable manifest is rewritten
                return payload
            continue  # another process created it first: judge against its manifest
        if old.get("settings_hash") == digest:
            return old
        if has_results(settings):
            changed = "; ".join(_differences(old.get("settings") or {}, payload["settings"])[:3])
            raise ExperimentFrozen(
                f"{path}: experiment {settings.experiment!r} has results built with settings {old.get('settings_hash')}, "
                f"these are {digest} ({changed or 'settings changed'}); use another --experiment name, or move "
                f"{settings.reports_dir} and {settings.models_dir} away to rebuild it")
        _write_new(path, payload, replace=True)  # no results yet: the new settings are the experiment's
        return payload
    raise ExperimentFrozen(f"{path}: could not be read after it was created; expected a JSON experiment manifest")
