"""Adaptive Trend Classification: the NumPy reference against hand-checkable cases, and the
cpu (numba), torch and cuda (simulator in CI) kernels against the reference.

What is compared:
* cpu vs reference on GOOG closes (2148 bars): the final value and the six family signals,
  NaN positions identical; float64 outputs (dtype=np.float64) within 1e-9 absolute, the
  default float32 outputs within 1e-5 absolute of the float64 reference. Both compute in
  float64 from the same input; they differ only where an MA (rolled in the cores, recomputed
  from its window in the reference, ~1e-13 apart) decides a cross, which GOOG never hits.
  A float32 input is compared with the reference run on the same float32 values widened.
* torch (on the cpu here) vs cpu on a 2-D batch, float64 within 1e-9; cuda (simulator) vs
  cpu on 3 series x 80 bars, bit for bit.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from kernels import atc
from kernels import indicators as K
from kernels.atc import cpu as atc_cpu
from kernels.atc import reference as ref
from kernels.atc import torch as atc_torch
from tests.gpu import assert_engine_equal, gpu


@functools.cache
def goog_close() -> np.ndarray:
    from backtesting.test import GOOG

    return GOOG.Close.to_numpy(dtype=np.float64)


@functools.cache
def ref_goog(robustness: str, length: int, cutout: int = 0, f32: bool = False):
    x = goog_close().astype(np.float32).astype(np.float64) if f32 else goog_close()
    return ref.compute(x, robustness=robustness, length=length, cutout=cutout)


def v_shape(down: int = 120, up: int = 200, c: float = 0.004, top: float = 200.0) -> np.ndarray:
    """An accelerating fall (top - c*t^2) for `down` bars, then an accelerating rise.

    Curved legs on purpose: a straight leg is matched exactly by the LSMA (and in steady
    state by the DEMA), a tie only rounding noise breaks, and a geometric fall is convex, so
    the low-lag MAs (DEMA, LSMA) sit below the close through it and never get crossed."""
    fall = top - c * np.arange(down) ** 2
    return np.r_[fall, fall[-1] + c * np.arange(1, up + 1) ** 2]


def walks(n_series: int, t_len: int, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.02, (n_series, t_len)), axis=1))


# ---------------------------------------------------------------------------------------
# The reference against hand-checkable cases
# ---------------------------------------------------------------------------------------


def test_rise_after_a_fall_gives_plus_one():
    # The fall (120 bars) is longer than the longest warm-up (DEMA 34: 66 bars), so every
    # MA is valid with the close below it; the rise crosses all 54 over: every signal +1.
    x = v_shape()
    fams, final = ref.compute(x)
    assert np.all(final[150:] == 1.0)
    for name in ref.FAMILIES:
        assert np.all(fams[name][150:] == 1.0), name
    np.testing.assert_array_equal(atc.average_signal(x, dtype=np.float64), final)


def test_fall_after_a_rise_gives_minus_one():
    x = 400.0 - v_shape()  # an accelerating rise, then an accelerating fall
    final = ref.average_signal(x)
    assert np.all(final[150:] == -1.0)
    np.testing.assert_array_equal(atc.average_signal(x, dtype=np.float64), final)


def test_constant_gives_zero():
    # Every MA of a constant 100.0 is exactly 100.0 (integer sums, TA-Lib's EMA update), so
    # nothing crosses.
    x = np.full(300, 100.0)
    fams, final = ref.compute(x)
    assert np.all(final == 0.0)
    assert all(np.all(f == 0.0) for f in fams.values())
    np.testing.assert_array_equal(atc.average_signal(x, dtype=np.float64), final)


def test_monotone_from_the_first_bar_never_crosses():
    # Faithful to ta.crossover: the close sits above every MA from the MA's first valid bar
    # (the bar before is NaN: no cross), so no signal ever turns on.
    x = 100.0 * np.exp(np.arange(300) * 0.01)
    assert np.all(ref.average_signal(x) == 0.0)
    assert np.all(atc.average_signal(x) == 0.0)


def test_equity_floor_holds():
    t_len = 40
    sig = np.full(t_len, -1.0)  # short through a market that gains 50% a bar
    r = np.full(t_len, 0.5)
    r[0] = np.nan
    e = ref.equity_curve(1.0, sig, r, 0.0003, cutout=0)
    assert e[0] == 1.0
    assert e[1] == pytest.approx(1.0 * (1 - 0.0003) * 0.5)
    assert np.all(e >= 0.25) and e[-1] == 0.25
    # the compiled layer-2 core: fden accumulates E, which must equal the reference
    fnom, fden = np.zeros(t_len), np.zeros(t_len)
    atc_cpu.layer2_cpu(sig, r, 1 - 0.0003, 0, 1.0, fnom, fden)
    np.testing.assert_array_equal(fden, e)
    np.testing.assert_array_equal(fnom, -e)  # Cut(-1) * E


def test_previous_signal_drives_the_equity_and_a_persists():
    r = np.array([np.nan, 0.1, 0.2, 0.3, 0.4])
    sig = np.array([0.0, 1.0, 0.0, -1.0, 0.0])
    e = ref.equity_curve(1.0, sig, r, 0.0, cutout=0)
    # t=1: sig[0] = 0, a stays 0; t=2: sig[1] > 0, a = r[2]; t=3: sig[2] = 0, a keeps r[2];
    # t=4: sig[3] < 0, a = -r[4]
    expected = [1.0, 1.0, 1.2, 1.2 * 1.2, 1.2 * 1.2 * 0.6]
    np.testing.assert_allclose(e, expected, rtol=1e-15)


def test_rounding_half_away_from_zero():
    assert ref.round_half_away(0.125) == 0.13
    assert ref.round_half_away(-0.125) == -0.13
    assert ref.round_half_away(0.124999) == 0.12
    assert ref.round_half_away(-0.5) == -0.5
    assert np.isnan(ref.round_half_away(np.nan))
    nom = np.array([0.125, -0.125, 0.375, -0.124999, 1.0, np.nan])
    out = np.empty_like(nom)
    atc_cpu.family_finish_cpu(nom, np.ones_like(nom), out)
    np.testing.assert_array_equal(out, [0.13, -0.13, 0.38, -0.12, 1.0, np.nan])


def test_cut_and_classify():
    assert [ref.cut(v) for v in (0.5, 0.49, -0.49, -0.5, np.nan)] == [1.0, 0.0, 0.0, -1.0, 0.0]
    np.testing.assert_array_equal(atc.classify([0.2, 0.1, -0.1, -0.2, np.nan]), [1, 0, 0, -1, 0])


# ---------------------------------------------------------------------------------------
# cpu (numba) against the reference
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("robustness", ["Narrow", "Medium", "Wide"])
@pytest.mark.parametrize("length", [28, 14])
def test_cpu_equals_reference_on_goog(robustness, length):
    x = goog_close()
    r_fams, r_final = ref_goog(robustness, length)
    fams64, final64 = atc.compute(x, robustness=robustness, length=length, dtype=np.float64)
    fams32, final32 = atc.compute(x, robustness=robustness, length=length)
    assert final32.dtype == np.float32 and final64.dtype == np.float64
    assert not np.isnan(r_final).any()
    np.testing.assert_allclose(final64, r_final, rtol=0, atol=1e-9)
    np.testing.assert_allclose(final32, r_final, rtol=0, atol=1e-5)
    for name in atc.FAMILIES:
        np.testing.assert_allclose(fams64[name], r_fams[name], rtol=0, atol=1e-9, err_msg=name)
        np.testing.assert_allclose(fams32[name], r_fams[name], rtol=0, atol=1e-5, err_msg=name)
    assert np.unique(np.sign(r_final)).size == 3  # long, short and flat bars all occur


def test_float32_input_is_computed_in_float64():
    x32 = goog_close().astype(np.float32)
    _, r_final = ref_goog("Medium", 28, f32=True)
    out = atc.average_signal(x32)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, r_final, rtol=0, atol=1e-5)
    np.testing.assert_allclose(atc.average_signal(x32, dtype=np.float64), r_final, rtol=0, atol=1e-9)


def test_float32_input_equals_its_float64_widening_bit_for_bit():
    # the cores widen every element they read, so a float32 array and its float64 copy give
    # the same bits (the scanner passes the store's float32 closes without a copy)
    x32 = walks(4, 400, seed=11).astype(np.float32)
    f32_fams, f32_final = atc.compute(x32, dtype=np.float64)
    f64_fams, f64_final = atc.compute(x32.astype(np.float64), dtype=np.float64)
    np.testing.assert_array_equal(f32_final, f64_final)
    for name in atc.FAMILIES:
        np.testing.assert_array_equal(f32_fams[name], f64_fams[name])


@pytest.mark.parametrize("cache", [False, True])
def test_tail_returns_the_last_bars_of_the_full_result(cache):
    x = walks(5, 300, seed=12)
    fams, final = atc.compute(x, dtype=np.float64, cutout=7)
    for tail in (1, 13, 300, 1000):
        t_fams, t_final = atc.compute(x, dtype=np.float64, cutout=7, tail=tail, cache=cache)
        assert t_final.shape == (5, min(tail, 300))
        np.testing.assert_array_equal(t_final, final[:, -tail:])
        for name in atc.FAMILIES:
            np.testing.assert_array_equal(t_fams[name], fams[name][:, -tail:])
    np.testing.assert_array_equal(atc.average_signal(x[2], tail=2), atc.average_signal(x[2])[-2:])
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="tail"):
            atc.compute(x, tail=bad)
    atc.ma_cache.clear()


def test_cutout():
    cutout = 300
    x = goog_close()
    _, r_final = ref_goog("Medium", 28, cutout=cutout)
    fams, final = atc.compute(x, cutout=cutout, dtype=np.float64)
    assert np.isnan(final[:cutout]).all() and not np.isnan(final[cutout:]).any()
    for name in atc.FAMILIES:
        assert np.isnan(fams[name][:cutout]).all() and not np.isnan(fams[name][cutout:]).any()
    np.testing.assert_allclose(final, r_final, rtol=0, atol=1e-9)
    # every equity starts at the cutout: on that bar each MA weighs 1, each family 1
    sig_at_cut = {}
    for name in ref.FAMILIES:
        s = [ref.crossover_signal(x, ref.MA_FUNCTIONS[name](x, n))[cutout] for n in ref.ma_lengths(28, "Medium")]
        sig_at_cut[name] = ref.round_half_away(sum(s) / 9.0)
        assert fams[name][cutout] == sig_at_cut[name]
    assert final[cutout] == pytest.approx(sum(ref.cut(v) for v in sig_at_cut.values()) / 6.0, abs=1e-15)
    e = ref.equity_curve(1.0, np.ones(len(x)), np.full(len(x), 0.01), 0.0003, cutout)
    assert np.isnan(e[:cutout]).all() and e[cutout] == 1.0


def test_weights_and_per_family_lengths():
    x = goog_close()[:700]
    lengths = {"EMA": 20, "KAMA": 12}
    weights = {"WMA": 2.0, "LSMA": 0.5}
    r_fams, r_final = ref.compute(x, length=lengths, weights=weights)
    fams, final = atc.compute(x, length=lengths, weights=weights, dtype=np.float64)
    np.testing.assert_allclose(final, r_final, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fams["KAMA"], r_fams["KAMA"], rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------------------
# API, moving averages, cache
# ---------------------------------------------------------------------------------------


def test_family_signals_keys_and_shapes():
    x = walks(4, 250)
    fams = atc.family_signals(x)
    assert tuple(fams) == ("EMA", "HMA", "WMA", "DEMA", "LSMA", "KAMA")
    for v in fams.values():
        assert v.shape == (4, 250) and v.dtype == np.float32
        assert np.all(np.abs(v) <= 1.0)
        np.testing.assert_allclose(v * 100, np.round(v * 100), atol=1e-4)  # 2 decimals
    one = atc.family_signals(x[2])
    for name, v in one.items():
        assert v.shape == (250,)
        np.testing.assert_array_equal(v, fams[name][2])
    assert atc.average_signal(x).shape == (4, 250)


def test_moving_averages_equal_the_indicators():
    x = goog_close()[:800]
    mas = atc.moving_averages(x, robustness="Wide", length=20)
    assert len(mas) == 54
    same = {"EMA": K.ema, "HMA": K.sma, "WMA": K.wma, "DEMA": K.dema, "LSMA": K.lsma}
    for (name, n), ma in mas.items():
        expected = ref.MA_FUNCTIONS[name](x, n)
        np.testing.assert_allclose(ma, expected, rtol=1e-11, err_msg=f"{name} {n} vs reference")
        if name in same:  # the very same cores: bit for bit
            np.testing.assert_array_equal(ma, same[name](x, n, dtype=np.float64), err_msg=f"{name} {n}")
    kama = mas[("KAMA", 20)]  # Pine's KAMA has a value from bar 0 (the other MAs have NaN warm-ups)
    assert not np.isnan(kama).any() and kama[0] == atc.KAMA_SLOW**2 * x[0]


def pine_kama(close, length: int) -> np.ndarray:
    """The ATC script's KAMA as Pine v5 runs it, written here from the script for the tests
    (na is None; no cap on the ratio, which Pine does not have):
        noise  = math.sum(math.abs(source - source[1]), length)
        signal = math.abs(source - source[length])
        ratio  = noise != 0 ? signal / noise : 0
        smooth = math.pow(ratio * (fast - slow) + slow, 2)
        KAMA  := nz(KAMA[1]) + smooth * (source - nz(KAMA[1]))"""
    fast, slow = 0.666, 0.064
    close = [float(v) for v in close]
    move = [None] + [abs(close[t] - close[t - 1]) for t in range(1, len(close))]  # source[1] is na on bar 0
    out, kama_1 = [], None  # KAMA[1] is na on bar 0
    for t, src in enumerate(close):
        window = [move[i] if i >= 0 else None for i in range(t - length + 1, t + 1)]
        noise = None if None in window else sum(window)  # math.sum is na if its window holds an na
        signal = abs(src - close[t - length]) if t >= length else None
        cond = noise is not None and noise != 0  # na != 0 is not true: the else branch
        ratio = signal / noise if cond else 0.0
        smooth = math.pow(ratio * (fast - slow) + slow, 2)
        prev = 0.0 if kama_1 is None else kama_1  # nz(KAMA[1])
        kama_1 = prev + smooth * (src - prev)
        out.append(kama_1)
    return np.array(out)


@functools.cache
def sp500_close() -> np.ndarray:
    from arch.data import sp500

    return sp500.load()["Close"].to_numpy(dtype=np.float64)


def _kama_everywhere(x: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """The ATC KAMA of one series from every implementation: cpu core, cuda bank (simulator),
    torch, the streaming updater and the reference."""
    from kernels.atc.stream import PineKAMAUpdater

    cpu = np.empty_like(x)
    atc_cpu.kama_pine_cpu(x, n, cpu)
    u = PineKAMAUpdater(n)
    out = {"cpu": cpu, "reference": ref.kama(x, n), "stream": np.array([u.update(v) for v in x])}
    torch = pytest.importorskip("torch")
    out["torch"] = atc_torch.kama(torch.tensor(x[None]), [n])[0, 0].numpy()
    return out


def test_kama_warm_up_follows_pine():
    # Pine v5: on bars 0..L-1 math.sum's window holds an na (bar 0's move, or bars before 0),
    # so `noise != 0` is not true and ratio = 0: KAMA starts at 0 (nz(KAMA[1]) on bar 0) and
    # moves by slow^2 a bar; from bar L the efficiency ratio applies. (The old kernels left
    # bars 0..L-1 NaN and seeded kama[L] = sc*x[L] from 0.)
    x = np.r_[np.full(10, 50.0), 50.0 + np.arange(1, 11)]  # flat (ER = 0), then a straight rise (ER = 1)
    slow2 = atc.KAMA_SLOW**2
    for name, out in _kama_everywhere(x, 5).items():
        assert out[0] == slow2 * x[0], name
        for t in range(1, 10):  # bars 0..4: noise na; bars 5..9: a flat window (noise 0): ratio 0
            assert out[t] == out[t - 1] + slow2 * (x[t] - out[t - 1]), (name, t)
        sc1 = atc.KAMA_FAST**2  # bar 15 on: a straight rise over the whole window, ER = 1
        assert out[15] == pytest.approx(out[14] + sc1 * (x[15] - out[14]), rel=1e-14), name
    np.testing.assert_allclose(_kama_everywhere(x, 5)["cpu"], pine_kama(x, 5), rtol=1e-14, atol=0)
    short = np.array([100.0, 101.0, 99.0])  # shorter than the length: ratio 0 throughout
    for name, out in _kama_everywhere(short, 5).items():
        np.testing.assert_allclose(out, pine_kama(short, 5), rtol=1e-15, atol=0, err_msg=name)


def test_kama_family_matches_pine_on_sp500():
    # The S&P 500's first 1,500 bars: every implementation's KAMA equals Pine's (the streaming
    # updater and the reference bit for bit with the core), and the KAMA family signal of
    # the kernel equals, bar for bar, the one built from the Pine re-implementation above
    # (layer 1 from the reference's crosses and equity). The old NaN warm-up changed the
    # family on 112 of these bars (7.5%).
    x = sp500_close()[:1500]
    lens = ref.ma_lengths(28, "Medium")
    r = ref.scaled_returns(x, 0.02 / 1000.0, 0)
    nom = np.zeros(len(x))
    den = np.zeros(len(x))
    for n in lens:
        pk = pine_kama(x, n)
        impl = _kama_everywhere(x, n)
        for name, out in impl.items():
            np.testing.assert_allclose(out, pk, rtol=1e-12, atol=0, err_msg=f"{name} {n}")
        np.testing.assert_array_equal(impl["stream"], impl["cpu"])
        sig = ref.crossover_signal(x, pk)
        e = ref.equity_curve(1.0, sig, r, 0.03 / 100.0, 0)
        nom = nom + sig * e
        den = den + e
    want = np.array([ref.round_half_away(q) for q in nom / den])
    fams, _ = atc.compute(x, dtype=np.float64)
    np.testing.assert_array_equal(fams["KAMA"], want)
    g_fams, _ = atc.compute(x[None, :300], backend="cuda", dtype=np.float64)  # the simulator is slow
    np.testing.assert_array_equal(g_fams["KAMA"][0], want[:300])
    assert np.count_nonzero(want[:200]) > 0  # the KAMA family moves during the old warm-up span


# ---------------------------------------------------------------------------------------
# torch and cuda against cpu
# ---------------------------------------------------------------------------------------


@gpu
def test_torch_equals_cpu_batched():
    g = goog_close()
    x = np.stack([g[:500], g[800:1300], walks(1, 500, seed=3)[0]])
    for cutout in (0, 40):
        c_fams, c_final = atc.compute(x, dtype=np.float64, cutout=cutout, length=20)
        t_fams, t_final = atc.compute(x, dtype=np.float64, cutout=cutout, length=20, backend="torch")
        assert t_final.shape == (3, 500)
        np.testing.assert_allclose(t_final, c_final, rtol=0, atol=1e-9)
        for name in atc.FAMILIES:
            np.testing.assert_allclose(t_fams[name], c_fams[name], rtol=0, atol=1e-9, err_msg=name)


@gpu
def test_torch_tensor_in_tensor_out():
    torch = pytest.importorskip("torch")
    x = walks(2, 200, seed=4)
    out = atc.average_signal(torch.tensor(x), backend="torch", length=10)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and tuple(out.shape) == (2, 200)
    np.testing.assert_allclose(out.numpy(), atc.average_signal(x, length=10), rtol=0, atol=1e-6)


@gpu
@pytest.mark.parametrize("robustness,length,cutout", [("Narrow", 7, 0), ("Medium", 9, 5)])
def test_cuda_equals_cpu(robustness, length, cutout):
    x = np.stack([goog_close()[:80], goog_close()[1000:1080], walks(1, 80, seed=2)[0]])
    kw = {"robustness": robustness, "length": length, "cutout": cutout, "dtype": np.float64}
    c_fams, c_final = atc.compute(x, **kw)
    g_fams, g_final = atc.compute(x, backend="cuda", **kw)
    assert_engine_equal(g_final, c_final)
    for name in atc.FAMILIES:
        assert_engine_equal(g_fams[name], c_fams[name], err_msg=name)
    assert atc.average_signal(x[1], backend="cuda", robustness=robustness, length=length).dtype == np.float32


@gpu
def test_chunking_does_not_change_results(monkeypatch):
    x = walks(5, 120, seed=8)
    c_fams, c_final = atc.compute(x, length=10, dtype=np.float64)
    t_fams, t_final = atc.compute(x, length=10, dtype=np.float64, backend="torch")
    monkeypatch.setattr(atc_cpu, "BANK_CHUNK_BYTES", 2 * 54 * 120 * 8)  # 2 symbols a chunk
    monkeypatch.setattr(atc_torch, "TORCH_CHUNK_ELEMENTS", 2 * 54 * 120)
    c2_fams, c2_final = atc.compute(x, length=10, dtype=np.float64, cache=True)
    t2_fams, t2_final = atc.compute(x, length=10, dtype=np.float64, backend="torch")
    np.testing.assert_array_equal(c2_final, c_final)
    np.testing.assert_array_equal(t2_final, t_final)
    for name in atc.FAMILIES:
        np.testing.assert_array_equal(c2_fams[name], c_fams[name])
        np.testing.assert_array_equal(t2_fams[name], t_fams[name])
    atc.ma_cache.clear()


@gpu
@pytest.mark.parametrize("split", (False, True))
@pytest.mark.parametrize("tail", (1, 7, None, 500))
def test_cuda_tail_on_the_device_equals_cpu(tail, split, monkeypatch):
    """The cuda scan applies the tail on the device (the fused kernel keeps only the last
    `tail` bars of each family; the split one, a thread per family and symbol, keeps them all);
    the values are the cpu backend's (tail past the bars: every bar)."""
    from kernels.atc import cuda as atc_cuda

    monkeypatch.setattr(atc_cuda, "use_split", lambda n_series, t_len: split)
    x = np.stack([goog_close()[:60], walks(1, 60, seed=6)[0]])
    kw = {"robustness": "Narrow", "length": 7, "cutout": 3, "dtype": np.float64, "tail": tail}
    c_fams, c_final = atc.compute(x, **kw)
    g_fams, g_final = atc.compute(x, backend="cuda", **kw)
    assert g_final.shape == c_final.shape == (2, 60 if tail in (None, 500) else tail)
    assert_engine_equal(g_final, c_final)
    for name in atc.FAMILIES:
        assert g_fams[name].shape == c_fams[name].shape
        assert_engine_equal(g_fams[name], c_fams[name], err_msg=name)
