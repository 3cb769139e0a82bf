"""The feature registry: every feature's name, kernel, inputs, parameters and warm-up.

The `features` table's column order is the registry's order. To add a feature, append one
`Feature` here: the stage, the schema, the halo and the tests pick it up.

`compute_features(arrays, backend, dtype)` runs the registry over one symbol's (or a batch
of symbols') bar arrays; a kernel that yields several outputs (`dmi`) runs once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import polars as pl

from kernels import indicators as K


@dataclass(frozen=True)
class Feature:
    name: str
    fn: Callable
    inputs: tuple[str, ...]
    params: dict = field(default_factory=dict)
    output: int | None = None  # which output of a multi-output kernel
    lookback_of: tuple[str, int] | None = None  # (indicator, n) for the warm-up

    @property
    def warmup(self) -> int:
        """Rows before the first valid value."""
        name, n = self.lookback_of
        return K.lookback(name, n)


def _f(name, fn, inputs, lookback_of, output=None, **params):
    return Feature(name, fn, inputs, params, output, lookback_of)


C, HLC = ("close",), ("high", "low", "close")

FEATURES: tuple[Feature, ...] = (
    _f("f_ret1", K.returns, C, ("returns", 1), n=1),
    _f("f_ret5", K.returns, C, ("returns", 5), n=5),
    _f("f_sma20", K.sma, C, ("sma", 20), n=20),
    _f("f_ema20", K.ema, C, ("ema", 20), n=20),
    _f("f_wma20", K.wma, C, ("wma", 20), n=20),
    _f("f_dema20", K.dema, C, ("dema", 20), n=20),
    _f("f_tema20", K.tema, C, ("tema", 20), n=20),
    _f("f_hma20", K.hma, C, ("hma", 20), n=20),
    _f("f_lsma20", K.lsma, C, ("lsma", 20), n=20),
    _f("f_kama10", K.kama, C, ("kama", 10), n=10),
    _f("f_rsi14", K.rsi, C, ("rsi", 14), n=14),
    _f("f_atr14", K.atr, HLC, ("atr", 14), n=14),
    _f("f_plus_di14", K.dmi, HLC, ("plus_di", 14), output=0, n=14),
    _f("f_minus_di14", K.dmi, HLC, ("minus_di", 14), output=1, n=14),
    _f("f_adx14", K.dmi, HLC, ("adx", 14), output=2, n=14),
    _f("f_std20", K.rolling_std, C, ("rolling_std", 20), n=20),
    _f("f_zscore20", K.zscore, C, ("zscore", 20), n=20),
    _f("f_vol_pct", K.volatility_percent, HLC, ("atr", 14)),
    _f("f_vol_ratio", K.volatility_ratio, HLC, ("atr", 28)),
)

FEATURE_NAMES = [f.name for f in FEATURES]
MAX_WARMUP = max(f.warmup for f in FEATURES)


def feature_dtypes(precision: str = "float32") -> list[tuple[str, pl.DataType]]:
    dtype = pl.Float64 if precision == "float64" else pl.Float32
    return [(name, dtype) for name in FEATURE_NAMES]


def compute_features(arrays: dict[str, np.ndarray], backend: str = "cpu", dtype=np.float32) -> dict[str, np.ndarray]:
    """Every registered feature over `arrays` (name -> 1-D or [series, time] array)."""
    out: dict[str, np.ndarray] = {}
    memo: dict[tuple, object] = {}
    for feat in FEATURES:
        key = (feat.fn, feat.inputs, tuple(sorted(feat.params.items())))
        if key not in memo:
            memo[key] = feat.fn(*(arrays[c] for c in feat.inputs), **feat.params, backend=backend, dtype=dtype)
        result = memo[key]
        out[feat.name] = result[feat.output] if feat.output is not None else result
    return out
