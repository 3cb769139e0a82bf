"""Population backtest: unique indicator series shared across individuals, backend dispatch,
CPU fallback.

`build_walk_inputs` groups the individuals by the parameters each series depends on and
computes every unique series once, on the host, with the very functions that
`kernels.seller_exhaustion.seller_exhaustion` calls (so every individual's signal is the
same bits as the reference's: a signal computed another way flips bars
at float ties; the test checks it):

    series     key                                   computed with
    ema        span (ema_fast and ema_slow share)    ewm_adjust_false(close, span)
    atr        atr_window                            K.sma(true range, atr_window), all windows
                                                     in one K.sweep (bit for bit the same)
    vol_z      z_window                              K.zscore(volume, z_window), one K.sweep
    tr_z       (z_window, atr_window)                zscore_after_nan(atr * atr_window, z_window)
    cloc       -                                     (close - low) / (high - low), NaN if equal
    stop       (atr_window, atr_stop_mult)           trade_walk.stop_line
    target     (atr_window, atr_stop_mult, reward_r) trade_walk.target_line

These are O(unique keys x bars) and cheap next to the O(individuals x bars) walks; the stop
and target lines stay on the host so that the device never evaluates a*b + c (FMA
contraction, see `trade_walk`). Each individual then carries row indices into the banks
and its own thresholds. `n_series` counts the unique series computed.

`backtest_population(open, high, low, close, volume, individuals, backend)`:
backend "cpu" (numba, parallel over individuals), "cuda" (one GPU thread per individual;
runs under the CUDA simulator too), "auto" (cuda when a real GPU is present, i.e.
numba.cuda is available and the simulator is off, and the walks reach the measured
`strategy` break-even of `kernels.backends.routing`, else cpu); the backends are the
`strategy` family of `kernels.backends`. When a non-cpu backend raises, the call warns
(RuntimeWarning) and runs the cpu backend (`fallback=False` re-raises); `result.backend`
says which backend produced the result and `result.fallback` why.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from kernels import backends
from kernels.backends import routing
from kernels import indicators as K
from kernels.deprecations import renamed
from kernels.seller_exhaustion import true_range, zscore_after_nan, ewm_adjust_false
from kernels.strategy.params import BacktestParams, Individual, as_individuals
from kernels.strategy.results import PopulationResult
from kernels.strategy.trade_walk import stop_line, target_line

FAMILY = "strategy"  # its backends are registered in `kernels.strategy`
BACKENDS = ("auto", "cpu", "cuda")  # as registered today; `backtest_population` checks the registry


@dataclass
class WalkInputs:
    """Everything the walks read: float64 bar series [T], banks [K, T] of unique series, and
    per individual [N] the bank rows (int64) and parameters."""

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    ema: np.ndarray
    vol_z: np.ndarray
    tr_z: np.ndarray
    cloc: np.ndarray
    stop: np.ndarray
    target: np.ndarray
    k_fast: np.ndarray
    k_slow: np.ndarray
    k_vz: np.ndarray
    k_trz: np.ndarray
    k_stop: np.ndarray
    k_tgt: np.ndarray
    vol_z_min: np.ndarray
    tr_z_min: np.ndarray
    cloc_min: np.ndarray
    max_hold: np.ndarray
    cost_bps: np.ndarray
    n_series: dict[str, int] = field(default_factory=dict)


def _rows(keys: list) -> tuple[list, np.ndarray]:
    """Unique keys in first-seen order, and each key's row in that list."""
    index: dict = {}
    rows = np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
    return list(index), rows


def validate_ohlcv(open_, high, low, close, volume) -> list[np.ndarray]:
    """Five float64 contiguous arrays of one length >= 1, finite."""
    arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in (open_, high, low, close, volume)]
    if any(a.ndim != 1 for a in arrays) or len({a.shape[0] for a in arrays}) != 1 or arrays[0].shape[0] == 0:
        raise ValueError(f"open, high, low, close, volume must be 1-D of one length >= 1, got {[a.shape for a in arrays]}")
    for name, a in zip(("open", "high", "low", "close", "volume"), arrays):
        if not np.isfinite(a).all():
            raise ValueError(f"{name} holds non-finite values at rows {np.flatnonzero(~np.isfinite(a))[:5].tolist()}")
    return arrays


def build_walk_inputs(open_, high, low, close, volume, individuals) -> WalkInputs:
    """The shared indicator bank and per-individual rows/parameters (see the module docstring)."""
    o, h, l, c, v = validate_ohlcv(open_, high, low, close, volume)
    inds = as_individuals(individuals)
    sp = [i.seller for i in inds]
    bp = [i.backtest for i in inds]

    t_len = o.shape[0]
    spans, _ = _rows([p.ema_fast for p in sp] + [p.ema_slow for p in sp])
    span_row = {s: r for r, s in enumerate(spans)}
    ema = np.empty((len(spans), t_len))
    for r, s in enumerate(spans):
        ema[r] = ewm_adjust_false(c, s)
    k_fast = np.array([span_row[p.ema_fast] for p in sp], dtype=np.int64)
    k_slow = np.array([span_row[p.ema_slow] for p in sp], dtype=np.int64)

    tr = true_range(h, l, c)
    atr_keys, _ = _rows([p.atr_window for p in sp])
    # every window in one pass of the multi-lane SMA (each column bit for bit K.sma(tr, w))
    atr = dict(zip(atr_keys, K.sweep("sma", tr, atr_keys, dtype=np.float64)))

    vz_keys, k_vz = _rows([p.z_window for p in sp])
    vol_z = np.empty((len(vz_keys), t_len))
    for r, col in enumerate(K.sweep("zscore", v, vz_keys, dtype=np.float64)):  # bit for bit K.zscore(v, z)
        vol_z[r] = col

    trz_keys, k_trz = _rows([(p.z_window, p.atr_window) for p in sp])
    tr_z = np.empty((len(trz_keys), t_len))
    for r, (z, w) in enumerate(trz_keys):
        tr_z[r] = zscore_after_nan(atr[w] * w, z)

    rng = h - l
    with np.errstate(invalid="ignore", divide="ignore"):
        cloc = np.where(rng > 0, (c - l) / rng, np.nan)

    stop_keys, k_stop = _rows([(s.atr_window, float(b.atr_stop_mult)) for s, b in zip(sp, bp)])
    stop = np.empty((len(stop_keys), t_len))
    for r, (w, m) in enumerate(stop_keys):
        stop_line(l, atr[w], m, out=stop[r])
    stop_row = {k: r for r, k in enumerate(stop_keys)}
    tgt_keys, k_tgt = _rows([(s.atr_window, float(b.atr_stop_mult), float(b.reward_r)) for s, b in zip(sp, bp)])
    target = np.empty((len(tgt_keys), t_len))
    for r, (w, m, rr) in enumerate(tgt_keys):
        target_line(o, stop[stop_row[(w, m)]], rr, out=target[r])

    f64 = lambda xs: np.array(xs, dtype=np.float64)
    return WalkInputs(
        open=o, high=h, low=l, close=c, ema=ema, vol_z=vol_z, tr_z=tr_z, cloc=np.ascontiguousarray(cloc),
        stop=stop, target=target, k_fast=k_fast, k_slow=k_slow, k_vz=k_vz, k_trz=k_trz, k_stop=k_stop, k_tgt=k_tgt,
        vol_z_min=f64([p.vol_z_min for p in sp]), tr_z_min=f64([p.tr_z_min for p in sp]),
        cloc_min=f64([p.cloc_min for p in sp]), max_hold=np.array([b.max_hold for b in bp], dtype=np.int64),
        cost_bps=f64([b.cost_bps for b in bp]),
        n_series={"true_range": 1, "cloc": 1, "ema": len(spans), "atr": len(atr_keys), "vol_z": len(vz_keys),
                  "tr_z": len(trz_keys), "stop": len(stop_keys), "target": len(tgt_keys)},
    )


def signal_walk_inputs(open_, high, low, close, signal, atr, params) -> WalkInputs:
    """Walk inputs for an external boolean signal (hand-made cases, other signal rules):
    the seller test is made to reduce to `signal` (ema_f = 0 < ema_s = 1 where signal, all
    z-scores and cloc 1 with thresholds 0). `params`: one BacktestParams or a list of them."""
    o, h, l, c, _ = validate_ohlcv(open_, high, low, close, np.zeros(len(open_)))
    sig = np.asarray(signal, dtype=bool)
    atr = np.ascontiguousarray(atr, dtype=np.float64)
    bps = [params] if isinstance(params, BacktestParams) else list(params)
    n, t = len(bps), o.shape[0]
    stop_keys, k_stop = _rows([float(b.atr_stop_mult) for b in bps])
    stop = np.stack([stop_line(l, atr, m) for m in stop_keys])
    tgt_keys, k_tgt = _rows([(float(b.atr_stop_mult), float(b.reward_r)) for b in bps])
    target = np.stack([target_line(o, stop[stop_keys.index(m)], r) for m, r in tgt_keys])
    zeros = np.zeros(n, dtype=np.int64)
    return WalkInputs(
        open=o, high=h, low=l, close=c, ema=np.stack([np.zeros(t), sig.astype(np.float64)]),
        vol_z=np.ones((1, t)), tr_z=np.ones((1, t)), cloc=np.ones(t), stop=stop, target=target,
        k_fast=zeros, k_slow=zeros + 1, k_vz=zeros, k_trz=zeros, k_stop=k_stop, k_tgt=k_tgt,
        vol_z_min=np.zeros(n), tr_z_min=np.zeros(n), cloc_min=np.zeros(n),
        max_hold=np.array([b.max_hold for b in bps], dtype=np.int64),
        cost_bps=np.array([b.cost_bps for b in bps], dtype=np.float64),
    )


def real_gpu() -> bool:
    """A real CUDA device (not numba's simulator) is usable."""
    try:
        from numba import config, cuda

        return not config.ENABLE_CUDASIM and cuda.is_available()
    except Exception:  # noqa: BLE001 - no driver, no toolkit: no GPU
        return False


def _check(backend: str) -> None:
    names = ("auto", *backends.backends(FAMILY))
    if backend not in names:
        raise ValueError(f"backend must be one of {names}, got {backend!r}")


def run_walks(inp: WalkInputs, backend: str = "cpu", fallback: bool = True) -> PopulationResult:
    """Walk every individual of `inp` on `backend` ("auto" or a registered `strategy` backend:
    "cpu", "cuda"), falling back to the cpu backend when another one raises (unless
    fallback=False). "auto" is cuda on a real GPU when the walks' individual-bars reach the
    `strategy` break-even (`kernels.backends.routing`), else cpu."""
    _check(backend)
    if backend == "auto":
        work = inp.k_fast.shape[0] * inp.close.shape[0]
        backend = routing.route(FAMILY, work, "cuda") if real_gpu() else "cpu"
    reason = None
    if backend != "cpu":
        try:
            return backends.load(FAMILY, backend)(inp)
        except Exception as exc:  # any device failure: driver, toolkit, compilation, launch, memory
            if not fallback:
                raise
            reason = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"{backend.upper()} backtest failed ({reason}); running the cpu backend", RuntimeWarning,
                          stacklevel=3)
    result = backends.load(FAMILY, "cpu")(inp)
    result.fallback = reason
    return result


def backtest_population(open_, high, low, close, volume, individuals, backend: str = "auto",
                        fallback: bool = True, *, engine: str | None = None) -> PopulationResult:
    """Backtest every individual (Individual or flat dict) on one OHLCV series in one call.

    Returns ragged trades (offsets + flat arrays) and summary metrics per individual, in the
    order of `individuals`. The same trades as `cpu.backtest_one` run on each individual,
    on every backend: same indicator bits (shared bank), same walk code, and no
    FMA-contractible expression on the device (see `trade_walk`).

    `engine=` is the old name of `backend=` (announced once per process,
    kernels.deprecations).
    """
    backend = backend if engine is None else _old_engine(engine, backend)
    _check(backend)
    inp = build_walk_inputs(open_, high, low, close, volume, individuals)
    return run_walks(inp, backend, fallback)


def _old_engine(engine: str, backend: str) -> str:
    """The value of the old keyword `engine`, announced once; TypeError when `backend` is
    given too with another value."""
    if backend not in ("auto", engine):
        raise TypeError(f"backtest_population(): engine={engine!r} and backend={backend!r} are both given; "
                        "expected backend= alone (engine= is its old name)")
    renamed("backtest_population(engine=)", stacklevel=4)
    return engine


def backtest_signals(open_, high, low, close, signal, atr, params, backend: str = "cpu") -> PopulationResult:
    """The trade rules on an external boolean signal and ATR series (see `signal_walk_inputs`)."""
    return run_walks(signal_walk_inputs(open_, high, low, close, signal, atr, params), backend, fallback=False)


__all__ = ["BACKENDS", "Individual", "WalkInputs", "backtest_population", "backtest_signals",
           "build_walk_inputs", "real_gpu", "run_walks", "signal_walk_inputs"]
