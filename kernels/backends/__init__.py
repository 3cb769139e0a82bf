"""Backends behind `kernels.indicators`: each runs a named core over a batch of series.

Interface: `run(spec, inputs, params, dtype) -> list of outputs`, where `inputs` are 2-D
[series, time] arrays of the backend's kind, `params` the integer parameters and the result
one 2-D array per output of the core (scratch outputs included).
"""

from __future__ import annotations

import importlib

BACKENDS = ("cpu", "cuda", "torch")


def get_backend(name: str):
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")
    return importlib.import_module(f"kernels.backends.{name}_backend")
