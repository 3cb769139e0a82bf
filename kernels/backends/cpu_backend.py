"""cpu backend: the cores compiled with numba.njit (cached on disk).

A batch of series whose core has a multi-lane variant (`LANE_CORES`) runs as lanes: the
series of equal length go, LANE_BLOCK at a time, through the lane core of
`kernels.lane_cores` (time-major [T, lanes] blocks), bit for bit the single-lane core per
series; other cores run once per series.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

from kernels import cores, lane_cores

# single-lane core -> (its lane core, the parameters after n that the lane core takes)
LANE_CORES = {
    "sma_core": "sma_lanes", "ema_core": "ema_lanes", "wma_core": "wma_lanes", "kama_core": "kama_lanes",
    "rsi_core": "rsi_lanes", "atr_core": "atr_lanes",
}
LANE_BLOCK = 64  # series per lane block: [T, 64] rows of 512 bytes (float64), vector-friendly, cache-sized state


@functools.cache
def compiled(core_name: str):
    return njit(cache=True, nogil=True)(getattr(cores, core_name))


@functools.cache
def compiled_lanes(core_name: str):
    return njit(cache=True, nogil=True)(getattr(lane_cores, core_name))


def run_lanes(core_name: str, inputs: list[np.ndarray], periods: np.ndarray, extra: tuple[int, ...], dtype) -> np.ndarray:
    """Lanes = periods of one series: `inputs` 1-D of length T; the lane core fills a
    time-major [T, len(periods)] block."""
    out = np.empty((inputs[0].shape[0], periods.shape[0]), dtype=dtype)
    compiled_lanes(core_name)(*[a.reshape(-1, 1) for a in inputs], periods, *extra, out)
    return out


def _series_lanes(spec, columns, params, dtype, write) -> None:
    """Lanes = series: `columns(k0, k1)` gives the inputs of series k0..k1-1 (equal length)
    as time-major [T, k1-k0] arrays; `write(k0, block)` takes each output block."""
    core = compiled_lanes(LANE_CORES[spec.core])
    n_series = columns.n_series
    for k0 in range(0, n_series, LANE_BLOCK):
        k1 = min(n_series, k0 + LANE_BLOCK)
        xs = columns(k0, k1)
        out = np.empty(xs[0].shape, dtype=dtype)
        core(*xs, np.full(k1 - k0, params[0], dtype=np.int64), out)
        write(k0, out)


class _Rows:
    """Series k of a group = rows starts[k]:starts[k]+length of each 1-D input."""

    def __init__(self, inputs, starts, length):
        self.inputs, self.starts, self.length, self.n_series = inputs, starts, length, len(starts)

    def __call__(self, k0, k1):
        return [np.stack([a[s : s + self.length] for s in self.starts[k0:k1]], axis=1) for a in self.inputs]


def run_ragged(spec, inputs: list[np.ndarray], offsets: np.ndarray, params: tuple[int, ...], dtype) -> list[np.ndarray]:
    """Many series stored back to back (series k is rows offsets[k]:offsets[k+1]). With a
    lane core, series of equal length run as lanes; otherwise the core runs on each slice
    and writes its slice of the outputs in place (no copies)."""
    total = inputs[0].shape[0]
    outs = [np.empty(total, dtype=dtype) for _ in range(spec.n_outputs)]
    starts, lengths = offsets[:-1], np.diff(offsets)
    alone = np.ones(starts.shape[0], dtype=bool)
    if spec.core in LANE_CORES and len(params) == 1:
        for length in np.unique(lengths):
            group = np.flatnonzero(lengths == length)
            if group.size < 2 or length == 0:
                continue
            alone[group] = False
            g_starts = starts[group].tolist()

            def write(k0, block, g_starts=g_starts, length=int(length)):
                for k, s in enumerate(g_starts[k0 : k0 + block.shape[1]]):
                    outs[0][s : s + length] = block[:, k]

            _series_lanes(spec, _Rows(inputs, g_starts, int(length)), params, dtype, write)
    core = compiled(spec.core)
    for a, b in zip(starts[alone].tolist(), offsets[1:][alone].tolist()):
        core(*[x[a:b] for x in inputs], *params, *[o[a:b] for o in outs])
    return outs


class _Panel:
    """Series k0..k1-1 of [series, time] inputs, transposed to time-major."""

    def __init__(self, inputs):
        self.inputs, self.n_series = inputs, inputs[0].shape[0]

    def __call__(self, k0, k1):
        return [np.ascontiguousarray(a[k0:k1].T) for a in self.inputs]


def run(spec, inputs: list[np.ndarray], params: tuple[int, ...], dtype) -> list[np.ndarray]:
    n_series, t_len = inputs[0].shape
    outs = [np.empty((n_series, t_len), dtype=dtype) for _ in range(spec.n_outputs)]
    if spec.core in LANE_CORES and len(params) == 1 and n_series > 1 and t_len > 0:
        def write(k0, block):
            outs[0][k0 : k0 + block.shape[1]] = block.T

        _series_lanes(spec, _Panel(inputs), params, dtype, write)
        return outs
    core = compiled(spec.core)
    for s in range(n_series):
        core(*[a[s] for a in inputs], *params, *[o[s] for o in outs])
    return outs
