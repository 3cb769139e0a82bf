"""Persistence: `save_meta` writes a joblib payload (a plain dict, not this module's class, so
a refactor here does not break old files) and a JSON sidecar (features, versions, training
window, fold coefficients, and the payload's sha256), each atomically (temp file in the same
folder, os.replace). This module never unpickles: `domain.learning.meta.load_meta` verifies
the file against the recorded sha256 (resources.verified_files), then `meta_from_payload`
rebuilds the model and warns when the scikit-learn version differs from the one that trained.
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

import joblib
import sklearn

from domain.learning.metamodel import PAYLOAD_FORMAT, MetaModel


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


def save_meta(model: MetaModel, path_joblib, path_json=None) -> dict:
    """joblib payload + JSON sidecar (default: the joblib path with .json); returns the sidecar."""
    path_joblib = Path(path_joblib)
    path_json = path_joblib.with_suffix(".json") if path_json is None else Path(path_json)
    payload = {
        "format": PAYLOAD_FORMAT, "estimator": model.estimator, "feature_names": list(model.feature_names),
        "kind": model.kind, "calibration": model.calibration, "window": model.window,
        "versions": model.versions, "info": model.info, "missing": model.missing, "fill_values": model.fill_values,
    }
    buf = io.BytesIO()
    joblib.dump(payload, buf)
    data = buf.getvalue()  # the sha256 of exactly the bytes written, not of a re-read a swap could change
    atomic_write(path_joblib, lambda fh: fh.write(data))
    meta = {**model.metadata(), "joblib": path_joblib.name, "sha256": hashlib.sha256(data).hexdigest()}
    atomic_write(path_json, lambda fh: (json.dump(meta, fh, indent=2, default=str), fh.write("\n")), mode="w")
    return meta


def meta_from_payload(payload, origin) -> MetaModel:
    """The MetaModel of a payload `save_meta` wrote, already unpickled by the caller (never
    unpickle a file unverified: domain.learning.meta.load_meta checks its recorded sha256
    first). ValueError naming `origin` when it is not a meta model payload."""
    if not isinstance(payload, dict) or payload.get("format") != PAYLOAD_FORMAT:
        raise ValueError(f"{origin} is not a {PAYLOAD_FORMAT} meta model")
    trained = payload["versions"].get("scikit-learn")
    if trained != sklearn.__version__:
        warnings.warn(f"meta model trained with scikit-learn {trained}, loaded with {sklearn.__version__}",
                      UserWarning, stacklevel=2)
    return MetaModel(payload["estimator"], payload["feature_names"], payload["kind"], payload["calibration"],
                     payload["window"], payload["versions"], payload["info"], payload.get("missing", "drop"),
                     payload.get("fill_values"))
