"""DeltaTableIOManager inputs (resources/io_manager.py), through real Dagster runs."""

from __future__ import annotations

import polars as pl
from dagster import materialize

from resources.partitions import yearly_asset
from config.settings import read_settings
from tests.conftest import run_assets


def test_a_yearly_reader_scans_every_registered_partition_and_leaves_unregistered_symbols_out(make_settings, instance,
                                                                                              monkeypatch):
    """An input that maps to every partition (the yearly stages) reads the table for the
    registered symbols and the defined years: the same rows as reading each key, and a
    symbol removed with `symbols remove` (its rows stay stored) stays out."""
    from assets.raw_bars import raw_bars
    from pipeline.definitions import build_resources
    from pipeline.symbols import remove_symbols
    from resources.delta_store import DeltaStore

    import resources.io_manager as io

    seen, scans = {}, []
    real = io._every_partition
    monkeypatch.setattr(io, "_every_partition", lambda *a: scans.append(a[1]) or real(*a))

    @yearly_asset(reads=("raw_bars",))
    def reader(raw_bars: pl.LazyFrame) -> None:
        seen["frame"] = raw_bars.collect()

    settings = make_settings(universe={"synthetic": {"symbols": ["AAA", "BBB", "CCC"]}})
    assert run_assets([raw_bars], settings, instance, ["AAA", "BBB", "CCC"], [2001, 2002]).success
    remove_symbols(instance, ["CCC"])
    assert materialize([raw_bars, reader], selection=["reader"], partition_key="2002", instance=instance,
                       resources=build_resources(str(settings))).success

    store = DeltaStore(read_settings(settings).data_dir)
    want = store.read("raw_bars", [(s, y) for s in ("AAA", "BBB") for y in (2001, 2002)])
    got = seen["frame"].drop("year").sort("symbol", "date")
    assert got.equals(want.sort("symbol", "date"))
    assert store.read("raw_bars", [("CCC", 2001)]).height > 0  # stored, yet not read
    assert scans == ["raw_bars"]  # read by one scan of the table, not key by key
