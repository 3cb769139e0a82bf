"""Bad calls of `kernels.indicators.sweep` and `lanes`: each row is the call and
the exact one-line ValueError it must raise before any work (nothing is computed)."""

from __future__ import annotations

import numpy as np
import pytest

from kernels import indicators as K

X = np.linspace(100.0, 110.0, 10)
PANEL = np.stack([X, X[::-1]], axis=1)
NAMES = "['adx', 'atr', 'dema', 'ema', 'hma', 'kama', 'lsma', 'minus_di', 'plus_di', 'returns', 'rolling_std', " \
        "'rsi', 'sma', 'tema', 'wma', 'zscore']"

REFUSED = [
    ("unknown_indicator", lambda: K.sweep("macd", X, [2, 3]),
     f"sweep: unknown indicator 'macd'; expected one of {NAMES}"),
    ("core_name_instead_of_indicator", lambda: K.sweep("dmi", (X, X, X), [2]),
     f"sweep: unknown indicator 'dmi'; expected one of {NAMES}"),
    ("atr_given_one_series", lambda: K.sweep("atr", X, [2]),
     "sweep: atr takes (high, low, close), got 1 input series"),
    ("ema_given_three_series", lambda: K.sweep("ema", (X, X, X), [2]),
     "sweep: ema takes one series, got 3 input series"),
    ("no_periods", lambda: K.sweep("ema", X, []),
     "sweep: periods must be a non-empty 1-D list of integers, got []"),
    ("fractional_period", lambda: K.sweep("ema", X, [2, 2.5]),
     "sweep: periods must be a non-empty 1-D list of integers, got [2, 2.5]"),
    ("nested_periods", lambda: K.sweep("ema", X, [[2, 3]]),
     "sweep: periods must be a non-empty 1-D list of integers, got [[2, 3]]"),
    ("rsi_period_1", lambda: K.sweep("rsi", X, [5, 1]),
     "sweep: rsi periods must be integers >= 2, got 1"),
    ("zero_period", lambda: K.sweep("sma", X, [0, 3]),
     "sweep: sma periods must be integers >= 1, got 0"),
    ("integer_output_dtype", lambda: K.sweep("ema", X, [2], dtype=np.int32),
     "dtype must be float32 or float64, got int32"),
    ("panel_instead_of_series", lambda: K.sweep("ema", PANEL, [2]),
     "sweep: expected 1-D series of one length, got shapes [(10, 2)]"),
    ("series_of_different_lengths", lambda: K.sweep("atr", (X, X, X[:9]), [2]),
     "sweep: expected 1-D series of one length, got shapes [(10,), (10,), (9,)]"),
    ("out_of_the_wrong_shape", lambda: K.sweep("ema", X, [2, 3], out=np.empty((10, 3), dtype=np.float32)),
     "sweep: out must be a writable C-contiguous float32 array of shape (10, 2) (cpu, an indicator with a lane "
     "core), got float32 (10, 3)"),
    ("out_of_the_wrong_dtype", lambda: K.sweep("ema", X, [2, 3], out=np.empty((10, 2))),
     "sweep: out must be a writable C-contiguous float32 array of shape (10, 2) (cpu, an indicator with a lane "
     "core), got float64 (10, 2)"),
    ("out_for_an_indicator_without_lane_core", lambda: K.sweep("hma", X, [4], out=np.empty((10, 1), np.float32)),
     "sweep: out must be a writable C-contiguous float32 array of shape (10, 1) (cpu, an indicator with a lane "
     "core), got float32 (10, 1)"),
    ("lanes_without_lane_core", lambda: K.lanes("hma", PANEL, 4),
     "lanes: no multi-lane core for 'hma'; have ['adx', 'atr', 'dema', 'ema', 'kama', 'lsma', 'minus_di', "
     "'plus_di', 'rolling_std', 'rsi', 'sma', 'tema', 'wma', 'zscore']"),
    ("lanes_given_a_series", lambda: K.lanes("ema", X, 4),
     "lanes: expected time-major [T, S] panels of one shape, got [(10,)]"),
    ("lanes_period_below_minimum", lambda: K.lanes("kama", PANEL, 1),
     "kama: period must be an integer >= 2, got 1"),
]


@pytest.mark.parametrize(("case", "call", "line"), REFUSED, ids=[r[0] for r in REFUSED])
def test_bad_sweep_call_raises_one_exact_line(case, call, line):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == line
