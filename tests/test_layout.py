"""The tests folder mirrors the source tree: every test module sits in the folder of the
layer it specifies (tests/kernels, tests/config, tests/resources, tests/domain,
tests/assets, tests/pipeline); only the cross-cutting specifications stay at the top."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
LAYERS = {"kernels", "config", "resources", "domain", "assets", "pipeline"}
CROSS_CUTTING = {"test_architecture.py", "test_adversarial.py", "test_layout.py"}


def test_every_test_module_sits_in_a_layer_folder():
    top = {p.name for p in TESTS.glob("test_*.py")}
    assert top <= CROSS_CUTTING, f"move into a layer folder: {sorted(top - CROSS_CUTTING)}"
    folders = {p.parent.name for p in TESTS.glob("*/test_*.py")}
    assert folders <= LAYERS | {"adversarial"}, folders - LAYERS - {"adversarial"}  # bad-input tables: cross-cutting


REPO = TESTS.parent
PACKAGES = ("kernels", "config", "resources", "domain", "assets", "pipeline")


def _readme_layout_entries() -> dict[str, list[str]]:
    """README.md's "Layout (every module)" block as {package: [entry text]}: an entry is a
    line at the package's indentation (0) or an item's (2) with its deeper continuation lines."""
    import re

    text = (REPO / "README.md").read_text()
    block = text.split("## Layout (every module)", 1)[1].split("```", 2)[1]
    entries: dict[str, list[str]] = {}
    package = None
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip())
        top = re.match(r"^([a-z_]+)/", line)
        if top:
            package = top.group(1) if top.group(1) in PACKAGES else None
        if package is None or not line.strip():
            continue
        if indent in (0, 2):
            entries.setdefault(package, []).append(line)
        else:
            entries[package][-1] += "\n" + line
    return entries


def _names(stem: str, text: str) -> bool:
    import re

    return re.search(rf"(?<![\w./]){re.escape(stem)}(\.py)?(?!\w)", text) is not None


def test_readme_layout_names_every_module_of_the_tree():
    entries = _readme_layout_entries()
    missing = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO / package)
            if path.name == "__init__.py" or "__pycache__" in rel.parts:
                continue
            folder = "/".join(rel.parts[:-1])
            scope = [e for e in entries.get(package, []) if not folder or f"{folder}/" in e]
            if not any(_names(path.stem, e) for e in scope):
                missing.append(f"{package}/{rel}")
    assert not missing, f"README.md 'Layout (every module)' does not name: {missing}"


def test_readme_layout_names_no_module_that_does_not_exist():
    import re

    entries = _readme_layout_entries()
    gone = []
    for package, items in entries.items():
        for entry in items:
            folder = re.match(r"^\s*([a-z_0-9]+)/", entry)
            base = REPO / package / folder.group(1) if folder and folder.group(1) != package else REPO / package
            for name in re.findall(r"(?<![\w/])([a-z_0-9]+\.py)\b", entry):
                if not (base / name).is_file() and not (REPO / package / name).is_file():
                    gone.append(f"{package}: {name}")
    assert not gone, f"README.md 'Layout (every module)' names modules that do not exist: {gone}"


def test_no_test_imports_the_benchmarks():
    """benchmarks/ are scripts: tests run them as processes (tests/pipeline/test_benchmark_scripts.py)
    and never import from them, so a benchmark can change without touching a test."""
    import re

    importing = [str(p.relative_to(REPO)) for p in sorted(TESTS.rglob("*.py"))
                 if re.search(r"^\s*(from benchmarks[. ]|import benchmarks\b)", p.read_text(), flags=re.M)]
    assert not importing, f"these tests import from benchmarks/: {importing}"


def test_every_repository_path_the_readme_names_exists():
    import re

    text = (REPO / "README.md").read_text()
    named = set(re.findall(r"(?<![\w./<-])((?:kernels|config|resources|domain|assets|pipeline|tests|scripts|benchmarks|"
                           r"deploy|configs|\.ci)/[\w./-]*[\w/])", text))
    written_by_runs = {"benchmarks/out/"}  # created by `make gpu-check`, not in the repository
    gone = sorted(p for p in named - written_by_runs if not (REPO / p).exists())
    assert len(named) > 50 and not gone, f"README.md names paths that do not exist: {gone}"
