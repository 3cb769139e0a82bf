"""benchmarks/honesty_cross_section.py's data path: skfolio's S&P 500 closes become a user
folder the folder source accepts (skipped where skfolio is not installed:
`pip install --no-deps skfolio`), and `meta.seed` reaches the seeded meta models."""

import importlib.util

import numpy as np
import polars as pl
import pytest

from config.settings import SYMBOL_PATTERN, parse_settings


def test_meta_seed_setting():
    assert parse_settings({}).meta.seed == 0
    assert parse_settings({"meta": {"model": "lightgbm", "seed": 3}}).meta.seed == 3


@pytest.mark.skipif(importlib.util.find_spec("skfolio") is None, reason="skfolio not installed")
def test_sp500_bars_through_the_folder_source(tmp_path):
    from benchmarks.honesty_cross_section import sp500_bars
    from domain.sources.folder import FolderSource
    from kernels.registry.specialists import seller_exhaustion_score
    from kernels.panel import Panel

    bars = sp500_bars(1e6)
    symbols = sorted(bars["symbol"].unique().to_list())
    assert len(symbols) == 20 and all(SYMBOL_PATTERN.match(s) for s in symbols)
    assert bars["date"].dt.year().min() == 1990 and bars["date"].dt.year().max() == 2022
    bars.filter(pl.col("date").dt.year() >= 2021).write_parquet(tmp_path / "sp500.parquet")
    src = FolderSource(tmp_path)
    assert src.symbols() == symbols
    raw = src.history(["AAPL", "XOM"])
    assert raw.height == 2 * bars.filter((pl.col("symbol") == "AAPL") & (pl.col("date").dt.year() >= 2021)).height
    assert (raw["open"] == raw["close"]).all() and (raw["high"] == raw["low"]).all()
    # the documented degradation: no seller-exhaustion bar can exist without a range and a volume
    one = raw.filter(pl.col("symbol") == "AAPL")
    panel = Panel.from_columns({c: one[c].to_numpy().astype(np.float32) for c in ("open", "high", "low", "close", "volume")})
    assert np.all(seller_exhaustion_score(panel) == 0)
