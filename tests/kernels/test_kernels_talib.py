"""cpu kernels equal TA-Lib value for value (the C library is the oracle).

Outputs are compared in float64 (`dtype=np.float64`) with rtol 1e-9: the cores follow
TA-Lib's operation order, so differences are float64 rounding only. Two looser bounds:
LINEARREG (rtol 1e-7: TA-Lib recomputes each window's sums, we roll them in O(1)) and
STDDEV (rtol 1e-8: we sum deviations from a re-anchored value, which is closer to the exact
two-pass variance than TA-Lib's raw sums; both are within 1e-9 of exact on GOOG). The default
float32 outputs are compared with rtol 1e-4 after warm-up, as the issue asks. Warm-up
positions must be NaN exactly where TA-Lib's are.
"""

from __future__ import annotations

import numpy as np
import pytest
import talib

from kernels import indicators as K
from tests.kernel_data import goog_ohlc, walk_ohlc

SERIES = {"goog": goog_ohlc(), "walk": walk_ohlc(), "walk_seed2": walk_ohlc(900, seed=2)}
PERIODS = (2, 5, 14, 30)


def same(ours, ref, rtol=1e-9, atol=1e-9):
    assert np.array_equal(np.isnan(ours), np.isnan(ref)), "warm-up NaN positions differ"
    m = ~np.isnan(ref)
    np.testing.assert_allclose(ours[m], ref[m], rtol=rtol, atol=atol)


UNARY = {
    "sma": talib.SMA,
    "ema": talib.EMA,
    "wma": talib.WMA,
    "dema": talib.DEMA,
    "tema": talib.TEMA,
    "lsma": talib.LINEARREG,
    "kama": talib.KAMA,
    "rsi": talib.RSI,
    "rolling_std": talib.STDDEV,
    "returns": talib.ROCP,
}
HLC = {"atr": talib.ATR, "plus_di": talib.PLUS_DI, "minus_di": talib.MINUS_DI, "adx": talib.ADX}


@pytest.mark.parametrize("series", sorted(SERIES))
@pytest.mark.parametrize("n", PERIODS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_indicator_equals_talib(name, n, series):
    close = SERIES[series][3]
    ours = getattr(K, name)(close, n, dtype=np.float64)
    rtol = {"lsma": 1e-7, "rolling_std": 1e-8}.get(name, 1e-9)
    same(ours, UNARY[name](close, n), rtol=rtol)


@pytest.mark.parametrize("series", sorted(SERIES))
@pytest.mark.parametrize("n", PERIODS)
def test_kama_is_talib_bit_for_bit_as_both_fuse_its_multiply_adds(n, series):
    """TA-Lib's wheels are built with FMA (`vfmadd` in libta-lib), so its KAMA fuses
    er*diff + slow and (x - kama)*sc + kama; kama_core fuses the same two (kernels.indicators.fused)."""
    close = SERIES[series][3]
    ours = K.kama(close, n, dtype=np.float64)
    ref = talib.KAMA(close, n)
    np.testing.assert_array_equal(ours.view(np.int64), ref.view(np.int64))


def test_kama_over_ten_thousand_random_walk_rows_is_talib_bit_for_bit():
    close = 100 * np.exp(np.cumsum(np.random.default_rng(7).normal(0, 0.01, 10_000)))
    for n in (2, 10, 30):
        np.testing.assert_array_equal(K.kama(close, n, dtype=np.float64).view(np.int64),
                                      talib.KAMA(close, n).view(np.int64))


@pytest.mark.parametrize("series", sorted(SERIES))
@pytest.mark.parametrize("n", PERIODS)
@pytest.mark.parametrize("name", sorted(HLC))
def test_hlc_indicator_equals_talib(name, n, series):
    _, high, low, close = SERIES[series]
    same(getattr(K, name)(high, low, close, n, dtype=np.float64), HLC[name](high, low, close, n))


@pytest.mark.parametrize("n", PERIODS)
def test_hull_ma_equals_its_definition_from_talib_wma(n):
    close = SERIES["goog"][3]
    inner = 2.0 * talib.WMA(close, n // 2) - talib.WMA(close, n) if n // 2 > 1 else 2.0 * close - talib.WMA(close, n)
    ref = talib.WMA(inner, int(np.sqrt(n))) if int(np.sqrt(n)) > 1 else inner
    same(K.hma(close, n, dtype=np.float64), ref)


@pytest.mark.parametrize("n", (5, 20))
def test_zscore_is_distance_from_sma_in_stddevs(n):
    close = SERIES["walk"][3]
    std = talib.STDDEV(close, n)
    ref = np.where(std > 0, (close - talib.SMA(close, n)) / np.where(std > 0, std, 1), 0.0)
    ref[: n - 1] = np.nan
    same(K.zscore(close, n, dtype=np.float64), ref, rtol=1e-7, atol=1e-7)


def test_volatility_percent_and_ratio_follow_seed_001():
    _, high, low, close = SERIES["goog"]
    atr14, atr28 = talib.ATR(high, low, close, 14), talib.ATR(high, low, close, 28)
    same(K.volatility_percent(high, low, close, dtype=np.float64), atr14 / close * 100.0)
    same(K.volatility_ratio(high, low, close, dtype=np.float64), atr14 / atr28)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_default_float32_output_within_1e4_after_warmup(name):
    close = SERIES["goog"][3]
    ours = getattr(K, name)(close, 14)
    assert ours.dtype == np.float32
    same(ours.astype(np.float64), UNARY[name](close, 14), rtol=1e-4, atol=1e-4)


def test_float32_input_is_accepted_and_accumulated_in_float64():
    close = SERIES["goog"][3]
    ours = K.ema(close.astype(np.float32), 20, dtype=np.float64)
    same(ours, talib.EMA(close.astype(np.float32).astype(np.float64), 20))


def test_flat_stretch_after_movement_keeps_the_ratios_as_talib_does():
    _, high, low, close = SERIES["walk"]
    t = 250  # inside the flat stretch (rows 195..254), more than 14 rows in
    rsi = K.rsi(close, 14, dtype=np.float64)
    plus, minus, adx = K.dmi(high, low, close, 14, dtype=np.float64)
    # Gains, losses and ranges decay geometrically but never reach 0: the ratios hold.
    assert rsi[t] == pytest.approx(rsi[t - 1], rel=1e-12) and rsi[t] == pytest.approx(talib.RSI(close, 14)[t])
    assert plus[t] == pytest.approx(plus[t - 1], rel=1e-12)
    assert adx[t] == pytest.approx(talib.ADX(high, low, close, 14)[t], rel=1e-9)  # converging to the constant DX


def test_series_flat_from_the_start_gives_zero_rsi_and_di():
    flat = np.full(40, 5.0)
    assert (K.rsi(flat, 14)[14:] == 0).all() and (talib.RSI(flat, 14)[14:] == 0).all()
    assert (K.plus_di(flat, flat, flat, 14)[14:] == 0).all()


def test_batch_of_series_equals_one_call_per_series():
    closes = np.stack([walk_ohlc(500, seed=s)[3] for s in range(4)])
    batch = K.kama(closes, 10)
    for s in range(4):
        np.testing.assert_array_equal(batch[s], K.kama(closes[s], 10))


def test_series_shorter_than_the_lookback_is_all_nan():
    assert np.isnan(K.adx(np.ones(20), np.ones(20), np.ones(20), 14)).all()
    assert np.isnan(K.sma(np.arange(5.0), 10)).all()
    assert K.sma(np.arange(0.0), 3).shape == (0,)


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_bad_period_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="period must be an integer >= 1"):
        K.sma(np.arange(10.0), bad)


def test_mismatched_inputs_and_unknown_backend_are_errors():
    with pytest.raises(ValueError, match="share one shape"):
        K.atr(np.ones(10), np.ones(9), np.ones(10), 3)
    with pytest.raises(ValueError, match="backend must be one of"):
        K.sma(np.ones(10), 3, backend="opencl")


def test_lookbacks_match_talib():
    import talib.abstract as A

    for name, fn in [("sma", "SMA"), ("ema", "EMA"), ("dema", "DEMA"), ("tema", "TEMA"), ("kama", "KAMA"),
                     ("rsi", "RSI"), ("atr", "ATR"), ("adx", "ADX"), ("plus_di", "PLUS_DI"), ("lsma", "LINEARREG")]:
        f = A.Function(fn)
        f.set_parameters({"timeperiod": 14})
        assert K.lookback(name, 14) == f.lookback, name
