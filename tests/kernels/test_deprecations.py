"""The renamed interfaces keep their old names for a deprecation period (docs/settings.md,
"Deprecations"): each old name works, gives the new name's result, and says so with one
DeprecationWarning naming the new name, once per process (kernels.deprecations.WARNED)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kernels import deprecations
from kernels.strategy import Individual, backtest_population
from kernels.strategy.params import BacktestParams


@pytest.fixture(autouse=True)
def fresh_process_memory():
    """As in a new process: no old name announced yet."""
    deprecations.WARNED.clear()
    yield
    deprecations.WARNED.clear()


def _bars(n: int = 200):
    close = 100 + np.cumsum(np.random.default_rng(1).normal(0, 1, n))
    return close, close + 1, close - 1, close, np.ones(n)


def _deprecations(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


def test_the_seeds_fee_bp_and_slippage_bp_are_fee_bps_and_slippage_bps_with_one_warning_each():
    with pytest.warns(DeprecationWarning) as caught:
        old = BacktestParams(fee_bp=1.5, slippage_bp=2.5)
        again = BacktestParams(fee_bp=3.0)  # the second use in the process says nothing
    assert old == BacktestParams(fee_bps=1.5, slippage_bps=2.5) and again.fee_bps == 3.0
    assert _deprecations(caught) == ["fee_bp is deprecated since 2026-11-21; use fee_bps",
                                     "slippage_bp is deprecated since 2026-11-21; use slippage_bps"]


def test_reading_fee_bp_as_the_seeds_engine_does_gives_fee_bps():
    bp = BacktestParams(fee_bps=4.0, slippage_bps=6.0)
    with pytest.warns(DeprecationWarning, match=r"^fee_bp is deprecated since 2026-11-21; use fee_bps$"):
        assert (bp.fee_bp, bp.slippage_bp) == (4.0, 6.0)


def test_a_flat_individual_with_the_old_field_names_is_the_same_individual():
    with pytest.warns(DeprecationWarning):
        old = Individual.from_dict({"fee_bp": 1.0, "slippage_bp": 0.0, "max_hold": 8})
    assert old == Individual.from_dict({"fee_bps": 1.0, "slippage_bps": 0.0, "max_hold": 8})


def test_an_old_and_a_new_field_name_together_are_refused_naming_both():
    with pytest.raises(TypeError, match=r"^BacktestParams: fee_bp and fee_bps are both given; expected fee_bps alone "
                                        r"\(fee_bp is its old name\)$"):
        BacktestParams(fee_bp=1.0, fee_bps=2.0)
    with pytest.raises(TypeError, match="Individual.from_dict: slippage_bp and slippage_bps are both given"):
        Individual.from_dict({"slippage_bp": 1.0, "slippage_bps": 1.0})


def test_backtest_population_engine_is_backend_and_the_results_engine_is_its_backend_each_warned_once():
    bars = _bars()
    with pytest.warns(DeprecationWarning) as caught:
        old = backtest_population(*bars, [Individual()], engine="cpu")
        backtest_population(*bars, [Individual()], engine="cpu")
        assert (old.engine, old.engine) == ("cpu", "cpu")
    new = backtest_population(*bars, [Individual()], backend="cpu")
    assert old.backend == "cpu" and np.array_equal(old.pnl, new.pnl) and np.array_equal(old.offsets, new.offsets)
    assert _deprecations(caught) == [
        "backtest_population(engine=) is deprecated since 2026-11-24; use backtest_population(backend=)",
        "PopulationResult.engine is deprecated since 2026-11-24; use PopulationResult.backend"]


def test_the_warning_points_at_the_callers_line():
    with pytest.warns(DeprecationWarning) as caught:
        BacktestParams(fee_bp=1.0)
    assert caught[0].filename == __file__


def test_the_new_names_say_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = backtest_population(*_bars(), [Individual(backtest=BacktestParams(fee_bps=1.0))], backend="cpu")
        assert result.backend == "cpu"


def test_every_old_name_has_a_new_name_and_a_date():
    assert all(new and len(since) == 10 for new, since in deprecations.RENAMED.values())
    assert deprecations.deprecation_text("grid-search --backend") == \
        "grid-search --backend is deprecated since 2026-11-24; use grid-search --device"
