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


ARCHITECTURE = REPO / "docs" / "architecture.md"


def _readme_layout_entries() -> dict[str, list[str]]:
    """docs/architecture.md's "Layout (every module)" block as {package: [entry text]}: an entry is a
    line at the package's indentation (0) or an item's (2) with its deeper continuation lines."""
    import re

    text = ARCHITECTURE.read_text()
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
    assert not missing, f"docs/architecture.md 'Layout (every module)' does not name: {missing}"


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
    assert not gone, f"docs/architecture.md 'Layout (every module)' names modules that do not exist: {gone}"


def test_no_test_imports_the_benchmarks():
    """benchmarks/ are scripts: tests run them as processes (tests/pipeline/test_benchmark_scripts.py)
    and never import from them, so a benchmark can change without touching a test."""
    import re

    importing = [str(p.relative_to(REPO)) for p in sorted(TESTS.rglob("*.py"))
                 if re.search(r"^\s*(from benchmarks[. ]|import benchmarks\b)", p.read_text(), flags=re.M)]
    assert not importing, f"these tests import from benchmarks/: {importing}"


def _doc_files() -> list[Path]:
    """The README and the reference it links to: every file of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_every_repository_path_the_readme_names_exists():
    """Every repository path that README.md or a file of docs/ names exists."""
    import re

    text = "\n".join(p.read_text() for p in _doc_files())
    named = set(re.findall(r"(?<![\w./<-])((?:kernels|config|resources|domain|assets|pipeline|tests|scripts|benchmarks|"
                           r"deploy|configs|\.ci)/[\w./-]*[\w/])", text))
    written_by_runs = {"benchmarks/out/"}  # created by `make gpu-check`, not in the repository
    gone = sorted(p for p in named - written_by_runs if not (REPO / p).exists())
    assert len(named) > 50 and not gone, f"README.md or docs/ name paths that do not exist: {gone}"


def _where_bullets() -> list[str]:
    text = ARCHITECTURE.read_text()
    section = text.split("### Where does X go", 1)[1].split("\n## ", 1)[0]
    bullets, current = [], None
    for line in section.splitlines():
        if line.startswith("- **"):
            current = line
            bullets.append(current)
        elif current is not None and line.startswith("  "):
            bullets[-1] += "\n" + line
    return bullets


def test_where_does_x_go_names_files_and_names_that_exist():
    """docs/architecture.md "Where does X go": each bullet's code names (SPECS, STREAM_CORES, ALL_ASSETS,
    make_source, ...) are defined or used in a file that bullet names, so the newcomer's list
    fails here when a restructuring moves them."""
    import re

    bullets = _where_bullets()
    assert [re.match(r"- \*\*(An? [\w ]+?)\*\*", b).group(1) for b in bullets] == [
        "An indicator", "A feature or specialist", "A stage", "A data source", "A backend"]
    missing = []
    for bullet in bullets:
        spans = re.findall(r"`([^`]+)`", bullet)
        files = []
        for span in spans:
            path = REPO / span
            if span.endswith(".py") and path.is_file():
                files.append(path)
            elif span.endswith("/") and path.is_dir():
                files += sorted(path.rglob("*.py"))
            elif re.fullmatch(r"(kernels|config|resources|domain|assets|pipeline)(\.\w+)+", span):
                parts = span.split(".")
                for i in range(len(parts), 0, -1):
                    if (REPO.joinpath(*parts[:i]).with_suffix(".py")).is_file():
                        files.append(REPO.joinpath(*parts[:i]).with_suffix(".py"))
                        break
        source = "\n".join(f.read_text() for f in files)
        for span in spans:
            name = re.sub(r"\(.*\)$", "", span).split(".")[-1]
            is_code_name = re.fullmatch(r"[A-Za-z_]\w*", name) and (re.search(r"[A-Z]", name) or "_" in name)
            if is_code_name and not re.search(rf"\b{re.escape(name)}\b", source):
                missing.append(f"{name} (bullet {bullet[4:30]!r})")
    assert not missing, f"docs/architecture.md 'Where does X go' names what its files do not hold: {missing}"


def test_the_readme_is_a_front_page_that_links_every_reference_file():
    """README.md stays a front page (at most 300 lines) and links each file of docs/; every
    relative link of the README and of docs/ points at a file that exists (and at a heading
    of it, where the link names one)."""
    import re

    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 300, "README.md is a front page: move reference text to docs/"
    docs = sorted((REPO / "docs").glob("*.md"))
    assert len(docs) >= 10
    unlinked = [d.name for d in docs if f"](docs/{d.name})" not in readme]
    assert not unlinked, f"README.md does not link: {unlinked}"

    def anchors(text: str) -> set[str]:
        return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}

    broken = []
    for doc in _doc_files():
        text = doc.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            if not dest.exists():
                broken.append(f"{doc.name}: {target}")
            elif anchor and dest.is_file() and anchor not in anchors(dest.read_text()):
                broken.append(f"{doc.name}: {target} (no such heading)")
    assert not broken, f"broken links: {broken}"


def test_every_slow_entry_names_an_existing_test():
    """tests/slow_tests.txt, the tests `make test-fast` leaves out: every entry names a test
    file that exists and, where it names a test, a test function defined in that file (a
    renamed or deleted test would otherwise silently join the fast set)."""
    import re

    from tests.conftest import slow_entries

    stale = []
    for entry in slow_entries():
        path, _, name = entry.partition("::")
        file = REPO / path
        if not file.is_file():
            stale.append(entry)
        elif name and not re.search(rf"^(async )?def {re.escape(name.partition('[')[0])}\(", file.read_text(), re.M):
            stale.append(entry)
    assert not stale, f"tests/slow_tests.txt names tests that do not exist: {stale}"
