"""specialists: registry columns in [-1, 1], zero-copy panel, partitions equal the whole history."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from dagster import materialize

from kernels.panel import Panel
from assets.raw_bars import raw_bars
from domain.schema import specialists_schema
from domain.sources.synthetic import SyntheticMarket
from kernels.registry.specialists import PANEL_COLUMNS, SPECIALIST_COLUMNS, SPECIALISTS, run_specialists
from assets.specialists import specialists
from domain.specialists import build_specialists
from kernels import indicators as K
from pipeline.definitions import build_resources
from config.partitions import SymbolYear
from config.settings import read_settings
from resources.delta_store import DeltaStore
from tests.conftest import one_partition, run_assets

SYMS, YEARS = ["AAA", "BBB"], list(range(2000, 2006))


@pytest.fixture(scope="module")
def bars():
    return SyntheticMarket(5, dt.date(2000, 1, 1), dt.date(2005, 12, 31)).generate(SYMS)


def keys(years):
    return [SymbolYear(s, y) for s in SYMS for y in years]


def test_columns_follow_the_registry_and_scores_stay_in_range(bars):
    df = build_specialists(bars, keys(YEARS))
    specialists_schema().check(df)
    assert df.columns[2:] == SPECIALIST_COLUMNS == [f"spec_{s.name}_score" for s in SPECIALISTS]
    for col in SPECIALIST_COLUMNS:
        values = df[col].to_numpy()
        finite = values[~np.isnan(values)]
        assert finite.size and (np.abs(finite) <= 1.0).all(), col
    assert df["spec_seller_exhaustion_score"].is_in([0.0, 1.0]).all()


def test_a_year_computed_from_its_stored_history_equals_the_whole_history(bars):
    whole = build_specialists(bars, keys(YEARS))
    for y in (2001, 2004):
        part = build_specialists(bars.filter(pl.col("date").dt.year() <= y), keys([y]))
        assert part.equals(whole.filter(pl.col("date").dt.year() == y))


def test_specialists_read_panel_views_without_copies(bars, monkeypatch):
    one = bars.filter(pl.col("symbol") == "AAA")
    panel = Panel.from_columns({c: one[c].to_numpy() for c in PANEL_COLUMNS})
    seen = []
    original = Panel.col

    def spy(self, name):
        view = original(self, name)
        seen.append(np.shares_memory(view, self.mat))
        return view

    monkeypatch.setattr(Panel, "col", spy)
    scores = run_specialists(panel)
    assert seen and all(seen)
    rsi = K.rsi(one["close"].to_numpy(), 14)
    np.testing.assert_allclose(scores["spec_rsi_score"], (rsi - 50) / 50, rtol=1e-6, equal_nan=True)


def test_specialists_through_dagster(make_settings, instance):
    cfg = make_settings()
    assert run_assets([raw_bars], cfg, instance, SYMS, [2000, 2001, 2002]).success
    res = materialize([raw_bars, specialists], selection=[specialists], **one_partition(instance, "AAA", 2002), instance=instance,
                      resources=build_resources(str(cfg)))
    assert res.success and all(e.passed for e in res.get_asset_check_evaluations())
    stored = DeltaStore(read_settings(cfg).data_dir).read("specialists", [SymbolYear("AAA", 2002)])
    assert stored.height == 252 and not stored["spec_atc_score"].is_nan().any()


def test_scores_in_range_check_passes_on_the_first_year_whose_warm_up_is_nan(make_settings, instance):
    cfg = make_settings()
    assert run_assets([raw_bars], cfg, instance, SYMS, [2000]).success
    res = materialize([raw_bars, specialists], selection=[specialists], **one_partition(instance, "AAA", 2000), instance=instance,
                      resources=build_resources(str(cfg)))
    (check,) = res.get_asset_check_evaluations()
    stored = DeltaStore(read_settings(cfg).data_dir).read("specialists", [SymbolYear("AAA", 2000)])
    assert stored["spec_rsi_score"].is_nan().sum() > 0  # the warm-up
    assert check.passed and check.metadata["out_of_range"].value == {c: 0 for c in check.metadata["out_of_range"].value}
