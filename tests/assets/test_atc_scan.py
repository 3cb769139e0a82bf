"""The ATC scanner: the same values as one ATC call per symbol, routing, fallback, asset."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from dagster import materialize

from domain import atc_scan as scanner
from assets.atc_scan import atc_scan
from domain.atc_scan import route, scan_universe
from assets.raw_bars import raw_bars
from domain.sources.synthetic import SyntheticMarket
from kernels import atc
from kernels.backends import routing
from pipeline.definitions import build_resources
from tests.conftest import run_assets


@pytest.fixture(scope="module")
def bars():
    frame = SyntheticMarket(3, dt.date(2015, 1, 1), dt.date(2017, 12, 31)).generate([f"S{i}" for i in range(5)])
    # one symbol listed later: a shorter history is scanned in its own group
    return frame.filter((pl.col("symbol") != "S4") | (pl.col("date") >= dt.datetime(2016, 6, 1)))


def test_scan_equals_one_atc_call_per_symbol_on_its_last_bars(bars):
    table, stats = scan_universe(bars, n_bars=300, chunk_symbols=2)
    assert table["symbol"].to_list() == [f"S{i}" for i in range(5)] and stats.chunks == 3
    for sym in ("S0", "S4"):
        close = bars.filter(pl.col("symbol") == sym).sort("date")["close"].to_numpy()[-300:]
        expected = atc.average_signal(close.astype(np.float64), dtype=np.float64)[-1]
        row = table.filter(pl.col("symbol") == sym).row(0, named=True)
        assert row["atc"] == pytest.approx(expected, abs=1e-6)
        assert row["state"] == atc.classify(np.array([expected]))[0]
        assert row["date"] == bars.filter(pl.col("symbol") == sym)["date"].max()


def test_the_scan_uses_lam_decay_and_cutout_as_given(bars):
    params = {"lam": 0.05, "decay": 0.1, "cutout": 20}
    table, _ = scan_universe(bars, n_bars=300, **params)
    close = bars.filter(pl.col("symbol") == "S1").sort("date")["close"].to_numpy()[-300:].astype(np.float64)
    expected = atc.average_signal(close, dtype=np.float64, **params)[-1]
    assert expected != pytest.approx(atc.average_signal(close, dtype=np.float64)[-1], abs=1e-9)  # the settings matter
    assert table.filter(pl.col("symbol") == "S1")["atc"][0] == pytest.approx(expected, abs=1e-6)


def test_scan_equals_the_float64_computation_bit_for_bit_in_any_row_order(bars):
    # the scan passes float32 closes and asks for the last bar only: the same bits as the
    # full float64 computation, whether or not the frame comes sorted
    table, _ = scan_universe(bars, n_bars=300)
    shuffled, _ = scan_universe(bars.sample(fraction=1.0, shuffle=True, seed=3), n_bars=300)
    assert shuffled.equals(table)
    for sym in ("S0", "S4"):
        close = bars.filter(pl.col("symbol") == sym).sort("date")["close"].to_numpy()[-300:].astype(np.float64)
        fams, final = atc.compute(close, dtype=np.float64)
        row = table.filter(pl.col("symbol") == sym).row(0, named=True)
        assert row["atc"] == np.float32(final[-1]) and row["bars"] == len(close)
        assert all(row[f"atc_{f.lower()}"] == np.float32(fams[f][-1]) for f in atc.FAMILIES)


def test_repeated_dates_are_sorted_out_like_any_unsorted_frame(bars):
    # a frame sorted by symbol whose dates do not strictly increase within a symbol is sorted first
    table, _ = scan_universe(bars, n_bars=300)
    swapped = pl.concat([bars.slice(1, 1), bars.slice(0, 1), bars.slice(2)])
    assert scan_universe(swapped, n_bars=300)[0].equals(table)
    # frames read from a store come in chunks: the order check reads each chunk in place
    # (and read the closes in place: the border at row 700 falls inside S0's last 300 bars)
    assert 700 - 300 < bars.filter(pl.col("symbol") == "S0").height < 700 + 300
    chunked = pl.concat([bars.slice(0, 100), bars.slice(100, 600), bars.slice(700, 0), bars.slice(700)], rechunk=False)
    assert chunked.n_chunks() >= 3 and scan_universe(chunked, n_bars=300)[0].equals(table)
    repeated = pl.concat([bars.slice(0, 100), bars.slice(99)], rechunk=False)  # row 99 twice, across chunks
    assert scan_universe(repeated, n_bars=300)[0].height == table.height
    assert not scanner._offsets_in_order(repeated)[1] and scanner._offsets_in_order(chunked)[1]


def test_chunk_size_does_not_change_the_result(bars):
    one, _ = scan_universe(bars, n_bars=250, chunk_symbols=100)
    many, _ = scan_universe(bars, n_bars=250, chunk_symbols=1)
    assert one.equals(many)


def test_cost_model_sends_chunks_from_the_measured_break_even_to_a_gpu():
    assert routing.min_work("atc") == 1_024_000  # an H100 against 16 cores (kernels/backends/routing.py)
    assert route(10, 2000, "cuda") == "cpu"
    assert route(511, 2000, "cuda") == "cpu"
    assert route(512, 2000, "cuda") == "cuda"  # the default chunk


def test_cost_model_sends_only_chunks_past_a_break_even_to_a_gpu(monkeypatch):
    monkeypatch.setitem(routing.BREAK_EVEN, "atc", routing.BreakEven("symbol-bars", 1_000_000, "test"))
    assert route(1_000_000 // 2000 - 1, 2000, "cuda") == "cpu"
    assert route(1_000_000 // 2000, 2000, "cuda") == "cuda"
    assert route(1_000_000 // 2000, 2000, "torch") == "torch"
    assert route(1_000_000 // 2000, 2000, "cpu") == "cpu"


def test_a_failing_gpu_call_falls_back_to_the_cpu(bars, monkeypatch):
    real = atc.compute

    def flaky(closes, backend="cpu", **kw):
        if backend != "cpu":
            raise RuntimeError("device lost")
        return real(closes, backend=backend, **kw)

    monkeypatch.setattr(scanner.atc, "compute", flaky)
    monkeypatch.setitem(routing.BREAK_EVEN, "atc", routing.BreakEven("symbol-bars", 1, "test"))
    table, stats = scan_universe(bars, n_bars=200, device_backend="cuda")
    assert stats.fallbacks == stats.chunks > 0 and table.height == 5


def test_ma_cache_reports_hits_on_a_repeated_scan(bars):
    atc.ma_cache.clear()
    scan_universe(bars, n_bars=200, cache=True)
    _, stats = scan_universe(bars, n_bars=200, cache=True)
    assert stats.cache["hits"] > 0 and stats.cache["misses"] > 0


def test_atc_scan_asset_reads_the_whole_store(make_settings, instance):
    cfg = make_settings()
    assert run_assets([raw_bars], cfg, instance, ["AAA", "BBB", "CCC"], [2010, 2011, 2012]).success
    res = materialize([raw_bars, atc_scan], selection=[atc_scan], instance=instance, resources=build_resources(str(cfg)))
    assert res.success
    assert {e.check_name: e.passed for e in res.get_asset_check_evaluations()} == {
        "every_symbol_scanned": True, "states_and_values_in_range": True}
    meta = res.asset_materializations_for_node("atc_scan")[0].metadata
    assert "scan" in meta and meta["rows"].value == 3


def test_store_scan_reads_a_chunk_of_symbols_at_a_time_and_equals_the_whole_frame_scan(bars, monkeypatch):
    whole, _ = scan_universe(bars, n_bars=300)
    seen = []
    real = scanner.scan_universe

    def spy(frame, **kw):
        seen.append(sorted(frame["symbol"].unique().to_list()))
        return real(frame, **kw)

    monkeypatch.setattr(scanner, "scan_universe", spy)
    table, stats, symbols = scanner.scan_store(bars.sample(fraction=1.0, shuffle=True, seed=5).lazy(), n_bars=300,
                                               read_symbols=2)
    assert seen == [["S0", "S1"], ["S2", "S3"], ["S4"]]  # never more than 2 symbols in memory
    assert symbols == ["S0", "S1", "S2", "S3", "S4"]
    assert table.equals(whole)  # bit for bit, same row order
    assert stats.chunks == 3


def test_store_scan_of_given_symbols_skips_the_others_and_the_ones_without_rows(bars):
    whole, _ = scan_universe(bars, n_bars=300)
    table, _, symbols = scanner.scan_store(bars.lazy(), symbols=["S3", "ZZZ", "S1"], n_bars=300)
    assert symbols == ["S1", "S3"]
    assert table.equals(whole.filter(pl.col("symbol").is_in(["S1", "S3"])))


def test_store_scan_of_an_empty_store_is_an_empty_table():
    empty = pl.DataFrame(schema={"symbol": pl.String, "date": pl.Datetime("ns"), "close": pl.Float32}).lazy()
    table, stats, symbols = scanner.scan_store(empty)
    assert table.height == 0 and symbols == [] and stats.chunks == 0


def test_atc_scan_asset_reads_the_store_a_chunk_of_symbols_at_a_time(make_settings, instance, monkeypatch):
    cfg = make_settings()
    monkeypatch.setattr(scanner, "READ_SYMBOLS", 2)
    assert run_assets([raw_bars], cfg, instance, ["AAA", "BBB", "CCC"], [2010, 2011]).success
    seen = []
    real = scanner.scan_universe

    def spy(frame, **kw):
        seen.append(frame["symbol"].n_unique())
        return real(frame, **kw)

    monkeypatch.setattr(scanner, "scan_universe", spy)
    res = materialize([raw_bars, atc_scan], selection=[atc_scan], instance=instance, resources=build_resources(str(cfg)))
    assert res.success and seen == [2, 1]
    assert res.asset_materializations_for_node("atc_scan")[0].metadata["rows"].value == 3
