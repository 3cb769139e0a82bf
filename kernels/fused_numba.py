"""The compiled form of `kernels.fused.fma`: `llvm.fma.f64` in numba cpu and cuda code.

Importing this module registers it; cores import `fma` from here so that the registration
comes with the name (tests/kernels/test_fused.py: the compiled and the Python fma give the
same bits).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from kernels.fused import fma

__all__ = ["fma"]


@intrinsic
def _llvm_fma(typingctx, a, b, c):
    """llvm.fma.f64 on three float64 (numba casts other numbers to them at the call)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        f64 = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [f64], ir.FunctionType(f64, [f64, f64, f64]))
        return builder.call(fn, args)

    return sig, codegen


@overload(fma)
def _fma_compiled(a, b, c):
    return lambda a, b, c: _llvm_fma(a, b, c)
