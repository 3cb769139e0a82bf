"""Compile every CUDA kernel of the project with numba-cuda for a GPU, on a machine without one.

The GPU proof (`make gpu-check`) needs a lent GPU; this catches, before one is lent, what
would stop it at compile time: typing and lowering errors of the kernels and the shared
cores on real numba-cuda (the CUDA simulator in CI runs them as Python and never compiles
them). It runs each GPU engine's entry point on tiny inputs with three things patched:
the current device is a stand-in with the compute capability asked for (numba-cuda asks
it for the target), device arrays are host arrays, and a kernel launch compiles the kernel
to PTX through NVVM and returns without running it. What the engine does with the
(unfilled) outputs afterwards is not checked.

numba-cuda, the CUDA Python bindings, NVRTC and NVVM come from PyPI wheels into a
throwaway folder (`--site`, about 450 MB; nothing of it is a project dependency), and the
script re-runs itself with their libraries on the path.

Usage: python scripts/cuda_compile_check.py [--site DIR] [--cc 9.0]
Prints one line per entry point and exits 1 if any failed to compile.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WHEELS = ["numba-cuda", "cuda-bindings==12.*", "cuda-core", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvcc-cu12"]
CHILD = "TRADELAB_CUDA_COMPILE_CHILD"


def _toolchain(site_dir: Path) -> dict[str, str]:
    """The throwaway site folder with the wheels, and the environment that finds their libraries."""
    if not (site_dir / "numba_cuda").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(site_dir), *WHEELS], check=True)
    nvidia = site_dir / "nvidia"
    libs = [nvidia / "cuda_nvrtc" / "lib", nvidia / "cuda_nvcc" / "nvvm" / "lib64"]
    return {"LD_LIBRARY_PATH": os.pathsep.join([*map(str, libs), os.environ.get("LD_LIBRARY_PATH", "")]),
            "CUDA_HOME": str(nvidia / "cuda_nvcc"), "NUMBA_ENABLE_CUDASIM": "0", CHILD: str(site_dir)}


def _patch(cc: tuple[int, int], compiled: list[str]) -> None:
    """Stand-in device, host arrays as device arrays, launches that only compile."""
    import numpy as np
    from numba import cuda
    import numba.cuda.codegen as codegen
    import numba.cuda.compiler as compiler
    import numba.cuda.dispatcher as dispatcher

    class Device:
        compute_capability = cc

    dispatcher.get_current_device = compiler.get_current_device = lambda: Device()
    arch = (*cc, "a" if cc >= (9, 0) else "")
    codegen.CUDACodeLibrary._ensure_cc = lambda self, want: want if want is not None else arch
    dispatcher._Kernel.bind = lambda self: None  # loading the module needs the driver; the PTX exists by then

    class Launch:
        def __init__(self, kernel):
            self.kernel = kernel

        def __call__(self, *args):
            self.kernel._compile_for_args(*args)
            compiled.append(self.kernel.py_func.__qualname__)

    dispatcher.CUDADispatcher.configure = lambda self, griddim, blockdim, stream=0, sharedmem=0: Launch(self)

    class HostArray(np.ndarray):
        def copy_to_host(self, *args, **kwargs):
            return np.asarray(self).copy()

    cuda.to_device = lambda a, *args, **kwargs: np.ascontiguousarray(a).view(HostArray)
    cuda.device_array = lambda shape, dtype=np.float64, *args, **kwargs: np.zeros(shape, dtype=dtype).view(HostArray)
    import kernels.gridsearch.cuda as grid_cuda

    grid_cuda.array_module = lambda: (np, lambda a: np.asarray(a))  # CuPy stands aside: host arrays


# every @cuda.jit kernel of the kernels package (its qualified name) -> the entry point that compiles it
COVERS = {
    **{f"_kernel_{arity}.<locals>.kernel": "indicator" for arity in
       ("1in_1p_1out", "1in_1p_2out", "1in_2p_1out", "3in_1p_1out", "3in_2p_3out")},
    "_transpose_kernel.<locals>.kernel": "indicator",  # kernels.backends.device_io, also run by the atc scan
    "_atc_kernel": "atc scan",
    "_atc_returns_kernel": "atc scan split",
    "_atc_family_kernel": "atc scan split",
    "_atc_combine_kernel": "atc scan split",
    "crossings_kernel": "grid search exits + brute force",
    "combos_kernel": "grid search exits + brute force",
    "walk_kernel": "population backtest",
}


def kernels_in_source(root: Path = REPO / "kernels") -> set[str]:
    """Qualified names of the functions decorated `@cuda.jit` (kernels, not device functions)."""
    import ast

    found = set()

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef):
                if any(ast.unparse(d) == "cuda.jit" for d in child.decorator_list):
                    found.add(".".join([*scope, child.name]))
                visit(child, [*scope, child.name, "<locals>"])
            elif isinstance(child, ast.ClassDef):
                visit(child, [*scope, child.name])

    for path in sorted(root.rglob("*.py")):
        visit(ast.parse(path.read_text()), [])
    return found


def _entry_points():
    """(name, call) of every GPU engine on tiny inputs."""
    import numpy as np

    from kernels import atc
    from kernels import indicators as K

    rng = np.random.default_rng(0)
    close = 100 + np.cumsum(rng.normal(0, 1, (3, 300)), axis=1)
    high, low = close + 1.0, close - 1.0
    unary = ("sma", "ema", "wma", "dema", "tema", "hma", "lsma", "kama", "rsi", "rolling_std", "zscore", "returns")
    for in_dt in (np.float32, np.float64):
        for out_dt in (np.float32, np.float64):
            c, h, lo = (a.astype(in_dt) for a in (close, high, low))
            tag = f"{np.dtype(in_dt).name}->{np.dtype(out_dt).name}"
            for name in unary:
                n = 1 if name == "returns" else 14
                yield f"indicator {name} {tag}", lambda name=name, c=c, n=n, o=out_dt: getattr(K, name)(
                    c, n, backend="cuda", dtype=o)
            for name in ("atr", "plus_di", "minus_di", "adx", "dmi"):
                yield f"indicator {name} {tag}", lambda name=name, h=h, lo=lo, c=c, o=out_dt: getattr(K, name)(
                    h, lo, c, 14, backend="cuda", dtype=o)
    yield "atc scan", lambda: atc.compute(close[:2], backend="cuda", dtype=np.float64, length=28)
    yield "atc scan split", lambda: _atc_split(close[:2])
    yield "grid search exits + brute force", _grid
    yield "population backtest", _population


def _atc_split(close):
    from kernels.atc import cuda as atc_cuda
    from kernels.atc.params import AtcParams

    p = AtcParams("Medium", 28, 0.02, 0.03, 0, None)
    for split in (False, True):
        atc_cuda.run(close, p.lens, p.weights, p.growth(close.shape[1]), p.d, p.cutout, 1, split=split)


def _grid():
    import numpy as np

    from kernels.gridsearch.brute import brute_force
    from kernels.gridsearch.exits import resolve_exits
    from kernels.gridsearch.grid import Grid

    rng = np.random.default_rng(3)
    prices = (100 * np.exp(np.cumsum(rng.normal(0, 0.0004, 400)))).astype(np.float32)
    start = rng.integers(0, 300, 20).astype(np.int64)
    end = np.minimum(start + 40, 399)
    entry = prices[start].astype(np.float64)
    pct = np.round((prices[end] / entry - 1.0) * 100.0, 4)
    features = rng.uniform(0, 1, (5, 20)).astype(np.float32)
    grid = Grid.from_mapping(dict(volatility=[0.0, 0.5], ratio=[0.0, 0.7], adx28=[0, 20], adx14=[0, 30], adx7=[0, 25],
                                  target=[0.1, 0.3], stop_loss=[-0.3, -0.1]))
    results, _ = resolve_exits(start, end, entry, prices, pct, grid.target, grid.stop_loss, backend="cuda")
    brute_force(features, results, grid, backend="cuda")


def _population():
    import numpy as np

    from kernels.strategy import Individual, backtest_population

    rng = np.random.default_rng(5)
    close = 100 * np.exp(np.cumsum(rng.normal(0, 0.01, 200)))
    open_ = close * (1 + rng.normal(0, 0.003, close.size))
    high = np.maximum(open_, close) * 1.004
    low = np.minimum(open_, close) * 0.996
    volume = rng.lognormal(13, 0.5, close.size)
    pop = [Individual.from_dict({"ema_fast": 8, "ema_slow": 30, "z_window": 20, "atr_window": 14, "vol_z_min": 0.5,
                                 "tr_z_min": 0.0, "cloc_min": 0.4, "atr_stop_mult": 1.0, "reward_r": 1.5,
                                 "max_hold": 8, "fee_bps": 2.5, "slippage_bps": 1.0})]
    backtest_population(open_, high, low, close, volume, pop, backend="cuda", fallback=False)


def _child(cc: tuple[int, int]) -> int:
    import site

    site.addsitedir(os.environ[CHILD])
    sys.path.insert(0, str(REPO))
    from numba import cuda

    compiled: list[str] = []
    _patch(cc, compiled)
    failed = 0
    print(f"numba-cuda from {Path(cuda.__file__).parent}; target sm_{cc[0]}{cc[1]}")
    for name, call in _entry_points():
        before = len(compiled)
        try:
            call()
            error = None
        except Exception as exc:  # after the kernels compiled, host code may trip on unfilled outputs
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        kernels = compiled[before:]
        ok = bool(kernels)
        failed += not ok
        status = "compiled " + ", ".join(sorted(set(kernels))) if ok else f"FAILED: {error or 'no kernel launched'}"
        after = f" (then, on unfilled outputs: {error})" if ok and error else ""
        print(f"{name:40s} {status}{after}")
    missed = sorted(kernels_in_source() - set(compiled))
    for name in missed:
        print(f"{'kernel ' + name:40s} FAILED: no entry point launched it (add one to COVERS and _entry_points)")
    print(f"{len(compiled)} kernel compiles, {failed + len(missed)} failed")
    return 1 if failed or missed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, default=Path("/tmp/tradelab-numba-cuda"))
    ap.add_argument("--cc", default="9.0", help="compute capability to compile for (H100: 9.0)")
    args = ap.parse_args()
    cc = tuple(int(v) for v in args.cc.split("."))
    if os.environ.get(CHILD):
        return _child(cc)
    env = {**os.environ, **_toolchain(args.site)}
    return subprocess.run([sys.executable, __file__, "--cc", args.cc], env=env, cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main())
