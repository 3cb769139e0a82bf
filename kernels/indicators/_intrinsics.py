"""The indicator family's numba intrinsics, private to its cores (one module, three helpers):

- `fma(a, b, c)`: the compiled form of `kernels.indicators.fused.fma`, `llvm.fma.f64` in numba cpu
  and cuda code. Importing this module registers it; cores import `fma` from here so that the
  registration comes with the name (tests/kernels/test_fused.py: the compiled and the Python fma
  give the same bits).
- `float_bits(v)` and `bits_float(b)`: a float64's IEEE-754 bits as an int64 and back, one register
  move when compiled for the cpu (numba has no scalar view; `math.frexp` and `math.ldexp` are library
  calls, ~100 ns for a lane's binade in kernels.indicators.shifted); in Python, NumPy views.
- `prefetch(a, i)`: a hint that a[i] will be read soon (`llvm.prefetch`, into every cache level), in
  numba cpu code; in Python, and for the CUDA simulator, it does nothing. A loop bound by its
  arithmetic can fetch the memory its next block will read while it computes, instead of waiting on
  it when the block starts (`kernels.indicators.chunks.dmi_chunked_core`). A prefetch never faults
  and never changes a value: an index past the end is harmless, though the callers keep theirs
  inside the array.

Importing it also registers the steps of `kernels.indicators.steps` (numba-free, so the
updaters can call them in plain Python) with `register_jitable`, so that every compiled
schedule, cpu or cuda, can call them.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload, register_jitable

from kernels.indicators import steps
from kernels.indicators.fused import fma

__all__ = ["bits_float", "float_bits", "fma", "prefetch"]


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


def float_bits(v):
    """The bits of float64 v as an int64."""
    return int(np.float64(v).view(np.int64))


def bits_float(b):
    """The float64 whose bits are the int64 b."""
    return float(np.int64(b).view(np.float64))


def _bitcast(src, dst):
    """An intrinsic that reinterprets a `src` value's bits as a `dst` value of the same size."""

    @intrinsic
    def bitcast(typingctx, v):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(dst))

        return dst(src), codegen

    return bitcast


_bitcast_to_int = _bitcast(types.float64, types.int64)
_bitcast_to_float = _bitcast(types.int64, types.float64)


@overload(float_bits, target="cpu")
def _float_bits_compiled(v):
    return lambda v: _bitcast_to_int(np.float64(v))


@overload(bits_float, target="cpu")
def _bits_float_compiled(b):
    return lambda b: _bitcast_to_float(np.int64(b))


def prefetch(a, i):
    """Nothing in Python: the compiled form is the hint."""


@intrinsic
def _llvm_prefetch(typingctx, a, i):
    """llvm.prefetch(&a[i], read, locality 3, data cache) on a 1-D array."""
    sig = types.void(a, i)

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        array = context.make_array(array_type)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, array_type, array, [args[1]], wraparound=False,
                                       boundscheck=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@overload(prefetch, target="cpu")
def _prefetch_compiled(a, i):
    if isinstance(a, types.Array) and a.ndim == 1:
        return lambda a, i: _llvm_prefetch(a, i)
    return None


for _step in list(vars(steps).values()):  # every step, so a new one needs no line here
    if callable(_step) and getattr(_step, "__module__", None) == steps.__name__:
        register_jitable(_step)
