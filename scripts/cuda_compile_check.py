"""Compile every CUDA kernel of the project with numba-cuda for a GPU, on a machine without one.

The GPU proof (`make gpu-check`) needs a lent GPU; this catches, before one is lent, what
would stop it at compile time: typing and lowering errors of the kernels and the shared
cores on real numba-cuda (the CUDA simulator in CI runs them as Python and never compiles
them). It runs each GPU engine's entry point on tiny inputs with three things patched:
the current device is a stand-in with the compute capability asked for (numba-cuda asks
it for the target), device arrays are host arrays, and a kernel launch compiles the kernel
to PTX through NVVM and returns without running it. What the engine does with the
(unfilled) outputs afterwards is not checked.

Every kernel compiles with `-fma=0` (`kernels.cuda_build`: the CUDA modules mark themselves
with `no_fma(__name__)`; the check marks `CUDA_MODULES` too, and says per kernel who did).
Each compiled kernel's PTX is kept (`--out DIR`, one `.ptx` per compile) and measured: the
registers, spill stores/loads, shared memory and stack frame `ptxas -v` reports (ptxas from
the nvidia-cuda-nvcc wheel), and its `fma.rn.f64` / `fma.rn.f32` instructions, beside the
same IR compiled with NVVM's default `-fma=1` and the explicit `llvm.fma.f64` calls in its
IR. A kernel with a `fma.rn` instruction and no explicit fma call (or with more than the
contracted build) fails the check: contraction would break bit for bit with the CPU.

numba-cuda, the CUDA Python bindings, NVRTC and NVVM come from PyPI wheels into a
throwaway folder (`--site`, about 450 MB; nothing of it is a project dependency), and the
script re-runs itself with their libraries on the path.

Usage: python scripts/cuda_compile_check.py [--site DIR] [--cc 9.0] [--out DIR]
Prints one line per entry point, then one line per compiled kernel (registers, spills, shared
memory, stack, fma counts), and exits 1 if any failed to compile or kept a contracted fma.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WHEELS = ["numba-cuda", "cuda-bindings==12.*", "cuda-core", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvcc-cu12"]
CHILD = "TRADELAB_CUDA_COMPILE_CHILD"
OUT = "TRADELAB_CUDA_COMPILE_OUT"
# the modules defining @cuda.jit kernels: marked for -fma=0 (kernels.cuda_build.no_fma)
CUDA_MODULES = ("kernels.indicators.cuda", "kernels.backends.device_io", "kernels.atc.cuda", "kernels.gridsearch.cuda", "kernels.strategy.cuda")


def fma_counts(ptx: str) -> dict[str, int]:
    """The fma instructions of a PTX text: {"f64": fma.rn.f64 count, "f32": fma.rn.f32 count}."""
    return {w: len(re.findall(rf"^\s*(?:@!?%p\d+\s+)?fma\.rn(?:\.ftz)?(?:\.sat)?\.{w}\b", ptx, re.M))
            for w in ("f64", "f32")}


def explicit_fma_calls(llvm_ir: str) -> int:
    """Calls of `llvm.fma.f64` in LLVM IR (the project's explicit `fma(a, b, c)`), declarations excluded."""
    return len(re.findall(r"\bcall\b[^\n]*@\"?llvm\.fma\.f64\"?\(", llvm_ir))


_PTXAS_FUNC = re.compile(r"Compiling entry function '([^']+)'|Function properties for (\S+)")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas(text: str) -> dict[str, dict[str, int]]:
    """`ptxas -v` output as {function: {registers, spill_stores, spill_loads, smem, stack}} (each
    function ptxas reports; entry functions carry registers and smem, every function its frame)."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        m = _PTXAS_FUNC.search(line)
        if m:
            current = m.group(1) or m.group(2)
            out.setdefault(current, {"registers": 0, "spill_stores": 0, "spill_loads": 0, "smem": 0, "stack": 0})
            continue
        if current is None:
            continue
        m = _PTXAS_FRAME.search(line)
        if m:
            out[current].update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
            continue
        m = _PTXAS_USED.search(line)
        if m:
            out[current].update(registers=int(m.group(1)), smem=int(m.group(2) or 0))
    return out


def entry_stats(ptxas_text: str, ptx: str) -> dict[str, int]:
    """The `.entry` function's ptxas figures (a kernel's PTX has one entry)."""
    stats = parse_ptxas(ptxas_text)
    entries = re.findall(r"\.entry\s+(\S+?)\s*\(", ptx)
    for name in entries:
        if name in stats:
            return stats[name]
    return next(iter(stats.values()), {})


def fma_verdict(fma_f64: int, fma_f32: int, contracted_f64: int, explicit: int) -> str:
    """ok, or why a kernel's -fma=0 PTX still holds contracted fma instructions."""
    if fma_f32:
        return "FAILED: fma.rn.f32 (no explicit f32 fma exists)"
    if fma_f64 and not explicit:
        return "FAILED: fma.rn.f64 without an explicit fma call"
    if fma_f64 > max(contracted_f64, explicit):
        return "FAILED: more fma.rn.f64 than the contracted build"
    return "ok"


TABLE_HEAD = (f"{'kernel':34s} {'entry point':34s} {'hook':6s} {'regs':>4s} {'spill st/ld':>11s} {'smem':>5s} "
              f"{'stack':>5s} {'fma64':>5s} {'f32':>3s} {'fma64 -fma=1':>12s} {'f32':>3s} {'explicit':>8s}  verdict")


def table_line(row: dict) -> str:
    return (f"{row['kernel'][:34]:34s} {row['entry'][:34]:34s} {row['hook']:6s} {row.get('registers', '?'):>4} "
            f"{str(row.get('spill_stores', '?')) + '/' + str(row.get('spill_loads', '?')):>11s} "
            f"{row.get('smem', '?'):>5} {row.get('stack', '?'):>5} {row['fma_f64']:>5} {row['fma_f32']:>3} "
            f"{row['contracted_f64']:>12} {row['contracted_f32']:>3} {row['explicit']:>8}  {row['verdict']}")


def _toolchain(site_dir: Path) -> dict[str, str]:
    """The throwaway site folder with the wheels, and the environment that finds their libraries."""
    if not (site_dir / "numba_cuda").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(site_dir), *WHEELS], check=True)
    nvidia = site_dir / "nvidia"
    libs = [nvidia / "cuda_nvrtc" / "lib", nvidia / "cuda_nvcc" / "nvvm" / "lib64"]
    return {"LD_LIBRARY_PATH": os.pathsep.join([*map(str, libs), os.environ.get("LD_LIBRARY_PATH", "")]),
            "CUDA_HOME": str(nvidia / "cuda_nvcc"), "NUMBA_ENABLE_CUDASIM": "0", CHILD: str(site_dir)}


def _patch(cc: tuple[int, int], compiled: list[str], launched: list) -> None:
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
            kernel = self.kernel._compile_for_args(*args)
            compiled.append(self.kernel.py_func.__qualname__)
            launched.append((self.kernel.py_func, kernel))

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
    "pairs_kernel": "grid search exits + brute force",
    "hist_kernel": "grid search exits + brute force",
    "_kernel.<locals>.tile_kernel": "grid search exits + brute force",
    "signal_kernel": "population backtest",
    "walk_kernel": "population backtest",
}


def kernels_in_source(root: Path = REPO / "kernels") -> set[str]:
    """Qualified names of the functions decorated `@cuda.jit` or `@jit` / `@cuda_build.jit` (kernels.cuda_build's
    wrapper): kernels, not device functions."""
    import ast

    found = set()

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef):
                if any(ast.unparse(d) in ("cuda.jit", "jit", "cuda_build.jit") for d in child.decorator_list):
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
    from kernels.gridsearch.cube import cube_top
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
    resolve_exits(start, end, entry, prices, pct, grid.target, grid.stop_loss, backend="cuda", exit_rows=False)
    brute_force(features, results, grid, backend="cuda")  # brute_cuda's tile_kernel
    wide = Grid.from_mapping(dict(volatility=list(np.linspace(0, 1, 128)), ratio=[0.0], adx28=[0], adx14=[0], adx7=[0],
                                  target=[0.1, 0.3], stop_loss=[-0.3, -0.1]))
    brute_force(features, results, wide, backend="cuda")  # > 127 thresholds: the fallback, cuda's combos_kernel
    cube_top(features, results, grid, k=10, min_trades=1, backend="cuda")


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


_PTXAS_USED_BY: list[str] = []  # the ptxas that accepted the first PTX, kept for the rest


def _ptxas_candidates() -> list[str]:
    """ptxas binaries to try: the wheel's (CUDA 12.9), then the toolkit's: the PTX's `.version` comes from
    whichever libnvvm numba-cuda loaded, and an older ptxas refuses a newer PTX ISA."""
    import shutil

    found = [str(Path(os.environ[CHILD]) / "nvidia" / "cuda_nvcc" / "bin" / "ptxas"),
             *(str(Path(os.environ[v]) / "bin" / "ptxas") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)),
             "/usr/local/cuda/bin/ptxas", shutil.which("ptxas") or ""]
    return [p for i, p in enumerate(found) if p and Path(p).exists() and p not in found[:i]]


def _ptxas(path: Path, arch: str) -> tuple[str | None, str]:
    """(`ptxas -v` output, "") from the first ptxas that assembles the PTX, or (None, why)."""
    errors = []
    for ptxas in _PTXAS_USED_BY or _ptxas_candidates():
        run = subprocess.run([ptxas, f"-arch={arch}", "-v", str(path), "-o", os.devnull], capture_output=True, text=True)
        if run.returncode == 0:
            if not _PTXAS_USED_BY:
                _PTXAS_USED_BY.append(ptxas)
            return run.stdout + run.stderr, ""
        errors.append(f"{ptxas}: {(run.stderr.strip().splitlines() or [''])[0][:120]}")
    return None, "; ".join(errors) or "no ptxas found"


def _measure(py_func, kernel, entry: str, cc: tuple[int, int], out: Path | None, index: int,
             marked_by_module: set[str]) -> dict:
    """One compiled kernel: its PTX kept, ptxas -v figures, fma counts with -fma=0 and -fma=1."""
    from numba.cuda.cudadrv import nvrtc, nvvm

    from kernels import cuda_build

    lib = kernel._codelibrary
    arch = (*cc, "a" if cc >= (9, 0) else "")
    ptx = lib.get_asm_str()  # the PTX the launch compiled (the stand-in device's arch)
    irs = lib.llvm_strs
    options = {k: v for k, v in lib._nvvm_options.items() if k != "fma"}
    options["arch"] = nvrtc.get_arch_option(*arch)
    contracted = nvvm.compile_ir(list(irs), **options).decode().strip("\x00")
    row = {"kernel": py_func.__qualname__.replace(".<locals>", ""), "entry": entry,
           "hook": ("module" if py_func.__module__ in marked_by_module else "check") if cuda_build.marked(py_func)
           else "none",
           **{f"fma_{w}": n for w, n in fma_counts(ptx).items()},
           **{f"contracted_{w}": n for w, n in fma_counts(contracted).items()},
           "explicit": sum(explicit_fma_calls(ir) for ir in irs)}
    row["verdict"] = fma_verdict(row["fma_f64"], row["fma_f32"], row["contracted_f64"], row["explicit"])
    folder = out or Path(os.environ.get("TMPDIR", "/tmp"))
    stem = f"{index:03d}_{re.sub(r'[^A-Za-z0-9_]+', '_', row['kernel'])}"
    path = folder / f"{stem}.ptx"
    path.write_text(ptx)
    if out:
        (out / f"{stem}.fma1.ptx").write_text(contracted)
        (out / f"{stem}.ll").write_text("\n\n".join(irs))
    run, error = _ptxas(path, f"sm_{cc[0]}{cc[1]}{arch[2]}")
    if run is not None:
        row.update(entry_stats(run, ptx))
        if out:
            (out / f"{stem}.ptxas.txt").write_text(run)
    else:
        row["verdict"] += f" (ptxas: {error})"
    if not out:
        path.unlink()
    return row


def _child(cc: tuple[int, int]) -> int:
    import site

    site.addsitedir(os.environ[CHILD])
    sys.path.insert(0, str(REPO))
    import importlib

    from numba import cuda

    from kernels import cuda_build

    compiled: list[str] = []
    launched: list = []
    _patch(cc, compiled, launched)
    cuda_build.install()
    marked_by_module = set()
    for module in CUDA_MODULES:  # a module that calls no_fma(__name__) itself is marked on import
        importlib.import_module(module)
        if module in cuda_build._modules:
            marked_by_module.add(module)
        cuda_build.no_fma(module)
    out = Path(os.environ[OUT]) if os.environ.get(OUT) else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    failed = 0
    print(f"numba-cuda from {Path(cuda.__file__).parent}; target sm_{cc[0]}{cc[1]}")
    for name, call in _entry_points():
        before = len(compiled)
        first = len(launched)
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
        for py_func, kernel in launched[first:]:
            rows.append(_measure(py_func, kernel, name, cc, out, len(rows), marked_by_module))
    print()
    print(TABLE_HEAD)
    for row in rows:
        print(table_line(row))
    bad = [row for row in rows if row["verdict"] != "ok" and not row["verdict"].startswith("ok ")]
    total = {k: sum(row[k] for row in rows) for k in ("fma_f64", "fma_f32", "contracted_f64", "contracted_f32")}
    print(f"fma.rn.f64 / f32 over {len(rows)} kernel compiles: {total['fma_f64']} / {total['fma_f32']} with -fma=0, "
          f"{total['contracted_f64']} / {total['contracted_f32']} with NVVM's default -fma=1; "
          f"{len(bad)} kernels keep contracted fma" + (f"; PTX kept in {out}" if out else ""))
    if _PTXAS_USED_BY:
        version = subprocess.run([_PTXAS_USED_BY[0], "--version"], capture_output=True, text=True).stdout.strip()
        print(f"ptxas -v from {_PTXAS_USED_BY[0]} ({version.splitlines()[-1] if version else '?'})")
    failed += len(bad)
    missed = sorted(kernels_in_source() - set(compiled))
    for name in missed:
        print(f"{'kernel ' + name:40s} FAILED: no entry point launched it (add one to COVERS and _entry_points)")
    print(f"{len(compiled)} kernel compiles, {failed + len(missed)} failed")
    return 1 if failed or missed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, default=Path("/tmp/tradelab-numba-cuda"))
    ap.add_argument("--cc", default="9.0", help="compute capability to compile for (H100: 9.0)")
    ap.add_argument("--out", type=Path, help="folder to keep each kernel's PTX (and ptxas -v output) in")
    args = ap.parse_args()
    cc = tuple(int(v) for v in args.cc.split("."))
    if os.environ.get(CHILD):
        return _child(cc)
    env = {**os.environ, **_toolchain(args.site)}
    if args.out:
        env[OUT] = str(args.out.resolve())
    return subprocess.run([sys.executable, __file__, "--cc", args.cc], env=env, cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main())
