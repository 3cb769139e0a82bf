"""ATC dispatch and public API (re-exported by `kernels.atc`; formulas and decisions in its
docstring).

Contract: `compute`, `average_signal`, `family_signals` validate the inputs
(`kernels.atc.params`), build one `AtcParams` and run the asked backend's
`compute(close, p, dtype, cache, tail) -> (families, final, was_1d)` (the `atc` family of
`kernels.backends`: `kernels.atc.cpu`, `kernels.atc.cuda`, `kernels.atc.torch`), imported on
first use, so importing `kernels.atc` compiles nothing and imports neither torch nor CUDA.
`moving_averages` runs the cpu MA bank; `classify` is NumPy.
"""

from __future__ import annotations

import numpy as np

from kernels import backends
from kernels.atc.params import (
           FAMILIES,
           LONG_THRESHOLD,
           SHORT_THRESHOLD,
           AtcParams,
           check_dtype,
           length_table,
           prepare_numpy,
)

BACKENDS = backends.BACKENDS

FAMILY = "atc"  # its backends are registered in `kernels.atc` (the package's __init__)


def compute(close, *, robustness="Medium", length=28, lam=0.02, decay=0.03, cutout=0, backend="cpu",
            dtype=np.float32, weights=None, cache: bool = False, tail: int | None = None):
    """(family signals {family: array}, final average signal array) in one pass.

    Shapes follow `close` (1-D [bars] or 2-D [symbols, bars]); NaN before `cutout`.
    `cache` (cpu only): take MAs from / put them into `ma_cache`.
    `tail` (an int >= 1): return only the last `tail` bars (the same values as the full
    result's last bars; the bar axis has min(tail, bars) entries). The cpu backend then
    keeps nothing else (a scan wanting the latest state passes 1); cuda and torch compute
    every bar and slice.
    """
    run = backends.load(FAMILY, backend)
    if tail is not None and (isinstance(tail, bool) or not isinstance(tail, (int, np.integer)) or tail < 1):
        raise ValueError(f"tail must be None or an integer >= 1, got {tail!r}")
    dtype = check_dtype(dtype)
    p = AtcParams(robustness, length, lam, decay, cutout, weights)
    fam, final, was_1d = run(close, p, dtype, cache, tail)
    if was_1d:
        fam, final = fam[0], final[0]
        families = {name: fam[f] for f, name in enumerate(FAMILIES)}
    else:
        families = {name: fam[:, f] for f, name in enumerate(FAMILIES)}
    return families, final


def average_signal(close, *, robustness="Medium", length=28, lam=0.02, decay=0.03, cutout=0, backend="cpu",
                   dtype=np.float32, weights=None, cache: bool = False, tail: int | None = None):
    """The final ATC value per bar, in [-1, 1]; NaN before `cutout`. See the `kernels.atc` docstring."""
    return compute(close, robustness=robustness, length=length, lam=lam, decay=decay, cutout=cutout,
                   backend=backend, dtype=dtype, weights=weights, cache=cache, tail=tail)[1]


def family_signals(close, *, robustness="Medium", length=28, lam=0.02, decay=0.03, cutout=0, backend="cpu",
                   dtype=np.float32, weights=None, cache: bool = False, tail: int | None = None):
    """{"EMA", "HMA", "WMA", "DEMA", "LSMA", "KAMA"}: the layer-1 family signals (rounded to
    2 decimals, in [-1, 1]); NaN before `cutout`. "HMA" is the original's SMA."""
    return compute(close, robustness=robustness, length=length, lam=lam, decay=decay, cutout=cutout,
                   backend=backend, dtype=dtype, weights=weights, cache=cache, tail=tail)[0]


def classify(avg, long_threshold: float = LONG_THRESHOLD, short_threshold: float = SHORT_THRESHOLD):
    """1 where avg > long_threshold, -1 where avg < short_threshold, else 0 (NaN: 0); int8."""
    avg = np.asarray(avg)
    return np.where(avg > long_threshold, 1, np.where(avg < short_threshold, -1, 0)).astype(np.int8)


def moving_averages(close, *, robustness="Medium", length=28, dtype=np.float64, cache: bool = False) -> dict:
    """{(family, length): MA} for the 54 MAs layer 1 uses (cpu cores; shapes follow close)."""
    from kernels.atc import cpu

    dtype = check_dtype(dtype)
    lens = length_table(length, robustness)
    x, was_1d = prepare_numpy(close)
    bank, names = cpu.moving_average_bank(x, lens, cache)
    out = bank.astype(dtype, copy=False)
    return {name: (out[0, j] if was_1d else out[:, j]) for j, name in enumerate(names)}
