"""Small file helpers shared by the layers above (reports, sidecars)."""

from __future__ import annotations

import os


def shared_file_mode() -> int:
    """0666 & ~umask: the mode `open()` gives a new file (0644 under the usual umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
