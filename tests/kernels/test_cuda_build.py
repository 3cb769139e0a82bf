"""kernels.cuda_build: -fma=0 for the project's marked kernels, nothing under the simulator,
and a clear error where numba-cuda has no hook. The compiled effect (no contracted fma in the
PTX) is checked by scripts/cuda_compile_check.py, which needs the toolchain wheels."""

from __future__ import annotations

import types

import numpy as np
import pytest
from numba import cuda  # at module level: the simulator swaps it through a kernel's globals

from kernels import cuda_build
from tests.gpu import simulated

sim_only = pytest.mark.skipif(not simulated(), reason="the simulator's behaviour (CI)")


@sim_only
def test_the_hook_is_a_no_op_under_the_simulator():
    before = set(cuda_build._modules)
    assert cuda_build.simulated() is True
    assert cuda_build.install() is False
    assert cuda_build.no_fma("kernels.some_cuda_module") is False
    assert cuda_build._modules == before and not cuda_build._installed
    assert cuda.jit is not cuda_build.jit  # cuda.jit itself is left alone


@sim_only
def test_jit_returns_a_working_kernel_and_device_function_under_the_simulator():
    mul = cuda_build.jit(device=True)(lambda a, b: a * b)

    @cuda_build.jit
    def muladd(a, b, c, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = mul(a[i], b[i]) + c[i]

    a, b, c = (np.arange(8, dtype=np.float64) + k for k in (0.5, 1.25, 2.0))
    out = np.zeros(8)
    muladd[1, 8](a, b, c, out)
    np.testing.assert_array_equal(out, a * b + c)


def _fake_dispatcher():
    def compile_cuda(pyfunc, return_type, args, debug=False, fastmath=False, nvvm_options=None, cc=None):
        return nvvm_options

    return types.SimpleNamespace(compile_cuda=compile_cuda, __file__="fake")


def test_wrap_adds_fma_off_only_for_marked_functions_keyword_or_positional(monkeypatch):
    monkeypatch.setattr(cuda_build, "_modules", {"tests.fake_cuda"})
    monkeypatch.setattr(cuda_build, "_functions", set())

    def by_module():
        pass

    def by_jit():
        pass

    def other():
        pass

    by_module.__module__ = "tests.fake_cuda"
    cuda_build._functions.add(id(by_jit))
    fake = _fake_dispatcher()
    cuda_build.wrap(fake)
    options = {"fastmath": False, "opt": 3}
    assert fake.compile_cuda(by_module, None, (), nvvm_options=options) == {"fastmath": False, "opt": 3, "fma": False}
    assert fake.compile_cuda(by_jit, None, (), False, False, options) == {"fastmath": False, "opt": 3, "fma": False}
    assert fake.compile_cuda(by_jit, None, ()) == {"fma": False}
    assert fake.compile_cuda(other, None, (), nvvm_options=options) is options
    assert options == {"fastmath": False, "opt": 3}  # the caller's dict is not changed
    wrapped = fake.compile_cuda
    cuda_build.wrap(fake)  # idempotent: wrapped once
    assert fake.compile_cuda is wrapped


def test_wrap_raises_a_clear_error_when_numba_cuda_has_no_hook():
    old = types.SimpleNamespace(compile_cuda=lambda pyfunc, return_type, args, debug=False: None, __file__="old")
    with pytest.raises(cuda_build.FmaHookMissing, match="-fma=0"):
        cuda_build.wrap(old)
    with pytest.raises(cuda_build.FmaHookMissing):
        cuda_build.wrap(types.SimpleNamespace())


def test_with_no_fma_leaves_unmarked_options_alone(monkeypatch):
    monkeypatch.setattr(cuda_build, "_modules", set())
    monkeypatch.setattr(cuda_build, "_functions", set())
    assert cuda_build.with_no_fma(len, None) is None
    assert cuda_build.NVVM_OPTIONS == {"fma": False}  # numba-cuda's stringify: -fma=0
