"""kernels.indicators.ragged(threads=k): the cpu backend splits the series stored back to back
over k threads; every series is still one call of its core, so the outputs equal the
one-thread run bit for bit, for every core, whatever the split (more threads than series,
series of one row, empty series)."""

import numpy as np
import pytest

import kernels.indicators as K

CALLS = [("sma", 1, (20,)), ("ema", 1, (20,)), ("wma", 1, (20,)), ("dema", 1, (20,)), ("tema", 1, (20,)),
         ("hma", 1, (20,)), ("lsma", 1, (20,)), ("kama", 1, (10,)), ("rsi", 1, (14,)), ("atr", 3, (14,)),
         ("dmi", 3, (14, 0)), ("moments", 1, (20, 0)), ("moments", 1, (20, 1)), ("rocp", 1, (5,))]
# series lengths back to back: long and short, one row, empty, and one shorter than every warm-up
LENGTHS = [900, 1, 0, 40, 1300, 7, 600]


@pytest.fixture(scope="module")
def panel():
    rng = np.random.default_rng(11)
    close = (50 + np.cumsum(rng.normal(0, 0.5, sum(LENGTHS)))).astype(np.float32)
    spread = rng.uniform(0.1, 1.0, close.shape[0]).astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum(LENGTHS)]).astype(np.int64)
    return (close + spread, close - spread, close), offsets


@pytest.mark.parametrize("threads", [2, 3, 16])
@pytest.mark.parametrize("name, n_inputs, params", CALLS, ids=[f"{c[0]}{c[2]}" for c in CALLS])
def test_ragged_threads_equal_one_thread_bit_for_bit(panel, name, n_inputs, params, threads):
    hlc, offsets = panel
    inputs = list(hlc[-n_inputs:]) if n_inputs == 1 else list(hlc)
    one = K.ragged(name, inputs, offsets, params)
    split = K.ragged(name, inputs, offsets, params, threads=threads)
    kept = 1 if name == "hma" else len(one)  # hma's second output is its scratch row, never read
    for a, b in zip(one[:kept], split[:kept]):
        assert a.tobytes() == b.tobytes()
