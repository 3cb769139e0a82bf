"""Named experiments: what makes one differ, and its frozen settings.

An experiment is a name (settings `experiment`, CLI `--experiment NAME`, default `default`)
under which models (`models/<name>/`), reports (`reports/<name>/<stage>/`) and the tables
that depend on the models (config.settings.EXPERIMENT_TABLES, under
`data/experiments/<name>/`) are kept apart from every other experiment's.

`settings_hash(settings)`: 12 hex digits of the SHA-256 of every setting that changes a stored
figure (`figure_settings`): the settings that reach the models (MODEL_KEYS: feature packs,
labels and horizons, meta.* except the horizons selection, the LSTM, the CV splits, the
halo), the backtest's and the evaluation's (FIGURE_KEYS; not backtest.chunk_days nor
evaluation.year_figures, which change no figure), and with `features.plugins` the identity
of every plugin entry (`plugins`: module, a hash of its source file, each entry's name and
declared `version`; config.pack_versions.code_versions, resolved in a child process and
cached). Two experiments with the same hash build the same models and figures.

`freeze_experiment(settings)` records `reports/<name>/experiment.json` (the name, the hash,
those settings and `code_versions`: the feature packs' code versions and the plugin
entries, which `compare` shows) on the first run of the experiment, and refuses (ExperimentFrozen, one
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
# The settings that change a stored figure without reaching the models.
FIGURE_KEYS = MODEL_KEYS + ("backtest", "evaluation")
# Keys of FIGURE_KEYS sections that change no stored figure: left out of the hash.
# features.plugin_paths only says where the plugins are found: their entries' identity is `plugins`.
NO_FIGURE = {"features": ("plugin_paths",), "meta": ("horizons", "min_coverage"), "backtest": ("chunk_days", "sweep"),
             "evaluation": ("year_figures",)}
ALL = "*"  # ADDED_LATER: every key of the section


class ExperimentFrozen(SettingsError):
    """A run under an experiment name whose results were built with other settings."""


# Settings (or whole sections, ALL) that entered the hash after experiments existed: left out
# while at their default, so that an experiment built before keeps its hash (its figures were
# made with the defaults: the sections were not in the hash because they were not looked at,
# not because they changed nothing). At the defaults cv.max_rows and meta.search_rows change no
# model of a store below the caps (the samples start above them). Any other value is in the
# hash like every other setting; a section left empty is left out whole.
ADDED_LATER = {"cv": ("max_rows",), "meta": ("search_rows", "lightgbm", "hist_gbm", "calibration_copies"),
               "backtest": ALL, "evaluation": ALL}
# The same within a sub-section: a field added to it later is left out at its default, so an
# experiment that set the sub-section before keeps its hash.
ADDED_LATER_WITHIN = {("meta", "lightgbm"): {"max_bin": 255, "shared_bins": False}}


def figure_settings(settings: Settings) -> dict:
    """The settings that change a stored figure, as JSON-ready values (FIGURE_KEYS less
    NO_FIGURE; ADDED_LATER keys only when set to other than their default), and with
    `features.plugins` the plugin entries (`plugins`: config.pack_versions.code_versions;
    a plugin that cannot be loaded is a SettingsError of one line)."""
    data = settings.model_dump(mode="json", include=set(FIGURE_KEYS))
    for section, keys in NO_FIGURE.items():
        for key in keys:
            data[section].pop(key, None)
    for section, keys in ADDED_LATER.items():
        defaults = type(getattr(settings, section))().model_dump(mode="json")
        for key in list(data[section]) if keys == ALL else keys:
            if key in data[section] and data[section][key] == defaults.get(key):
                data[section].pop(key)
        if not data[section]:
            data.pop(section)
    for (section, sub), fields in ADDED_LATER_WITHIN.items():
        values = data.get(section, {}).get(sub, {})
        for key, default in fields.items():
            if values.get(key) == default:
                values.pop(key)
    _meta_rules(settings, data["meta"])
    if settings.features.plugins:
        data["plugins"] = _code_versions(settings)["plugins"]
    return data


# A setting whose new default builds other models than the rule before it: the value that keeps
# an experiment built before (the refusal names it).
EARLIER_RULES = {"meta.missing": "meta.missing: drop"}


def _meta_rules(settings: Settings, meta: dict) -> None:
    """meta.missing as the rule in force (`auto` resolved), left out when it is `drop`, the
    rule of every model built before the setting (they keep their hash); a list of
    meta.inputs as `{"groups": [...]}`: since the list names exactly the model's column
    groups (before, the LSTM score and the regime one-hot were always added), a list-built
    experiment gets a new hash instead of silently other models."""
    meta.pop("missing", None)
    if (rule := settings.meta.missing_rule()) != "drop":
        meta["missing"] = rule
    if isinstance(settings.meta.inputs, list):
        meta["inputs"] = {"groups": list(settings.meta.inputs)}


model_settings = figure_settings  # the name before the backtest and evaluation entered the hash


def _code_versions(settings: Settings) -> dict:
    from config.pack_versions import code_versions

    return code_versions(settings.features, settings.atc.specialist_params(), settings.plugin_folders())


def _digest(data: dict) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def settings_hash(settings: Settings) -> str:
    """12 hex digits of the SHA-256 of figure_settings (see the module doc)."""
    return _digest(figure_settings(settings))


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


def _shown(data: dict, key: str) -> str:
    return json.dumps(data[key]) if key in data else "default"


def differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """`key old -> new` (dotted keys, JSON values) for every leaf that differs between two
    nested dicts, keys sorted. A key absent on one side reads `default` there (figure_settings
    leaves out what is at its default), a section absent on one side is compared as empty."""
    keys = sorted(set(old) | set(new))
    out: list[str] = []
    for k in keys:
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) or isinstance(b, dict):
            if (a is None or isinstance(a, dict)) and (b is None or isinstance(b, dict)):
                out += differences(a or {}, b or {}, f"{prefix}{k}.")
                continue
        if a != b:
            out.append(f"{prefix}{k} {_shown(old, k)} -> {_shown(new, k)}")
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
    path, data = manifest_path(settings), figure_settings(settings)
    digest = _digest(data)
    payload = {"experiment": settings.experiment, "settings_hash": digest,
               "created_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "settings": data, "code_versions": _code_versions(settings)}
    for _ in range(3):
        old = read_manifest(settings.reports_dir)
        if old is None:
            if _write_new(path, payload, replace=path.exists()):  # an unreadable manifest is rewritten
                return payload
            continue  # another process created it first: judge against its manifest
        if old.get("settings_hash") == digest:
            return old
        if has_results(settings):
            diff = differences(old.get("settings") or {}, payload["settings"])
            changed = "; ".join(diff[:3])
            keep = [hint for key, hint in EARLIER_RULES.items() if any(d.startswith(f"{key} default ->") for d in diff)]
            raise ExperimentFrozen(
                f"{path}: experiment {settings.experiment!r} has results built with settings {old.get('settings_hash')}, "
                f"these are {digest} ({changed or 'settings changed'}); use another --experiment name, or move "
                f"{settings.reports_dir} and {settings.models_dir} away to rebuild it"
                + (f", or set {' and '.join(keep)} to go on with the models built before" if keep else ""))
        _write_new(path, payload, replace=True)  # no results yet: the new settings are the experiment's
        return payload
    raise ExperimentFrozen(f"{path}: could not be read after it was created; expected a JSON experiment manifest")
