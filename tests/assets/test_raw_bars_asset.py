"""raw_bars through Dagster in-process: the Delta table, metadata, sidecars, halo inputs, lazy scans,
and a failed run that leaves stored partitions untouched."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
from dagster import AssetIn, asset, materialize

from assets.raw_bars import raw_bars
from domain.schema import RAW_BARS
from pipeline.definitions import build_resources
from config.partitions import SymbolYear
from resources.partitions import dynamic_key_of, symbol_year_partitions, year_halo_mapping
from config.settings import read_settings
from resources.delta_store import DeltaStore
from tests.conftest import one_partition, run_assets


def test_two_symbols_two_years_in_one_run(make_settings, instance):
    cfg = make_settings()
    result = run_assets([raw_bars], cfg, instance, ["AAA", "BBB"], [2010, 2011])
    assert result.success
    settings = read_settings(cfg)
    store = DeltaStore(settings.data_dir)
    keys = [SymbolYear(s, y) for s in ("AAA", "BBB") for y in (2010, 2011)]
    assert store.partitions("raw_bars") == keys
    df = store.read("raw_bars", [SymbolYear("AAA", 2010)])
    RAW_BARS.check(df)
    assert df.height == 252 and df["date"].dt.year().unique().to_list() == [2010]

    mats = result.asset_materializations_for_node("raw_bars")
    assert len(mats) == 2 * len(set(dynamic_key_of(instance, ["AAA", "BBB"]).values()))  # a key per symbol or group
    meta = {k: v.value for k, v in mats[0].metadata.items()}
    assert meta["rows"] == 4 * 252  # one step wrote all four partitions
    for field in ("bytes", "seconds", "peak_rss_mb", "dtypes", "path", "table_version", "rows_written",
                  "commit_attempts", "write_seconds"):
        assert field in meta
    assert meta["path"] == str(settings.data_dir / "raw_bars") and meta["table_version"] == store.version("raw_bars") == 0
    assert meta["rows_written"] == 4 * 252 and meta["commit_attempts"] == 1  # the run's ONE commit
    assert meta["dtypes"]["close"] == "Float32"

    first, last = (dynamic_key_of(instance, ["AAA", "BBB"])[s] for s in ("AAA", "BBB"))
    sidecar = json.loads((settings.stage_reports_dir("raw_bars") / "runs" / f"{first}_2010--{last}_2011.json").read_text())
    for field in ("git_sha", "cmd", "args", "timings", "rss_mb", "rows", "partition"):
        assert field in sidecar
    assert sidecar["partition"] == f"{first}|2010...{last}|2011" and sidecar["args"]["partitions"] == len(mats)


@asset(
    partitions_def=symbol_year_partitions,
    ins={"raw_bars": AssetIn(partition_mapping=year_halo_mapping(1))},
)
def halo_probe(raw_bars: pl.DataFrame) -> pl.DataFrame:
    """Test asset: records which years of raw_bars it was given."""
    years = raw_bars["date"].dt.year().unique().sort().to_list()
    sym = raw_bars["symbol"][0]
    return pl.DataFrame({"date": [dt.datetime(max(years), 6, 1)], "symbol": [sym], "years_seen": [str(years)]})


@asset(deps=[raw_bars], ins={"raw_bars": AssetIn()})
def whole_probe(raw_bars: pl.LazyFrame) -> pl.DataFrame:
    """Test asset (unpartitioned): counts the whole raw_bars dataset through a lazy scan."""
    assert isinstance(raw_bars, pl.LazyFrame)
    return raw_bars.group_by("symbol", "year").len().sort("symbol", "year").collect()


def test_halo_input_gives_previous_year_and_only_one_at_the_start(make_settings, instance):
    cfg = make_settings()
    run_assets([raw_bars], cfg, instance, ["AAA"], [2000, 2001, 2002])
    for year, seen in ((2002, "[2001, 2002]"), (2000, "[2000]")):
        res = materialize([halo_probe, raw_bars], selection=[halo_probe], **one_partition(instance, "AAA", year),
                          instance=instance, resources=build_resources(str(cfg)))
        assert res.success
        store = DeltaStore(read_settings(cfg).data_dir)
        assert store.read("halo_probe", [SymbolYear("AAA", year)])["years_seen"][0] == seen


def test_unpartitioned_downstream_reads_the_whole_dataset_lazily(make_settings, instance):
    cfg = make_settings()
    run_assets([raw_bars], cfg, instance, ["AAA", "BBB"], [2010, 2011])
    res = materialize([whole_probe, raw_bars], selection=[whole_probe], instance=instance, resources=build_resources(str(cfg)))
    assert res.success
    counts = DeltaStore(read_settings(cfg).data_dir).read("whole_probe")
    assert counts.height == 4 and counts["len"].to_list() == [252] * 4


GOOD = "Date,Open,High,Low,Close,Volume\n2010-01-04,10,11,9,10.5,1000\n2010-01-05,10.5,11.5,10,11,1200\n"


def test_failed_run_on_bad_input_keeps_what_was_stored(make_settings, instance, tmp_path):
    folder = tmp_path / "user_data"
    folder.mkdir()
    (folder / "aaa.csv").write_text(GOOD)
    cfg = make_settings(universe={"source": "folder", "folder": {"path": str(folder)}})
    assert run_assets([raw_bars], cfg, instance, ["AAA"], [2010]).success
    store = DeltaStore(read_settings(cfg).data_dir)
    before = (store.version("raw_bars"), store.read("raw_bars", [SymbolYear("AAA", 2010)]))

    (folder / "aaa.csv").write_text(GOOD.replace("10.5,11,1200", "10.5,-1,1200").replace(",10,11,1200", ",10,-1,1200"))
    result = run_assets([raw_bars], cfg, instance, ["AAA"], [2010], raise_on_error=False)
    assert not result.success
    failure = result.get_step_failure_events()[0].event_specific_data.error.to_string()
    assert "aaa.csv: column 'Close', row 2" in failure and "expected a finite price > 0" in failure
    assert store.version("raw_bars") == before[0] and store.read("raw_bars", [SymbolYear("AAA", 2010)]).equals(before[1])


def test_real_prices_from_packages(make_settings, instance):
    cfg = make_settings(universe={"source": "packaged", "packaged": {"symbols": ["GOOG"]}})
    assert run_assets([raw_bars], cfg, instance, ["GOOG"], [2004, 2005]).success
    store = DeltaStore(read_settings(cfg).data_dir)
    df = store.read("raw_bars", [SymbolYear("GOOG", 2004), SymbolYear("GOOG", 2005)])
    assert df["date"].min() == dt.datetime(2004, 8, 19)
    assert df.filter(pl.col("date") == dt.datetime(2004, 8, 19))["close"][0] == pl.Series([100.34], dtype=pl.Float32)[0]


def _close_only(dates_closes) -> str:
    """A close-only series: open = high = low = close, no volume column."""
    return "date,open,high,low,close\n" + "".join(f"{d},{c},{c},{c},{c}\n" for d, c in dates_closes)


def test_close_only_bars_with_a_sunday_a_split_and_a_2099_row_are_stored_with_three_warnings(make_settings, instance,
                                                                                             tmp_path):
    folder = tmp_path / "user_data"
    folder.mkdir()
    (folder / "AAA.csv").write_text(_close_only([("2016-01-04", 100), ("2016-01-05", 101), ("2016-01-10", 102),
                                                 ("2016-01-11", 51), ("2099-01-05", 52)]))
    cfg = make_settings(universe={"source": "folder", "folder": {"path": str(folder)}, "synthetic": {"end_date": None}},
                        years={"start": 2016, "end": 2016})
    result = run_assets([raw_bars], cfg, instance, ["AAA"], [2016])
    assert result.success
    checks = {e.check_name: (e.passed, e.severity.value, e.metadata.get("first") and e.metadata["first"].value)
              for e in result.get_asset_check_evaluations()}
    assert checks == {
        "ohlc_consistent": (True, "ERROR", []), "unique_dates": (True, "ERROR", []),
        "finite_positive_prices": (True, "ERROR", []),  # NaN volume is allowed
        "exchange_sessions": (False, "WARN", ["AAA 2016-01-10 (Sunday)"]),
        "plausible_moves": (False, "WARN", ["AAA 2016-01-11 close 102 -> 51"]),
        "inside_configured_years": (False, "WARN", ["AAA 2099-01-05"])}
    stored = DeltaStore(read_settings(cfg).data_dir).read("raw_bars", [SymbolYear("AAA", 2016)])
    assert stored["date"].dt.day().to_list() == [4, 5, 10, 11] and stored["volume"].is_nan().all()
