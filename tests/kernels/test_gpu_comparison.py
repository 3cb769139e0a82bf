"""`tests.gpu.assert_engine_equal`: bit for bit on the simulator and on a real GPU alike
(the real-GPU branch is run here by pretending a device is present); what its message says."""

from __future__ import annotations

import numpy as np
import pytest

import tests.gpu as gpu_helpers
from tests.gpu import assert_engine_equal

# The first H100 run (2026-11-27, before -fma=0): a window-2 z-score, cuda against cpu, where
# a fused multiply-add moved the cancelling E[x^2] - E[x]^2 by 1.15e-8 relative.
H100_ZSCORE_BEFORE_NO_FMA = (-1.0000000016627637, -0.9999999902019938)


@pytest.fixture(params=[False, True], ids=["simulator", "real_gpu"])
def device(request, monkeypatch):
    monkeypatch.setattr(gpu_helpers, "real_cuda", lambda: request.param)


def test_a_last_bit_of_difference_fails_everywhere(device):
    with pytest.raises(AssertionError, match=r"1 of 4 elements differ, first at flat index 2"):
        assert_engine_equal(np.array([np.nan, 1.0, np.nextafter(2.0, 3.0), -3.5]), np.array([np.nan, 1.0, 2.0, -3.5]))


def test_the_fma_moved_z_score_of_the_first_device_run_would_fail_now(device):
    got, want = H100_ZSCORE_BEFORE_NO_FMA
    with pytest.raises(AssertionError, match="gpu -1.0000000016627637, cpu -0.9999999902019938"):
        assert_engine_equal(np.array([got]), np.array([want]))


def test_nan_where_the_cpu_has_nan_passes_and_nan_elsewhere_fails(device):
    assert_engine_equal(np.array([np.nan, 2.0]), np.array([np.nan, 2.0]))
    with pytest.raises(AssertionError, match="1 of 2 elements differ, first at flat index 0"):
        assert_engine_equal(np.array([1.0, 2.0]), np.array([np.nan, 2.0]))


def test_float32_integers_and_shapes_are_compared_as_they_are(device):
    assert_engine_equal(np.float32([1.0, 2.0]), np.float32([1.0, 2.0]))
    with pytest.raises(AssertionError):
        assert_engine_equal(np.nextafter(np.float32([1.0]), np.float32(9)), np.float32([1.0]))
    with pytest.raises(AssertionError, match="3 of 3 elements differ"):
        assert_engine_equal(np.array([[1, 2, 3]]), np.array([[2, 3, 4]]))
    with pytest.raises(AssertionError):
        assert_engine_equal(np.float64([1.0]), np.float32([1.0]))
