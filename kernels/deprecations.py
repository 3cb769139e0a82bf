"""Old names kept for a deprecation period: each use of an old name says, once per process
and per old name, which name replaced it (docs/settings.md, "Deprecations").

`renamed(old, new)` warns with one DeprecationWarning (`<old> is deprecated since
<date>; use <new>`) the first time `old` is used in the process and never again; the CLI
prints the same text as one `warning:` line (`emit`). `WARNED` holds the old names already
announced (a test may clear it). `rename_keys` applies renamed keyword arguments or dict
keys (refusing an old and a new name given together).
"""

from __future__ import annotations

import warnings
from typing import Callable

# old name -> (new name, the date of the rename): the one list of renamed interfaces
RENAMED = {
    "grid-search --backend": ("grid-search --device", "2026-11-24"),
    "backtest_population(engine=)": ("backtest_population(backend=)", "2026-11-24"),
    "fee_bp": ("fee_bps", "2026-11-21"),
    "slippage_bp": ("slippage_bps", "2026-11-21"),
    "PopulationResult.engine": ("PopulationResult.backend", "2026-11-24"),
    "backtest report field hit_rate": ("win_rate (both written while the old name is kept)", "2026-11-27"),
    "benchmarks/atc_gpu_break_even.py": ("benchmarks/gpu_break_even.py --families atc", "2026-11-27"),
}

WARNED: set[str] = set()  # old names announced in this process


def deprecation_text(old: str) -> str:
    """`<old> is deprecated since <date>; use <new>` for an old name of RENAMED."""
    new, since = RENAMED[old]
    return f"{old} is deprecated since {since}; use {new}"


def renamed(old: str, *, stacklevel: int = 3, emit: Callable[[str], None] | None = None) -> None:
    """Announce a use of the old name `old` (a key of RENAMED) once per process: a
    DeprecationWarning pointing at the caller's caller (`stacklevel`), or `emit(text)`."""
    if old in WARNED:
        return
    WARNED.add(old)
    if emit is not None:
        emit(deprecation_text(old))
    else:
        warnings.warn(deprecation_text(old), DeprecationWarning, stacklevel=stacklevel)


def rename_keys(values: dict, pairs: dict[str, str], where: str, stacklevel: int = 4) -> dict:
    """`values` with each old key of `pairs` (old -> new) under its new name, announced
    once (renamed); TypeError naming both when an old key and its new one are both given."""
    out = dict(values)
    for old, new in pairs.items():
        if old not in out:
            continue
        if new in out:
            raise TypeError(f"{where}: {old} and {new} are both given; expected {new} alone ({old} is its old name)")
        renamed(old, stacklevel=stacklevel)
        out[new] = out.pop(old)
    return out
