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


def test_a_configuration_names_the_inputs_the_model_and_the_packs():
    from benchmarks.honesty_cross_section import parse_config

    assert parse_config("specialists:logistic") == ("specialists, logistic", "specialists", "logistic", ["core"], [])
    assert parse_config("features+specialists:hist_gbm")[1] == "features+specialists"
    assert parse_config("specialists+alpha158:lightgbm:core+alpha158") == (
        "specialists+alpha158, lightgbm", ["specialists", "alpha158"], "lightgbm", ["core", "alpha158"], [])
    assert parse_config("specialists+alpha158_close:lightgbm:core+benchmarks.alpha158_close")[3:] == (
        ["core"], ["benchmarks.alpha158_close"])
    with pytest.raises(SystemExit, match="is not INPUTS:MODEL"):
        parse_config("specialists")


def test_on_close_only_bars_alpha158_close_has_a_value_where_alpha158s_volume_correlations_have_none():
    """open = high = low = close and a constant volume (the S&P 500 file): Alpha158's 10
    CORR/CORD columns are NaN on every row, so the meta model (complete rows only) has no row
    to train on; the plugin pack alpha158_close keeps the other 148, finite after warm-up."""
    from kernels.registry.features import compute_features
    from kernels.registry.packs import select

    n = 300
    close = (50 * np.exp(np.cumsum(np.random.default_rng(1).normal(0, 0.02, n)))).astype(np.float32)
    arrays = {c: close for c in ("open", "high", "low", "close", "vwap")} | {"volume": np.full(n, 1e6, np.float32)}
    offsets = np.array([0, n])
    full = select(("alpha158",))
    out = compute_features(arrays, offsets, backend="cpu", dtype=np.float32, entries=full.features)
    no_value = [c for c in full.feature_columns if np.isnan(out[c]).all()]
    assert no_value == [f"a158_{k}{d}" for k in ("CORR", "CORD") for d in (5, 10, 20, 30, 60)]
    close_only = select(("core",), ("benchmarks.alpha158_close",))
    cols = [c for c in close_only.feature_columns if c.startswith("a158_")]
    assert len(cols) == 148 and not set(cols) & set(no_value)
    out = compute_features(arrays, offsets, backend="cpu", dtype=np.float32, entries=close_only.features)
    warm = close_only.warmups()
    assert all(np.isfinite(out[c][warm[c]:]).all() for c in cols)
