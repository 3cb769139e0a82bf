"""Alpha158 kernel family: Qlib's 158 Alpha158 features, equal to Qlib's expression engine.

- `cores`: the rolling operators as plain loops over symbols stored back to back, replaying
  pandas' / Qlib's arithmetic (Kahan sums, Welford variance, Qlib's Cython regression sums).
- `ratios`: the 29 per-window columns from a window's rolling results, one compiled pass
  with NumPy's dtype flow (replaces ~60 NumPy passes and their float64 temporaries).
- `cpu`: the cores and `ratios.window_ratios` compiled with numba.njit.
- `features`: ALPHA158_NAMES, ALPHA158_WARMUP and `compute_alpha158` (Qlib's dtype flow:
  float32 element-wise steps, float64 rolling steps, cast at the end).
- `reference`: each core as a slow pandas / NumPy loop, for tests.
"""

from kernels.alpha158.features import ALPHA158_NAMES, ALPHA158_WARMUP, compute_alpha158

__all__ = ["ALPHA158_NAMES", "ALPHA158_WARMUP", "compute_alpha158"]
