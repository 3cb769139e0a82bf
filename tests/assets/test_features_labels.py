"""features and labels: halo-exact partitions, the registry's columns, labels without leaks."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from dagster import materialize

from kernels.registry.features import FEATURE_NAMES, FEATURES, MAX_WARMUP
from assets.features import features
from domain.features import HALO_YEARS, build_features
from assets.labels import labels
from domain.labels import build_labels
from assets.raw_bars import raw_bars
from domain.schema import RAW_BARS, features_schema, labels_schema
from domain.sources.synthetic import SyntheticMarket
from pipeline.definitions import build_resources
from config.partitions import SymbolYear
from config.settings import read_settings
from resources.delta_store import DeltaStore
from tests.conftest import one_partition, run_assets

SYMS = ["AAA", "BBB"]
YEARS = list(range(2000, 2008))


@pytest.fixture(scope="module")
def bars():
    return SyntheticMarket(5, dt.date(2000, 1, 1), dt.date(2007, 12, 31)).generate(SYMS)


def keys(years, syms=SYMS):
    return [SymbolYear(s, y) for s in syms for y in years]


def test_columns_follow_the_registry_in_order(bars):
    df, nan_after_warmup, _ = build_features(bars, keys([2003]))
    assert df.columns == ["date", "symbol", *FEATURE_NAMES]
    features_schema("float32").check(df)
    assert all(v == 0 for v in nan_after_warmup.values())


def test_float64_precision_option(bars):
    df, _, _ = build_features(bars, keys([2003]), precision="float64")
    assert df.schema["f_ema20"] == pl.Float64


def test_partitions_with_the_halo_equal_the_whole_history_for_every_feature(bars):
    """The acceptance test of the halo: per-year partitions (each computed from years
    Y-k..Y) concatenated equal one whole-history computation, feature by feature."""
    whole = build_features(bars, keys(YEARS[HALO_YEARS:]))[0].sort("symbol", "date")
    parts = [
        build_features(bars.filter(pl.col("date").dt.year().is_between(y - HALO_YEARS, y)), keys([y]))[0]
        for y in YEARS[HALO_YEARS:]
    ]
    stitched = pl.concat(parts).sort("symbol", "date")
    assert stitched.select("symbol", "date").equals(whole.select("symbol", "date"))
    report = {}
    for name in FEATURE_NAMES:
        a, b = stitched[name].to_numpy().astype(np.float64), whole[name].to_numpy().astype(np.float64)
        report[name] = float(np.nanmax(np.abs(a - b)))
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=name)
    print("max abs difference per feature:", report)
    assert max(report.values()) < 1e-4


def test_first_year_has_warmup_nans_only_at_the_start(bars):
    df, nan_after_warmup, _ = build_features(bars.filter(pl.col("date").dt.year() == 2000), keys([2000]))
    first = df.filter(pl.col("symbol") == "AAA")
    for f in FEATURES:
        col = first[f.name].to_numpy()
        assert np.isnan(col[: f.warmup]).all() and np.isfinite(col[f.warmup :]).all(), f.name
    assert MAX_WARMUP == 57  # TEMA(20): 3 * (20 - 1)


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_pool_over_symbol_chunks_equals_one_process(bars, executor):
    one, _, _ = build_features(bars, keys(YEARS), workers=1)
    pooled, _, stats = build_features(bars, keys(YEARS), workers=2, chunk_rows=1000, executor=executor)
    # threads: the core pack in one pass, each kernel call splitting the symbols over 2 threads;
    # processes: symbol chunks of about chunk_rows rows
    assert stats.chunks == (1 if executor == "thread" else 2) and stats.workers == 2
    assert pooled.equals(one)


def _backends_called(monkeypatch) -> list[str]:
    """The backends the feature stage hands its chunks to (a spy on map_symbol_chunks)."""
    import domain.features as stage

    seen, real = [], stage.map_symbol_chunks
    monkeypatch.setattr(stage, "map_symbol_chunks", lambda *a, **kw: seen.append(kw["backend"]) or real(*a, **kw))
    return seen


@pytest.mark.layout_free
@pytest.mark.parametrize("backend", ["torch", "cuda"])
def test_gpu_backends_give_the_cpu_features(bars, backend, monkeypatch):
    pytest.importorskip("kernels.indicators.torch") if backend == "torch" else None
    from kernels.backends import routing

    monkeypatch.setitem(routing.BREAK_EVEN, "indicators", routing.BreakEven("symbol-bars", 1, "test"))
    called = _backends_called(monkeypatch)
    # half a year (~130 bars, past the longest warm-up of 57): the CUDA simulator runs every
    # bar of every thread in Python, so each bar more costs the suite time, not coverage
    small = bars.filter(pl.col("date") <= dt.date(2000, 6, 30))
    cpu, _, _ = build_features(small, keys([2000]))
    gpu, _, _ = build_features(small, keys([2000]), backend=backend)
    assert called == [backend]  # the GPU backend ran (the cpu call took the one-pass path)
    for name in FEATURE_NAMES:
        np.testing.assert_allclose(gpu[name].to_numpy(), cpu[name].to_numpy(), rtol=1e-6, atol=1e-6, err_msg=name)


def test_a_gpu_backend_below_its_measured_break_even_runs_the_cpu_one_pass(bars, monkeypatch):
    from kernels.backends import routing

    called = _backends_called(monkeypatch)
    small = bars.filter(pl.col("date").dt.year() <= 2000)
    assert routing.min_work("indicators") is None  # the H100 lost to the CPU (kernels/backends/routing.py)
    cpu, _, _ = build_features(small, keys([2000]))
    routed, _, stats = build_features(small, keys([2000]), backend="cuda")
    assert called == [] and stats.chunks == 1 and routed.equals(cpu)


# ---------------------------------------------------------------------------------- labels

def toy_bars(closes: dict[str, list[float]], start=dt.date(2010, 12, 27)) -> pl.DataFrame:
    frames = []
    for sym, cl in closes.items():
        dates = [dt.datetime.combine(start + dt.timedelta(days=i), dt.time()) for i in range(len(cl))]
        frames.append(pl.DataFrame({"date": dates, "symbol": sym, "open": cl, "high": cl, "low": cl, "close": cl, "volume": 1.0}))
    return RAW_BARS.cast(pl.concat(frames))


def test_labels_match_forward_returns_on_a_toy_set():
    bars = toy_bars({"AAA": [10, 11, 12, 9, 15, 15]})
    out = build_labels(bars, [SymbolYear("AAA", 2010), SymbolYear("AAA", 2011)], {1: 0.0, 3: 0.1})
    labels_schema([1, 3]).check(out)
    np.testing.assert_allclose(out["label_ret_h1"].to_numpy()[:5], [0.1, 1 / 11, -0.25, 15 / 9 - 1, 0.0], rtol=1e-6)
    np.testing.assert_allclose(out["label_ret_h3"].to_numpy()[:3], [-0.1, 15 / 11 - 1, 0.25], rtol=1e-6)
    assert out["label_bin_h1"].to_list() == [1, 1, 0, 1, 0, None]
    assert out["label_bin_h3"].to_list() == [0, 1, 1, None, None, None]


def test_unknown_future_is_null_never_zero():
    bars = toy_bars({"AAA": [10, 9, 8, 7]})
    out = build_labels(bars, [SymbolYear("AAA", 2010)], {3: 0.0})
    assert out["label_bin_h3"].to_list() == [0, None, None, None]
    assert out["label_ret_h3"].null_count() == 3


def test_labels_never_cross_symbols():
    bars = toy_bars({"AAA": [10, 20], "BBB": [100, 50]})
    out = build_labels(bars, [SymbolYear("AAA", 2010), SymbolYear("BBB", 2010)], {1: 0.0})
    assert out.filter(pl.col("symbol") == "AAA")["label_ret_h1"].to_list()[1] is None
    assert out.filter(pl.col("symbol") == "BBB")["label_ret_h1"].to_list() == [-0.5, None]


def test_year_end_labels_use_the_next_years_rows():
    bars = toy_bars({"AAA": [10, 10, 10, 10, 10, 20, 30, 40]})  # Dec 27 .. Jan 3
    out = build_labels(bars, [SymbolYear("AAA", 2010)], {3: 0.0})
    assert out["date"].dt.year().unique().to_list() == [2010]
    assert out["label_ret_h3"].to_list()[-1] == pytest.approx(3.0)  # Dec 31 -> Jan 3 (+3 rows)


# ----------------------------------------------------------------------- through Dagster

def test_features_and_labels_through_dagster_with_checks(make_settings, instance):
    cfg = make_settings(years={"start": 2000, "end": 2006})  # 2006 is the last year: its future is unknown
    assert run_assets([raw_bars], cfg, instance, SYMS, [2003, 2004, 2005, 2006]).success
    res = materialize(
        [raw_bars, features, labels], selection=[features, labels], **one_partition(instance, "AAA", 2006),
        instance=instance, resources=build_resources(str(cfg)),
    )
    assert res.success
    checks = {e.check_name: e for e in res.get_asset_check_evaluations()}
    assert set(checks) == {"dtypes", "no_nan_after_warmup", "halo_spot_check", "unknown_future_is_null"}
    assert all(e.passed for e in checks.values())
    store = DeltaStore(read_settings(cfg).data_dir)
    feats = store.read("features", [SymbolYear("AAA", 2006)])
    assert feats.height == 251 and feats["date"].dt.year().unique().to_list() == [2006]
    labs = store.read("labels", [SymbolYear("AAA", 2006)])
    assert labs["label_bin_h14"].null_count() == 14  # the last 14 rows of the last year


def test_labels_of_a_past_year_need_the_next_year(make_settings, instance):
    cfg = make_settings()
    run_assets([raw_bars], cfg, instance, ["AAA"], [2005, 2006])
    res = materialize([raw_bars, labels], selection=[labels], **one_partition(instance, "AAA", 2005),
                      instance=instance, resources=build_resources(str(cfg)))
    labs = DeltaStore(read_settings(cfg).data_dir).read("labels", [SymbolYear("AAA", 2005)])
    assert res.success and labs["label_bin_h14"].null_count() == 0


def test_halo_spot_check_compares_against_all_stored_history(make_settings, instance):
    cfg = make_settings()
    run_assets([raw_bars], cfg, instance, ["AAA"], [2000, 2001, 2002, 2003, 2004])
    res = materialize([raw_bars, features], selection=[features], **one_partition(instance, "AAA", 2004),
                      instance=instance, resources=build_resources(str(cfg)))
    spot = next(e for e in res.get_asset_check_evaluations() if e.check_name == "halo_spot_check")
    meta = {k: v.value for k, v in spot.metadata.items()}
    assert spot.passed and meta["partition"] == "AAA|2004" and meta["history_years"] == 4
    assert meta["max_abs_diff"] < 1e-4
