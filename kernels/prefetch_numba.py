"""`prefetch(a, i)`: a hint that a[i] will be read soon (`llvm.prefetch`, into every cache level), in
numba cpu code; in Python, and for the CUDA simulator, it does nothing.

A loop bound by its arithmetic can fetch the memory its next block will read while it computes,
instead of waiting on it when the block starts (`kernels.chunked_cores.dmi_chunked_core`). A
prefetch never faults and never changes a value: an index past the end is harmless, though the
callers keep theirs inside the array.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

__all__ = ["prefetch"]


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
