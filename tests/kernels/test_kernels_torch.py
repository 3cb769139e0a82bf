"""torch backend equals the cpu backend (the cores compiled by numba) for every indicator.

Both backends compute in float64. Float64 outputs (`dtype=np.float64`) agree with rtol and
atol 1e-9: the torch recursions replay the cores' operations in order, the windowed means
are exact window sums where the cores roll them (~1e-13 apart). The default float32 outputs
agree with rtol 1e-5 (atol 1e-6). Warm-up NaN positions are identical. float32 inputs are
computed in float64 by both, so they agree as tightly as float64 inputs.

Inputs: a batch of three positive random walks built to reach the cores' special cases (a
series flat from its first bar: zero gains, ranges and paths; a flat stretch mid-series:
zero variance and decaying Wilder sums; gaps), and GOOG's first 500 daily bars.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kernels import indicators as K
from kernels.indicators import torch as torch_backend
from tests.gpu import gpu

pytestmark = gpu  # NumPy inputs run on the GPU when torch sees one

PERIODS = (2, 5, 14)
UNARY = ["sma", "ema", "wma", "dema", "tema", "hma", "lsma", "kama", "rsi", "rolling_std", "zscore", "returns"]
HLC = ["atr", "plus_di", "minus_di", "adx"]
HLC_FIXED = ["volatility_percent", "volatility_ratio"]  # ATR 14 / 28 inside, no period argument


def random_walks(t_len: int = 400, seed: int = 11) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """high, low, close, each [3 series, t_len], prices rounded to cents.

    series 0: flat (high = low = close) for its first 40 bars, then a walk;
    series 1: a walk with a 60-bar flat stretch from bar 150;
    series 2: a walk with a +25 gap at bar 200 and a -30 gap at bar 300.
    """
    rng = np.random.default_rng(seed)
    steps = rng.normal(0.0, 1.0, (3, t_len))
    flat = np.zeros((3, t_len), dtype=bool)
    flat[0, :40] = True
    flat[1, 150:210] = True
    steps[flat] = 0.0
    steps[2, 200] += 25.0
    steps[2, 300] -= 30.0
    close = np.round(150.0 + np.cumsum(steps, axis=1), 2)
    up, down = np.round(np.abs(rng.normal(0.0, 0.6, (2, 3, t_len))), 2)
    up[flat] = 0.0
    down[flat] = 0.0
    return close + up, close - down, close


def goog(rows: int = 500) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """high, low, close of GOOG's first daily bars (backtesting.test), 1-D float64."""
    from backtesting.test import GOOG

    return tuple(GOOG[col].to_numpy(dtype=np.float64)[:rows] for col in ("High", "Low", "Close"))


DATA = {"walks": random_walks(), "goog": goog()}


def same(ours, ref, rtol=1e-9, atol=1e-9):
    """Identical NaN positions, values within tolerance elsewhere."""
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref), err_msg="NaN positions differ")
    valid = ~np.isnan(ref)
    np.testing.assert_allclose(ours[valid], ref[valid], rtol=rtol, atol=atol)


def call(name, data, n=None, **kw):
    high, low, close = data
    args = (close,) if name in UNARY else (high, low, close)
    return getattr(K, name)(*args, **kw) if n is None else getattr(K, name)(*args, n, **kw)


# --- torch equals cpu ------------------------------------------------------------------


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("n", PERIODS)
@pytest.mark.parametrize("name", UNARY + HLC)
def test_float64_output_equals_cpu(name, n, data):
    ref = call(name, DATA[data], n, dtype=np.float64)
    same(call(name, DATA[data], n, backend="torch", dtype=np.float64), ref)


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("n", PERIODS)
@pytest.mark.parametrize("name", UNARY + HLC)
def test_float32_output_equals_cpu(name, n, data):
    ref = call(name, DATA[data], n)
    assert ref.dtype == np.float32
    same(call(name, DATA[data], n, backend="torch"), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("n", PERIODS)
def test_dmi_returns_the_three_lines_of_cpu(n, data):
    ours = call("dmi", DATA[data], n, backend="torch", dtype=np.float64)
    for line, ref in zip(ours, call("dmi", DATA[data], n, dtype=np.float64), strict=True):
        same(line, ref)


@pytest.mark.filterwarnings("ignore:invalid value encountered in divide")  # ATR28 = 0 on a flat start
@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("name", HLC_FIXED)
def test_volatility_features_equal_cpu(name, data):
    same(call(name, DATA[data], backend="torch", dtype=np.float64), call(name, DATA[data], dtype=np.float64))
    same(call(name, DATA[data], backend="torch"), call(name, DATA[data]), rtol=1e-5, atol=1e-6)


def both(name, *args, **kw):
    """(torch, cpu) float64 outputs of indicator `name`."""
    fn = getattr(K, name)
    return fn(*args, backend="torch", dtype=np.float64, **kw), fn(*args, dtype=np.float64, **kw)


def test_return_from_a_zero_price_is_zero():
    prices = np.array([0.0, 1.0, 0.0, 0.0, 2.0, 0.0, 3.0, 3.0, 0.0, 1.5])
    for n in (1, 2, 3):
        ours, ref = both("returns", prices, n)
        same(ours, ref)
        assert (ours[n:][prices[:-n] == 0] == 0).all()


def test_a_series_that_never_moves():
    """RSI 0 (no gain, no loss), DI and ADX 0 (no range), stddev and zscore 0, KAMA flat."""
    flat = np.full(40, 7.25)
    for name in ("rsi", "kama", "rolling_std", "zscore"):
        ours, ref = both(name, flat, 5)
        same(ours, ref)
        assert (ours[5:] == (7.25 if name == "kama" else 0.0)).all(), name
    lines, refs = both("dmi", flat, flat, flat, 5)
    for line, ref in zip(lines, refs, strict=True):
        same(line, ref)
        assert (line[~np.isnan(line)] == 0).all()


def test_kama_counts_a_path_shorter_than_eps_as_none():
    """After the moves leave the window of a flat stretch, the rolled path length is a
    rounding residue (1.8e-15 here), not 0: |path| < EPS gives ER 1 (fast), not 0 (slow)."""
    x = np.array([5.98, 15.26, 6.33, 10.22, 19.63] + [19.63] * 10)
    ours, ref = both("kama", x, 2)
    same(ours, ref)


def test_windows_with_variance_below_eps_have_zero_stddev_and_zscore():
    wiggle = 100.0 + 1e-8 * np.tile([0.0, 1.0, 3.0, 2.0], 10)  # var ~ 1e-16
    for name in ("rolling_std", "zscore"):
        ours, ref = both(name, wiggle, 4)
        same(ours, ref)
        assert (ours[3:] == 0).all(), name


def test_atr_over_one_bar_is_the_true_range():
    high, low, close = DATA["walks"]
    ours, ref = both("atr", high, low, close, 1)
    same(ours, ref)
    prev = close[:, :-1]
    true_range = np.maximum.reduce([high[:, 1:] - low[:, 1:], abs(high[:, 1:] - prev), abs(low[:, 1:] - prev)])
    np.testing.assert_array_equal(ours[:, 1:], true_range)


def test_float32_inputs_are_read_exactly_as_the_cores_read_them():
    high, low, close = (a.astype(np.float32) for a in DATA["goog"])
    for name in ("ema", "rolling_std", "kama"):
        same(*both(name, close, 14))
    same(*both("adx", high, low, close, 14))


# --- kinds, devices, shapes ----------------------------------------------------------


def test_numpy_inputs_run_on_the_gpu_when_torch_has_one():
    assert torch_backend.default_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("dtype, torch_dtype", [(np.float32, torch.float32), (np.float64, torch.float64)])
def test_tensor_input_gives_tensors_on_its_device(dtype, torch_dtype):
    high, low, close = (torch.from_numpy(a) for a in DATA["walks"])
    out = K.ema(close, 5, backend="torch", dtype=dtype)
    assert isinstance(out, torch.Tensor) and out.device == close.device and out.dtype == torch_dtype
    same(out.numpy(), K.ema(DATA["walks"][2], 5, dtype=dtype))
    for line in K.dmi(high, low, close, 5, backend="torch", dtype=dtype):
        assert isinstance(line, torch.Tensor) and line.device == close.device and line.dtype == torch_dtype
    ratio = K.volatility_ratio(high, low, close, backend="torch", dtype=dtype)
    assert isinstance(ratio, torch.Tensor) and ratio.dtype == torch_dtype


def test_float32_tensor_input_is_accepted():
    close = torch.tensor(DATA["goog"][2], dtype=torch.float32)
    out = K.rsi(close, 14, backend="torch", dtype=np.float64)
    same(out.numpy(), K.rsi(close.numpy(), 14, dtype=np.float64))


def test_numpy_input_gives_numpy_of_the_requested_dtype():
    out = K.sma(DATA["walks"][2], 5, backend="torch")
    assert type(out) is np.ndarray and out.dtype == np.float32 and out.shape == DATA["walks"][2].shape


def test_one_series_in_gives_one_series_out():
    high, low, close = DATA["goog"]
    assert K.hma(close, 9, backend="torch").shape == close.shape
    assert K.adx(high, low, close, 9, backend="torch").shape == close.shape
    assert K.zscore(torch.tensor(close), 9, backend="torch").shape == (close.shape[0],)


def test_backend_returns_every_core_output_scratch_included():
    close = DATA["walks"][2]
    for name, spec in K.SPECS.items():
        params = (6, 1) if name == "moments" else (6,)
        outs = torch_backend.run(spec, [close] * spec.n_inputs, params, np.dtype(np.float64))
        assert len(outs) == spec.n_outputs, name
        assert all(o.shape == close.shape and o.dtype == np.float64 for o in outs), name


@pytest.mark.parametrize("name", UNARY + HLC)
def test_series_as_long_as_the_lookback_is_all_nan(name):
    n = 5
    look = K.lookback(name, n)
    short = tuple(a[:, :look] for a in DATA["walks"])
    assert np.isnan(call(name, short, n, backend="torch")).all()
    just_enough = tuple(a[:, : look + 1] for a in DATA["walks"])
    out = call(name, just_enough, n, backend="torch")
    assert np.isnan(out[:, :look]).all() and not np.isnan(out[:, look]).any()


def test_empty_series_gives_empty_output():
    assert K.sma(np.zeros(0), 3, backend="torch").shape == (0,)
    assert K.adx(np.zeros(0), np.zeros(0), np.zeros(0), 3, backend="torch").shape == (0,)
