"""A researcher's plugin, outside the library: a Bollinger %B feature and a momentum
specialist, selected with

    features:
      plugins: [my_research.features]
      plugin_paths: [/path/to/folder]   # the folder holding my_research/

(relative to the settings file's folder; no PYTHONPATH needed). This is the worked example
of docs/features.md; tests/kernels/test_packs.py runs it.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from kernels.registry.packs import Formula, Pack, Specialist


def bollinger_pct_b(close: np.ndarray, n: int = 20, width: float = 2.0) -> np.ndarray:
    """%B = (close - lower) / (upper - lower), bands = 20-bar mean +- 2 standard deviations.
    One symbol's closes in, one value per bar out (NaN for the first n - 1 bars)."""
    out = np.full(close.shape[0], np.nan, dtype=close.dtype)
    if close.shape[0] >= n:
        win = sliding_window_view(close.astype(np.float64), n)
        mid, sd = win.mean(axis=1), win.std(axis=1)
        lower, upper = mid - width * sd, mid + width * sd
        out[n - 1:] = (close[n - 1:] - lower) / (upper - lower)
    return out


def momentum_score(panel) -> np.ndarray:
    """tanh of the 10-bar return times 10: a score in [-1, 1] (NaN for the first 10 bars)."""
    close = panel.col("close").astype(np.float64)
    out = np.full(close.shape[0], np.nan, dtype=np.float32)
    if close.shape[0] > 10:
        out[10:] = np.tanh((close[10:] / close[:-10] - 1.0) * 10.0)
    return out


PACKS = [
    Pack(
        "my_research",
        features=(Formula("my_bb_pct_b20", bollinger_pct_b, inputs=("close",), warmup=19),),
        specialists=(Specialist("momentum10", momentum_score, ("close",), warmup=10),),
    )
]
