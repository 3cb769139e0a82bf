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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from kernels.backends import load


def get_backend(name: str):
    """The `indicators` backend module `name` (kernels.indicators.cpu, .cuda or .torch)."""
    return load("indicators", name)


@dataclass(frozen=True)
class Spec:
    """A core: its function name in kernels.indicators.cores, arity, and lookback.

    A new indicator kernel is its core (kernels/indicators/cores.py, numba-compilable) and its Spec
    here: the cpu and cuda backends compile the core, the torch backend runs it as the CPU
    core unless it has a port, and the stream runs it over a window
    (kernels.indicators.streaming.SpecWindowUpdater) unless kernels.indicators.updaters.UPDATERS has an updater
    for it (keyed by its SPECS name, the one streaming vocabulary)."""

    core: str
    n_inputs: int
    n_outputs: int
    lookback: Callable[..., int]
    min_n: int = 1
    # rows the generic streaming updater keeps (kernels.indicators.streaming.SpecWindowUpdater) for a
    # core without an updater; None: lookback + 1
    stream_window: Callable[..., int] | None = None


SPECS: dict[str, Spec] = {
    "sma": Spec("sma_core", 1, 1, lambda n: n - 1),
    "ema": Spec("ema_core", 1, 1, lambda n: n - 1),
    "wma": Spec("wma_core", 1, 1, lambda n: n - 1),
    "dema": Spec("dema_core", 1, 1, lambda n: 2 * (n - 1)),
    "tema": Spec("tema_core", 1, 1, lambda n: 3 * (n - 1)),
    "hma": Spec("hma_core", 1, 2, lambda n: n - 1 + int(np.sqrt(n)) - 1, min_n=2),
    "lsma": Spec("lsma_core", 1, 1, lambda n: n - 1, min_n=2),
    "kama": Spec("kama_core", 1, 1, lambda n: n, min_n=2),
    "rsi": Spec("rsi_core", 1, 1, lambda n: n, min_n=2),
    "atr": Spec("atr_core", 3, 1, lambda n: n),
    "dmi": Spec("dmi_core", 3, 3, lambda n, _which=0: 2 * n - 1, min_n=2),
    "moments": Spec("moments_core", 1, 1, lambda n, _mode: n - 1),
    "rocp": Spec("rocp_core", 1, 1, lambda n: n),
}


# Public names that run another name's core.
ALIASES = {"plus_di": "dmi", "minus_di": "dmi", "adx": "dmi", "rolling_std": "moments", "zscore": "moments",
            "returns": "rocp"}


def lookback(name: str, n: int) -> int:
    """Index of the first valid output of indicator `name` with period `n`."""
    if name in ("plus_di", "minus_di"):
        return n
    spec = SPECS[ALIASES.get(name, name)]
    return spec.lookback(n, 0) if spec.core == "moments_core" else spec.lookback(n)


def _kind(a):
    mod = type(a).__module__.split(".")[0]
    return mod if mod in ("cupy", "torch") else "numpy"


def _prepare(arrays, backend: str):
    """Validate inputs; return (2-D arrays, was_1d, input kind)."""
    kinds = {_kind(a) for a in arrays}
    if len(kinds) != 1:
        raise TypeError(f"inputs mix array kinds {sorted(kinds)}")
    kind = kinds.pop()
    if kind == "numpy":
        arrays = [np.asarray(a) for a in arrays]
        for a in arrays:
            if a.dtype.kind not in "fiu":
                raise TypeError(f"expected a numeric array, got dtype {a.dtype}")
        # float32 and float64 go in as they are: the cores widen every read to float64.
        arrays = [a if a.dtype in (np.float32, np.float64) else a.astype(np.float64) for a in arrays]
    shape = tuple(arrays[0].shape)
    if any(tuple(a.shape) != shape for a in arrays):
        raise ValueError(f"inputs must share one shape, got {[tuple(a.shape) for a in arrays]}")
    if len(shape) not in (1, 2):
        raise ValueError(f"expected 1-D [time] or 2-D [series, time] arrays, got shape {shape}")
    was_1d = len(shape) == 1
    arrays = [a.reshape(1, -1) if was_1d else a for a in arrays]
    if kind == "numpy":
        arrays = [np.ascontiguousarray(a) for a in arrays]
        if backend == "cpu":
            arrays = [_read_only(a) for a in arrays]
    return arrays, was_1d, kind


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of `a` (no copy). The cores only read their inputs, and numba compiles
    one specialisation per input writability: a Delta/Arrow column (the features stage's
    inputs) is read-only, a computed array is not, so passing every input read-only lets the
    stages share one compiled core per dtype (fewer compiles on the first run)."""
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def _run(name: str, arrays, params: tuple[int, ...], backend: str, dtype) -> list:
    spec = SPECS[name]
    n = params[0]
    if not isinstance(n, (int, np.integer)) or n < spec.min_n:
        raise ValueError(f"{name}: period must be an integer >= {spec.min_n}, got {n!r}")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    if len(arrays) != spec.n_inputs:
        raise ValueError(f"{name} takes {spec.n_inputs} input series")
    prepared, was_1d, _ = _prepare(arrays, backend)
    outs = get_backend(backend).run(spec, prepared, tuple(int(p) for p in params), dtype)
    return [o[0] if was_1d else o for o in outs]


def ragged(name: str, inputs, offsets, params: tuple[int, ...], *, backend: str = "cpu", dtype=np.float32,
           threads: int = 1) -> list:
    """Run core `name` (a key of SPECS) over many series stored back to back.

    Series k occupies rows offsets[k]:offsets[k+1] of every 1-D NumPy input; the outputs
    have the inputs' total length, each series' values in its own rows (warm-up NaN at the
    start of each). The cpu backend runs the compiled core on each slice in place, the
    series split over `threads` threads; other backends batch the series of equal length
    as [series, time].
    """
    spec = SPECS[name]
    if params[0] < spec.min_n:
        raise ValueError(f"{name}: period must be an integer >= {spec.min_n}, got {params[0]!r}")
    dtype = np.dtype(dtype)
    inputs = [a if a.dtype in (np.float32, np.float64) else a.astype(np.float64) for a in map(np.asarray, inputs)]
    if backend == "cpu":
        inputs = [_read_only(a) for a in inputs]  # one compiled core per dtype (see _read_only)
    offsets = np.asarray(offsets, dtype=np.int64)
    backend_mod = get_backend(backend)
    if hasattr(backend_mod, "run_ragged"):
        return backend_mod.run_ragged(spec, inputs, offsets, tuple(int(p) for p in params), dtype, threads=threads)
    total = inputs[0].shape[0]
    outs = [np.empty(total, dtype=dtype) for _ in range(spec.n_outputs)]
    lengths = np.diff(offsets)
    for n in np.unique(lengths):
        starts = offsets[:-1][lengths == n]
        batch = [np.stack([a[s : s + n] for s in starts]) for a in inputs]
        results = backend_mod.run(spec, batch, tuple(int(p) for p in params), dtype)
        for out, res in zip(outs, results):
            res = np.asarray(res)
            for row, s in enumerate(starts):
                out[s : s + n] = res[row]
    return outs


# Public names with a multi-lane core (kernels.indicators.multilane): (core, its extra parameters).
LANE_CORES = {
    "sma": ("sma_lanes", ()), "ema": ("ema_lanes", ()), "wma": ("wma_lanes", ()), "kama": ("kama_lanes", ()),
    "rsi": ("rsi_lanes", ()), "atr": ("atr_lanes", ()),
    "adx": ("dmi_lanes", (0,)), "plus_di": ("dmi_lanes", (1,)), "minus_di": ("dmi_lanes", (2,)),
    "dema": ("dema_lanes", ()), "tema": ("tema_lanes", ()), "lsma": ("lsma_lanes", ()),
    "rolling_std": ("moments_lanes", (0,)), "zscore": ("moments_lanes", (1,)),
}


# Public names `sweep` takes (every indicator with a period).
SWEEP_NAMES = ("sma", "ema", "wma", "dema", "tema", "hma", "lsma", "kama", "rsi", "atr", "plus_di", "minus_di", "adx",
               "rolling_std", "zscore", "returns")


def sweep(name: str, inputs, periods, *, backend: str = "cpu", dtype=np.float32, out=None) -> list:
    """Indicator `name` (one of SWEEP_NAMES) over one series for many periods.

    `inputs`: the series (one 1-D array, or the tuple (high, low, close) for atr, adx,
    plus_di, minus_di); `periods`: integers >= the indicator's minimum. Returns one array
    per period, in the order given, each equal bit for bit to `name(*inputs, n)`.
    On the cpu backend the names of `LANE_CORES` run all periods in one pass of a lane
    core and return the columns of one time-major [T, len(periods)] block (strided views;
    `np.ascontiguousarray` one where a contiguous copy is needed); other names and
    backends call the single-period function once per period. `out`: that block, given
    (a C-contiguous [T, len(periods)] array of `dtype`, cpu lane cores only) to be reused
    across calls: its pages are already mapped, so a repeated sweep skips the page faults of
    a fresh 100-period block (hundreds of MB).
    """
    arrays = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if name not in SWEEP_NAMES:
        raise ValueError(f"sweep: unknown indicator {name!r}; expected one of {sorted(SWEEP_NAMES)}")
    public = globals()[name]
    spec = SPECS[ALIASES.get(name, name)]
    if len(arrays) != spec.n_inputs:
        expected = "(high, low, close)" if spec.n_inputs == 3 else "one series"
        raise ValueError(f"sweep: {name} takes {expected}, got {len(arrays)} input series")
    ns = np.asarray(periods)
    if ns.ndim != 1 or ns.size == 0 or ns.dtype.kind not in "iu":
        raise ValueError(f"sweep: periods must be a non-empty 1-D list of integers, got {periods!r}")
    if int(ns.min()) < spec.min_n:
        raise ValueError(f"sweep: {name} periods must be integers >= {spec.min_n}, got {int(ns.min())}")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    shapes = [tuple(np.shape(a)) for a in arrays]
    if any(len(sh) != 1 for sh in shapes) or len(set(shapes)) != 1:
        raise ValueError(f"sweep: expected 1-D series of one length, got shapes {shapes}")
    lane = backend == "cpu" and name in LANE_CORES
    if out is not None:
        want = (shapes[0][0], ns.size)
        if not lane or not isinstance(out, np.ndarray) or out.shape != want or out.dtype != dtype \
                or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError(f"sweep: out must be a writable C-contiguous {dtype} array of shape {want} "
                             f"(cpu, an indicator with a lane core), got {getattr(out, 'dtype', type(out).__name__)} "
                             f"{getattr(out, 'shape', '')}")
    if not lane:
        return [public(*arrays, int(n), backend=backend, dtype=dtype) for n in ns.tolist()]
    prepared, _, _ = _prepare(arrays, backend)
    core, extra = LANE_CORES[name]
    block = get_backend("cpu").run_lanes(core, [a[0] for a in prepared], ns.astype(np.int64), extra, dtype, out)
    return [block[:, j] for j in range(block.shape[1])]


def lanes(name: str, inputs, n: int, *, dtype=np.float32) -> np.ndarray:
    """Indicator `name` (a key of `LANE_CORES`) over every column of time-major [T, S]
    panels at once (cpu): column s of the result is bit for bit `name(column s, n)`.

    The lane core vectorises across the columns, so a C-contiguous panel is the fast case;
    a [series, time] batch is better served by `name(batch, n)` than by transposing it."""
    arrays = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if name not in LANE_CORES:
        raise ValueError(f"lanes: no multi-lane core for {name!r}; have {sorted(LANE_CORES)}")
    spec = SPECS[ALIASES.get(name, name)]
    if len(arrays) != spec.n_inputs:
        raise ValueError(f"lanes: {name} takes {spec.n_inputs} input panels, got {len(arrays)}")
    if not isinstance(n, (int, np.integer)) or n < spec.min_n:
        raise ValueError(f"{name}: period must be an integer >= {spec.min_n}, got {n!r}")
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    panels = [np.asarray(a) for a in arrays]
    if any(a.ndim != 2 or a.shape != panels[0].shape for a in panels):
        raise ValueError(f"lanes: expected time-major [T, S] panels of one shape, got {[a.shape for a in panels]}")
    panels = [np.ascontiguousarray(a if a.dtype in (np.float32, np.float64) else a.astype(np.float64)) for a in panels]
    core, extra = LANE_CORES[name]
    periods = np.full(panels[0].shape[1], int(n), dtype=np.int64)
    return get_backend("cpu").run_lanes(core, panels, periods, extra, dtype, None)


def _unary(name: str):
    def fn(x, n: int, *, backend: str = "cpu", dtype=np.float32):
        return _run(name, (x,), (n,), backend, dtype)[0]

    fn.__name__ = name
    fn.__doc__ = f"{name.upper()} of `x` over `n` rows (TA-Lib semantics; see module docstring)."
    return fn


sma = _unary("sma")
ema = _unary("ema")
wma = _unary("wma")
dema = _unary("dema")
tema = _unary("tema")
lsma = _unary("lsma")
kama = _unary("kama")
rsi = _unary("rsi")


def hma(x, n: int, *, backend: str = "cpu", dtype=np.float32):
    """Hull MA: WMA(2*WMA(x, n//2) - WMA(x, n), int(sqrt(n)))."""
    return _run("hma", (x,), (n,), backend, dtype)[0]


def rolling_std(x, n: int, *, backend: str = "cpu", dtype=np.float32):
    """Population standard deviation over n rows (TA-Lib STDDEV with nbdev 1)."""
    return _run("moments", (x,), (n, 0), backend, dtype)[0]


def zscore(x, n: int, *, backend: str = "cpu", dtype=np.float32):
    """(x - SMA(x, n)) / STDDEV(x, n); 0 where the standard deviation is 0."""
    return _run("moments", (x,), (n, 1), backend, dtype)[0]


def returns(x, n: int = 1, *, backend: str = "cpu", dtype=np.float32):
    """Simple return over n rows, (x[t] - x[t-n]) / x[t-n] (TA-Lib ROCP)."""
    return _run("rocp", (x,), (n,), backend, dtype)[0]


def atr(high, low, close, n: int, *, backend: str = "cpu", dtype=np.float32):
    """Average true range, Wilder smoothing seeded by the mean of the first n true ranges."""
    return _run("atr", (high, low, close), (n,), backend, dtype)[0]


def dmi(high, low, close, n: int, *, backend: str = "cpu", dtype=np.float32):
    """(+DI, -DI, ADX) in one pass; the cheaper call when more than one is needed."""
    plus, minus, adx_ = _run("dmi", (high, low, close), (n, 0), backend, dtype)
    return plus, minus, adx_


def plus_di(high, low, close, n: int, *, backend: str = "cpu", dtype=np.float32):
    """+DI alone (the DMI core without its DX/ADX work)."""
    return _run("dmi", (high, low, close), (n, 1), backend, dtype)[0]


def minus_di(high, low, close, n: int, *, backend: str = "cpu", dtype=np.float32):
    """-DI alone (the DMI core without its DX/ADX work)."""
    return _run("dmi", (high, low, close), (n, 2), backend, dtype)[1]


def adx(high, low, close, n: int, *, backend: str = "cpu", dtype=np.float32):
    """ADX alone (the DMI core storing only its third output: which=3)."""
    return _run("dmi", (high, low, close), (n, 3), backend, dtype)[2]


def volatility_percent(high, low, close, *, backend: str = "cpu", dtype=np.float32):
    """ATR(14) / close * 100 (the trade log's Volatility Percent column, unrounded)."""
    a = atr(high, low, close, 14, backend=backend, dtype=np.float64)
    return (a / close * 100.0).astype(dtype) if _kind(a) != "torch" else (a / close * 100.0).to(_torch_dtype(dtype))


def volatility_ratio(high, low, close, *, backend: str = "cpu", dtype=np.float32):
    """ATR(14) / ATR(28) (the trade log's Volatility Ratio column, unrounded)."""
    a14 = atr(high, low, close, 14, backend=backend, dtype=np.float64)
    a28 = atr(high, low, close, 28, backend=backend, dtype=np.float64)
    ratio = a14 / a28
    return ratio.astype(dtype) if _kind(ratio) != "torch" else ratio.to(_torch_dtype(dtype))


def _torch_dtype(dtype):
    import torch

    return torch.float32 if np.dtype(dtype) == np.float32 else torch.float64
