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
