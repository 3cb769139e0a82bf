"""Real daily prices shipped inside installed packages (the `demo` extra, not runtime):
GOOG 2004-2013 from `backtesting.test`, the S&P 500 and NASDAQ indices 1999-2018 from
`arch.data`. Nothing is downloaded.
"""

from __future__ import annotations

import importlib
from importlib import metadata

import polars as pl

from config.errors import InputDataError
from domain.schema import RAW_BARS
from domain.sources.conform import conform_bars

# symbol -> (module, attribute or loader function, distribution)
PACKAGED = {
    "GOOG": ("backtesting.test", "GOOG", "backtesting"),
    "SP500": ("arch.data.sp500", "load", "arch"),
    "NASDAQ": ("arch.data.nasdaq", "load", "arch"),
}


def _load_pandas(symbol: str):
    module, attr, dist = PACKAGED[symbol]
    try:
        obj = getattr(importlib.import_module(module), attr)
    except ImportError:
        raise InputDataError(f"package {dist}", f"not installed, so {symbol} is unavailable", expected="pip install -e '.[demo]'") from None
    return obj() if callable(obj) else obj


class PackagedSource:
    name = "packaged"

    def __init__(self, symbols: list[str]):
        self._symbols = list(symbols)

    def symbols(self) -> list[str]:
        return list(self._symbols)

    def fingerprints(self, errors: list | None = None) -> dict[str, str]:
        out = {}
        for sym in self._symbols:
            dist = PACKAGED[sym][2]
            try:
                out[sym] = f"{dist}=={metadata.version(dist)}"
            except metadata.PackageNotFoundError:
                out[sym] = f"{dist} missing"
        return out

    def history(self, symbols: list[str]) -> pl.DataFrame:
        frames = []
        for sym in symbols:
            if sym not in PACKAGED:
                raise InputDataError("packaged source", f"unknown symbol {sym!r}", expected=f"one of {sorted(PACKAGED)}")
            pdf = _load_pandas(sym)
            pdf = pdf.rename_axis("date").reset_index()
            frames.append(conform_bars(pl.from_pandas(pdf), f"{PACKAGED[sym][0]} ({sym})", sym))
        return pl.concat(frames).sort("symbol", "date") if frames else RAW_BARS.empty()
