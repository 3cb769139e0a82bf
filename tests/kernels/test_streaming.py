"""Streaming features and specialists (kernels.indicators.streaming) equal the batch registries.

Fed the bars one at a time, a `SymbolStream` gives every bar's 19 features and 4
specialist scores exactly (bit for bit, NaN warm-up included) as the batch path computes
them over the same history: `compute_features` (float32 and float64 precision) and
`run_specialists` (float32 scores, what the `specialists` asset stores). Series: GOOG
daily (backtesting.test, 2148 bars, cast to float32 as raw_bars stores them) and a random
walk with a flat stretch and gaps (zero ranges, zero variance, RSI 0/0).

One registry serves both paths: every `Feature` and `Specialist` entry names its batch
formula and its `stream`. The per-entry tests iterate over the registries, so an entry
added there is checked here (replayed on its own over a random OHLCV series) without
touching this file.
"""

from __future__ import annotations

import math
import pickle
from functools import lru_cache

import numpy as np
import pytest

from kernels.registry import features as feature_registry
from kernels.registry import specialists as specialist_registry
from kernels.registry.features import FEATURE_NAMES, FEATURES, Feature, compute_features
from kernels.panel import Panel
from kernels.registry.specialists import PANEL_COLUMNS, SPECIALIST_COLUMNS, SPECIALISTS, run_specialists
from kernels import atc, indicators
from kernels.atc import cpu as atc_cpu
from kernels.atc.stream import ATCUpdater, PineKAMAUpdater
from kernels.seller_exhaustion import (
    PRESETS,
    EwmUpdater,
    SellerExhaustionUpdater,
    SellerParams,
    ewm_adjust_false,
    seller_exhaustion,
)
from kernels.indicators.streaming import (
    STREAM_FEATURES,
    STREAM_SPECIALISTS,
    SymbolStream,
    replay_entry,
)
from kernels.indicators.updaters import DMIUpdater, HMAUpdater, replay
from tests.kernel_data import walk_ohlc


def _goog() -> dict[str, np.ndarray]:
    from backtesting.test import GOOG

    return {c: GOOG[c.capitalize()].to_numpy(dtype=np.float32) for c in PANEL_COLUMNS}


def _walk() -> dict[str, np.ndarray]:
    o, h, l, c = walk_ohlc(1500, seed=3)
    rng = np.random.default_rng(3)
    volume = rng.lognormal(13.0, 0.4, c.shape[0])
    volume[rng.integers(60, c.shape[0], 40)] *= 8.0  # volume spikes: seller-exhaustion candidates
    return {k: v.astype(np.float32) for k, v in zip(PANEL_COLUMNS, (o, h, l, c, volume))}


def _random_ohlcv(n: int = 2500, seed: int = 11) -> dict[str, np.ndarray]:
    """A realistic random daily OHLCV series: fat-tailed log returns with volatility
    clustering, overnight gaps, intraday ranges beyond open and close, volume rising with
    the size of the move (and a few spikes); float32, as raw_bars stores bars."""
    rng = np.random.default_rng(seed)
    log_sigma = np.empty(n)
    log_sigma[0] = math.log(0.015)
    shocks = rng.normal(0.0, 0.15, n)
    for t in range(1, n):  # AR(1) log-volatility: calm and stormy stretches
        log_sigma[t] = math.log(0.015) + 0.97 * (log_sigma[t - 1] - math.log(0.015)) + shocks[t]
    sigma = np.exp(log_sigma)
    ret = 0.0003 + sigma * rng.standard_t(4, n) / math.sqrt(2.0)
    close = 50.0 * np.exp(np.cumsum(ret))
    prev = np.concatenate([[50.0], close[:-1]])
    open_ = prev * np.exp(sigma * 0.3 * rng.standard_normal(n))
    high = np.maximum(open_, close) * np.exp(sigma * 0.5 * np.abs(rng.standard_normal(n)))
    low = np.minimum(open_, close) * np.exp(-sigma * 0.5 * np.abs(rng.standard_normal(n)))
    volume = rng.lognormal(14.0, 0.3, n) * (1.0 + 30.0 * np.abs(ret))
    volume[rng.integers(100, n, 30)] *= 6.0
    return {k: v.astype(np.float32) for k, v in zip(PANEL_COLUMNS, (open_, high, low, close, volume))}


SERIES = {"goog": _goog(), "walk": _walk()}
RANDOM = _random_ohlcv()


def _stream(bars, precision="float32"):
    return SymbolStream(precision).replay(*(bars[c] for c in PANEL_COLUMNS))


def _assert_same(got, want, what):
    assert got.dtype == want.dtype, what
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN positions")
    np.testing.assert_array_equal(got, want, err_msg=what)


def test_streaming_names_follow_the_registries():
    assert STREAM_FEATURES == tuple(FEATURE_NAMES)
    assert STREAM_SPECIALISTS == tuple(s.name for s in SPECIALISTS)


# ---- every registry entry, on its own: stream == batch ---------------------------------


@lru_cache(maxsize=None)
def _random_batch_features(dtype: str) -> dict[str, np.ndarray]:
    return compute_features(RANDOM, dtype=np.dtype(dtype))


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("feature", FEATURES, ids=lambda f: f.name)
def test_every_registered_feature_streams_its_batch_formula_bit_for_bit(feature, precision):
    want = _random_batch_features(precision)[feature.name]
    assert np.isfinite(want).sum() > len(want) // 2, "a comparison of warm-up NaN only"
    got = replay_entry(feature, RANDOM, dtype=np.dtype(precision))
    _assert_same(got, want, f"{feature.name} {precision}")


@pytest.mark.parametrize("spec", SPECIALISTS, ids=lambda s: s.name)
def test_every_registered_specialist_streams_its_batch_function_bit_for_bit(spec):
    with np.errstate(invalid="ignore", divide="ignore"):
        want = spec.fn(Panel.from_columns(RANDOM))
    assert want.dtype == np.float32 and np.isfinite(want).sum() > len(want) // 2
    got = replay_entry(spec, RANDOM, dtype=np.float32)  # the specialists compute in float32
    _assert_same(got, want, spec.name)


def test_an_atc_entry_with_other_parameters_streams_its_batch_function_bit_for_bit():
    """`atc_specialist(**params)` (settings.atc: lam, decay, cutout, ...) passes the same
    parameters to the batch kernel and to the streaming updater."""
    params = {"lam": 0.5, "decay": 0.1, "cutout": 30, "length": 20}
    spec = specialist_registry.atc_specialist(**params)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = spec.fn(Panel.from_columns(RANDOM))
    x = np.asarray(RANDOM["close"])
    np.testing.assert_array_equal(want, atc.average_signal(x, **params))
    assert np.isnan(want[:30]).all() and np.isfinite(want[30:]).all() and spec.warmup == 2 * (26 - 1)
    _assert_same(replay_entry(spec, RANDOM, dtype=np.float32), want, "atc with parameters")
    default = next(s for s in SPECIALISTS if s.name == "atc")
    assert default.fn.keywords == specialist_registry.ATC_DEFAULTS == {
        "robustness": "Medium", "length": 28, "lam": 0.02, "decay": 0.03, "cutout": 0}
    with pytest.raises(ValueError, match="unknown"):
        specialist_registry.atc_specialist(lamda=0.1)


def test_the_registry_arithmetic_on_one_element_arrays_gives_the_same_values(monkeypatch):
    """The path `u.apply` takes under NumPy 1.x (no NEP 50 scalar promotion)."""
    import kernels.indicators.streaming as streaming

    bars = {c: v[:400] for c, v in RANDOM.items()}
    want = [replay_entry(e, bars, dtype=d) for e, d in _apply_entries()]
    monkeypatch.setattr(streaming, "SCALARS_PROMOTE_AS_ARRAYS", False)
    for (e, d), w in zip(_apply_entries(), want):
        _assert_same(replay_entry(e, bars, dtype=d), w, f"{e.name} {np.dtype(d)}")


def _apply_entries():
    """The registry entries that do arithmetic of their own (not the atc and seller ones)."""
    skip = {"atc", "seller_exhaustion"}
    return [(f, d) for f in FEATURES for d in (np.float32, np.float64)] + [
        (s, np.float32) for s in SPECIALISTS if s.name not in skip]


def test_a_feature_added_to_the_registry_is_streamed_without_other_changes(monkeypatch):
    extra = Feature("f_sma7", lambda k: k("sma", ("close",), n=7), ("sma", 7), lambda u: u("sma", ("close",), n=7))
    monkeypatch.setattr(feature_registry, "FEATURES", FEATURES + (extra,))
    bars = {c: v[:300] for c, v in RANDOM.items()}
    feats, _ = _stream(bars)
    want = compute_features(bars)
    assert feats.shape == (300, len(FEATURES) + 1)
    for j, f in enumerate(feature_registry.FEATURES):
        _assert_same(feats[:, j], want[f.name], f.name)


def test_entries_making_the_same_kernel_call_share_one_updater():
    """+DI, -DI and ADX read one DMI updater, as the batch path runs dmi once for the three."""
    nodes = SymbolStream()._u.nodes
    assert sum(isinstance(n.updater, DMIUpdater) for n in nodes) == 1
    assert len({n.key for n in nodes}) == len(nodes)


def test_a_pickled_stream_built_for_other_registries_is_refused():
    s = SymbolStream()
    s.replay(*(RANDOM[c][:50] for c in PANEL_COLUMNS))
    state = s.__getstate__()
    state["nodes"] = state["nodes"][:-1]  # as if the registries now needed another updater
    with pytest.raises(ValueError, match="other registries"):
        SymbolStream.__new__(SymbolStream).__setstate__(state)


def test_a_state_pickled_by_the_hand_written_stream_is_refused_with_a_value_error():
    """The inference loader rebuilds a state on ValueError (it does not catch KeyError)."""
    old = {"precision": "float32", "bars": 10, "_ret1": None, "features": None, "scores": None}
    with pytest.raises(ValueError, match="format"):
        SymbolStream.__new__(SymbolStream).__setstate__(old)


@pytest.mark.parametrize("series", sorted(SERIES))
@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_every_feature_equals_compute_features_bit_for_bit(series, precision):
    bars = SERIES[series]
    feats, _ = _stream(bars, precision)
    want = compute_features(bars, dtype=np.float32 if precision == "float32" else np.float64)
    for j, name in enumerate(FEATURE_NAMES):
        _assert_same(feats[:, j], want[name], f"{series} {precision} {name}")


@pytest.mark.parametrize("series", sorted(SERIES))
@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_every_specialist_equals_run_specialists_bit_for_bit(series, precision):
    """Whatever the feature precision, the scores are run_specialists' float32 ones."""
    bars = SERIES[series]
    _, scores = _stream(bars, precision)
    want = run_specialists(Panel.from_columns({c: bars[c] for c in PANEL_COLUMNS}))
    for j, col in enumerate(SPECIALIST_COLUMNS):
        _assert_same(scores[:, j], want[col], f"{series} {col}")


def test_the_series_exercise_every_specialist_branch():
    """Not a vacuous comparison: signals fire, ATC takes both signs, scores clip."""
    for name, bars in SERIES.items():
        _, scores = _stream(bars)
        mr, rsi, atc_, seller = scores.T
        assert np.nanmax(np.abs(mr)) == 1.0, name  # clipped
        assert np.nanmin(atc_) < -0.5 < 0.5 < np.nanmax(atc_), name
        assert 0 < np.nansum(seller) < len(seller) / 10, name
        assert np.isfinite(rsi[20:]).all(), name


def test_a_stream_continued_after_pickling_equals_one_unbroken_replay():
    bars = SERIES["goog"]
    cols = [bars[c] for c in PANEL_COLUMNS]
    whole_f, whole_s = SymbolStream().replay(*cols)
    first = SymbolStream()
    first.replay(*(c[:1000] for c in cols))
    resumed = pickle.loads(pickle.dumps(first))
    rest_f, rest_s = resumed.replay(*(c[1000:] for c in cols))
    np.testing.assert_array_equal(rest_f, whole_f[1000:])
    np.testing.assert_array_equal(rest_s, whole_s[1000:])
    assert resumed.bars == len(cols[0])


def test_update_returns_the_last_bar_and_keeps_it():
    bars = SERIES["goog"]
    s = SymbolStream()
    for row in zip(*(bars[c][:300].tolist() for c in PANEL_COLUMNS)):
        feats, scores = s.update(*row)
    assert feats.shape == (len(FEATURE_NAMES),) and feats.dtype == np.float32
    assert scores.shape == (len(SPECIALIST_COLUMNS),) and scores.dtype == np.float32
    assert s.features is feats and s.scores is scores and s.bars == 300
    assert np.isfinite(feats).all() and np.isfinite(scores).all()


# ---- the families' own updaters (kernels.seller_exhaustion, kernels.atc.stream) ---------


@pytest.mark.parametrize("span", [1, 10, 50])
def test_ewm_updater_equals_pandas_style_ewm_adjust_false(span):
    x = SERIES["goog"]["close"].astype(np.float64)
    np.testing.assert_array_equal(replay(EwmUpdater(span), x), ewm_adjust_false(x, span))


@pytest.mark.parametrize("series", sorted(SERIES))
@pytest.mark.parametrize("n", [3, 10, 28, 34])
def test_pine_kama_updater_equals_the_atc_core(series, n):
    x = SERIES[series]["close"]
    want = np.empty(x.shape[0])
    atc_cpu.kama_pine_cpu(x, n, want)  # the compiled core the cpu bank runs
    _assert_same(replay(PineKAMAUpdater(n), x), want, f"kama {n}")


@pytest.mark.parametrize("series", sorted(SERIES))
def test_hull_updater_repeats_the_core_for_both_output_dtypes(series):
    x = SERIES[series]["close"]
    rounded = replay(HMAUpdater(20, round_diff=True), x)
    _assert_same(rounded.astype(np.float32), indicators.hma(x, 20, dtype=np.float32), "hma float32")
    _assert_same(replay(HMAUpdater(20, round_diff=False), x), indicators.hma(x, 20, dtype=np.float64), "hma float64")


@pytest.mark.parametrize("series", sorted(SERIES))
@pytest.mark.parametrize("params", [PRESETS["daily"], SellerParams(ema_fast=5, ema_slow=20, z_window=30, atr_window=7,
                                                                    vol_z_min=1.5, tr_z_min=0.5, cloc_min=0.5)])
def test_seller_exhaustion_updater_equals_the_batch_signal_and_intermediates(series, params):
    b = SERIES[series]
    want = seller_exhaustion(b["high"], b["low"], b["close"], b["volume"], params)
    u = SellerExhaustionUpdater(params)
    got = {k: [] for k in want}
    for row in zip(b["high"].tolist(), b["low"].tolist(), b["close"].tolist(), b["volume"].tolist()):
        got["signal"].append(u.update(*row) == 1.0)
        for k in ("ema_f", "ema_s", "atr", "vol_z", "tr_z", "cloc"):
            got[k].append(getattr(u, k))
    for k, w in want.items():
        _assert_same(np.array(got[k], dtype=w.dtype), w, k)
    assert want["signal"].any()


@pytest.mark.parametrize(("kwargs"), [
    {},
    {"robustness": "Wide", "length": 20, "cutout": 40},
    {"robustness": "Narrow", "length": {"EMA": 10, "KAMA": 15}, "lam": 0.5, "decay": 0.1,
     "weights": {"EMA": 2.0, "LSMA": 0.5}},
], ids=["default", "wide-cutout", "narrow-lengths-weights"])
def test_atc_updater_equals_the_batch_kernel_final_and_families(kwargs):
    x = SERIES["goog"]["close"]
    families, final = atc.compute(x, dtype=np.float64, **kwargs)
    u = ATCUpdater(**kwargs)
    got_final, got_fam = [], []
    for v in x.tolist():
        got_final.append(u.update(v))
        got_fam.append(list(u.families))
    _assert_same(np.array(got_final), final, "final")
    got_fam = np.array(got_fam)
    for f, name in enumerate(atc.FAMILIES):
        _assert_same(got_fam[:, f], families[name], name)


def test_atc_growth_blocks_repeat_the_kernels_growth_bit_for_bit():
    """growth[t] = exp(lam*(t - cutout)) of the absolute bar index, evaluated a block at a
    time, equals the batch kernel's one-array evaluation across block boundaries."""
    u = ATCUpdater(lam=3.0, cutout=5)
    want = atc.AtcParams("Medium", 28, 3.0, 0.03, 5, None).growth(3 * ATCUpdater._GROWTH_BLOCK + 7)
    got = np.array([u._growth_at(t) for t in range(want.shape[0])])
    np.testing.assert_array_equal(got, want)
    assert u._growth.shape[0] == ATCUpdater._GROWTH_BLOCK  # O(1) state


def test_atc_updater_refuses_a_non_finite_close_as_the_batch_kernel_does():
    u = ATCUpdater()
    u.update(10.0)
    with pytest.raises(ValueError, match="finite"):
        u.update(math.nan)
    with pytest.raises(ValueError, match="finite"):
        atc.average_signal(np.array([10.0, math.nan]))
