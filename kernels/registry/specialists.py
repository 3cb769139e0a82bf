"""The specialist registry: name, function over a Panel, inputs, warm-up, streaming updater.

Each specialist returns float32 scores in [-1, 1], one per panel row; the stored column is
`spec_<name>_score`, in registry order. This registry is the `core` pack's specialists
(kernels.registry.packs; plugin packs add their own). To add one, append a `Specialist` here, with its
batch `fn` and its `stream`: the same score one bar at a time, built from `u`
(kernels.indicators.streaming.StreamCalls, see kernels/registry/features.py; for specialists `u`
computes in float32, as the batch functions do). tests/kernels/test_streaming.py replays every
entry against its batch function.

    mean_reversion  -zscore(close vs its 20-day SMA, in 20-day standard deviations) / 2,
                    clipped to [-1, 1]: stretched above the mean scores negative
    rsi             (RSI(14) - 50) / 50
    atc             the Adaptive Trend Classification final value (kernels.atc), in [-1, 1];
                    its parameters (robustness, length, lam, decay, cutout) default to the
                    script's (ATC_DEFAULTS); `atc_specialist(**params)` builds the entry
                    for others. Warm-up (`atc_warmup`): 66 rows at the defaults, the
                    longest DEMA's; the Pine KAMA has a value from bar 0
    seller_exhaustion  1 on a seller-exhaustion signal bar (kernels.seller_exhaustion, daily
                    preset), else 0
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from kernels.panel import Panel
from kernels import indicators as K
from kernels.registry.features import EntryError, describe_result, one_line
from kernels.atc.stream import ATCUpdater
from kernels.seller_exhaustion import PRESETS, SellerExhaustionUpdater, seller_exhaustion


@dataclass(frozen=True)
class Specialist:
    """A score in [-1, 1] per bar from one symbol's Panel (`fn(panel) -> float32 array`).

    `stream` is optional: without one the live path keeps the last `window` bars (default
    warm-up + 1) and recomputes `fn` on them for the newest bar. `version`: bump it when
    `fn` changes, so Dagster marks the stored partitions stale."""

    name: str
    fn: Callable[[Panel], np.ndarray]
    inputs: tuple[str, ...]
    warmup: int
    stream: Callable | None = None  # u -> (() -> this bar's score): `fn`, one bar at a time
    window: int | None = None
    version: str = "1"

    @property
    def column(self) -> str:
        return f"spec_{self.name}_score"


def mean_reversion(p: Panel) -> np.ndarray:
    z = K.zscore(p.col("close"), 20)
    return np.clip(-z / 2.0, -1.0, 1.0).astype(np.float32)


def _mean_reversion_bar(z):
    """mean_reversion of one float32 z-score (np.clip's arithmetic without its per-call cost)."""
    m = -z / 2.0
    return m if m != m else min(max(m, -1.0), 1.0)


def _rsi_scale(r):
    return (r - 50.0) / 50.0


def rsi_score(p: Panel) -> np.ndarray:
    return _rsi_scale(K.rsi(p.col("close"), 14)).astype(np.float32)


# kernels.atc's defaults (the Pine script's): the registered `atc` entry runs with these;
# `atc_specialist(**params)` builds the entry for other settings (config: settings.atc).
ATC_DEFAULTS = {"robustness": "Medium", "length": 28, "lam": 0.02, "decay": 0.03, "cutout": 0}


def atc_score(p: Panel, *, robustness: str = "Medium", length=28, lam: float = 0.02, decay: float = 0.03,
              cutout: int = 0) -> np.ndarray:
    from kernels.atc import average_signal

    return np.asarray(average_signal(p.col("close"), robustness=robustness, length=length, lam=lam, decay=decay,
                                     cutout=cutout), dtype=np.float32)


def atc_warmup(*, robustness: str = "Medium", length: int = 28, cutout: int = 0, **_) -> int:
    """Rows before ATC's score is finite and every one of its 54 MAs has a value: the MAs
    keep Pine's na warm-ups, the longest being the DEMA at the longest length n = L + a4
    (first value at 2*(n - 1): 66 at the defaults), except the KAMA, which (Pine's KAMA)
    has a value from bar 0; and the score is NaN before `cutout`."""
    from kernels.atc.params import ma_lengths

    return max(2 * (max(ma_lengths(int(length), robustness)) - 1), int(cutout))


def atc_specialist(**params) -> "Specialist":
    """The `atc` registry entry for the ATC parameters `params` (robustness, length, lam,
    decay, cutout: kernels.atc's names, as typed in the script's inputs; the rest default to
    ATC_DEFAULTS): batch `fn`, `warmup` and `stream` (kernels.atc.stream.ATCUpdater) all
    take the same parameters."""
    unknown = set(params) - set(ATC_DEFAULTS)
    if unknown:
        raise ValueError(f"atc: unknown parameters {sorted(unknown)}; expected {sorted(ATC_DEFAULTS)}")
    kw = {**ATC_DEFAULTS, **params}
    return Specialist("atc", functools.partial(atc_score, **kw), C, atc_warmup(**kw), lambda u: u.updater(ATCUpdater, C, **kw))


def seller_exhaustion_score(p: Panel) -> np.ndarray:
    out = seller_exhaustion(p.col("high"), p.col("low"), p.col("close"), p.col("volume"), PRESETS["daily"])
    return out["signal"].astype(np.float32)


C, HLCV = ("close",), ("high", "low", "close", "volume")

SPECIALISTS: tuple[Specialist, ...] = (
    Specialist("mean_reversion", mean_reversion, C, 19,
               lambda u: u.apply(_mean_reversion_bar, u("moments", C, n=20, mode=1))),
    Specialist("rsi", rsi_score, C, 14, lambda u: u.apply(_rsi_scale, u("rsi", C, n=14))),
    atc_specialist(),
    Specialist("seller_exhaustion", seller_exhaustion_score, HLCV,
               PRESETS["daily"].atr_window + PRESETS["daily"].z_window,
               lambda u: u.updater(SellerExhaustionUpdater, HLCV, params=PRESETS["daily"])),
)
SPECIALIST_COLUMNS = [s.column for s in SPECIALISTS]
PANEL_COLUMNS = ["open", "high", "low", "close", "volume"]


def run_specialists(panel: Panel, specialists: tuple[Specialist, ...] | None = None) -> dict[str, np.ndarray]:
    """Every registered specialist's scores over one symbol's panel (or those of
    `specialists`, e.g. the registry with `atc_specialist(**settings)` in place of `atc`).
    EntryError for a specialist that raises or returns other than one value per row."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return {s.column: _run_one(s, panel) for s in (SPECIALISTS if specialists is None else specialists)}


def _run_one(s: Specialist, panel: Panel) -> np.ndarray:
    """s.fn(panel), checked: one value per row of the panel; EntryError (one line) when the
    function raises or returns anything else."""
    try:
        got = s.fn(panel)
    except MemoryError:  # the machine's, not the function's
        raise
    except Exception as exc:
        raise EntryError(s.name, s.column, f"raised {type(exc).__name__}: {one_line(exc)}",
                         "a score function that runs on the symbol's panel and returns one value per row") from exc
    if got is None or np.shape(got) != (len(panel),):
        raise EntryError(s.name, s.column, f"returned {describe_result(got)} for a symbol of {len(panel)} rows",
                         f"one value per row (an array of length {len(panel)})")
    return got
