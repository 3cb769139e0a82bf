"""Parameter sets of the seller-exhaustion backtest: frozen dataclasses, validated.

An *individual* is one complete parameter set: the signal's `SellerParams`
(ema_fast, ema_slow, z_window, atr_window, vol_z_min, tr_z_min, cloc_min; see
`kernels.seller_exhaustion`) and the trade rules' `BacktestParams` (atr_stop_mult, reward_r,
max_hold, fee_bps, slippage_bps; see `kernels.strategy.trade_walk`). A population is a
sequence of one or more individuals, evaluated in one call (tested with 1 to 512). `Individual.as_dict()` /
`Individual.from_dict()` use the twelve flat field names, the optimizer's parameter names.

Exit reason codes (int8) are the `REASONS` indices: 0 stop_gap, 1 stop, 2 tp, 3 time, 4 end.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field, fields

from kernels.deprecations import rename_keys, renamed
from kernels.seller_exhaustion import PRESETS, SellerParams

REASONS = ("stop_gap", "stop", "tp", "time", "end")
STOP_GAP, STOP, TP, TIME, END = range(5)


OLD_FIELDS = {"fee_bp": "fee_bps", "slippage_bp": "slippage_bps"}  # the seed's names (kernels.deprecations)


def _accept_old_names(cls):
    """`cls` whose __init__ also takes the old keyword names of OLD_FIELDS, each announced
    once per process (kernels.deprecations.renamed)."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **rename_keys(kwargs, OLD_FIELDS, cls.__name__))

    cls.__init__ = __init__
    return cls


@_accept_old_names
@dataclass(frozen=True)
class BacktestParams:
    """Trade rules: stop = signal low - atr_stop_mult * ATR, target = entry + reward_r * risk,
    time exit after max_hold bars, costs (entry + exit) * (fee_bps + slippage_bps) / 1e4."""

    atr_stop_mult: float = 0.7
    reward_r: float = 2.0
    max_hold: int = 20
    fee_bps: float = 5.0
    slippage_bps: float = 5.0

    def __post_init__(self):
        if not self.atr_stop_mult >= 0.0:
            raise ValueError(f"atr_stop_mult must be >= 0, got {self.atr_stop_mult!r}")
        if not self.reward_r > 0.0:
            raise ValueError(f"reward_r must be > 0, got {self.reward_r!r}")
        if int(self.max_hold) != self.max_hold or self.max_hold < 1:
            raise ValueError(f"max_hold must be an integer >= 1, got {self.max_hold!r}")
        if not (self.fee_bps >= 0.0 and self.slippage_bps >= 0.0):
            raise ValueError(f"fee_bps and slippage_bps must be >= 0, got {self.fee_bps!r}, {self.slippage_bps!r}")

    @property
    def fee_bp(self) -> float:
        """The old name of fee_bps (the seed's engine), kept for a deprecation period."""
        renamed("fee_bp")
        return self.fee_bps

    @property
    def slippage_bp(self) -> float:
        """The old name of slippage_bps, kept for a deprecation period."""
        renamed("slippage_bp")
        return self.slippage_bps

    @property
    def cost_bps(self) -> float:
        """fee_bps + slippage_bps, charged on entry and on exit."""
        return float(self.fee_bps) + float(self.slippage_bps)


def validate_seller(p: SellerParams) -> None:
    """Windows are integers >= 1 (z_window >= 2: a one-row z-score is always 0)."""
    for name, low in (("ema_fast", 1), ("ema_slow", 1), ("atr_window", 1), ("z_window", 2)):
        v = getattr(p, name)
        if int(v) != v or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")


SELLER_FIELDS = tuple(f.name for f in fields(SellerParams))
BACKTEST_FIELDS = tuple(f.name for f in fields(BacktestParams))


@dataclass(frozen=True)
class Individual:
    """One parameter set of the population: the signal's and the trade rules' parameters."""

    seller: SellerParams = field(default_factory=lambda: PRESETS["daily"])
    backtest: BacktestParams = field(default_factory=BacktestParams)

    def __post_init__(self):
        validate_seller(self.seller)

    def as_dict(self) -> dict:
        """The twelve flat fields (SELLER_FIELDS + BACKTEST_FIELDS)."""
        return {**asdict(self.seller), **asdict(self.backtest)}

    @classmethod
    def from_dict(cls, d: dict) -> Individual:
        """From flat fields; missing fields take the daily preset's / BacktestParams' defaults
        (the old names fee_bp / slippage_bp are accepted, announced once: kernels.deprecations)."""
        d = rename_keys(d, OLD_FIELDS, "Individual.from_dict")
        unknown = set(d) - set(SELLER_FIELDS) - set(BACKTEST_FIELDS)
        if unknown:
            raise ValueError(f"unknown individual fields {sorted(unknown)}")
        base = PRESETS["daily"]
        seller = SellerParams(**{k: d.get(k, getattr(base, k)) for k in SELLER_FIELDS})
        for k in ("ema_fast", "ema_slow", "z_window", "atr_window"):
            if int(getattr(seller, k)) != getattr(seller, k):
                raise ValueError(f"{k} must be an integer, got {getattr(seller, k)!r}")
        seller = SellerParams(**{**asdict(seller), **{k: int(getattr(seller, k)) for k in ("ema_fast", "ema_slow", "z_window", "atr_window")}})
        bt = {k: d[k] for k in BACKTEST_FIELDS if k in d}
        if "max_hold" in bt:
            if int(bt["max_hold"]) != bt["max_hold"]:
                raise ValueError(f"max_hold must be an integer, got {bt['max_hold']!r}")
            bt["max_hold"] = int(bt["max_hold"])
        return cls(seller, BacktestParams(**bt))


def as_individuals(population) -> list[Individual]:
    """A list of Individual from Individuals or flat dicts (at least one)."""
    out = [p if isinstance(p, Individual) else Individual.from_dict(p) for p in population]
    if not out:
        raise ValueError("a population holds at least one individual")
    return out
