"""float_bits and bits_float: a float64's IEEE-754 bits and back, the same in Python and compiled."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kernels.indicators._intrinsics import bits_float, float_bits

VALUES = [0.0, -0.0, 1.0, -2.5, 1e-310, -1e-320, 2.0**1023, np.inf, -np.inf, 1000.0 + 2.0**-40]


@njit(cache=True)
def _round_trip(v):
    b = float_bits(v)
    return b, bits_float(b)


@pytest.mark.parametrize("v", VALUES)
def test_bits_are_numpys_view_in_python_and_compiled(v):
    want = int(np.array([v]).view(np.int64)[0])
    assert float_bits(v) == want
    b, back = _round_trip(v)
    assert b == want
    assert np.array([back]).view(np.int64)[0] == want  # the sign of zero and subnormals kept


def test_a_nan_keeps_its_payload_and_an_exponent_field_builds_a_power_of_two():
    nan_bits = 0x7FF8_0000_0000_0BAD
    b, back = _round_trip(bits_float(nan_bits))
    assert b == nan_bits and np.isnan(back)
    assert _round_trip(bits_float(1023 << 52))[1] == 1.0
    assert bits_float((1023 - 52) << 52) == 2.0**-52
