"""`kernels.indicators._intrinsics.prefetch`: a hint in compiled code (an x86 prefetch instruction),
nothing in Python, and never a change to what the code computes."""

from __future__ import annotations

import platform

import numpy as np
import pytest
from numba import njit

from kernels.indicators._intrinsics import prefetch


def _sum_with_hints(a):
    s = 0.0
    for i in range(a.shape[0]):
        prefetch(a, min(i + 64, a.shape[0] - 1))
        s += a[i]
    return s


def test_prefetch_in_python_does_nothing():
    a = np.arange(10.0)
    assert prefetch(a, 3) is None
    assert _sum_with_hints(a) == 45.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_compiled_prefetch_leaves_the_result_unchanged_on_contiguous_and_strided_arrays(dtype):
    compiled = njit(_sum_with_hints)
    a = np.arange(1000).astype(dtype)
    assert compiled(a) == _sum_with_hints(a) == float(a.sum())
    assert compiled(a[::3]) == float(a[::3].sum())


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 assembly")
def test_compiled_prefetch_is_a_prefetch_instruction():
    compiled = njit(_sum_with_hints)
    compiled(np.ones(10))
    assert "prefetch" in compiled.inspect_asm(compiled.signatures[0])
