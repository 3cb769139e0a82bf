"""cpu: the Alpha158 cores compiled with numba.njit (cached on disk, serial: the stage
parallelises over symbol chunks). Same names and arguments as `kernels.alpha158.cores`."""

from __future__ import annotations

from numba import njit

from kernels.alpha158 import cores, ratios

_jit = njit(cache=True, nogil=True, error_model="numpy")

roll_sum = _jit(cores.roll_sum)
roll_mean = _jit(cores.roll_mean)
roll_var = _jit(cores.roll_var)
exact_prefix = _jit(cores.exact_prefix)
roll_sum_prefix = _jit(cores.roll_sum_prefix)
roll_mean_prefix = _jit(cores.roll_mean_prefix)
roll_count_prefix = _jit(cores.roll_count_prefix)
roll_var_many = _jit(cores.roll_var_many)
roll_max = _jit(cores.roll_max)
roll_min = _jit(cores.roll_min)
roll_idxmax = _jit(cores.roll_idxmax)
roll_idxmin = _jit(cores.roll_idxmin)
roll_max_idxmax = _jit(cores.roll_max_idxmax)
roll_min_idxmin = _jit(cores.roll_min_idxmin)
roll_qrank = _jit(cores.roll_qrank)
roll_linreg = _jit(cores.roll_linreg)
window_ratios = _jit(ratios.window_ratios)
