"""Indicators: TA-Lib semantics on cpu (numba), cuda (numba.cuda) and torch, NumPy/CuPy/torch
arrays in and out. The functions, their TA-Lib equivalents and lookbacks: `kernels.indicators.api`
(its docstring's table), re-exported here: `from kernels.indicators import ema, sweep, SPECS`.

Package layout (the family's arithmetic written once as steps, its schedules drivers over them)
---------------------------------------------------------------------------------------------
    api.py        the public entry: SPECS, the single calls, `sweep`, `lanes`, `ragged`; dispatch
                  over the backends (re-exported here)
    cores.py      the portable per-series cores (compiled for cpu and cuda) and the cpu variants'
                  table (CPU_VARIANTS)
    multilane.py  multi-lane schedules: several periods or series per pass (`sweep` / `lanes`)
    chunks.py     time-chunked cpu schedules, chunks re-walked until they meet (bit for bit)
    shifted.py    float64 running sums in shifted lanes (SMA, KAMA)
    exact.py      int64 schedules where float32 sums are exact (SMA, WMA, KAMA)
    cpu.py        the cpu backend (numba.njit), `run`, `run_lanes`, `run_ragged`
    cuda.py       the cuda backend (numba.cuda device functions, a thread per series)
    torch.py      the torch backend (ROCm, CUDA, CPU)
    updaters.py   O(1)-per-bar updaters (the live path), streaming.py the features and specialists on them
    plain_state.py  an updater's state as plain JSON data and back into a fresh updater (no pickle)
    fused.py      fma in Python; _intrinsics.py the compiled fma, float bits and prefetch (numba)
Importing `kernels.indicators` loads `api` only (NumPy, the backend registry): no numba, torch or
CUDA import; the backend modules are imported on first use.
"""

from kernels import backends as _backends

for _name in _backends.BACKENDS:  # the `indicators` family: each module's run / run_lanes / run_ragged
    _backends.register("indicators", _name, f"kernels.indicators.{_name}")

from kernels.indicators.api import (  # noqa: E402 - after the registration
    ALIASES,
    LANE_CORES,
    SPECS,
    SWEEP_NAMES,
    Spec,
    adx,
    atr,
    dema,
    dmi,
    ema,
    get_backend,
    hma,
    kama,
    lanes,
    lookback,
    lsma,
    minus_di,
    plus_di,
    ragged,
    returns,
    rolling_std,
    rsi,
    sma,
    sweep,
    tema,
    volatility_percent,
    volatility_ratio,
    wma,
    zscore,
)

__all__ = ["ALIASES", "LANE_CORES", "SPECS", "SWEEP_NAMES", "Spec", "adx", "atr", "dema", "dmi", "ema",
           "get_backend", "hma", "kama", "lanes", "lookback", "lsma", "minus_di", "plus_di", "ragged",
           "returns", "rolling_std", "rsi", "sma", "sweep", "tema", "volatility_percent", "volatility_ratio",
           "wma", "zscore"]
