"""tests/slow_tests.txt, the tests `make test-fast` leaves out: every entry names a test file
that exists and, where it names a test, a test function defined in that file (a renamed or
deleted test would otherwise silently join the fast set)."""

from __future__ import annotations

import re

from tests.conftest import REPO, slow_entries


def test_every_slow_entry_names_an_existing_test():
    stale = []
    for entry in slow_entries():
        path, _, name = entry.partition("::")
        file = REPO / path
        if not file.is_file():
            stale.append(entry)
        elif name and not re.search(rf"^(async )?def {re.escape(name.partition('[')[0])}\(", file.read_text(), re.M):
            stale.append(entry)
    assert not stale, f"tests/slow_tests.txt names tests that do not exist: {stale}"
