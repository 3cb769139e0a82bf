"""cpu backend: the cores compiled with numba.njit (cached on disk), one call per series."""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

from kernels import cores


@functools.cache
def compiled(core_name: str):
    return njit(cache=True, nogil=True)(getattr(cores, core_name))


def run(spec, inputs: list[np.ndarray], params: tuple[int, ...], dtype) -> list[np.ndarray]:
    core = compiled(spec.core)
    n_series, t_len = inputs[0].shape
    outs = [np.empty((n_series, t_len), dtype=dtype) for _ in range(spec.n_outputs)]
    for s in range(n_series):
        core(*[a[s] for a in inputs], *params, *[o[s] for o in outs])
    return outs
