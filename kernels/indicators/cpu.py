"""cpu backend: the cores compiled with numba.njit (cached on disk), one call per series;
`run_lanes` runs a multi-lane core of `kernels.indicators.multilane` (`kernels.indicators.sweep`).
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from kernels.indicators import chunks, cores, exact, multilane


@functools.cache
def compiled(core_name: str):
    """The compiled core `core_name`, or its cpu variant (cores.CPU_VARIANTS: in kernels.indicators.cores,
    kernels.indicators.chunks or kernels.indicators.exact) where it has one."""
    name = cores.CPU_VARIANTS.get(core_name, core_name)
    module = next(m for m in (chunks, exact, cores) if hasattr(m, name))
    return njit(cache=True, nogil=True)(getattr(module, name))


@functools.cache
def compiled_lanes(core_name: str):
    # error_model="numpy": x/0 is IEEE inf/NaN instead of a raised ZeroDivisionError. The
    # lane cores compute some quotients for every lane and keep them only where the single
    # core would have computed them (a select), and the check-and-raise branch would also
    # keep LLVM from vectorising the lane loop.
    return njit(cache=True, nogil=True, error_model="numpy")(getattr(multilane, core_name))


def run_lanes(core_name: str, inputs: list[np.ndarray], periods: np.ndarray, extra: tuple[int, ...], dtype,
              out: np.ndarray | None = None) -> np.ndarray:
    """A lane core over a time-major [T, len(periods)] output block (`out`, or a new one).
    `inputs`: 1-D series of length T (lanes = periods of that series) or time-major [T, L]
    panels (lanes = series, lane j over column j with period periods[j]; C-contiguous
    panels vectorise)."""
    t_len = inputs[0].shape[0]
    out = np.empty((t_len, periods.shape[0]), dtype=dtype) if out is None else out
    cols = [a.reshape(-1, 1) if a.ndim == 1 else a for a in inputs]
    compiled_lanes(core_name)(*cols, periods, *extra, out)
    return out


def run_ragged(spec, inputs: list[np.ndarray], offsets: np.ndarray, params: tuple[int, ...], dtype,
               threads: int = 1) -> list[np.ndarray]:
    """Many series stored back to back (series k is rows offsets[k]:offsets[k+1]): the core
    runs on each slice and writes its slice of the outputs in place (no copies).

    `threads` > 1 splits the series into that many runs of about equal rows, one thread
    each (the compiled cores release the GIL); every series is still one call of the same
    core, so the outputs are the same bit for bit."""
    core = compiled(spec.core)
    total = inputs[0].shape[0]
    outs = [np.empty(total, dtype=dtype) for _ in range(spec.n_outputs)]
    bounds = offsets.tolist()

    def series(lo: int, hi: int) -> None:
        for a, b in zip(bounds[lo:hi], bounds[lo + 1 : hi + 1]):
            core(*[x[a:b] for x in inputs], *params, *[o[a:b] for o in outs])

    n_series = len(bounds) - 1
    threads = max(1, min(int(threads), n_series))
    if threads == 1:
        series(0, n_series)
        return outs
    cuts = np.searchsorted(offsets, np.linspace(0, total, threads + 1)[1:-1]).tolist()
    edges = sorted({0, *[min(max(c, 0), n_series) for c in cuts], n_series})
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda e: series(*e), zip(edges[:-1], edges[1:])))
    return outs


def run(spec, inputs: list[np.ndarray], params: tuple[int, ...], dtype) -> list[np.ndarray]:
    core = compiled(spec.core)
    n_series, t_len = inputs[0].shape
    outs = [np.empty((n_series, t_len), dtype=dtype) for _ in range(spec.n_outputs)]
    for s in range(n_series):
        core(*[a[s] for a in inputs], *params, *[o[s] for o in outs])
    return outs
