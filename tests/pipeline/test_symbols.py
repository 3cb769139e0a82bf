"""`symbols sync` (pipeline.symbols): the registered symbols follow the configured source.
Switching the source unregisters the old source's symbols; a registered symbol the source
no longer holds is named, with the `--prune` that unregisters it, and no yearly stage reads
it meanwhile."""

from __future__ import annotations

import polars as pl
import pytest

from config.partitions import SYMBOLS
from resources.partitions import yearly_asset
from config.settings import load_settings

BARS = "date,open,high,low,close\n2010-01-04,10,11,9,10.5\n2010-01-05,10.5,11.5,10,11\n"


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "user_data"
    d.mkdir()
    for name in ("AAA", "BBB"):
        (d / f"{name}.csv").write_text(BARS)
    return d


def test_switching_the_source_from_synthetic_to_a_folder_unregisters_the_synthetic_symbols(make_settings, folder, instance):
    from pipeline.symbols import sync_source

    demo = sync_source(instance, load_settings(make_settings()))  # the conftest's synthetic AAA, BBB
    assert (demo.added, demo.removed, demo.source) == (["AAA", "BBB"], [], "synthetic")
    (folder / "AAA.csv").unlink()
    (folder / "CCC.csv").write_text(BARS)
    real = sync_source(instance, load_settings(make_settings(universe={"source": "folder", "folder": {"path": str(folder)}})))
    assert instance.get_dynamic_partitions(SYMBOLS) == ["BBB", "CCC"]
    assert real.line() == (f"registered 1 new symbol(s); 2 in all: CCC; removed (the source changed to folder:{folder}) "
                           f"1: AAA")


def test_a_registered_symbol_the_folder_lost_is_named_and_no_yearly_stage_reads_it(make_settings, folder, instance):
    from dagster import materialize

    from assets.raw_bars import raw_bars
    from pipeline.definitions import build_resources
    from pipeline.symbols import sync_source, sync_symbols
    from tests.conftest import run_assets

    seen = []

    @yearly_asset(reads=("raw_bars",), name="symbols_probe")
    def probe(raw_bars: pl.LazyFrame):
        seen.append(sorted(raw_bars.select("symbol").unique().collect()["symbol"].to_list()))

    def yearly_read() -> list[str]:
        materialize([raw_bars, probe], selection=[probe], partition_key="2010", instance=instance,
                    resources=build_resources(str(cfg)))
        return seen[-1]

    cfg = make_settings(years={"start": 2009, "end": 2011}, universe={"source": "folder", "folder": {"path": str(folder)}})
    settings = load_settings(cfg)
    sync_symbols(instance, settings)
    run_assets([raw_bars], cfg, instance, ["AAA", "BBB"], [2010])
    assert yearly_read() == ["AAA", "BBB"]
    (folder / "BBB.csv").unlink()
    assert sync_symbols(instance, settings) == []  # what build-all and the demo run first
    assert yearly_read() == ["AAA"]  # BBB's stored rows stay out of the yearly stages
    assert sync_source(instance, settings).line() == (
        f"registered 0 new symbol(s); 2 in all; 1 registered symbol(s) not in source folder:{folder}, "
        "left out of every run: BBB (`symbols sync --prune` unregisters them)")
    assert sync_source(instance, settings, prune=True).removed == ["BBB"]
    assert instance.get_dynamic_partitions(SYMBOLS) == ["AAA"] and yearly_read() == ["AAA"]


def test_the_sync_line_names_at_most_ten_symbols(make_settings, instance):
    from pipeline.symbols import sync_source

    names = [f"S{i:04d}" for i in range(2000)]
    line = sync_source(instance, load_settings(make_settings(universe={"synthetic": {"symbols": names}}))).line()
    assert line == ("registered 2000 new symbol(s); 2000 in all: S0000, S0001, S0002, S0003, S0004, S0005, S0006, "
                    "S0007, S0008, S0009 ... and 1990 more")
