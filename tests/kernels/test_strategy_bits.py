"""The population walk's signal bitmask (kernels.strategy.trade_walk / cuda): the words equal
the per-bar predicate, the count-trailing-zeros core, and the bitmask walk gives the per-bar
walk's trades, rule edge by rule edge (the cuda engine runs under numba's CUDA simulator in
CI: tiny inputs, each thread is Python)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kernels.strategy import BacktestParams, backtest_population
from kernels.strategy.cpu import empty_buffers, walk_cpu
from kernels.strategy.population import backtest_signals, build_walk_inputs, signal_walk_inputs
from kernels.strategy.results import TRADE_FIELDS
from kernels.strategy.trade_walk import (ctz32_core, n_words, next_signal_core, signal_word_core, walk_bits_core,
                                         walk_core)
from tests.gpu import gpu
from tests.kernels.test_strategy_backtest import assert_same_trades, goog, varied_population

ctz_cpu = njit(ctz32_core)
next_cpu = njit(next_signal_core)
walk_bits_cpu = njit(walk_bits_core)


@njit
def bits_cpu(ema_f, ema_s, vol_z, tr_z, cloc, vz_min, trz_min, cloc_min):
    out = np.empty((ema_f.shape[0] + 31) // 32, dtype=np.uint32)
    for w in range(out.shape[0]):
        out[w] = signal_word_core(ema_f, ema_s, vol_z, tr_z, cloc, vz_min, trz_min, cloc_min, w)
    return out


def unpack(bits: np.ndarray, t_len: int) -> np.ndarray:
    """[..., W] uint32 words -> [..., t_len] bools (bit b of word w is bar 32 w + b)."""
    b = np.unpackbits(np.ascontiguousarray(bits, dtype="<u4").view(np.uint8), axis=-1, bitorder="little")
    return b[..., :t_len].astype(bool)


def predicate(inp, i: int) -> np.ndarray:
    """Individual i's signal with NumPy (NaN compares false)."""
    with np.errstate(invalid="ignore"):
        return ((inp.ema[inp.k_fast[i]] < inp.ema[inp.k_slow[i]]) & (inp.vol_z[inp.k_vz[i]] > inp.vol_z_min[i])
                & (inp.tr_z[inp.k_trz[i]] > inp.tr_z_min[i]) & (inp.cloc > inp.cloc_min[i]))


def row_args(inp, i):
    return (inp.ema[inp.k_fast[i]], inp.ema[inp.k_slow[i]], inp.vol_z[inp.k_vz[i]], inp.tr_z[inp.k_trz[i]], inp.cloc,
            inp.vol_z_min[i], inp.tr_z_min[i], inp.cloc_min[i])


def test_ctz_of_every_single_bit_of_zero_and_of_random_words():
    for fn in (ctz32_core, ctz_cpu):
        assert [fn(1 << b) for b in range(32)] == list(range(32))
        assert fn(0) == 32
        words = np.random.default_rng(0).integers(1, 2**32, 2000)
        want = [(int(v) & -int(v)).bit_length() - 1 for v in words]
        assert [fn(int(v)) for v in words] == want
        assert [fn(np.int64(v)) for v in words[:50]] == want[:50]


def test_next_signal_finds_the_first_set_bit_at_or_after_t():
    rng = np.random.default_rng(1)
    for t_len in (1, 5, 31, 32, 33, 64, 65, 200):
        for density in (0.0, 0.02, 0.3, 1.0):
            sig = rng.random(t_len) < density
            bits = np.packbits(np.r_[sig, np.zeros(32 * n_words(t_len) - t_len, bool)], bitorder="little")
            bits = bits.view("<u4").astype(np.uint32)
            for t in range(t_len + 2):
                later = np.flatnonzero(sig[t:])
                want = t + later[0] if later.size else 32 * n_words(t_len)
                assert next_signal_core(bits, t) == next_cpu(bits, t) == want, (t_len, density, t)


@pytest.mark.parametrize("t_len", [300, 64, 33, 20, 1])  # warm-up NaNs throughout; T % 32 != 0; T < 32
def test_the_bitmask_words_equal_the_per_bar_predicate(t_len):
    inp = build_walk_inputs(*goog(750, 750 + t_len), varied_population(6, seed=2))
    assert np.isnan(inp.vol_z).any()
    for i in range(6):
        want = predicate(inp, i)
        for bits in (bits_cpu(*row_args(inp, i)),
                     np.array([signal_word_core(*row_args(inp, i), w) for w in range(n_words(t_len))], np.uint32)):
            assert bits.shape == (n_words(t_len),)
            np.testing.assert_array_equal(unpack(bits, t_len), want)
            assert not (unpack(bits, 32 * n_words(t_len))[t_len:]).any()  # no bit past the end


@gpu
@pytest.mark.parametrize("t_len", [150, 32, 20])
def test_the_signal_kernel_equals_the_per_bar_predicate(t_len):
    from numba import cuda

    from kernels.strategy import cuda as engine

    inp = build_walk_inputs(*goog(760, 760 + t_len), varied_population(5, seed=4))
    tm = [np.ascontiguousarray(b.T) for b in (inp.ema, inp.vol_z, inp.tr_z)]
    n, w = 5, n_words(t_len)
    bits = cuda.device_array((n, w), dtype=np.uint32)
    blocks = -(-n * w // engine.SIGNAL_THREADS_PER_BLOCK)
    engine.signal_kernel[blocks, engine.SIGNAL_THREADS_PER_BLOCK](
        *(cuda.to_device(a) for a in (*tm, inp.cloc, inp.k_fast, inp.k_slow, inp.k_vz, inp.k_trz, inp.vol_z_min,
                                      inp.tr_z_min, inp.cloc_min)), bits)
    got = bits.copy_to_host()
    for i in range(n):
        np.testing.assert_array_equal(unpack(got[i], t_len), predicate(inp, i), err_msg=str(i))


def walk_both(inp, i):
    """(per-bar walk, bitmask walk) trades of individual i, both compiled for the CPU."""
    t_len = inp.open.shape[0]
    out = []
    for bitwise in (False, True):
        buf = empty_buffers(1, t_len)
        tail = (inp.stop[inp.k_stop[i]], inp.target[inp.k_tgt[i]])
        rows = [buf[f][0] for f in TRADE_FIELDS]
        if bitwise:
            k = walk_bits_cpu(bits_cpu(*row_args(inp, i)), inp.open, inp.high, inp.low, inp.close, *tail,
                              inp.max_hold[i], inp.cost_bps[i], *rows)
        else:
            a = row_args(inp, i)
            k = walk_cpu(inp.open, inp.high, inp.low, inp.close, *a[:5], *tail, *a[5:], inp.max_hold[i],
                         inp.cost_bps[i], *rows)
        out.append((k, {f: buf[f][0, :k].copy() for f in TRADE_FIELDS}))
    return out


def assert_walks_equal(inp):
    for i in range(inp.k_fast.shape[0]):
        (k0, a), (k1, b) = walk_both(inp, i)
        assert k0 == k1, i
        for f in TRADE_FIELDS:
            np.testing.assert_array_equal(a[f], b[f], err_msg=f"{i} {f}")  # bit for bit


def test_the_bitmask_walk_equals_the_per_bar_walk_on_goog():
    inp = build_walk_inputs(*goog(0, 1000), varied_population(24, seed=5))
    assert_walks_equal(inp)


def adversarial_signals(t_len: int, rng) -> list[np.ndarray]:
    last = np.zeros(t_len, bool)
    last[-1] = True
    last_two = last.copy()
    last_two[-2:] = True
    boundaries = np.zeros(t_len, bool)
    boundaries[[b for b in (0, 30, 31, 32, 33, 63, 64, 95) if b < t_len]] = True
    return [np.ones(t_len, bool), np.zeros(t_len, bool), last, last_two, boundaries,
            rng.random(t_len) < 0.05, rng.random(t_len) < 0.5]


def random_bars(t_len: int, rng):
    close = 100 * np.exp(np.cumsum(rng.normal(0, 0.02, t_len)))
    open_ = close * (1 + rng.normal(0, 0.01, t_len))
    high = np.maximum(open_, close) * (1 + rng.uniform(0, 0.01, t_len))
    low = np.minimum(open_, close) * (1 - rng.uniform(0, 0.01, t_len))
    atr = close * rng.uniform(0.002, 0.03, t_len)
    atr[: min(5, t_len)] = np.nan  # warm-up: NaN risk, skipped, the next bar may signal again
    atr[rng.random(t_len) < 0.1] = -1.0  # stop above the entry (risk <= 0): skipped too
    return open_, high, low, close, atr


PARAMS = [BacktestParams(1.0, 2.0, 1, 0.0, 0.0), BacktestParams(0.5, 1.5, 3, 2.5, 1.0),
          BacktestParams(2.0, 3.0, 50, 5.0, 3.0)]  # max_hold 1 (exit on the bar after entry), 3, and past the end


def test_the_bitmask_walk_equals_the_per_bar_walk_on_adversarial_signals():
    rng = np.random.default_rng(7)
    for t_len in (1, 2, 3, 31, 32, 33, 64, 65, 97, 130):
        o, h, l, c, atr = random_bars(t_len, rng)
        for sig in adversarial_signals(t_len, rng):
            assert_walks_equal(signal_walk_inputs(o, h, l, c, sig, atr, PARAMS))


@gpu
def test_the_cuda_bitmask_walk_equals_the_cpu_engine_on_adversarial_signals():
    rng = np.random.default_rng(8)
    for t_len in (2, 33, 70):
        o, h, l, c, atr = random_bars(t_len, rng)
        for sig in adversarial_signals(t_len, rng):
            cpu = backtest_signals(o, h, l, c, sig, atr, PARAMS, backend="cpu")
            dev = backtest_signals(o, h, l, c, sig, atr, PARAMS, backend="cuda")
            assert dev.backend == "cuda"
            assert_same_trades(cpu, dev, pnl_tol=0)


@gpu
def test_the_cuda_bitmask_walk_equals_the_cpu_engine_on_goog_with_signals_on_the_last_bars():
    data = goog(900, 965)  # 65 bars: three words, the last one holding a single bar
    pop = varied_population(12, seed=9)
    cpu = backtest_population(*data, pop, backend="cpu")
    dev = backtest_population(*data, pop, backend="cuda", fallback=False)
    assert dev.backend == "cuda" and cpu.n_trades.sum() > 0
    assert_same_trades(cpu, dev, pnl_tol=0)


def test_walk_core_and_walk_bits_core_run_as_plain_python():
    """The cores are plain Python (the simulator calls them as they are)."""
    rng = np.random.default_rng(10)
    o, h, l, c, atr = random_bars(70, rng)
    inp = signal_walk_inputs(o, h, l, c, rng.random(70) < 0.3, atr, PARAMS[1])
    a = row_args(inp, 0)
    bits = np.array([signal_word_core(*a, w) for w in range(n_words(70))], np.uint32)
    bufs = [empty_buffers(1, 70) for _ in range(2)]
    k0 = walk_core(inp.open, inp.high, inp.low, inp.close, *a[:5], inp.stop[0], inp.target[0], *a[5:],
                   int(inp.max_hold[0]), float(inp.cost_bps[0]), *(bufs[0][f][0] for f in TRADE_FIELDS))
    k1 = walk_bits_core(bits, inp.open, inp.high, inp.low, inp.close, inp.stop[0], inp.target[0],
                        int(inp.max_hold[0]), float(inp.cost_bps[0]), *(bufs[1][f][0] for f in TRADE_FIELDS))
    assert k0 == k1 > 0
    for f in TRADE_FIELDS:
        np.testing.assert_array_equal(bufs[0][f][0, :k0], bufs[1][f][0, :k1])
