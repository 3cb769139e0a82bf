"""Persistence of the meta model in formats that cannot execute code.

`save_meta(model, path_npz)` writes the model's arrays (domain.learning.portable: the
logistic copies' coefficients, LightGBM's text model, skops bytes of HistGradientBoosting,
each copy's calibration, the fill values) to an .npz and a JSON sidecar (format
PORTABLE_FORMAT: features, kind, calibration, copies' methods, missing-value rule, window,
versions, info, and the npz's sha256), each atomically (temp file in the same folder,
os.replace). `load_arrays` reads an .npz with allow_pickle=False after
resources.verified_files checked its owner, mode and recorded sha256; `meta_from_arrays`
rebuilds the model and warns when the scikit-learn version differs from the one that
trained. Nothing here unpickles.

The joblib payloads of before (format tradelab.meta/1) are pickles: they are never loaded
implicitly. `migrate_pickled(path_joblib, ...)` is the explicit conversion (the command
`migrate-models`): it verifies the file against its recorded sha256, unpickles it once,
writes the portable files and moves the pickle aside.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import sklearn

from domain.learning.metamodel import PAYLOAD_FORMAT, MetaModel
from domain.learning.portable import PortableEnsemble, to_arrays

PORTABLE_FORMAT = "tradelab.meta/2"


def atomic_write(path, write: Callable[[Any], None], mode: str = "wb") -> Path:
    """Write via `write(file)` to a temp file beside `path`, fsync, then os.replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def save_meta(model: MetaModel, path_npz, path_json=None, extra: dict | None = None) -> dict:
    """The model's arrays as an .npz and its JSON sidecar (default: the npz path with .json,
    holding `extra` too); returns the sidecar."""
    path_npz = Path(path_npz)
    path_json = path_npz.with_suffix(".json") if path_json is None else Path(path_json)
    arrays, methods = to_arrays(model.estimator, model.kind)
    if model.fill_values is not None:
        arrays["fill_values"] = np.asarray(model.fill_values, np.float32)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    data = buf.getvalue()  # the sha256 of exactly the bytes written, not of a re-read a swap could change
    atomic_write(path_npz, lambda fh: fh.write(data))
    meta = {**model.metadata(), "format": PORTABLE_FORMAT, "methods": methods, "npz": path_npz.name,
            "sha256": hashlib.sha256(data).hexdigest(), **(extra or {})}
    atomic_write(path_json, lambda fh: (json.dump(meta, fh, indent=2, default=str), fh.write("\n")), mode="w")
    return meta


def load_arrays(fh, origin="model") -> dict[str, np.ndarray]:
    """Every array of an .npz file object, read with allow_pickle=False: a pickle or an object
    array is refused by NumPy before anything runs (InputDataError, one line naming `origin`)."""
    import zipfile

    from config.errors import InputDataError

    try:
        with np.load(fh, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, AttributeError):
        raise InputDataError(str(origin), "not an .npz of plain arrays (a pickle, an object array or a damaged file); "
                             "not loaded, nothing in it ran", expected="a model written by meta_model: rebuild it") from None


def meta_from_arrays(arrays: dict, sidecar: dict, origin) -> MetaModel:
    """The MetaModel of `arrays` (load_arrays of a verified file) and its `sidecar`;
    ValueError naming `origin` when the sidecar is not a portable meta model's."""
    if not isinstance(sidecar, dict) or sidecar.get("format") != PORTABLE_FORMAT:
        raise ValueError(f"{origin} is not a {PORTABLE_FORMAT} meta model")
    trained = (sidecar.get("versions") or {}).get("scikit-learn")
    if trained != sklearn.__version__:
        warnings.warn(f"meta model trained with scikit-learn {trained}, loaded with {sklearn.__version__}",
                      UserWarning, stacklevel=2)
    estimator = PortableEnsemble.from_arrays(arrays, sidecar["kind"], list(sidecar["methods"]), str(origin),
                                             n_features=len(sidecar["features"]))
    fill = arrays.get("fill_values")
    info = {k: v for k, v in sidecar.items() if k not in SIDECAR_KEYS}
    return MetaModel(estimator, list(sidecar["features"]), sidecar["kind"], sidecar["calibration"],
                     sidecar.get("window") or {}, sidecar.get("versions") or {}, info, sidecar.get("missing", "drop"),
                     None if fill is None else [float(v) for v in fill])


# the sidecar's keys that are not the model's `info` (MetaModel.metadata and save_meta's own)
SIDECAR_KEYS = frozenset({"format", "kind", "calibration", "features", "n_features", "window", "versions", "missing",
                          "fill_values", "methods", "npz", "sha256", "joblib", "provenance", "coverage",
                          "table_versions"})


def migrate_pickled(path_joblib, extra: Callable[[dict], dict] | None = None) -> Path:
    """The explicit conversion of a pickled model of before (`meta_h{H}_{Y}.joblib` + JSON,
    format tradelab.meta/1): verified against its recorded sha256 and owner
    (resources.verified_files: else one UnverifiedFileError line, nothing unpickled),
    unpickled once, written as the portable .npz + JSON (the old sidecar's fields kept,
    `extra(old sidecar)` added: the provenance), then the pickle and its sidecar moved into
    `.pickled/` beside it. Returns the .npz path."""
    import joblib

    from resources.verified_files import load_verified

    path = Path(path_joblib)
    side, out, aside = path.with_suffix(".json"), path.with_suffix(".npz"), path.parent / ".pickled"
    old = json.loads(side.read_text())
    if old.get("format") == PORTABLE_FORMAT and out.is_file():  # converted by a run killed before the move
        aside.mkdir(exist_ok=True)
        os.replace(path, aside / path.name)
        return out
    payload = load_verified(path, side, joblib.load, rebuild="rebuild it (materialize meta_model for that year)")
    if not isinstance(payload, dict) or payload.get("format") != PAYLOAD_FORMAT:
        raise ValueError(f"{path} is not a {PAYLOAD_FORMAT} meta model")
    model = MetaModel(payload["estimator"], payload["feature_names"], payload["kind"], payload["calibration"],
                      payload["window"], payload["versions"], payload["info"], payload.get("missing", "drop"),
                      payload.get("fill_values"))
    aside.mkdir(exist_ok=True)
    atomic_write(aside / side.name, lambda fh: fh.write(side.read_bytes()))  # the old sidecar, kept with its pickle
    keep = {k: v for k, v in old.items() if k in ("table_versions", "coverage", "provenance")}
    save_meta(model, out, extra={**keep, **(extra(old) if extra else {})})  # replaces the sidecar atomically
    os.replace(path, aside / path.name)
    return out
