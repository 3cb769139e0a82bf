"""ATC constants, parameters and input checks, shared by every backend and by `kernels.atc.stream`.

- `AtcParams(robustness, length, lam, decay, cutout, weights)`: the validated parameters in
  the form the kernels take: `lens` [6, 9] int64 (the nine lengths of each family in
  summation order), `weights` [6] float64 (layer-2 starting equities), `cutout`, `lam`
  (= lam/1000), `decay` (= decay/100), `d` = 1 - decay, and `growth(T)` =
  exp(lam*(t - cutout)) for t = 0..T-1, computed once with NumPy and shared by every
  backend (and evaluated the same way, a block at a time, by the streaming updater).
- The constants of the indicator (FAMILIES, OFFSETS, KAMA_FAST/SLOW, EQUITY_FLOOR,
  CUT_LEVEL, LONG/SHORT_THRESHOLD, MIN_LENGTH), read by the cores and every backend.
- `ma_lengths(length, robustness)`: L, L+a1..L+a4, L-a1..L-a4 (offsets `OFFSETS`).
- `prepare_numpy(close)`, `check_dtype(dtype)`, `is_torch(a)`: input validation.

Plain Python and NumPy: no numba, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

FAMILIES = ("EMA", "HMA", "WMA", "DEMA", "LSMA", "KAMA")
OFFSETS = {"Narrow": (1, 2, 3, 4), "Medium": (1, 2, 4, 6), "Wide": (1, 3, 5, 7)}
N_LENGTHS = 9
MIN_LENGTH = 3
KAMA_FAST = 0.666  # Pine KAMA smoothing constants (sc = (ER*(fast - slow) + slow)^2)
KAMA_SLOW = 0.064
EQUITY_FLOOR = 0.25  # equity curves are floored here
CUT_LEVEL = 0.49  # Cut(x) = 1 if x > 0.49, -1 if x < -0.49, else 0
LONG_THRESHOLD = 0.1
SHORT_THRESHOLD = -0.1


def _per_family(value, default, name):
    if value is None:
        value = default
    if isinstance(value, Mapping):
        unknown = set(value) - set(FAMILIES)
        if unknown:
            raise ValueError(f"{name}: unknown families {sorted(unknown)}; expected {FAMILIES}")
        return [value.get(f, default) for f in FAMILIES]
    return [value] * len(FAMILIES)


def ma_lengths(length: int, robustness: str = "Medium") -> tuple[int, ...]:
    """The nine lengths of one family in summation order: L, L+a1..L+a4, L-a1..L-a4."""
    if robustness not in OFFSETS:
        raise ValueError(f"robustness must be one of {tuple(OFFSETS)}, got {robustness!r}")
    offs = OFFSETS[robustness]
    return (int(length), *(int(length) + a for a in offs), *(int(length) - a for a in offs))


def length_table(length, robustness) -> np.ndarray:
    """[6, 9] int64: `ma_lengths` of each family's length (one int or {family: int})."""
    rows = []
    for fam, n in zip(FAMILIES, _per_family(length, 28, "length")):
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise ValueError(f"length for {fam} must be an integer, got {n!r}")
        row = ma_lengths(n, robustness)
        if min(row) < MIN_LENGTH:
            raise ValueError(f"{fam}: length {n} with {robustness} offsets gives {min(row)}; every length must be >= {MIN_LENGTH}")
        rows.append(row)
    return np.array(rows, dtype=np.int64)


class AtcParams:
    """The validated ATC parameters (see the module docstring)."""

    def __init__(self, robustness, length, lam, decay, cutout, weights):
        self.lens = length_table(length, robustness)
        self.weights = np.array([float(w) for w in _per_family(weights, 1.0, "weights")], dtype=np.float64)
        if not np.all(self.weights > 0):
            raise ValueError("weights must be > 0")
        if not (isinstance(cutout, (int, np.integer)) and cutout >= 0):
            raise ValueError(f"cutout must be an integer >= 0, got {cutout!r}")
        self.cutout = int(cutout)
        self.lam = float(lam) / 1000.0
        self.decay = float(decay) / 100.0
        if not (0.0 <= self.decay <= 1.0) or not math.isfinite(self.lam):
            raise ValueError(f"decay must be in [0, 100] (percent) and lam finite, got decay={decay!r} lam={lam!r}")
        self.d = 1.0 - self.decay

    def growth(self, t_len: int) -> np.ndarray:
        """exp(lam*(t - cutout)), computed once with NumPy and shared by every backend."""
        return np.exp(self.lam * (np.arange(t_len, dtype=np.float64) - self.cutout))


def is_torch(a) -> bool:
    """Whether `a` is a torch tensor (judged by its type's module: torch is not imported)."""
    return type(a).__module__.split(".")[0] == "torch"


def keep_tail(a, tail: int | None):
    """`a` itself when `tail` is None, else a copy of its last `tail` bars (NumPy or torch),
    so the full result can go."""
    if tail is None:
        return a
    return a[..., -tail:].copy() if isinstance(a, np.ndarray) else a[..., -tail:].clone()


def prepare_numpy(close):
    """close (1-D [bars] or 2-D [symbols, bars], numeric, finite) -> (C-contiguous 2-D
    float32/float64 array, was_1d); integers become float64."""
    x = np.asarray(close)
    if x.dtype.kind not in "fiu":
        raise TypeError(f"expected a numeric array, got dtype {x.dtype}")
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    if x.ndim not in (1, 2):
        raise ValueError(f"expected 1-D [bars] or 2-D [symbols, bars], got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("close must be finite (no NaN or inf)")
    was_1d = x.ndim == 1
    return np.ascontiguousarray(x.reshape(1, -1) if was_1d else x), was_1d


def check_dtype(dtype):
    """The output dtype: float32 or float64 (ValueError otherwise)."""
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    return dtype
