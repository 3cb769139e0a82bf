"""The parameter grid and its order.

Parameters: filters `volatility, ratio, adx28, adx14, adx7` (keep a trade when
each entry metric >= its threshold) and exits `target` (> 0) and `stop_loss` (< 0), in
percent. Combination order: volatility, ratio, adx28, adx14, adx7, target, stop_loss, each
list in its given order, the last varying fastest; combination index c is the position in
that order. (target, stop_loss) pairs are numbered p = target_index * n_stops + stop_index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FILTERS = ("volatility", "ratio", "adx28", "adx14", "adx7")
PARAMS = FILTERS + ("target", "stop_loss")


@dataclass(frozen=True)
class Grid:
    volatility: tuple[float, ...]
    ratio: tuple[float, ...]
    adx28: tuple[float, ...]
    adx14: tuple[float, ...]
    adx7: tuple[float, ...]
    target: tuple[float, ...]
    stop_loss: tuple[float, ...]

    def __post_init__(self):
        for name in PARAMS:
            values = tuple(float(v) for v in getattr(self, name))
            if not values:
                raise ValueError(f"grid: {name} must be a non-empty list")
            if not all(np.isfinite(values)):
                raise ValueError(f"grid: {name} must hold finite numbers, got {values}")
            object.__setattr__(self, name, values)
        if any(t <= 0 for t in self.target):
            raise ValueError(f"grid: target values are percents > 0, got {self.target}")
        if any(s >= 0 for s in self.stop_loss):
            raise ValueError(f"grid: stop_loss values are percents < 0, got {self.stop_loss}")

    @classmethod
    def from_mapping(cls, params: dict) -> "Grid":
        unknown = set(params) - set(PARAMS)
        if unknown:
            raise ValueError(f"grid: unknown parameter(s) {sorted(unknown)}; expected {list(PARAMS)}")
        return cls(**{k: tuple(params[k]) for k in PARAMS})

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(getattr(self, name)) for name in PARAMS)

    @property
    def n_pairs(self) -> int:
        return len(self.target) * len(self.stop_loss)

    @property
    def n_combinations(self) -> int:
        return int(np.prod(self.sizes, dtype=np.int64))

    def table(self) -> np.ndarray:
        """[7, max_len] float64: row k holds PARAMS[k]'s values (padded with NaN)."""
        out = np.full((len(PARAMS), max(self.sizes)), np.nan)
        for k, name in enumerate(PARAMS):
            values = getattr(self, name)
            out[k, : len(values)] = values
        return out

    def decode(self, index: np.ndarray | int) -> dict[str, np.ndarray]:
        """Parameter values of combination indices (grid order)."""
        idx = np.unravel_index(np.asarray(index, dtype=np.int64), self.sizes)
        return {name: np.asarray(getattr(self, name))[i] for name, i in zip(PARAMS, idx)}
