"""kernels.indicators.fused.fma: a*b + c rounded once, the same bits in Python and compiled.

The Python form is what the streaming updaters and the CUDA simulator run (on Python 3.11,
the exact rational sum rounded once; `_fma_exact` is tested directly so that it is tested
on every Python); the compiled form (`kernels.indicators._intrinsics`, llvm.fma) is what the cores run.
Expected values are exact: products of float64 are exact rationals.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from kernels.indicators.fused import _fma_exact, fma
from kernels.indicators._intrinsics import fma as compiled_fma

E = 2.0**-52
INF = math.inf
NAN = math.nan


@njit(cache=False)
def _compiled_one(a, b, c):
    return compiled_fma(a, b, c)


@njit(cache=False)
def _compiled_many(a, b, c):
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = compiled_fma(a[i], b[i], c[i])
    return out


def bits(v: float) -> int:
    return int(np.float64(v).view(np.int64))


# (a, b, c, the fused result): each case names the rule it checks
CASES = {
    "one_rounding_keeps_what_two_lose": (1 + E, 1 - E, -1.0, -(2.0**-104)),
    "exact_product_plus_addend": (3.0, 5.0, 7.0, 22.0),
    "exact_zero_sum_is_positive_zero": (1.0, 1.0, -1.0, 0.0),
    "negative_zero_product_plus_negative_zero": (-0.0, 1.0, -0.0, -0.0),
    "negative_zero_product_plus_positive_zero": (-0.0, 1.0, 0.0, 0.0),
    "a_product_that_overflows_alone_is_kept_exact": (2.0**1023, 2.0, -(2.0**1023), 2.0**1023),
    "overflow_of_the_sum_is_infinite": (1e308, 10.0, 0.0, INF),
    "negative_overflow": (-1e308, 10.0, 0.0, -INF),
    "finite_product_leaves_an_infinite_addend": (1e308, 10.0, -INF, -INF),
    "infinite_product_plus_finite": (INF, 2.0, 1.0, INF),
    "smallest_subnormal_from_an_exact_product": (2.0**-537, 2.0**-537, 0.0, 2.0**-1074),
    "underflow_below_half_the_smallest_subnormal_is_zero": (2.0**-600, 2.0**-500, 0.0, 0.0),
}
NAN_CASES = {
    "infinity_times_zero": (INF, 0.0, 1.0),
    "opposite_infinities": (INF, 2.0, -INF),
    "nan_factor": (NAN, 1.0, 1.0),
    "nan_addend": (1.0, 1.0, NAN),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_python_and_compiled_fma_give_the_ieee_result(case):
    a, b, c, want = CASES[case]
    for f in (_fma_exact, fma, _compiled_one):
        assert bits(f(a, b, c)) == bits(want), f"{f.__name__}{(a, b, c)}"


@pytest.mark.parametrize("case", sorted(NAN_CASES))
def test_nan_results_are_nan_on_both_sides(case):
    a, b, c = NAN_CASES[case]
    assert math.isnan(_fma_exact(a, b, c)) and math.isnan(fma(a, b, c)) and math.isnan(_compiled_one(a, b, c))


def test_the_unfused_formula_differs_where_the_fused_one_keeps_the_low_bits():
    a, b, c, want = CASES["one_rounding_keeps_what_two_lose"]
    assert a * b + c == 0.0 and fma(a, b, c) == want != 0.0


def test_compiled_equals_python_on_random_triples_across_exponents():
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(3, 20_000)) * 10.0 ** rng.integers(-30, 30, size=(3, 20_000))
    c[::3] = -a[::3] * b[::3]  # cancellations: the sums where one rounding matters most
    want = np.array([_fma_exact(*t) for t in zip(a, b, c)])
    np.testing.assert_array_equal(_compiled_many(a, b, c).view(np.int64), want.view(np.int64))


def test_compiled_equals_python_where_results_are_subnormal_or_overflow():
    rng = np.random.default_rng(1)
    tiny = rng.normal(size=(3, 5_000)) * 10.0 ** rng.integers(-170, -150, size=(3, 5_000))
    tiny[2] *= 1e-152  # addends as small as the products: results around the subnormal range (< 2.2e-308)
    huge = rng.normal(size=(3, 5_000)) * 10.0 ** rng.integers(150, 160, size=(3, 5_000))
    for a, b, c in (tiny, huge):
        want = np.array([_fma_exact(*t) for t in zip(a, b, c)])
        np.testing.assert_array_equal(_compiled_many(a, b, c).view(np.int64), want.view(np.int64))
    assert (np.abs(_compiled_many(*tiny)) < 2.2250738585072014e-308).mean() > 0.3
    assert np.isinf(_compiled_many(*huge)).mean() > 0.3


def test_float32_and_integer_arguments_are_read_as_float64():
    assert _compiled_one(np.float32(1.5), 2, 3.0) == fma(np.float32(1.5), 2, 3.0) == 6.0
