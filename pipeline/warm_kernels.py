"""`make install`'s last step: compile the numba kernels that `make demo` (the default
pipeline's chain, live path and grid search on the default settings) calls, into numba's
on-disk cache ($NUMBA_CACHE_DIR, the Makefile's .numba_cache), in parallel processes, so
the first demo loads them instead of compiling them one after another.

    python -m pipeline.warm_kernels            compile what kernel_signatures.txt lists
    python -m pipeline.warm_kernels --record   run the demo in a throwaway folder and rewrite
                                               kernel_signatures.txt with the kernels it calls

kernel_signatures.txt lists every compiled kernel the demo calls from Python (a kernel
another kernel calls compiles with its caller) with its argument types, as numba prints
them, and the seconds its compile took when recorded (the largest go first). A kernel is
named `module:attribute` (a module-level dispatcher) or `compiled:<core>` /
`compiled_lanes:<core>` (kernels.indicators.cpu's dispatchers): the same dispatcher
objects, with the same options, as the demo's, so the cache entries are the ones it looks up
(numba keys them by the source file's path and mtime: warm from the checkout that runs).

All the signatures of one kernel compile in one process (numba's cache index of a
function is rewritten whole by each save, unlocked); a last pass in this process loads
every signature again and compiles any whose index entry a concurrent save lost. A
kernel that fails to compile is reported and left to the demo: the install goes on.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

MANIFEST = Path(__file__).with_name("kernel_signatures.txt")


def read_manifest(path: Path = MANIFEST) -> list[tuple[float, str, str]]:
    """[(recorded seconds, kernel, signature text)] of the file's lines (# comments skipped)."""
    rows = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            seconds, kernel, sig = line.split("\t")
            rows.append((float(seconds), kernel, sig))
    return rows


def groups(rows: list[tuple[float, str, str]]) -> list[tuple[str, list[str]]]:
    """[(kernel, [signature])], the kernels with the most recorded compile time first."""
    cost: dict[str, float] = {}
    sigs: dict[str, list[str]] = {}
    for seconds, kernel, sig in rows:
        cost[kernel] = cost.get(kernel, 0.0) + seconds
        sigs.setdefault(kernel, []).append(sig)
    return [(k, sigs[k]) for k in sorted(sigs, key=lambda k: -cost[k])]


def dispatcher(kernel: str):
    """The numba dispatcher `kernel` names (see the module docstring)."""
    import importlib

    where, name = kernel.split(":")
    if where in ("compiled", "compiled_lanes"):
        from kernels.indicators import cpu as cpu_backend

        return getattr(cpu_backend, where)(name)
    return getattr(importlib.import_module(where), name)


def parse_signature(text: str) -> tuple:
    """numba's printed argument types, e.g. `(Array(float32, 1, 'C', True, aligned=True), int64)`, as types."""
    from numba.core import types

    namespace = {**vars(types), "bool": types.boolean}
    sig = eval(text, {"__builtins__": {}}, namespace)  # noqa: S307 - the project's own file
    return sig if isinstance(sig, tuple) else (sig,)


def warm_group(kernel: str, sigs: list[str]) -> tuple[str, int, int, str | None]:
    """Compile (or load) each signature of `kernel`: (kernel, compiled, loaded from the cache, error)."""
    try:
        disp = dispatcher(kernel)
        misses0, hits0 = sum(disp.stats.cache_misses.values()), sum(disp.stats.cache_hits.values())
        for text in sigs:
            disp.compile(parse_signature(text))
        misses = sum(disp.stats.cache_misses.values()) - misses0
        hits = sum(disp.stats.cache_hits.values()) - hits0
        return kernel, misses, hits, None
    except Exception as exc:  # noqa: BLE001 - reported; the demo compiles it then
        return kernel, 0, 0, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def warm(processes: int | None = None, manifest: Path = MANIFEST) -> int:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    t0 = time.perf_counter()
    todo = groups(read_manifest(manifest))
    n_sigs = sum(len(s) for _, s in todo)
    processes = max(1, min(processes or os.cpu_count() or 1, len(todo)))
    compiled = cached = 0
    errors: list[str] = []
    # fork: the workers start with nothing imported (this process has imported no kernel yet)
    try:
        with ProcessPoolExecutor(max_workers=processes, mp_context=mp.get_context("fork")) as pool:
            for kernel, n_compiled, n_cached, err in pool.map(warm_group, *zip(*todo)):
                compiled, cached = compiled + n_compiled, cached + n_cached
                if err:
                    errors.append(f"{kernel} ({err})")
    except Exception as exc:  # noqa: BLE001 - a worker died (memory?): the check pass below compiles in this process
        errors.append(f"the worker processes ({type(exc).__name__}: {exc})")
    t_pool = time.perf_counter() - t0
    # the check pass: every signature loads from the cache now; a lost index entry compiles again
    recompiled = 0
    for kernel, sigs in todo:
        _, n_compiled, _, err = warm_group(kernel, sigs)
        recompiled += n_compiled
        if err and not any(e.startswith(f"{kernel} (") for e in errors):
            errors.append(f"{kernel} ({err})")
    seconds = time.perf_counter() - t0
    cache = os.environ.get("NUMBA_CACHE_DIR") or "__pycache__ beside the sources"
    print(f"[install] numba kernels ready in {seconds:.1f} s: {n_sigs} signatures of {len(todo)} kernels, "
          f"{compiled} compiled and {cached} already cached in {processes} processes ({t_pool:.1f} s), "
          f"{recompiled} compiled again by the check pass; cache {cache}", flush=True)
    for e in errors:
        print(f"[install] warning: a kernel did not compile here (the first demo will try again): {e}", flush=True)
    return 0


def record(manifest: Path = MANIFEST) -> int:
    """Run the demo in a throwaway folder (settings copied there, its own DAGSTER_HOME and an
    empty numba cache) with every new top-level compile timed, and write `manifest`."""
    import shutil
    import tempfile
    import threading

    from config.settings import config_path

    tmp = Path(tempfile.mkdtemp(prefix="tradelab-record-kernels-"))
    shutil.copy(config_path(), tmp / "settings.yaml")
    # before numba is imported: it reads NUMBA_CACHE_DIR once
    os.environ.update({"PIPELINE_CONFIG": str(tmp / "settings.yaml"), "DAGSTER_HOME": str(tmp / "home"),
                       "NUMBA_CACHE_DIR": str(tmp / "numba")})
    from numba.core.dispatcher import Dispatcher

    local = threading.local()
    seen: dict[tuple[int, str], tuple[float, Dispatcher, str]] = {}
    original = Dispatcher.compile

    def timed_compile(self, sig):
        depth = getattr(local, "depth", 0)
        n_before = len(self.overloads)
        local.depth = depth + 1
        start = time.perf_counter()
        try:
            return original(self, sig)
        finally:
            local.depth = depth
            if depth == 0 and len(self.overloads) > n_before:
                key = (id(self), str(tuple(self.overloads)[-1]))
                seen.setdefault(key, (time.perf_counter() - start, self, key[1]))

    Dispatcher.compile = timed_compile
    try:
        from config.settings import load_settings
        from pipeline.demo import run_demo

        run_demo(load_settings())
    finally:
        Dispatcher.compile = original
    names = _dispatcher_names()
    lines, unnamed = [], []
    for seconds, disp, sig in sorted(seen.values(), key=lambda r: -r[0]):
        name = names.get(id(disp))
        if name is None:
            unnamed.append(f"{disp.py_func.__module__}.{disp.py_func.__qualname__}")
        else:
            lines.append(f"{seconds:.2f}\t{name}\t{sig}")
    header = ("# The numba kernels `make demo` calls from Python and their argument types; `make install` compiles\n"
              "# them (python -m pipeline.warm_kernels). Regenerate: python -m pipeline.warm_kernels --record\n"
              "# (columns: compile seconds when recorded, kernel, signature)\n")
    manifest.write_text(header + "\n".join(lines) + "\n")
    print(f"wrote {manifest}: {len(lines)} signatures; no name found for {sorted(set(unnamed)) or 'none'}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _dispatcher_names() -> dict[int, str]:
    """{id(dispatcher): its manifest name} over every imported project module and the cpu backend's cores."""
    from numba.core.dispatcher import Dispatcher

    from kernels.indicators import multilane as lane_cores
    from kernels.indicators import cpu as cpu_backend
    from kernels.indicators import SPECS

    names: dict[int, str] = {}
    for spec in SPECS.values():
        names[id(cpu_backend.compiled(spec.core))] = f"compiled:{spec.core}"
    for name in dir(lane_cores):
        if name.endswith("_lanes") and callable(getattr(lane_cores, name)):
            names[id(cpu_backend.compiled_lanes(name))] = f"compiled_lanes:{name}"
    for mod_name, mod in sorted(sys.modules.items()):
        if mod is None or mod_name.split(".")[0] not in ("kernels", "domain", "resources", "assets", "pipeline"):
            continue
        for attr, obj in vars(mod).items():
            if isinstance(obj, Dispatcher) and getattr(obj.py_func, "__module__", None) is not None:
                names.setdefault(id(obj), f"{mod_name}:{attr}")
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipeline.warm_kernels", description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true", help="run the demo in a throwaway folder and rewrite the list")
    ap.add_argument("--processes", type=int, default=None, help="worker processes (default: one per CPU)")
    ap.add_argument("--manifest", type=Path, default=MANIFEST, help="the list of kernels and signatures (default: %(default)s)")
    args = ap.parse_args(argv)
    return record(args.manifest) if args.record else warm(args.processes, args.manifest)


if __name__ == "__main__":
    sys.exit(main())
