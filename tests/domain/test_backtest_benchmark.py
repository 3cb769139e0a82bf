"""domain.backtest against its benchmark: the headline leaves out the days in cash before the
first prediction (a year without a meta model) and after the last, every report carries the
benchmark (equal-weight portfolio of the universe, or `backtest.benchmark: SYMBOL`) and
says in words whether the book beat it.

The market: AAA, BBB, CCC over six days, 2002-12-30 .. 2003-01-07; 2002 has no model (NaN
predictions), so the headline starts on 2003-01-02. Closes rise by 1% steps in 2003:

    day          AAA     BBB     CCC     equal-weight benchmark return
    2002-12-30   100     200     400     0 (bought)
    2002-12-31   100     200     400     0
    2003-01-02   100     200     400     0 (the headline's benchmark is bought at this close)
    2003-01-03   101     200     400     1/300
    2003-01-06   101     202     400     1/300
    2003-01-07   102.01  202     404     2/300
"""

from __future__ import annotations

import json
import math
from datetime import datetime

import numpy as np
import polars as pl
import pytest

from config.settings import BacktestSettings, SettingsError
from domain.backtest import build_backtest, headline_span, in_cash_reason, verdict

DAYS = [datetime(2002, 12, 30), datetime(2002, 12, 31), datetime(2003, 1, 2), datetime(2003, 1, 3),
        datetime(2003, 1, 6), datetime(2003, 1, 7)]
CLOSES = {"AAA": [100, 100, 100, 101, 101, 102.01], "BBB": [200, 200, 200, 200, 202, 202],
          "CCC": [400, 400, 400, 400, 400, 404]}
BENCH_GROWTH = (301 / 300) ** 2 * (302 / 300)  # the equal-weight book over the four 2003 days
NAME = "equal weight of 3 symbols, rebalanced daily"
FREE = {"fee_bps": 0.0, "slippage_bps": 0.0, "max_weight": 1.0}  # costless, one name may take the book


def _bars(extra: list[dict] = ()) -> pl.LazyFrame:
    rows = [{"symbol": s, "date": d, "close": float(c)} for s, cs in CLOSES.items() for d, c in zip(DAYS, cs)]
    return pl.DataFrame(rows + list(extra), schema={"symbol": pl.String, "date": pl.Datetime("us"),
                                                    "close": pl.Float64}).lazy()


def _predictions(p: dict[str, list[float]]) -> pl.LazyFrame:
    """p_h7 per symbol and day; 2002's two days are NaN (no meta model of 2002)."""
    rows = [{"symbol": s, "date": d, "p_h7": (math.nan if d.year == 2002 else p[s][i - 2])}
            for s in CLOSES for i, d in enumerate(DAYS)]
    return pl.DataFrame(rows, schema={"symbol": pl.String, "date": pl.Datetime("us"), "p_h7": pl.Float32}).lazy()


def _build(tmp_path, p, **settings):
    return build_backtest(_predictions(p), _bars(), [2002, 2003], BacktestSettings(**settings), tmp_path)


FLAT = {s: [0.4] * 4 for s in CLOSES}  # below the 0.5 threshold: the book never buys
AAA_ONLY = {"AAA": [0.9] * 4, "BBB": [0.4] * 4, "CCC": [0.4] * 4}


def test_buy_and_hold_beats_a_book_that_stays_in_cash_and_the_report_says_it_lost(tmp_path):
    report = _build(tmp_path, FLAT)
    o = json.loads((tmp_path / "overall.json").read_text())
    assert o == report.overall
    bench_cagr = BENCH_GROWTH ** 63 - 1  # 4 days: growth ** (252 / 4) - 1
    assert o["cagr"] == 0.0 and o["sharpe"] is None and o["n_days"] == 4
    assert o["benchmark"]["name"] == NAME and o["benchmark"]["symbol"] is None and o["benchmark"]["symbols"] == 3
    assert o["benchmark"]["cagr"] == pytest.approx(bench_cagr)
    assert o["benchmark"]["total_return"] == pytest.approx(BENCH_GROWTH - 1)
    # benchmark returns [0, 1, 1, 2] / 300: mean 1/300, std sqrt(2/3)/300, Sharpe sqrt(1.5 * 252)
    assert o["benchmark"]["sharpe"] == pytest.approx(math.sqrt(378))
    assert o["excess_return"] == pytest.approx(-bench_cagr)
    assert o["beta"] == 0.0 and o["information_ratio"] == pytest.approx(-math.sqrt(378))
    assert o["tracking_error"] == pytest.approx(math.sqrt(2 / 3) / 300 * math.sqrt(252))
    assert o["verdict"] == f"lost to the benchmark ({NAME}) by {bench_cagr:.1%}/yr"
    assert o["verdict"].startswith("lost to the benchmark (equal weight of 3 symbols, rebalanced daily) by ")


def test_a_book_in_the_rising_name_beat_the_benchmark_by_the_cagr_difference(tmp_path):
    o = _build(tmp_path, AAA_ONLY, **FREE).overall
    # all in AAA from the close of 2003-01-02: +1% on 01-03 and on 01-07
    assert o["total_return"] == pytest.approx(0.0201) and o["cagr"] == pytest.approx(1.0201 ** 63 - 1)
    excess = (1.0201 ** 63 - 1) - (BENCH_GROWTH ** 63 - 1)
    assert o["excess_return"] == pytest.approx(excess) and o["beta"] == pytest.approx(1.5)
    assert o["information_ratio"] == pytest.approx(math.sqrt(37.8))
    assert o["verdict"] == f"beat the benchmark ({NAME}) by {excess:.1%}/yr"


def test_days_before_the_first_prediction_are_left_out_of_the_headline_and_said_why(tmp_path):
    report = _build(tmp_path, FLAT)
    o = report.overall
    assert (o["from"], o["to"], o["n_days"]) == ("2003-01-02", "2003-01-07", 4)
    assert o["in_cash_days"] == 2 and o["in_cash_reason"] == "no prediction (no meta model) before 2003-01-02"
    assert o["no_prediction_days_in_span"] == 0
    assert report.table.height == 6  # the stored daily rows keep every requested day
    # each year keeps all its days and has its own benchmark figures
    y2002, y2003 = report.per_year[2002], report.per_year[2003]
    assert (y2002["n_days"], y2002["in_cash_days"], y2003["n_days"], y2003["in_cash_days"]) == (2, 2, 4, 0)
    assert y2002["benchmark"]["total_return"] == 0.0 and y2002["verdict"] == f"matched the benchmark ({NAME}) within 0.05%/yr"
    assert y2002["beta"] is None and y2002["information_ratio"] is None  # a flat benchmark: no beta, no IR
    assert y2003["excess_return"] == pytest.approx(o["excess_return"])
    assert json.loads((tmp_path / "year_2002.json").read_text())["beta"] is None  # JSON null, never NaN
    assert (tmp_path / "equity.png").read_bytes()[:4] == b"\x89PNG"


def test_days_after_the_last_prediction_but_the_selling_day_are_left_out_too(tmp_path):
    p = {s: [0.9, 0.9, math.nan, math.nan] for s in CLOSES}  # predictions on 01-02 and 01-03 only
    o = _build(tmp_path, p, **FREE).overall
    assert (o["from"], o["to"], o["n_days"], o["in_cash_days"]) == ("2003-01-02", "2003-01-06", 3, 3)
    assert o["in_cash_reason"] == "no prediction (no meta model) before 2003-01-02 or after 2003-01-03"


def test_headline_span_and_reason_of_a_gap_inside_and_of_no_prediction_at_all():
    nan = np.nan
    probs = np.array([[nan, nan], [0.6, nan], [nan, nan], [nan, 0.2], [nan, nan]], np.float32)
    assert headline_span(probs) == (1, 5)  # the gap day 2 stays inside the span
    assert headline_span(np.full((3, 2), nan, np.float32)) == (0, 0)
    assert headline_span(np.empty((0, 0), np.float32)) == (0, 0)
    days = np.array(DAYS[:3], dtype="datetime64[us]")
    assert in_cash_reason(days, 0, 0) == "no prediction (no meta model) on any of the 3 days"
    assert in_cash_reason(days, 0, 3) is None


def test_a_book_without_any_prediction_has_an_empty_headline_and_no_verdict(tmp_path):
    log = type("Log", (), {"warnings": [], "warning": lambda self, m: self.warnings.append(m)})()
    nan4 = {s: [math.nan] * 4 for s in CLOSES}
    report = build_backtest(_predictions(nan4), _bars(), [2003], BacktestSettings(), tmp_path, log=log)
    o = report.overall
    assert (o["from"], o["to"], o["n_days"], o["in_cash_days"], o["cagr"]) == (None, None, 0, 6, None)
    assert o["in_cash_reason"] == "no prediction (no meta model) on any of the 6 days"
    assert o["verdict"] == f"no verdict against the benchmark ({NAME}): no day to compare"
    assert report.equity_png is None and log.warnings == [
        "backtest: the stored predictions hold no p_h7 on any day (no meta model): nothing to trade"]


def test_backtest_benchmark_symbol_picks_that_symbols_buy_and_hold(tmp_path):
    o = _build(tmp_path, FLAT, benchmark="CCC").overall
    b = o["benchmark"]
    assert (b["name"], b["symbol"], b["symbols"]) == ("CCC buy-and-hold", "CCC", 1)
    assert b["total_return"] == pytest.approx(0.01) and b["cagr"] == pytest.approx(1.01 ** 63 - 1)
    assert o["verdict"] == f"lost to the benchmark (CCC buy-and-hold) by {1.01 ** 63 - 1:.1%}/yr"
    assert o["settings"]["benchmark"] == "CCC"


def test_an_unknown_benchmark_symbol_is_one_line_naming_the_setting_and_the_symbols_there(tmp_path):
    with pytest.raises(SettingsError) as err:
        _build(tmp_path, FLAT, benchmark="SP500")
    assert str(err.value) == "backtest.benchmark: 'SP500' is not a symbol of raw_bars; the symbols there: AAA, BBB, CCC"
    assert not (tmp_path / "overall.json").exists()  # it fails before the book runs


def test_a_benchmark_symbol_without_bars_in_the_backtests_days_says_so(tmp_path):
    old = [{"symbol": "OLD", "date": datetime(1999, 1, 4), "close": 1.0}]
    with pytest.raises(SettingsError, match=r"^backtest.benchmark: 'OLD' has no bar in the backtest's days; "
                                            r"the symbols with bars then: AAA, BBB, CCC$"):
        build_backtest(_predictions(FLAT), _bars(old), [2003], BacktestSettings(benchmark="OLD"), tmp_path)


def test_verdict_words_round_to_a_tenth_of_a_percent():
    assert verdict(0.021, "X") == "beat the benchmark (X) by 2.1%/yr"
    assert verdict(-0.0564, "X") == "lost to the benchmark (X) by 5.6%/yr"
    assert verdict(0.0004, "X") == verdict(-0.0004, "X") == "matched the benchmark (X) within 0.05%/yr"
    assert verdict(None, "X") == "no verdict against the benchmark (X): no day to compare"


def test_an_empty_benchmark_setting_is_refused():
    with pytest.raises(ValueError, match="benchmark"):
        BacktestSettings(benchmark="")


def test_a_named_benchmark_over_no_stored_prediction_is_no_error_and_no_verdict(tmp_path):
    empty = _predictions(FLAT).filter(False)
    report = build_backtest(empty, _bars(), [2003], BacktestSettings(benchmark="CCC"), tmp_path)
    assert report.overall["n_days"] == 0 and report.overall["benchmark"]["name"] == "CCC buy-and-hold"
    assert report.overall["verdict"] == "no verdict against the benchmark (CCC buy-and-hold): no day to compare"


def test_every_report_carries_the_stats_table_worked_out_by_hand(tmp_path):
    # all in AAA from the close of 2003-01-02 at 10 bps a unit of turnover: net -0.001 (the buy),
    # +1%, 0, +1%; equity 0.999, 1.00899, 1.00899, 1.0190799
    report = _build(tmp_path, AAA_ONLY, fee_bps=10.0, slippage_bps=0.0, max_weight=1.0)
    o = json.loads((tmp_path / "overall.json").read_text())
    approx = {"rel": 1e-5}  # the daily rows are float32
    assert (o["from"], o["to"], o["n_days"]) == ("2003-01-02", "2003-01-07", 4)
    assert o["total_return"] == pytest.approx(0.0190799, **approx)
    assert o["cagr"] == pytest.approx(1.0190799 ** 63 - 1, **approx)
    assert o["max_drawdown"] == pytest.approx(-0.001, **approx)
    assert o["max_drawdown_days"] == 2 and o["drawdown_recovered"] is True  # day 0 (capital) -> back above on day 2
    assert o["calmar"] == pytest.approx((1.0190799 ** 63 - 1) / 0.001, **approx)
    assert o["exposure"] == pytest.approx(1.0, **approx) and o["trades"] == 1
    assert o["win_rate"] == pytest.approx(2 / 3)  # 2 of the 3 days that moved
    assert o["total_costs"] == pytest.approx(0.001, **approx) and o["gross_profit"] == pytest.approx(0.02, **approx)
    assert o["cost_share"] == pytest.approx(0.05, **approx)  # 0.001 / 0.02
    assert o["avg_daily_turnover"] == pytest.approx(0.25, **approx)  # one unit bought over four days
    y2002 = json.loads((tmp_path / "year_2002.json").read_text())
    assert (y2002["from"], y2002["to"], y2002["n_days"], y2002["trades"]) == ("2002-12-30", "2002-12-31", 2, 0)
    assert y2002["exposure"] == 0.0 and y2002["cost_share"] is None and y2002["win_rate"] is None
    assert report.table["trades"].to_list() == [0, 0, 1, 0, 0, 0]
    from domain.figures import backtest_figures

    figures = backtest_figures(report.headline())
    assert figures["trades"] == 1 and figures["max_drawdown_days"] == 2  # counts stay ints
    assert figures["cost_share"] == pytest.approx(0.05, rel=1e-3) and figures["exposure"] == pytest.approx(1.0)
    assert {"sortino", "calmar", "ann_vol", "win_rate", "total_costs"} <= set(figures)
