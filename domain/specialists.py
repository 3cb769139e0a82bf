"""Stage `specialists` (symbol x year): the specialist registry over each symbol's panel.

Partition SYMBOL|Y reads the symbol's whole stored history up to Y (raw_bars of every year
from the first) and stores the rows of Y. ATC's equity curves scale returns by
exp(lambda * (bar - cutout)), an absolute bar index, so no finite halo could reproduce
them: the whole history makes every partition equal the whole-history computation exactly
(tests/assets/test_specialists.py). In a single-run backfill each symbol is computed once.
Columns: the specialists of the selected packs (settings `features`, domain.feature_packs),
in pack order; `core` alone (the default) is the four registry specialists.
"""

import numpy as np
import polars as pl

from config.partitions import SymbolYear
from domain.feature_packs import entry_failure
from domain.partition_frames import keep_partitions
from domain.schema import specialists_schema
from domain.symbol_chunks import map_symbol_chunks
from kernels.panel import Panel
from kernels.registry.features import EntryError
from kernels.registry.specialists import (
    PANEL_COLUMNS,
    run_specialists,
)
from kernels.registry.packs import Selection, select


def specialists_by_symbol(arrays: dict[str, np.ndarray], offsets: np.ndarray,
                          packs: tuple[tuple[str, ...], tuple[str, ...]] = (("core",), ())) -> dict[str, np.ndarray]:
    """Worker: one panel per symbol of the chunk, the selected packs' specialists (by name:
    `(packs, plugins)`, so a process worker selects them again) over it."""
    selection = select(*packs)
    total = len(arrays["close"])
    out = {c: np.empty(total, dtype=np.float32) for c in selection.specialist_columns}
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        panel = Panel.from_columns({c: arrays[c][a:b] for c in PANEL_COLUMNS})
        try:
            scores = run_specialists(panel, selection.specialists)
        except EntryError as exc:  # one line naming the plugin module, entry and column
            raise entry_failure(selection, exc) from exc
        for col, values in scores.items():
            out[col][a:b] = values
    return out


def build_specialists(bars: pl.DataFrame, keys: list[SymbolYear], *, workers: int = 1, chunk_rows: int = 131_072,
                      executor: str = "thread", selection: Selection | None = None) -> pl.DataFrame:
    """Specialist scores of the rows of `keys` from `bars` (the symbols' history up to them),
    of the specialists of `selection` (default: the `core` pack)."""
    selection = select() if selection is None else selection
    columns = selection.specialist_columns
    bars = bars.sort("symbol", "date")
    scores, _ = map_symbol_chunks(specialists_by_symbol, bars, PANEL_COLUMNS, workers=workers, chunk_rows=chunk_rows,
                                  executor=executor, packs=selection.names or (("core",), ()))
    frame = bars.select("date", "symbol").with_columns(
        *[pl.Series(c, scores.get(c, np.empty(0, np.float32)).astype(np.float32, copy=False)) for c in columns]
    )
    out = keep_partitions(frame, keys)
    specialists_schema(columns).check(out)
    return out


def score_range_report(df: pl.DataFrame) -> tuple[dict[str, int], dict[str, int]]:
    """The `scores_in_range` check: per specialist column, the count of finite scores outside
    [-1, 1] and the count of NaN (warm-up)."""
    columns = [c for c in df.columns if c.startswith("spec_") and c.endswith("_score")]
    # polars orders NaN above every number: warm-up NaN must not count as "> 1"
    bad = {c: int(df.select(((pl.col(c).abs() > 1.0) & pl.col(c).is_not_nan()).sum()).item()) for c in columns}
    nan = {c: int(df[c].is_nan().sum()) for c in columns}
    return bad, nan
