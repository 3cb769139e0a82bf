"""The architecture as a specification: one direction of imports and no import cycles.

The layers contract itself (kernels <- config <- resources <- domain <- assets <- pipeline)
is import-linter's, in pyproject.toml, run by `make test`; this test runs it too, so a plain
`pytest` catches a broken layer, and adds the check import-linter has no contract for: no
cycle between any two project modules, counting imports inside functions.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kernels", "config", "resources", "domain", "assets", "pipeline")


def strongly_connected(graph) -> list[list[str]]:
    """Tarjan's algorithm over the module graph: every strongly connected component."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    modules = sorted(graph.modules)

    def visit(v):  # iterative, the graph is deep enough for recursion limits to matter
        work = [(v, iter(sorted(graph.find_modules_directly_imported_by(v))))]
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on_stack.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1; stack.append(w); on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop(); on_stack.discard(w); comp.append(w)
                        if w == node:
                            break
                    out.append(sorted(comp))

    for m in modules:
        if m not in index:
            visit(m)
    return out


def test_no_import_cycle_between_project_modules():
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_the_layers_contract_holds():
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    out = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def test_no_private_name_is_imported_across_modules():
    import ast

    offenders = []
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
                    offenders += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                                  if a.name.startswith("_") and a.name != "__version__"]
    assert not offenders, offenders


def test_loading_the_code_location_loads_no_heavy_library_and_no_kernel():
    """Every `dagster asset materialize`, step process and UI reload imports the code location:
    torch, sklearn, scipy, numba, optuna, dask, cupy, the kernels and the stage logic load
    inside the functions that use them (the time is measured by benchmarks/bench_import.py)."""
    code = ("import sys, pipeline.definitions; heavy = ('torch', 'sklearn', 'scipy', 'numba', 'optuna', 'dask', "
            "'cupy', 'kernels', 'domain'); print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_ruff_finds_nothing():
    """pyflakes (unused imports and names, undefined names) and bugbear, as `make test` runs them."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    out = subprocess.run([ruff, "check", "--output-format", "concise", "."], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-1000:]
