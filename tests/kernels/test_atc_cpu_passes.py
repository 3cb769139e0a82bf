"""The ATC cpu driver's multi-MA passes equal the one-MA cores bit for bit.

`kernels.atc.cpu` computes a family's nine MAs in one multi-lane pass where it has a lane
core (EMA, DEMA from kernels.indicators.multilane; Pine's KAMA: `cores.kama_pine_lanes`) and folds
the nine into layer 1 in one pass (`cores.layer1_family_core`); LSMA goes through the cpu
variant with blocked divisions. Each must give the bits of the portable one-MA cores
(`cores.ma`, `cores.layer1_core`), which the cuda backend runs: each piece is compared with
them, and so is the whole driver (`_one_ma_at_a_time`, those cores composed in a plain loop).
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kernels import atc
from kernels.atc import cores
from kernels.atc import cpu as atc_cpu
from kernels.atc.params import AtcParams, length_table


def _closes(t_len: int, seed: int = 3) -> np.ndarray:
    """A random walk with a flat stretch (zero noise: KAMA's ratio 0) and a spike."""
    rng = np.random.default_rng(seed)
    x = 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.02, t_len)))
    if t_len > 150:
        x[60:90] = x[60]
        x[150] *= 1.5
    return x


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint64)


# Lengths across every phase: shorter than, equal to and longer than the series.
LENGTHS = np.array([1, 2, 3, 22, 28, 34, 199, 200, 201], dtype=np.int64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kama_pine_lanes_equal_kama_pine_core_per_lane_bit_for_bit(dtype):
    x = _closes(200).astype(dtype)
    block = np.full((200, len(LENGTHS)), -1.0)
    state = np.empty((2, len(LENGTHS)))
    atc_cpu.kama_pine_lanes_cpu(x, LENGTHS, block, state[0], state[1])
    for j, n in enumerate(LENGTHS):
        want = np.full(200, -1.0)
        atc_cpu.kama_pine_cpu(x, n, want)
        np.testing.assert_array_equal(_bits(np.ascontiguousarray(block[:, j])), _bits(want), err_msg=f"n={n}")


def test_kama_pine_lanes_on_a_series_shorter_than_every_length_is_all_warm_up():
    x = _closes(5)
    ns = np.array([6, 9], dtype=np.int64)
    block = np.empty((5, 2))
    state = np.empty((2, 2))
    atc_cpu.kama_pine_lanes_cpu(x, ns, block, state[0], state[1])
    for j, n in enumerate(ns):
        want = np.empty(5)
        atc_cpu.kama_pine_cpu(x, n, want)
        np.testing.assert_array_equal(block[:, j], want)


@pytest.mark.parametrize("cutout", [0, 1, 40])
def test_layer1_family_core_equals_nine_layer1_core_calls_bit_for_bit(cutout):
    x = _closes(300)
    lens = length_table(28, "Medium")
    r = np.empty(300)
    atc_cpu.returns_cpu(x, np.exp(0.02 * (np.arange(300.0) - cutout)), r)
    for f in range(len(lens)):
        mas = np.empty((9, 300))
        for i in range(9):
            atc_cpu.ma_cpu(f, x, lens[f, i], mas[i])
        want_nom, want_den = np.full(300, 0.5), np.full(300, 0.25)
        got_nom, got_den = want_nom.copy(), want_den.copy()
        for i in range(9):
            atc_cpu.layer1_cpu(x, mas[i], r, 0.97, cutout, want_nom, want_den)
        atc_cpu.layer1_family_cpu(x, mas, r, 0.97, cutout, got_nom, got_den)
        np.testing.assert_array_equal(_bits(got_nom), _bits(want_nom), err_msg=f"family {f}")
        np.testing.assert_array_equal(_bits(got_den), _bits(want_den), err_msg=f"family {f}")
        # the same through a transposed [T, 9] block, as the lane families hand it over
        got_nom, got_den = np.full(300, 0.5), np.full(300, 0.25)
        atc_cpu.layer1_family_cpu(x, np.ascontiguousarray(mas.T).T, r, 0.97, cutout, got_nom, got_den)
        np.testing.assert_array_equal(_bits(got_nom), _bits(want_nom), err_msg=f"family {f}, block")


def test_lsma_in_the_atc_is_the_blocked_cpu_variant_of_the_same_bits():
    x = _closes(700)
    for n in (2, 22, 28, 34, 699, 700, 701):
        want, got = np.full(700, -1.0), np.full(700, -1.0)
        njit(cores.lsma_core)(x, n, want)
        atc_cpu.ma_variant_cpu(4, x, n, got)
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"n={n}")


def _one_ma_at_a_time(x, p):
    """The indicator from the portable one-MA cores, one call per MA, in a plain loop."""
    n_series, t_len = x.shape
    growth = p.growth(t_len)
    fam = np.empty((n_series, 6, t_len))
    final = np.empty((n_series, t_len))
    for s in range(n_series):
        xs = x[s]
        r = np.empty(t_len)
        atc_cpu.returns_cpu(xs, growth, r)
        fnom, fden = np.zeros(t_len), np.zeros(t_len)
        for f in range(6):
            nom, den = np.zeros(t_len), np.zeros(t_len)
            for n in p.lens[f]:
                m = np.empty(t_len)
                atc_cpu.ma_cpu(f, xs, n, m)
                atc_cpu.layer1_cpu(xs, m, r, p.d, p.cutout, nom, den)
            atc_cpu.family_finish_cpu(nom, den, nom)
            fam[s, f] = nom
            atc_cpu.layer2_cpu(nom, r, p.d, p.cutout, p.weights[f], fnom, fden)
        atc_cpu.final_cpu(fnom, fden, fnom)
        final[s] = fnom
    return fam, final


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("robustness,length,cutout", [("Medium", 28, 0), ("Wide", 14, 25), ("Narrow", 40, 3)])
def test_the_driver_equals_the_one_ma_cores_bit_for_bit(robustness, length, cutout, dtype):
    """The whole driver, without the bank (lane passes, family layer) and with it, against
    the portable cores one MA at a time, over 260 bars and over 30 bars (shorter than most
    lengths: lanes still in warm-up at the end)."""
    p = AtcParams(robustness, length, 0.02, 0.03, cutout, 1.0)
    for t_len in (260, 30):
        x = np.stack([_closes(t_len, seed=s) for s in range(3)] + [_closes(t_len, seed=9)[::-1].copy()]).astype(dtype)
        want_fam, want_final = _one_ma_at_a_time(x, p)
        growth = p.growth(t_len)
        for name, bank in (("lanes", np.empty((0, p.lens.size, t_len))),
                           ("bank", np.empty((x.shape[0], p.lens.size, t_len)))):
            need = np.ones((bank.shape[0], p.lens.size), dtype=np.bool_)
            fam = np.empty((x.shape[0], 6, t_len))
            final = np.empty((x.shape[0], t_len))
            atc_cpu._cpu_batch(x, p.lens, p.weights, need, bank, growth, p.d, p.cutout, 0, fam, final)
            np.testing.assert_array_equal(_bits(fam), _bits(want_fam), err_msg=f"{name}, T={t_len}")
            np.testing.assert_array_equal(_bits(final), _bits(want_final), err_msg=f"{name}, T={t_len}")
    assert np.isfinite(want_final[:, -1]).all()
    atc.ma_cache.clear()
