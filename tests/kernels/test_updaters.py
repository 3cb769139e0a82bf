"""Streaming updaters (kernels.indicators.updaters) equal the batch kernels bar for bar.

Every updater repeats its core's floating-point operations in the core's order, so the
comparison is exact (`assert_array_equal`, identical NaN positions) for all of them, on a
real price series (GOOG daily, 2148 rows) and on a cent-rounded random walk with flat
stretches (repeated values: zero changes, zero true ranges, zero variance, ties between
up and down moves, and a flat start that makes every seed zero).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import pytest

from kernels import indicators
from kernels.indicators import updaters
from kernels.indicators.updaters import UPDATERS, replay

PERIODS = (2, 9, 14)
# (core as kernels.indicators.SPECS names it, its parameters): each core's updater with
# periods 2, 9, 14 (moments in both modes), returns (rocp) also with its default n = 1; the
# two volatility updaters (not cores: ATR arithmetic of the batch API) with their fixed 14/28.
MODES = {"moments": [{"mode": 0}, {"mode": 1}], "dmi": [{"which": 0}]}
CASES = [(name, {"n": n, **extra}) for name in UPDATERS for n in PERIODS for extra in MODES.get(name, [{}])]
CASES += [("rocp", {"n": 1}), ("volatility_percent", {}), ("volatility_ratio", {})]
IDS = [f"{name}-{'-'.join(map(str, params.values())) or 'default'}" for name, params in CASES]
VOLATILITY = {"volatility_percent": updaters.VolatilityPercentUpdater,
              "volatility_ratio": updaters.VolatilityRatioUpdater}


def _make(name, params):
    """The updater of a case: UPDATERS[name] for float64 outputs (the batch side below)."""
    return VOLATILITY[name]() if name in VOLATILITY else UPDATERS[name](False, **params)


def _public(name, params) -> str:
    """The public function of kernels.indicators that runs core `name` with `params`."""
    if name == "moments":
        return "zscore" if params["mode"] else "rolling_std"
    return {"rocp": "returns"}.get(name, name)


def _goog():
    from backtesting.test import GOOG

    return {k: GOOG[k].to_numpy(dtype=float) for k in ("High", "Low", "Close")}


def _random_walk_with_flat_stretches(t_len=3000, seed=7):
    rng = np.random.default_rng(seed)
    flat = np.zeros(t_len, dtype=bool)
    flat[:40] = True  # a flat start: zero seeds for RSI, ATR, DMI, KAMA, moments
    for start in rng.integers(40, t_len - 60, size=40):
        flat[start : start + rng.integers(2, 45)] = True
    steps = np.where(flat, 0.0, rng.normal(0.0, 0.01, t_len))
    close = np.round(50.0 * np.exp(np.cumsum(steps)), 2)
    spread = np.where(flat, 0.0, np.round(np.abs(rng.normal(0.0, 0.4, t_len)), 2))
    up = np.round(spread * rng.uniform(0.0, 1.0, t_len), 2)
    return {"High": close + up, "Low": close - (spread - up), "Close": close}


SERIES = {"goog": _goog(), "walk": _random_walk_with_flat_stretches()}


def _inputs(u, bars):
    return (bars["Close"],) if u.n_inputs == 1 else (bars["High"], bars["Low"], bars["Close"])


def _batch(name, params, inputs):
    args = (params["n"],) if "n" in params else ()
    with np.errstate(divide="ignore", invalid="ignore"):  # ATR14/ATR28 = 0/0 on a flat start
        out = getattr(indicators, _public(name, params))(*inputs, *args, dtype=np.float64)
    return out if isinstance(out, tuple) else (out,)


def test_the_streaming_vocabulary_is_the_spec_names():
    """One vocabulary: every core of kernels.indicators.SPECS has its updater under its own
    name, and nothing else is a key (the public aliases and the families are not)."""
    assert list(UPDATERS) == list(indicators.SPECS)
    assert all(isinstance(UPDATERS[name](True, **params), updaters.Updater)
               for name, params in CASES if name in UPDATERS)


def test_the_families_keep_their_updaters():
    import kernels.indicators.streaming as streaming
    from kernels import seller_exhaustion
    from kernels.atc import stream as atc_stream

    assert atc_stream.ATCUpdater.__module__ == "kernels.atc.stream"
    assert seller_exhaustion.SellerExhaustionUpdater.__module__ == "kernels.seller_exhaustion"
    assert not hasattr(streaming, "STREAM_CORES") and not hasattr(streaming, "ATCUpdater")


@pytest.mark.parametrize("series", sorted(SERIES))
@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_updater_equals_batch_kernel_bit_for_bit(name, params, series):
    u = _make(name, params)
    inputs = _inputs(u, SERIES[series])
    got = replay(u, *inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = _batch(name, params, inputs)
    assert len(got) == len(want) == u.n_outputs
    for g, w in zip(got, want):
        assert g.dtype == np.float64 and g.shape == w.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(g, w)  # exact: same operations in the same order


@pytest.mark.parametrize(("name", "params"), [
    ("sma", {}), ("ema", {}), ("wma", {}), ("dema", {}), ("tema", {}), ("atr", {}), ("moments", {"mode": 0}),
    ("moments", {"mode": 1})], ids=["sma", "ema", "wma", "dema", "tema", "atr", "rolling_std", "zscore"])
def test_period_one_is_exact_too(name, params):
    """n = 1 degenerates every state machine (windows of one, a re-anchoring on every bar)."""
    params = {"n": 1, **params}
    u = _make(name, params)
    inputs = _inputs(u, SERIES["walk"])
    got = replay(u, *inputs)
    (want,) = _batch(name, params, inputs)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got, want)


def test_the_walk_exercises_the_zero_branches():
    bars = SERIES["walk"]
    c = bars["Close"]
    assert (np.diff(c) == 0).mean() > 0.2  # many repeated values
    assert (indicators.rolling_std(c, 9, dtype=np.float64) == 0).sum() > 100
    assert (indicators.rsi(c, 14, dtype=np.float64)[14:40] == 0).all()  # gain + loss == 0
    plus, minus, _ = indicators.dmi(bars["High"], bars["Low"], c, 9, dtype=np.float64)
    assert (plus[9:40] == 0).all() and (minus[9:40] == 0).all()  # smoothed TR == 0
    up, down = np.diff(bars["High"]), -np.diff(bars["Low"])
    assert ((up == down) & (up > 0)).any()  # a tie between +DM and -DM


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_ready_flips_exactly_at_the_lookback(name, params):
    u = _make(name, params)
    expected = {"volatility_percent": 14, "volatility_ratio": 28}.get(name)
    if expected is None:
        expected = indicators.lookback("adx" if name == "dmi" else _public(name, params), params["n"])
    assert u.lookback == expected
    inputs = _inputs(u, SERIES["goog"])
    ready, first = [], []
    for bar in zip(*inputs):
        out = u.update(*bar)
        ready.append(u.ready)
        first.append(out[-1] if isinstance(out, tuple) else out)
    assert ready.index(True) == expected and all(ready[expected:]) and not any(ready[:expected])
    first = np.array(first)
    assert np.isnan(first[:expected]).all() and np.isfinite(first[expected:]).all()


def test_dmi_reports_the_directional_indices_before_adx():
    u = updaters.DMIUpdater(9)
    g = SERIES["goog"]
    for t, bar in enumerate(zip(g["High"], g["Low"], g["Close"])):
        p, m, a = u.update(*bar)
        assert u.di_ready == (t >= 9) and (not math.isnan(p)) == (t >= 9)
        assert u.ready == (t >= 17) and (not math.isnan(a)) == (t >= 17)


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_update_returns_python_floats_and_keeps_the_last_value(name, params):
    u = _make(name, params)
    assert not u.ready
    for bar in list(zip(*_inputs(u, SERIES["goog"])))[:60]:
        out = u.update(*bar)
        outs = out if isinstance(out, tuple) else (out,)
        assert all(type(v) is float for v in outs)
    assert u.value == out


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_warming_up_from_history_then_streaming_equals_one_replay(name, params):
    u = _make(name, params)
    inputs = _inputs(u, SERIES["walk"])
    whole = replay(_make(name, params), *inputs)
    head = replay(u, *(x[:1000] for x in inputs))
    live = [u.update(*bar) for bar in zip(*(x[1000:].tolist() for x in inputs))]
    if u.n_outputs == 1:
        np.testing.assert_array_equal(np.concatenate([head, live]), whole)
    else:
        for k in range(u.n_outputs):
            np.testing.assert_array_equal(np.concatenate([head[k], [v[k] for v in live]]), whole[k])


def _containers(obj, seen=None):
    """Every deque or list reachable from an updater's attributes (nested blocks included)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, (deque, list)):
        return [obj]
    if isinstance(obj, tuple):
        return [c for item in obj for c in _containers(item, seen)]
    if type(obj).__module__ == updaters.__name__ and hasattr(obj, "__dict__"):
        return [c for v in vars(obj).values() for c in _containers(v, seen)]
    return []


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_state_is_bounded_by_the_period_not_the_history(name, params):
    n = params.get("n") or {"volatility_percent": 14}.get(name, 28)
    u = _make(name, params)
    rng = np.random.default_rng(1)
    close = 100.0 + np.cumsum(rng.normal(0, 1, 10_000))
    bars = [(c + 1.0, c - 1.0, c) for c in close.tolist()] if u.n_inputs == 3 else close.tolist()
    for bar in bars:
        u.update(*bar) if u.n_inputs == 3 else u.update(bar)
    buffers = _containers(u)
    assert buffers or name in ("ema", "dema", "tema", "rsi", "atr", "dmi") or name.startswith("volatility")
    for buf in buffers:
        assert isinstance(buf, deque) and buf.maxlen is not None and buf.maxlen <= n + 1
        assert len(buf) <= n + 1


@pytest.mark.parametrize(
    ("cls", "n"),
    [(updaters.LSMAUpdater, 1), (updaters.HMAUpdater, 1), (updaters.KAMAUpdater, 1), (updaters.RSIUpdater, 1),
     (updaters.DMIUpdater, 1), (updaters.SMAUpdater, 0), (updaters.EMAUpdater, 2.0)],
)
def test_invalid_periods_are_rejected(cls, n):
    with pytest.raises(ValueError, match="period must be an integer"):
        cls(n)


def test_replay_checks_its_inputs():
    with pytest.raises(ValueError, match="takes 3 input series"):
        replay(updaters.ATRUpdater(14), np.ones(5))
    with pytest.raises(ValueError, match="one length"):
        replay(updaters.ATRUpdater(14), np.ones(5), np.ones(5), np.ones(4))
