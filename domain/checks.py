"""The computations behind the asset checks: a stage's output in, plain values out.

(polars orders NaN above every number: a range test on a column that may hold NaN says
`is_not_nan() &` first.)

Every function returns `(passed, metadata)`: `passed` is False on output that breaks the
rule the check guards, `metadata` a small dict of plain values (counts, the first offenders)
that the asset module turns into an AssetCheckResult. No Dagster here: the tests call these
on deliberately bad frames (tests/assets/test_asset_checks.py).

One function per check, named after it:

    raw_bars         ohlc_consistent, unique_dates, finite_positive_prices, and three warnings:
                     exchange_sessions, plausible_moves, inside_configured_years
    features         no_nan_after_warmup
    atc_scan         every_symbol_scanned, states_and_values_in_range
    cv_report        fold_metrics_valid
    lstm_model       scores_in_unit_interval
    backtest         equity_finite_positive, weights_within_caps
    paper_trades     gross_within_cap, orders_for_known_symbols
    market_data      sorted_by_ticker_time
    trade_log        indices_inside_market_data
    grid_search      top_sorted_unique
    strategy_search  front_is_pareto
    meta_model       out_of_sample_metrics_valid
    predictions      probabilities_in_unit_interval
    evaluation       metrics_in_range
    experiment_summary  report_self_contained
"""

from __future__ import annotations

import numpy as np
import polars as pl

FIRST = 10  # offenders named in the metadata
TOL = 1e-6  # float32 outputs compared with float64 caps


def _first(values) -> list:
    return [v if isinstance(v, (int, float, str, bool)) or v is None else str(v) for v in list(values)[:FIRST]]


# ---------------------------------------------------------------- raw_bars

def ohlc_consistent(bars: pl.DataFrame) -> tuple[bool, dict]:
    """low <= open, close <= high on every bar (and low <= high)."""
    bad = bars.filter(~((pl.col("low") <= pl.col("open")) & (pl.col("open") <= pl.col("high"))
                        & (pl.col("low") <= pl.col("close")) & (pl.col("close") <= pl.col("high"))).fill_null(False))
    return bad.height == 0, {"bars": bars.height, "inconsistent": bad.height,
                             "first": _first(f"{r['symbol']} {r['date']}" for r in bad.head(FIRST).iter_rows(named=True))}


def unique_dates(bars: pl.DataFrame) -> tuple[bool, dict]:
    """No (symbol, date) twice."""
    # per symbol, not over a (symbol, date) struct: the same rows, ~3x faster on millions of bars
    dup = bars.filter(pl.col("date").is_duplicated().over("symbol"))
    return dup.height == 0, {"duplicated_rows": dup.height,
                             "first": _first(f"{r['symbol']} {r['date']}" for r in dup.head(FIRST).iter_rows(named=True))}


def finite_positive_prices(bars: pl.DataFrame) -> tuple[bool, dict]:
    """open, high, low, close finite and > 0; volume, when a bar has one, finite and >= 0
    (a missing volume, NaN, is allowed: close-only and price-only series have none)."""
    prices = [c for c in ("open", "high", "low", "close") if c in bars.columns]
    cond = pl.all_horizontal([pl.col(c).is_finite() & (pl.col(c) > 0) for c in prices])
    if "volume" in bars.columns:
        vol = pl.col("volume")
        cond = cond & (vol.is_nan() | (vol.is_finite() & (vol >= 0)))
    bad = bars.filter(~cond.fill_null(False))
    return bad.height == 0, {"bad_rows": bad.height,
                             "first": _first(f"{r['symbol']} {r['date']}" for r in bad.head(FIRST).iter_rows(named=True))}


def _day(value) -> str:
    return f"{value:%Y-%m-%d}"


def exchange_sessions(bars: pl.DataFrame, calendar: str) -> tuple[bool, dict]:
    """Every date is a session of the exchange `calendar` (no weekend, no holiday)."""
    from domain.sources.dates import describe, non_sessions

    if bars.is_empty():
        return True, {"calendar": calendar, "non_sessions": 0}
    bad = bars.filter(non_sessions(bars["date"], calendar))
    return bad.height == 0, {"calendar": calendar, "non_sessions": bad.height,
                             "first": _first(f"{r['symbol']} {describe(r['date'].date())}"
                                             for r in bad.head(FIRST).iter_rows(named=True))}


def plausible_moves(bars: pl.DataFrame, max_move: float) -> tuple[bool, dict]:
    """No close differs from the symbol's previous close by more than a factor `max_move`
    either way (an unadjusted split, a 10x spike, a misplaced decimal point)."""
    ordered = (bars.select("symbol", "date", "close").sort("symbol", "date")
               .with_columns(pl.col("close").shift(1).over("symbol").alias("_prev")))
    ratio = pl.col("close").cast(pl.Float64) / pl.col("_prev").cast(pl.Float64)
    bad = ordered.filter(((ratio > max_move) | (ratio < 1.0 / max_move)).fill_null(False))
    return bad.height == 0, {"max_move": max_move, "jumps": bad.height,
                             "first": _first(f"{r['symbol']} {_day(r['date'])} close {r['_prev']:g} -> {r['close']:g}"
                                             for r in bad.head(FIRST).iter_rows(named=True))}


def inside_configured_years(outside: pl.DataFrame, first: int, last: int) -> tuple[bool, dict]:
    """No row of the source lies outside the configured years `first..last` (such rows are
    never stored: a 2099 typo would otherwise vanish without a word). `outside`: the
    source's rows outside those years (symbol, date)."""
    return outside.height == 0, {"years": f"{first}..{last}", "rows_outside": outside.height,
                                 "first": _first(f"{r['symbol']} {_day(r['date'])}"
                                                 for r in outside.head(FIRST).iter_rows(named=True))}


# ---------------------------------------------------------------- features

def no_nan_after_warmup(nan_counts: dict[str, int]) -> tuple[bool, dict]:
    """Every feature finite after its warm-up: no column of `nan_counts` (domain.features: per
    column, the NaN or null values at or after its warm-up) above 0. Metadata
    `nan_rows_by_column`: the columns that have any, most first (ties by name), or "none"; the
    warning line of a failed check names the worst of them (pipeline.run_report)."""
    bad = sorted(((c, int(n)) for c, n in nan_counts.items() if n), key=lambda cn: (-cn[1], cn[0]))
    return not bad, {"nan_rows_by_column": dict(bad) if bad else "none"}


# ---------------------------------------------------------------- atc_scan

def every_symbol_scanned(scan: pl.DataFrame, expected: list[str] | set[str]) -> tuple[bool, dict]:
    """Every expected symbol (the registered ones and those with bars) has exactly one row."""
    got = scan["symbol"].to_list() if "symbol" in scan.columns else []
    missing = sorted(set(expected) - set(got))
    dup = sorted({s for s in got if got.count(s) > 1}) if len(got) != len(set(got)) else []
    return not missing and not dup, {"expected": len(set(expected)), "scanned": len(got), "missing": _first(missing),
                                     "n_missing": len(missing), "duplicated": _first(dup)}


def states_and_values_in_range(scan: pl.DataFrame) -> tuple[bool, dict]:
    """state in {-1, 0, 1}; atc and every family signal in [-1, 1] (NaN only with state 0)."""
    if scan.is_empty():
        return True, {"rows": 0}
    values = [c for c in scan.columns if c == "atc" or c.startswith("atc_")]
    bad_state = scan.filter(~pl.col("state").is_in([-1, 0, 1]).fill_null(False))
    out = {c: int(scan.select((pl.col(c).is_infinite() | (pl.col(c).is_not_nan() & (pl.col(c).abs() > 1 + TOL))).sum()).item()) for c in values}
    nan_with_state = int(scan.select((pl.col("atc").is_nan() & (pl.col("state") != 0)).sum()).item())
    nan = int(scan["atc"].is_nan().sum())
    passed = bad_state.height == 0 and not any(out.values()) and nan_with_state == 0
    return passed, {"bad_states": bad_state.height, "out_of_range": {k: v for k, v in out.items() if v} or "none",
                    "nan_atc": nan, "nan_with_a_state": nan_with_state}


# ---------------------------------------------------------------- cv_report

def fold_metrics_valid(table: pl.DataFrame, n_splits: int) -> tuple[bool, dict]:
    """Every fold's AUC and Brier in [0, 1] and its log loss finite and >= 0 where reported
    (a test fold with one class has no AUC: counted, not failed); each (year, horizon,
    specialist, method) has `n_splits` folds. An empty table passes with 0 folds reported."""
    if table.is_empty() or "fold" not in table.columns:
        return True, {"folds": 0, "note": "no fold: too few labelled rows"}
    auc, brier, ll = pl.col("auc"), pl.col("brier"), pl.col("log_loss")
    bad_auc = table.filter(auc.is_not_null() & ~(auc.is_finite() & (auc >= 0) & (auc <= 1)).fill_null(True))
    bad_brier = table.filter(brier.is_not_null() & ~(brier.is_finite() & (brier >= 0) & (brier <= 1)).fill_null(True))
    bad_ll = table.filter(ll.is_not_null() & ~(ll.is_finite() & (ll >= 0)).fill_null(True))
    keys = [c for c in ("year", "horizon", "specialist", "method") if c in table.columns]
    counts = table.group_by(keys).agg(pl.col("fold").n_unique().alias("n"))
    short = counts.filter(pl.col("n") != n_splits)
    passed = bad_auc.height == 0 and bad_brier.height == 0 and bad_ll.height == 0 and short.height == 0
    return passed, {"folds": table.height, "auc_missing": int(table["auc"].is_null().sum()),
                    "auc_out_of_range": bad_auc.height, "brier_out_of_range": bad_brier.height,
                    "log_loss_invalid": bad_ll.height, "groups_without_n_splits_folds": short.height,
                    "n_splits": n_splits}


# ---------------------------------------------------------------- lstm_model

def scores_in_unit_interval(scores: pl.DataFrame, column: str = "spec_lstm_score") -> tuple[bool, dict]:
    """Scores finite in [0, 1]; NaN only where a symbol has no full sequence yet: a leading
    run of each symbol's rows (by date), never after a scored row."""
    if scores.is_empty() or column not in scores.columns:
        return True, {"rows": 0}
    s = pl.col(column)
    out = scores.filter(s.is_infinite() | (s.is_not_nan() & ((s < 0) | (s > 1))))
    ordered = scores.sort("symbol", "date").with_columns(
        s.is_not_nan().fill_null(False).cast(pl.Int32).cum_sum().over("symbol").alias("_scored_before"))
    late = ordered.filter((s.is_nan() | s.is_null()) & (pl.col("_scored_before") > 0))
    return out.height == 0 and late.height == 0, {
        "rows": scores.height, "out_of_range": out.height, "nan": int(scores[column].is_nan().sum()),
        "nan_after_a_score": late.height,
        "first": _first(f"{r['symbol']} {r['date']}" for r in late.head(FIRST).iter_rows(named=True))}


# ---------------------------------------------------------------- backtest

def equity_finite_positive(daily: pl.DataFrame) -> tuple[bool, dict]:
    """Equity finite and > 0 on every day; net returns finite and > -1."""
    if daily.is_empty():
        return True, {"days": 0}
    bad = daily.filter(~(pl.col("equity").is_finite() & (pl.col("equity") > 0)
                         & pl.col("net_return").is_finite() & (pl.col("net_return") > -1)).fill_null(False))
    return bad.height == 0, {"days": daily.height, "bad_days": bad.height,
                             "min_equity": float(daily["equity"].min()),
                             "first": _first(str(d)[:10] for d in bad["date"].head(FIRST))}


def weights_within_caps(daily: pl.DataFrame, max_weight: float, max_gross: float) -> tuple[bool, dict]:
    """Each day: the largest |weight| among the symbols traded that day <= max_weight, and
    the gross exposure (all held weights, frozen ones included) <= max_gross."""
    if daily.is_empty():
        return True, {"days": 0}
    over_w = daily.filter((pl.col("max_abs_weight") > max_weight + TOL).fill_null(True) | pl.col("max_abs_weight").is_nan())
    over_g = daily.filter((pl.col("gross_exposure") > max_gross + TOL).fill_null(True) | pl.col("gross_exposure").is_nan())
    return over_w.height == 0 and over_g.height == 0, {
        "days": daily.height, "max_weight_seen": float(daily["max_abs_weight"].max()), "cap_weight": max_weight,
        "max_gross_seen": float(daily["gross_exposure"].max()), "cap_gross": max_gross,
        "days_over_weight_cap": over_w.height, "days_over_gross_cap": over_g.height}


# ---------------------------------------------------------------- paper_trades

def gross_within_cap(book: pl.DataFrame, max_gross: float) -> tuple[bool, dict]:
    """The paper book after the day's orders: sum |weight| <= max_gross, every weight finite."""
    w = book["weight"].cast(pl.Float64) if book.height else pl.Series([], dtype=pl.Float64)
    finite = bool(w.is_finite().all()) if len(w) else True
    gross = float(w.abs().sum()) if len(w) else 0.0
    return finite and gross <= max_gross + TOL, {"gross_exposure": gross, "cap": max_gross, "positions": len(w),
                                                  "non_finite_weights": int((~w.is_finite()).sum()) if len(w) else 0}


def orders_for_known_symbols(orders: pl.DataFrame, symbols: list[str] | set[str]) -> tuple[bool, dict]:
    """Every order's symbol is a registered symbol."""
    unknown = sorted(set(orders["symbol"].to_list()) - set(symbols)) if orders.height else []
    return not unknown, {"orders": orders.height, "unknown_symbols": _first(unknown)}


# ---------------------------------------------------------------- grid search inputs and result

def sorted_by_ticker_time(market: pl.DataFrame) -> tuple[bool, dict]:
    """Rows sorted by ticker code then datetime, strictly within a ticker (no duplicate second):
    the per-ticker offsets and searchsorted indices rely on it."""
    if market.height < 2:
        return True, {"rows": market.height}
    code, t = pl.col("ticker_code"), pl.col("datetime")
    step = market.select(
        (code.diff() < 0).sum().alias("code_back"),
        ((code.diff() == 0) & (t.diff() <= pl.duration())).sum().alias("time_back"))
    back, same = int(step["code_back"].item()), int(step["time_back"].item())
    return back == 0 and same == 0, {"rows": market.height, "ticker_steps_back": back, "time_not_increasing": same}


def indices_inside_market_data(trades: pl.DataFrame, market_rows: int) -> tuple[bool, dict]:
    """0 <= MarketDataStartIndex <= MarketDataEndIndex < rows of market_data, for every trade."""
    s, e = pl.col("MarketDataStartIndex"), pl.col("MarketDataEndIndex")
    bad = trades.filter(~((s >= 0) & (s <= e) & (e < market_rows)).fill_null(False))
    return bad.height == 0, {"trades": trades.height, "market_rows": market_rows, "bad_trades": bad.height,
                             "first_ids": _first(bad["trade_id"].head(FIRST)) if "trade_id" in bad.columns else []}


def top_sorted_unique(top: pl.DataFrame, params: tuple[str, ...] | list[str] | None = None) -> tuple[bool, dict]:
    """The top-k by ROI descending (rank 1..k in that order), each parameter combination once
    (`params`: the grid's parameter columns, kernels.gridsearch.grid.PARAMS by default)."""
    if params is None:
        from kernels.gridsearch.grid import PARAMS as params
    if top.is_empty():
        return True, {"rows": 0}
    roi = top["roi"].to_numpy().astype(np.float64)
    descending = bool(np.all(np.diff(roi) <= TOL)) and bool(np.isfinite(roi).all())
    ranks_ok = "rank" not in top.columns or top["rank"].to_list() == list(range(1, top.height + 1))
    keys = [p for p in params if p in top.columns]
    dup = top.height - top.select(keys).n_unique() if keys else 0  # repeats beyond the first of each
    return descending and ranks_ok and dup == 0, {"rows": top.height, "roi_descending": descending,
                                                  "ranks_in_order": ranks_ok, "duplicated_combinations": dup}


# ---------------------------------------------------------------- strategy_search

def front_is_pareto(front: pl.DataFrame, trials: pl.DataFrame, objectives: tuple[str, ...],
                    min_trades: int) -> tuple[bool, dict]:
    """The front: non-empty when any trial is feasible; every member feasible (n_trades >=
    min_trades), with finite objectives, and dominated by no feasible trial."""
    feasible = trials.filter(pl.col("n_trades") >= min_trades)
    meta = {"trials": trials.height, "feasible": feasible.height, "front": front.height, "min_trades": min_trades}
    if front.is_empty():
        return feasible.is_empty(), {**meta, "note": "no feasible trial" if feasible.is_empty() else "empty front"}
    vals = front.select(objectives).to_numpy().astype(np.float64)
    infeasible = int((front["n_trades"] < min_trades).sum())
    non_finite = int((~np.isfinite(vals)).any(axis=1).sum())
    pool = feasible.select(objectives).to_numpy().astype(np.float64)
    dominated = 0
    for v in vals:
        if pool.size and bool((np.all(pool >= v, axis=1) & np.any(pool > v, axis=1)).any()):
            dominated += 1
    passed = infeasible == 0 and non_finite == 0 and dominated == 0
    return passed, {**meta, "infeasible_on_front": infeasible, "non_finite": non_finite, "dominated_on_front": dominated}



# ---------------------------------------------------------------- meta_model, predictions, evaluation

def _outside(table: pl.DataFrame, columns: dict[str, tuple[float, float]]) -> dict[str, int]:
    """Per column present: the count of finite values outside [lo, hi] (null and NaN pass:
    a metric that cannot be computed, e.g. AUC with one class, is reported as missing)."""
    return {c: int(table.select((pl.col(c).is_not_null() & pl.col(c).is_not_nan()
                                 & ~pl.col(c).is_between(lo, hi)).sum()).item())
            for c, (lo, hi) in columns.items() if c in table.columns}


def out_of_sample_metrics_valid(table: pl.DataFrame) -> tuple[bool, dict]:
    """meta_model: per (year, horizon) trained, AUC and Brier in [0, 1], log loss >= 0, IC in
    [-1, 1], and out-of-sample rows n > 0."""
    bad = _outside(table, {"auc": (0, 1), "brier": (0, 1), "log_loss": (0, float("inf")), "ic": (-1, 1)})
    empty = int((table["n"] <= 0).sum()) if "n" in table.columns else 0
    return not any(bad.values()) and empty == 0, {"models": table.height, "out_of_range": bad, "empty_test_years": empty}


def probabilities_in_unit_interval(table: pl.DataFrame) -> tuple[bool, dict]:
    """predictions: every p_h{H} in [0, 1] or NaN (no model or inputs missing), and one row
    per (symbol, date)."""
    cols = [c for c in table.columns if c.startswith("p_h")]
    bad = _outside(table, {c: (0, 1) for c in cols})
    dup = int(table.select(pl.struct("symbol", "date").is_duplicated().sum()).item()) if table.height else 0
    nan = {c: round(float(table[c].is_nan().mean() or 0.0), 4) for c in cols} if table.height else {}
    return not any(bad.values()) and dup == 0, {"out_of_range": bad, "duplicated_rows": dup, "nan_share": nan}


def metrics_in_range(table: pl.DataFrame) -> tuple[bool, dict]:
    """evaluation: AUC, PR-AUC and Brier in [0, 1], IC and rank IC in [-1, 1], log loss >= 0."""
    bad = _outside(table, {"auc": (0, 1), "pr_auc": (0, 1), "brier": (0, 1), "ic": (-1, 1), "rank_ic": (-1, 1),
                           "log_loss": (0, float("inf"))})
    return not any(bad.values()), {"rows": table.height, "out_of_range": bad}


def report_self_contained(text: str) -> tuple[bool, dict]:
    """The experiment's HTML report is one file: every image a base64 PNG `data:` URI that
    decodes to a PNG, no script, stylesheet link, frame, `url(...)`, `href` or other address."""
    import base64
    import binascii
    import re

    images = re.findall(r'<img [^>]*src="([^"]*)"', text)
    bad_images = []
    for i, src in enumerate(images):
        head, _, data = src.partition(",")
        try:
            ok = head == "data:image/png;base64" and base64.b64decode(data, validate=True).startswith(b"\x89PNG")
        except (binascii.Error, ValueError):
            ok = False
        if not ok:
            bad_images.append(i)
    outside = re.sub(r'src="data:image/png;base64,[A-Za-z0-9+/=]*"', 'src=""', text)
    references = sorted(set(re.findall(r"<script|<link|<iframe|url\(|https?:|//|href=", outside, re.I)))
    return not bad_images and not references, {"images": len(images), "bad_images": bad_images[:10],
                                               "references": references[:10]}
