"""The project's CUDA kernels compile without FMA contraction (NVVM `-fma=0`), bit for bit with the CPU.

NVVM contracts `a * b + c` into one `fma.rn.f64` by default (`-fma=1`); the CPU engines
round the product and the sum separately, so a contracted kernel differs from them in the
last bits. numba-cuda's `cuda.jit` has no option for it (its `fastmath` switches fma on, never
off), but every kernel compile goes through `numba.cuda.dispatcher.compile_cuda(pyfunc, ...,
nvvm_options=...)`, and the options reach `nvvm.compile_ir` / `CompilationUnit` as
`-name=value` (`{"fma": False}` -> `-fma=0`). `install()` wraps that name once per process so
that it adds `fma=False` for the functions the project marked, and only those:

- `no_fma(__name__)` at the top of a CUDA module marks every function defined in that
  module (by `pyfunc.__module__`), so its `@cuda.jit` kernels need no other change;
- `jit(fn)` / `jit(**options)(fn)` marks one function and returns `cuda.jit(...)(fn)`.

A kernel and the device functions it calls are compiled by NVVM as one unit with the
kernel's options, so marking the kernel's module is enough (the shared cores' modules need
no mark). Explicit `fma(a, b, c)` calls (`kernels.indicators._intrinsics`: `llvm.fma.f64`) are not
contractions and stay `fma.rn.f64` instructions. Functions of other modules (numba's own,
a notebook's) compile as numba-cuda would compile them.

Under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, CI) there is nothing to compile:
everything here is a no-op and `jit` is `cuda.jit`. When numba-cuda lacks the hook (no
`compile_cuda` taking `nvvm_options` in its dispatcher) `install()` raises `FmaHookMissing`
naming the version: a kernel compiled with contraction would not be bit for bit, so a real
device refuses rather than runs it. `scripts/cuda_compile_check.py` checks the result
offline: no `fma.rn.f64` in a kernel's PTX beyond its explicit fma calls.
"""

from __future__ import annotations

import functools
import inspect

NVVM_OPTIONS = {"fma": False}  # -fma=0: no contraction of a*b+c
_modules: set[str] = set()
_functions: set[int] = set()  # id() of marked Python functions (they live as long as the module)
_installed = False


class FmaHookMissing(RuntimeError):
    """numba-cuda offers no place to pass `-fma=0`: kernels would contract a*b+c."""


def simulated() -> bool:
    """True under numba's CUDA simulator (nothing is compiled there)."""
    from numba import config

    return bool(getattr(config, "ENABLE_CUDASIM", False))


def marked(pyfunc) -> bool:
    """Whether the project asked for `-fma=0` for this Python function."""
    return id(pyfunc) in _functions or getattr(pyfunc, "__module__", None) in _modules


def with_no_fma(pyfunc, nvvm_options: dict | None) -> dict | None:
    """The NVVM options a compile of `pyfunc` gets: `fma=False` added when it is marked."""
    if not marked(pyfunc):
        return nvvm_options
    return {**(nvvm_options or {}), **NVVM_OPTIONS}


def install() -> bool:
    """Wrap numba-cuda's `compile_cuda` once so marked functions compile with `-fma=0`.

    Returns False under the simulator (nothing done), True once installed; raises
    `FmaHookMissing` when numba-cuda has no `compile_cuda(..., nvvm_options=...)`."""
    global _installed
    if simulated():
        return False
    if _installed:
        return True
    import numba.cuda.dispatcher as dispatcher

    wrap(dispatcher)
    _installed = True
    return True


def wrap(dispatcher) -> None:
    """Replace `dispatcher.compile_cuda` by one adding `fma=False` to a marked function's nvvm_options
    (idempotent); `FmaHookMissing` when it takes no `nvvm_options`."""
    original = getattr(dispatcher, "compile_cuda", None)
    try:
        signature = inspect.signature(original) if original is not None else None
    except (TypeError, ValueError):
        signature = None
    if signature is None or "nvvm_options" not in signature.parameters:
        import numba

        raise FmaHookMissing(
            f"numba.cuda.dispatcher.compile_cuda takes no nvvm_options (numba {numba.__version__}, "
            f"{getattr(dispatcher, '__file__', '?')}): the project's kernels cannot be compiled with -fma=0 and would "
            "not be bit for bit with the CPU; install a numba-cuda whose dispatcher passes nvvm_options (0.30.x does)")
    if getattr(original, "_tradelab_no_fma", False):
        return

    @functools.wraps(original)
    def compile_cuda(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        pyfunc = bound.arguments.get("pyfunc", args[0] if args else None)
        if marked(pyfunc):
            bound.arguments["nvvm_options"] = with_no_fma(pyfunc, bound.arguments.get("nvvm_options"))
        return original(*bound.args, **bound.kwargs)

    compile_cuda._tradelab_no_fma = True
    dispatcher.compile_cuda = compile_cuda


def no_fma(module: str) -> bool:
    """Mark every function defined in `module` (pass `__name__`) for `-fma=0`; installs the hook.
    A no-op under the simulator (returns False)."""
    if simulated():
        return False
    _modules.add(module)
    return install()


def jit(fn=None, **options):
    """`cuda.jit` with `-fma=0` for this function: `@jit`, `@jit(device=True)`, `jit(device=True)(fn)`.
    Under the simulator it is `cuda.jit` itself."""
    from numba import cuda

    def decorate(f):
        if not simulated():
            install()
            _functions.add(id(f))
        return cuda.jit(**options)(f) if options else cuda.jit(f)

    return decorate if fn is None else decorate(fn)
