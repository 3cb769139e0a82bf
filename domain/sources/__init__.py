"""Where raw bars come from. Every source offers the same three calls:

- `symbols()`: the names it can provide;
- `fingerprints(errors=None)`: symbol -> a token that changes when the symbol's data changes
  (the sensor); with an `errors` list, unreadable entries are recorded there and skipped;
- `history(symbols)`: all rows of those symbols in RAW_BARS schema, sorted by symbol, date.
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol

import polars as pl

from config.settings import Settings


class BarSource(Protocol):
    name: str

    def symbols(self) -> list[str]: ...

    def fingerprints(self, errors: list | None = None) -> dict[str, str]: ...

    def history(self, symbols: list[str]) -> pl.DataFrame: ...


class SyntheticSource:
    name = "synthetic"

    def __init__(self, names: list[str], seed: int, start: dt.date, end: dt.date, planted=None):
        from domain.sources.synthetic import NO_PLANTED, SyntheticMarket

        self._names = list(names)
        self.market = SyntheticMarket(seed, start, end, planted or NO_PLANTED)

    def symbols(self) -> list[str]:
        return list(self._names)

    def fingerprints(self, errors: list | None = None) -> dict[str, str]:
        token = f"synthetic:{self.market.seed}:{self.market.start}:{self.market.end}"
        p = self.market.planted
        if p.active:  # a planted signal is other data; none keeps the token it always had
            token += f":planted:{p.kind}:{p.strength!r}:{p.horizon}"
        return {s: token for s in self._names}

    def history(self, symbols: list[str]) -> pl.DataFrame:
        return self.market.generate(list(symbols))


def make_source(settings: Settings) -> BarSource:
    """The source named by `universe.source`."""
    uni = settings.universe
    if uni.source == "synthetic":
        syn = uni.synthetic
        last = dt.date(settings.years.last, 12, 31)
        end = min(last, syn.end_date or dt.date.today())
        from domain.sources.synthetic import Planted

        planted = Planted(syn.planted.strength, syn.planted.kind, syn.planted.horizon)
        return SyntheticSource(syn.symbol_names(), syn.seed, dt.date(settings.years.start, 1, 1), end, planted)
    if uni.source == "folder":
        from domain.sources.folder import FolderSource

        strict = settings.ingest.calendar if settings.ingest.strict else None
        return FolderSource(settings.resolve(uni.folder.path), sessions=strict,
                            resample=settings.ingest.resample == "daily")
    if uni.source == "qlib":
        from domain.sources.qlib import QlibSource

        strict = settings.ingest.calendar if settings.ingest.strict else None
        return QlibSource(settings.resolve(uni.qlib.provider_uri), uni.qlib.market, adjusted=uni.qlib.adjusted,
                          sessions=strict)
    from domain.sources.packaged import PackagedSource

    return PackagedSource(list(uni.packaged.symbols))
