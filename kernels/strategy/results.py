"""Ragged results of a population backtest: offsets + flat trade arrays + summary metrics.

Trades of individual i are rows offsets[i]:offsets[i+1] of every flat array, in time order:
entry_idx, exit_idx (int64 bar indices), reason (int8, `params.REASONS`), entry_px, exit_px,
pnl (net fraction of the entry), r_mult (net R multiple), all float64. `metrics` holds one
entry per individual (see `kernels.strategy.metrics`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kernels.deprecations import renamed
from kernels.strategy.metrics import summarize

TRADE_FIELDS = ("entry_idx", "exit_idx", "reason", "entry_px", "exit_px", "pnl", "r_mult")
TRADE_DTYPES = {"entry_idx": np.int64, "exit_idx": np.int64, "reason": np.int8, "entry_px": np.float64,
                "exit_px": np.float64, "pnl": np.float64, "r_mult": np.float64}


@dataclass
class PopulationResult:
    offsets: np.ndarray
    entry_idx: np.ndarray
    exit_idx: np.ndarray
    reason: np.ndarray
    entry_px: np.ndarray
    exit_px: np.ndarray
    pnl: np.ndarray
    r_mult: np.ndarray
    metrics: dict[str, np.ndarray]
    backend: str = "cpu"  # the backend that produced the result
    n_series: dict[str, int] = field(default_factory=dict)  # unique indicator series computed
    fallback: str | None = None  # why the requested backend was abandoned, when it was

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    @property
    def engine(self) -> str:
        """The old name of `backend`, kept for a deprecation period (announced once)."""
        renamed("PopulationResult.engine")
        return self.backend

    @property
    def n_trades(self) -> np.ndarray:
        return np.diff(self.offsets)

    def trades(self, i: int) -> dict[str, np.ndarray]:
        """Individual i's trades, one array per TRADE_FIELDS name."""
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return {f: getattr(self, f)[a:b] for f in TRADE_FIELDS}

    @classmethod
    def from_buffers(cls, counts: np.ndarray, buffers: dict[str, np.ndarray], **kw) -> PopulationResult:
        """From per-individual fixed-capacity buffers [N, capacity] and trade counts [N]."""
        counts = np.asarray(counts, dtype=np.int64)
        cap = buffers["entry_idx"].shape[1]
        if counts.size and counts.max() > cap:
            raise RuntimeError(f"trade buffer overflow: {int(counts.max())} trades > capacity {cap}")
        keep = np.arange(cap)[None, :] < counts[:, None]
        flat = {f: np.ascontiguousarray(buffers[f][keep], dtype=TRADE_DTYPES[f]) for f in TRADE_FIELDS}
        offsets = np.zeros(counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return cls(offsets=offsets, **flat, metrics=summarize(offsets, flat["pnl"], flat["r_mult"]), **kw)

    @classmethod
    def from_flat(cls, counts: np.ndarray, flat: dict[str, np.ndarray], **kw) -> PopulationResult:
        """From trade counts [N] and the flat arrays (individual i's trades at its offsets)."""
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(np.asarray(counts, dtype=np.int64), out=offsets[1:])
        flat = {f: np.ascontiguousarray(flat[f], dtype=TRADE_DTYPES[f]) for f in TRADE_FIELDS}
        return cls(offsets=offsets, **flat, metrics=summarize(offsets, flat["pnl"], flat["r_mult"]), **kw)

    @classmethod
    def concat(cls, parts: list[PopulationResult], **kw) -> PopulationResult:
        """Individuals of several results, in order (e.g. the reference's one-at-a-time runs)."""
        counts = np.concatenate([p.n_trades for p in parts])
        offsets = np.zeros(counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        flat = {f: np.concatenate([getattr(p, f) for p in parts]).astype(TRADE_DTYPES[f], copy=False) for f in TRADE_FIELDS}
        metrics = {k: np.concatenate([p.metrics[k] for p in parts]) for k in parts[0].metrics}
        return cls(offsets=offsets, **flat, metrics=metrics, **kw)
