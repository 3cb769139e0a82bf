"""The alpha158 rolling sums and means from exact integer prefix sums (cores.exact_prefix,
roll_sum_prefix, roll_mean_prefix, roll_count_prefix) equal pandas bit for bit wherever
exact_prefix admits the window, and exact_prefix admits no window where pandas' Kahan sum
could round.

- On float32 values (prices, their changes, volumes, as compute_alpha158 feeds them), with
  NaN, +-inf (missing to pandas), repeated values, zero runs and symbols shorter than the
  window, every window of 1..60 rows is admitted and equals pandas' rolling sum and mean
  (kernels.alpha158.reference) and the Kahan cores, bit for bit; the count equals pandas'
  rolling count of values.
- Refused: a -0.0 (pandas returns a window of repeated -0.0 as -0.0), a subnormal, and
  windows whose sums may need more than 53 bits (the bound is conservative: the largest
  |value| times the window's rows); a series admitted up to n rows gives pandas' bits at n.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernels.alpha158 import cpu, reference

OFFSETS = np.array([0, 3, 3, 120, 250])  # a 3-row symbol, an empty one


def _prefix(x):
    p_int = np.empty(x.shape[0] + 1, dtype=np.int64)
    p_cnt = np.empty(x.shape[0] + 1, dtype=np.int64)
    e, n_max = cpu.exact_prefix(x, p_int, p_cnt)
    return p_int, p_cnt, e, n_max


def _series():
    """float32 series widened to float64: a price walk with NaN, +-inf, a flat stretch; its
    positive changes (zero runs); an integer volume with zeros."""
    rng = np.random.default_rng(43)
    rows = OFFSETS[-1]
    price = (50 * np.exp(np.cumsum(rng.normal(0, 0.02, rows)))).astype(np.float32)
    price[40:60] = price[39]
    up = np.maximum(np.diff(price, prepend=price[0]), np.float32(0))
    volume = np.round(rng.lognormal(12, 1, rows)).astype(np.float32)
    volume[[7, 8, 200]] = 0
    out = []
    for x in (price, up, volume):
        x = x.astype(np.float64)
        x[[10, 11, 130]] = np.nan
        x[[20, 140]] = [np.inf, -np.inf]
        out.append(x)
    return out


@pytest.mark.parametrize("n", [1, 2, 5, 10, 20, 30, 60])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_prefix_sum_mean_and_count_equal_pandas_bit_for_bit(which, n):
    x = _series()[which]
    p_int, p_cnt, e, n_max = _prefix(x)
    assert n_max >= 60
    got_sum, got_mean, got_count, kahan = (np.full(len(x), -7.0) for _ in range(4))
    cpu.roll_sum_prefix(p_int, p_cnt, e, OFFSETS, n, got_sum)
    cpu.roll_mean_prefix(p_int, p_cnt, e, OFFSETS, n, got_mean)
    cpu.roll_count_prefix(p_cnt, OFFSETS, n, got_count)
    np.testing.assert_array_equal(got_sum, reference.roll_sum(x, OFFSETS, n))
    np.testing.assert_array_equal(got_mean, reference.roll_mean(x, OFFSETS, n))
    cpu.roll_mean(x, OFFSETS, n, kahan)
    np.testing.assert_array_equal(got_mean, kahan)
    finite = np.where(np.isfinite(x), 1.0, np.nan)
    want_count = np.nan_to_num(reference.roll_sum(finite, OFFSETS, n), nan=0.0)
    np.testing.assert_array_equal(got_count, want_count)


@pytest.mark.parametrize("bad", [-0.0, 5e-324])
def test_negative_zero_and_subnormals_are_refused(bad):
    x = _series()[1]
    x[50] = bad
    assert _prefix(x)[3] == 0


def test_windows_beyond_53_bits_are_refused():
    """1 beside 2**-60: no window of two values has an exact float64 sum, none is admitted.
    3 * 2**-40 beside 8191: one value takes 53 bits, windows of one row are admitted."""
    x = np.where(np.arange(OFFSETS[-1]) % 2 == 0, 1.0, 2.0**-60)
    assert _prefix(x)[3] == 0
    x = np.where(np.arange(OFFSETS[-1]) % 2 == 0, 3 * 2.0**-40, 8191.0)
    p_int, p_cnt, e, n_max = _prefix(x)
    assert e == -40 and n_max == 1
    got = np.empty(len(x))
    cpu.roll_sum_prefix(p_int, p_cnt, e, OFFSETS, n_max, got)
    np.testing.assert_array_equal(got, reference.roll_sum(x, OFFSETS, n_max))


def test_all_missing_or_zero_series_sum_to_zero_or_nan():
    x = np.zeros(OFFSETS[-1])
    x[100:130] = np.nan
    p_int, p_cnt, e, n_max = _prefix(x)
    got = np.empty(len(x))
    cpu.roll_sum_prefix(p_int, p_cnt, e, OFFSETS, 5, got)
    np.testing.assert_array_equal(got, reference.roll_sum(x, OFFSETS, 5))
