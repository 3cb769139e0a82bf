"""Compute library: arrays in, arrays out. No Dagster, no polars, no file paths.

Backends: cpu (numba njit), cuda (numba.cuda / CuPy), torch (ROCm and CUDA, also CPU).
"""
