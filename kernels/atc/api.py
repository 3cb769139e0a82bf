"""ATC dispatch and public API (re-exported by `kernels.atc`; formulas and decisions in its
docstring).

Contract: `compute`, `average_signal`, `family_signals` validate the inputs
(`kernels.atc.params`), build one `AtcParams` and run the asked backend: `kernels.atc.cpu`,
`kernels.atc.cuda` or `kernels.atc.torch`, each imported here on first use, so importing
`kernels.atc` compiles nothing and imports neither torch nor the CUDA modules.
`moving_averages` runs the cpu MA bank; `classify` is NumPy.
"""

from __future__ import annotations

import numpy as np

from kernels.atc.params import (
           FAMILIES,
           LONG_THRESHOLD,
           SHORT_THRESHOLD,
           AtcParams,
           check_dtype,
           length_table,
           prepare_numpy,
)

BACKENDS = ("cpu", "cuda", "torch")


def _cpu_run(x, p: AtcParams, dtype, cache: bool, tail):
    from kernels.atc import cpu

    return cpu.run(x, p, dtype, cache, tail)


def _cuda_run(x, p: AtcParams, dtype):
    from kernels.atc import cuda as atc_cuda

    fam, final = atc_cuda.run(x, p.lens, p.weights, p.growth(x.shape[1]), p.d, p.cutout)
    return fam.astype(dtype, copy=False), final.astype(dtype, copy=False)


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
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if tail is not None and (isinstance(tail, bool) or not isinstance(tail, (int, np.integer)) or tail < 1):
        raise ValueError(f"tail must be None or an integer >= 1, got {tail!r}")
    dtype = check_dtype(dtype)
    p = AtcParams(robustness, length, lam, decay, cutout, weights)
    if backend == "torch":
        from kernels.atc import torch as atc_torch

        fam, final, was_1d = atc_torch.dispatch(close, p, dtype)
    else:
        x, was_1d = prepare_numpy(close)
        fam, final = _cpu_run(x, p, dtype, cache, tail) if backend == "cpu" else _cuda_run(x, p, dtype)
    if tail is not None and backend != "cpu":  # copies, so the full results can go
        fam, final = (a[..., -tail:].copy() if isinstance(a, np.ndarray) else a[..., -tail:].clone() for a in (fam, final))
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
