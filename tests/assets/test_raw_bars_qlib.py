"""raw_bars through Dagster in-process with `universe.source: qlib`: a Qlib data folder
(written in Qlib's bin layout by the Alpha158 fixture script) stored as raw bars."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from assets.raw_bars import raw_bars
from config.partitions import SymbolYear
from config.settings import read_settings
from resources.delta_store import DeltaStore
from scripts.alpha158_fixture import write_qlib_bins
from tests.conftest import run_assets


def test_a_qlib_folder_is_ingested(make_settings, instance, tmp_path):
    calendar = ["2010-12-30", "2010-12-31", "2011-01-03", "2011-01-04", "2011-01-05"]
    close = np.array([10, 11, np.nan, 12, 13], dtype=np.float32)  # 2011-01-03: a day without a bar
    arrays = {"open": close, "high": close + 1, "low": close - 1, "close": close,
              "volume": np.full(5, 1000, dtype=np.float32), "factor": np.full(5, 4, dtype=np.float32)}
    write_qlib_bins(tmp_path / "qlib_data", calendar, {"AAA": (0, arrays)})
    cfg = make_settings(universe={"source": "qlib", "qlib": {"provider_uri": str(tmp_path / "qlib_data"),
                                                             "adjusted": False}})
    result = run_assets([raw_bars], cfg, instance, ["AAA"], [2010, 2011])
    assert result.success
    store = DeltaStore(read_settings(cfg).data_dir)
    df = store.read("raw_bars", [SymbolYear("AAA", 2010), SymbolYear("AAA", 2011)]).sort("date")
    assert df["date"].to_list() == [dt.datetime(2010, 12, 30), dt.datetime(2010, 12, 31), dt.datetime(2011, 1, 4),
                                    dt.datetime(2011, 1, 5)]
    assert df["close"].to_list() == [2.5, 2.75, 3, 3.25] and df["volume"].to_list() == [4000] * 4
    meta = {k: v.value for k, v in result.asset_materializations_for_node("raw_bars")[0].metadata.items()}
    assert meta["rows"] == 4
    assert df.filter(pl.col("symbol") != "AAA").is_empty()
