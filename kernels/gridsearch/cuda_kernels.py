"""The grid search's CUDA kernels: the shared cores compiled as device functions.

Imported only when the cuda backend is asked for. `cuda` is imported at module level:
numba's CUDA simulator (CI) swaps it through the kernels' globals.
"""

from __future__ import annotations

from numba import cuda

from kernels.gridsearch.brute import combo_core
from kernels.gridsearch.exits import crossings_core

_crossings_dev = cuda.jit(device=True)(crossings_core)
_combo_dev = cuda.jit(device=True)(combo_core)


@cuda.jit
def crossings_kernel(start, end, entry, prices, targets, stops, first_t, first_s):
    """One thread per trade: first crossing row of every level."""
    j = cuda.grid(1)
    if j < start.shape[0]:
        _crossings_dev(j, start, end, entry, prices, targets, stops, first_t, first_s)


@cuda.jit
def combos_kernel(lo, hi, sizes, table, f0, f1, f2, f3, f4, results, out_sum, out_n):
    """One thread per combination lo..hi-1 (int64 index arithmetic in combo_core)."""
    c = lo + cuda.grid(1)
    if c < hi:
        _combo_dev(c, lo, sizes, table, f0, f1, f2, f3, f4, results, out_sum, out_n)
