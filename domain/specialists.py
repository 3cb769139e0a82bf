"""Stage `specialists` (symbol x year): the specialist registry over each symbol's panel.

Partition SYMBOL|Y reads the symbol's whole stored history up to Y (raw_bars of every year
from the first) and stores the rows of Y. ATC's equity curves scale returns by
exp(lambda * (bar - cutout)), an absolute bar index, so no finite halo could reproduce
them: the whole history makes every partition equal the whole-history computation exactly
(tests/assets/test_specialists.py). In a single-run backfill each symbol is computed once.
"""

import numpy as np
import polars as pl

from config.partitions import (
    ALL_HISTORY_YEARS,  # noqa: F401  (re-exported)
    SymbolYear,
)
from domain.partition_frames import keep_partitions
from domain.schema import specialists_schema
from domain.symbol_chunks import map_symbol_chunks
from kernels.panel import Panel
from kernels.registry.specialists import (
    PANEL_COLUMNS,
    SPECIALIST_COLUMNS,
    run_specialists,
)


def specialists_by_symbol(arrays: dict[str, np.ndarray], offsets: np.ndarray) -> dict[str, np.ndarray]:
    """Worker: one panel per symbol of the chunk, the registry over it."""
    total = len(arrays["close"])
    out = {c: np.empty(total, dtype=np.float32) for c in SPECIALIST_COLUMNS}
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        panel = Panel.from_columns({c: arrays[c][a:b] for c in PANEL_COLUMNS})
        for col, values in run_specialists(panel).items():
            out[col][a:b] = values
    return out


def build_specialists(bars: pl.DataFrame, keys: list[SymbolYear], *, workers: int = 1, chunk_rows: int = 131_072,
                      executor: str = "thread") -> pl.DataFrame:
    """Specialist scores of the rows of `keys` from `bars` (the symbols' history up to them)."""
    bars = bars.sort("symbol", "date")
    scores, _ = map_symbol_chunks(specialists_by_symbol, bars, PANEL_COLUMNS, workers=workers, chunk_rows=chunk_rows,
                                  executor=executor)
    frame = bars.select("date", "symbol").with_columns(
        *[pl.Series(c, scores.get(c, np.empty(0, np.float32))) for c in SPECIALIST_COLUMNS]
    )
    out = keep_partitions(frame, keys)
    specialists_schema().check(out)
    return out


def score_range_report(df: pl.DataFrame) -> tuple[dict[str, int], dict[str, int]]:
    """The `scores_in_range` check: per specialist column, the count of finite scores outside
    [-1, 1] and the count of NaN (warm-up)."""
    # polars orders NaN above every number: warm-up NaN must not count as "> 1"
    bad = {c: int(df.select(((pl.col(c).abs() > 1.0) & pl.col(c).is_not_nan()).sum()).item()) for c in SPECIALIST_COLUMNS}
    nan = {c: int(df[c].is_nan().sum()) for c in SPECIALIST_COLUMNS}
    return bad, nan
