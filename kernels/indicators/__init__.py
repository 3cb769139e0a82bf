"""Public indicator API: one dispatch point over the cpu, cuda and torch backends.

Every function takes NumPy arrays (float32 or float64; 1-D for one series or 2-D
[series, time] for a batch) or, for the cuda and torch backends, CuPy arrays or torch
tensors; a `backend=` keyword ("cpu" numba, "cuda" numba.cuda, "torch" for ROCm/CUDA/CPU);
and `dtype=` for the outputs (float32 default, float64 for the `precision: float64`
setting). Outputs have the input's length, NaN during warm-up, and the input's kind.

Semantics equal TA-Lib's (see `kernels.indicators.cores` for each formula):

    function                 TA-Lib                lookback (first valid index)
    sma(x, n)                SMA                   n-1
    ema(x, n)                EMA (SMA seed)        n-1
    wma(x, n)                WMA                   n-1
    dema(x, n)               DEMA                  2(n-1)
    tema(x, n)               TEMA                  3(n-1)
    hma(x, n)                WMA(2*WMA(n//2) - WMA(n), int(sqrt n))   n-1 + int(sqrt n)-1
    lsma(x, n)               LINEARREG             n-1
    kama(x, n)               KAMA (2/30)           n
    rsi(x, n)                RSI (Wilder)          n
    atr(h, l, c, n)          ATR (Wilder)          n
    plus_di, minus_di        PLUS_DI, MINUS_DI     n
    adx(h, l, c, n)          ADX                   2n-1
    rolling_std(x, n)        STDDEV (nbdev 1)      n-1
    zscore(x, n)             (x - SMA) / STDDEV    n-1
    returns(x, n=1)          ROCP                  n
    volatility_percent(h, l, c)  ATR14 / close * 100   14   (trade log's Volatility Percent)
    volatility_ratio(h, l, c)    ATR14 / ATR28         28   (trade log's Volatility Ratio)

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
