"""`float_bits(v)` and `bits_float(b)`: a float64's IEEE-754 bits as an int64 and back, one register
move when compiled for the cpu (numba has no scalar view; `math.frexp` and `math.ldexp` are library
calls, ~100 ns for a lane's binade in kernels.shifted_cores); in Python, NumPy views.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import intrinsic, overload

__all__ = ["bits_float", "float_bits"]


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
