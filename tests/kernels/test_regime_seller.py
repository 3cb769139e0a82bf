"""Seller exhaustion against its pandas definition; the regime tagger is causal."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import polars as pl
import pytest

from kernels.panel import Panel
from domain.regime import build_regime, class_shares, equal_weight_index
from domain.sources.synthetic import SyntheticMarket
from config.partitions import SymbolYear
from kernels.regime import NO_TAG, tag_regime
from kernels.seller_exhaustion import PRESETS, SellerParams, seller_exhaustion
from tests.kernel_data import goog_ohlc


def seed_build_features(df: pd.DataFrame, p: SellerParams) -> pd.DataFrame:
    """The seller-exhaustion indicator definitions written with pandas, the reference."""
    d = df.copy()
    d["ema_f"] = d["close"].ewm(span=p.ema_fast, adjust=False).mean()
    d["ema_s"] = d["close"].ewm(span=p.ema_slow, adjust=False).mean()
    prev = d["close"].shift(1)
    tr = pd.concat([d["high"] - d["low"], (d["high"] - prev).abs(), (d["low"] - prev).abs()], axis=1).max(axis=1)
    tr.iloc[0] = d["high"].iloc[0] - d["low"].iloc[0]
    d["atr"] = tr.rolling(p.atr_window).mean()
    vm, vs = d["volume"].rolling(p.z_window).mean(), d["volume"].rolling(p.z_window).std(ddof=0)
    d["vol_z"] = (d["volume"] - vm) / vs
    t = d["atr"] * p.atr_window
    d["tr_z"] = (t - t.rolling(p.z_window).mean()) / t.rolling(p.z_window).std(ddof=0)
    rng = d["high"] - d["low"]
    d["cloc"] = ((d["close"] - d["low"]) / rng).where(rng > 0)
    d["exhaustion"] = (d["ema_f"] < d["ema_s"]) & (d["vol_z"] > p.vol_z_min) & (d["tr_z"] > p.tr_z_min) & (d["cloc"] > p.cloc_min)
    return d


@pytest.mark.parametrize("preset", ["daily", "15m"])
def test_seller_exhaustion_equals_the_seed_pandas_definition(preset):
    from backtesting.test import GOOG

    df = GOOG.rename(columns=str.lower)
    p = PRESETS[preset] if preset == "daily" else SellerParams(ema_fast=12, ema_slow=40, z_window=60, atr_window=8)
    ref = seed_build_features(df, p)
    got = seller_exhaustion(df["high"].to_numpy(), df["low"].to_numpy(), df["close"].to_numpy(), df["volume"].to_numpy(float), p)
    for col in ("ema_f", "ema_s", "atr", "vol_z", "tr_z", "cloc"):
        np.testing.assert_allclose(got[col], ref[col].to_numpy(), rtol=1e-7, atol=1e-9, equal_nan=True, err_msg=col)
    assert np.array_equal(got["signal"], ref["exhaustion"].to_numpy())
    assert got["signal"].sum() > 0  # the rule fires on real prices


def test_regime_of_day_t_does_not_change_when_later_days_are_appended():
    _, _, _, close = goog_ohlc()
    full = tag_regime(close)
    for t in (400, 900, 1500, 2000):
        np.testing.assert_array_equal(tag_regime(close[: t + 1]), full[: t + 1])


def test_centred_windows_would_have_leaked():
    """A centred np.convolve(mode='same') reads the future: its tags change when days are added."""
    _, _, _, close = goog_ohlc()
    def seed_trend(x):
        return np.sign(np.convolve(x, np.ones(20) / 20, mode="same") - np.convolve(x, np.ones(50) / 50, mode="same"))
    assert not np.array_equal(seed_trend(close[:1000]), seed_trend(close)[:1000])


def test_regime_classes_are_not_degenerate_on_the_synthetic_market():
    bars = SyntheticMarket(7, dt.date(2000, 1, 1), dt.date(2025, 12, 31)).generate([f"SYN{i:03d}" for i in range(8)])
    out = build_regime(bars, list(range(2000, 2026)))
    shares = class_shares(out["regime"])
    assert all(0.05 <= v <= 0.80 for v in shares.values()), shares
    assert out["regime"].null_count() > 0  # the warm-up is untagged, not forced into a class
    assert out.filter(pl.col("regime").is_not_null())["date"].min().year == 2001


def test_equal_weight_index_uses_symbols_present_that_day():
    d = [dt.datetime(2020, 1, k) for k in (2, 3, 6)]
    bars = pl.DataFrame({"date": d + d[1:], "symbol": ["A"] * 3 + ["B"] * 2, "close": [10.0, 11.0, 12.1, 50.0, 45.0]})
    idx = equal_weight_index(bars)
    assert idx["members"].to_list() == [0, 1, 2]
    np.testing.assert_allclose(idx["index_close"].to_numpy(), [1.0, 1.1, 1.1 * (1 + (0.1 - 0.1) / 2)])


def test_warm_up_is_marked_not_tagged():
    tags = tag_regime(np.linspace(100, 120, 300))
    assert (tags[:270] == NO_TAG).all() and (tags[-5:] == 1).all()


def test_panel_columns_are_views_not_copies():
    cols = {c: np.arange(10, dtype=np.float32) + i for i, c in enumerate(["open", "high", "low", "close", "volume"])}
    p = Panel.from_columns(cols)
    close = p.col("close")
    assert np.shares_memory(close, p.mat) and close.flags["C_CONTIGUOUS"]
    p.mat[3, p.cols.index("close")] = -1
    assert close[3] == -1
    with pytest.raises(KeyError, match="panel has no column 'vwap'"):
        p.col("vwap")


def test_regime_asset_with_its_halo_equals_the_whole_history(make_settings, instance):
    from dagster import materialize

    from assets.raw_bars import raw_bars
    from assets.regime import regime
    from pipeline.definitions import build_resources
    from config.settings import read_settings
    from resources.delta_store import DeltaStore
    from tests.conftest import run_assets

    cfg = make_settings()
    syms, years = ["AAA", "BBB"], list(range(2000, 2007))
    assert run_assets([raw_bars], cfg, instance, syms, years).success
    res = materialize([raw_bars, regime], selection=[regime], partition_key="2006", instance=instance,
                      resources=build_resources(str(cfg)))
    assert res.success
    check = res.get_asset_check_evaluations()[0]
    assert check.check_name == "not_degenerate"
    store = DeltaStore(read_settings(cfg).data_dir)
    stored = store.read("regime", [2006])
    whole = build_regime(store.read("raw_bars", [SymbolYear(s, y) for s in syms for y in years]), [2006])
    assert stored["regime"].to_list() == whole["regime"].to_list() and stored.height == 251


def test_a_configured_index_symbol_drives_the_regime():
    bars = SyntheticMarket(7, dt.date(2000, 1, 1), dt.date(2004, 12, 31)).generate(["AAA", "BBB"])
    own = build_regime(bars, [2003, 2004], index_symbol="AAA")
    aaa = bars.filter(pl.col("symbol") == "AAA")["close"].to_numpy()
    assert own["regime"].fill_null(NO_TAG).to_list() == [int(t) for t in tag_regime(aaa)[-own.height:]]
    with pytest.raises(ValueError, match="index_symbol 'ZZZ' has no raw_bars"):
        build_regime(bars, [2003], index_symbol="ZZZ")
