"""fma(a, b, c): a*b + c rounded once, the same bits in Python and in compiled cores.

TA-Lib's C library as the `ta-lib` wheels ship it is built with FMA (`vfmadd` in
`libta-lib.so`), so its compiler fuses `x*y + z` where the C code writes it. A core that
follows TA-Lib's arithmetic fuses in the same places with this function to give TA-Lib's
bits, and the loop-carried chain loses a rounding step (sub+fma 1.67 ns a row against
sub+mul+add 1.91 on the EPYC of benchmarks/RESULTS.md, `benchmarks/probe_chains.py`).

One definition, two ways to run it:
- in Python (the streaming updaters, the CUDA simulator): `math.fma` from Python 3.13, and
  before it the exact rational sum rounded once (CPython's integer division rounds correctly),
  with IEEE 754's rules for infinities, NaN, signed zeros and overflow. This module imports
  no numba, so the updaters stay light;
- compiled (numba cpu, numba cuda): `kernels.indicators._intrinsics` gives this function its compiled
  form, `llvm.fma.f64`, one instruction where the CPU or GPU has it (LLVM calls libm's
  correctly rounded `fma` where it has not). Cores import `fma` from there.
"""

from __future__ import annotations

import math

INF = float("inf")


def _fma_exact(a: float, b: float, c: float) -> float:
    """a*b + c rounded once to float64, for Pythons without math.fma.

    Every finite float is n/2^k (`as_integer_ratio`), so the sum is one exact integer over a
    power of two, and CPython's integer true division rounds it once, correctly (subnormals
    included; OverflowError past the largest float)."""
    a, b, c = float(a), float(b), float(c)
    if not (math.isfinite(a) and math.isfinite(b)):
        return a * b + c  # the product is inf or NaN exactly as the fused one
    if not math.isfinite(c):
        return c + 0.0  # a finite product leaves an inf or NaN addend as it is
    na, da = a.as_integer_ratio()
    nb, db = b.as_integer_ratio()
    nc, dc = c.as_integer_ratio()
    num = na * nb * dc + nc * da * db
    if num == 0:  # IEEE 754: +0, unless a zero product and c are both -0
        product_zero_negative = (a == 0 or b == 0) and math.copysign(1.0, a) * math.copysign(1.0, b) < 0
        return -0.0 if product_zero_negative and c == 0 and math.copysign(1.0, c) < 0 else 0.0
    try:
        return num / (da * db * dc)
    except OverflowError:
        return INF if num > 0 else -INF


_python_fma = getattr(math, "fma", _fma_exact)


def fma(a, b, c):
    """a*b + c with one rounding (see the module docstring)."""
    return _python_fma(a, b, c)
