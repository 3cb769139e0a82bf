"""`make demo`: the main job on the built-in data, then a short summary."""

from __future__ import annotations

import time

from config.settings import Settings


def _regime_line(settings: Settings) -> str:
    """The regime's class shares over every stored year."""
    import polars as pl

    tags_col = pl.scan_delta(str(settings.data_dir / "regime")).select("regime").collect()["regime"]
    shares = tags_col.drop_nulls().value_counts(normalize=True).sort("regime")
    text = ", ".join(f"{ {1: 'bull', -1: 'bear', 0: 'consolidate', 2: 'oscillate'}[r] } {p:.0%}" for r, p in shares.iter_rows())
    return f"regime            tagged: {text}"


def _combination(w: dict) -> str:
    """A grid-search row's entry filters and exits: `volatility>=0.05 ... target 0.4% stop -0.3%`."""
    return (f"volatility>={w['volatility']:g} ratio>={w['ratio']:g} adx28>={w['adx28']:g} adx14>={w['adx14']:g} "
            f"adx7>={w['adx7']:g} target {w['target']:g}% stop {w['stop_loss']:g}%")


def _headline(settings: Settings, years: list[int]) -> list[str]:
    """The results block of every build path (pipeline.results: the evaluation per horizon and
    the backtest over `years`, out of sample), then the grid-search winner chosen on the
    in-sample half of the days with its sum of kept trades' returns (percent, not a return on
    capital) on each half."""
    import json

    from pipeline.results import results_lines

    lines = results_lines(settings, years, stages=("evaluation", "backtest"))
    gs = settings.stage_reports_dir("grid_search") / "top10.json"
    if gs.exists():
        g = json.loads(gs.read_text())
        rows = [r for r in g.get("overfitting", {}).get("in_out_of_sample", []) if r["source"] == "in_sample_top"]
        if rows:
            w = rows[0]
            lines.append(f"grid search, in-sample winner (chosen on half the days): {_combination(w)} -> sum of kept "
                         f"trades' returns in sample {w['roi_in']:.2f}% ({w['trades_in']} trades), "
                         f"out of sample {w['roi_out']:.2f}% ({w['trades_out']} trades)")
    return lines


def _cv_summary(settings: Settings, year: int) -> str:
    """The best specialist by mean fold AUC (purged CV of `year`: the mean over the test folds
    of each fold's AUC) per horizon, from cv_report, over both
    calibrations (isotonic is non-decreasing: a specialist whose high scores mean "down", as
    the planted reversal's rsi, scores AUC 0.5 there and shows under Platt)."""
    import json

    parts, symbols = [], "n/a"
    for h in settings.labels.horizons:
        path = settings.stage_reports_dir("cv_report") / f"h{h}" / f"{year}.json"
        if not path.exists():
            continue
        report = json.loads(path.read_text())
        summary, symbols = report["summary"], report.get("symbols", symbols)
        scored = [(m["auc"], k, method) for k, v in summary.items() for method, m in v.items()
                  if isinstance(m, dict) and m.get("auc") is not None]
        if scored:
            auc, name, method = max(scored)
            parts.append(f"h{h} {name.removeprefix('spec_').removesuffix('_score')} {auc:.3f} ({method})")
    return f"purged CV {year}    {symbols} symbols, best specialist by mean fold AUC: " + ("; ".join(parts) if parts else "n/a")


def _meta_summary(settings: Settings, year: int) -> str:
    """The meta model's out-of-sample AUC and Brier per horizon for `year` alone: `AUC 2004`,
    never a bare "AUC" beside the headline's pooled one."""
    import json

    from domain.learning.coverage import coverage_note

    parts = []
    for h in settings.labels.horizons:
        path = settings.stage_reports_dir("meta_model") / f"h{h}_{year}.json"
        if path.exists():
            m = json.loads(path.read_text())
            auc, brier = (f"{m[k]:.3f}" if m.get(k) is not None else "n/a" for k in ("auc", "brier"))
            cov = (m.get("coverage") or {}).get("test")
            stands = coverage_note(cov) if cov else f"{m.get('symbols', 'n/a')} symbols"
            parts.append(f"h{h} AUC {year} {auc} Brier {brier} ({stands})")
    return f"meta model {year}   out of sample: " + ("; ".join(parts) if parts else "n/a")


def _atc_scan_line(settings: Settings) -> str:
    """The current ATC state of every demo symbol; the counts per state."""
    import polars as pl

    table = pl.read_delta(str(settings.data_dir / "atc_scan"))
    states = {1: "long", -1: "short", 0: "neutral"}
    counts = ", ".join(f"{states[int(s)]} {n}" for s, n in table["state"].value_counts().sort("state").iter_rows())
    return f"atc scan          {table.height} symbols on {table['date'].max():%Y-%m-%d}: {counts}"


def _paper_trade_demo(settings: Settings, instance) -> list[str]:
    """The live path on the demo universe (pipeline.live): the current year's bars in through
    raw_bars .. specialists, then inference and the paper orders of the latest day."""
    import json

    from pipeline.live import run_live

    summary, res = run_live(instance)
    orders = res.output_for_node("paper_trades")
    runs = [json.loads(x) for x in (settings.stage_reports_dir("paper_trades") / "orders.jsonl").read_text().splitlines()]
    day = next((r["now"][:10] for r in reversed(runs) if "orders" in r), "?")
    bars = summary.get("raw_bars")
    built = ", ".join(f"{name} {s.partitions}" for name, s in summary.items())
    return [f"live              {bars.rows if bars else 0} bars of the current year in ({built} partitions), "
            f"latest bar {day}",
            f"paper trading     {orders.height} order(s) for {day}; log {settings.stage_reports_dir('paper_trades') / 'orders.jsonl'}"]


def _grid_search_demo(settings: Settings, defs, instance) -> str:
    """Generate grid-search inputs if the configured ones are absent, run the job, return the
    line of its full-sample winner (chosen on all trades: no holdout) with its sum of kept
    trades' returns."""
    import json

    from domain.gridsearch.synthetic import generate_grid_data
    from pipeline.run_report import console_run_config

    gs = settings.grid_search
    market, log = settings.resolve(gs.market_data), settings.resolve(gs.trade_log)
    if not market.exists() and not log.exists() and market.parent == log.parent:
        print(f"[demo] generating grid-search inputs in {market.parent} (3 days, the trade log's formats)")
        generate_grid_data(market.parent, days=3)
    job = defs.resolve_job_def("grid_search_job")
    job.execute_in_process(instance=instance, run_config=console_run_config())
    report = json.loads((settings.stage_reports_dir("grid_search") / "top10.json").read_text())
    w = report["top"][0]
    return (f"grid search       {report['combinations']:,} combinations x {report['trades']:,} trades in "
            f"{report['seconds']:.2f} s; full-sample winner (chosen on all trades, no holdout): {_combination(w)} "
            f"-> sum of kept trades' returns {w['roi']:.2f}% over {w['trades']} trades")


DEMO_YEARLY_YEARS = 5  # the yearly stages (meta models, predictions, backtest, evaluation): the last 5 years


def run_demo(settings: Settings) -> int:
    from pipeline.definitions import defs
    from pipeline.instance import ensure_dagster_home, get_instance
    from pipeline.progress import RunProgress
    from pipeline.run_report import failed_checks_line
    from pipeline.runs import run_graph
    from pipeline.symbols import source_symbols, sync_symbols

    home = ensure_dagster_home()
    instance = get_instance()
    t0 = time.perf_counter()
    added = sync_symbols(instance, settings)
    symbols = settings.demo.symbols or source_symbols(settings)
    years = settings.demo_years()
    yearly = years[-DEMO_YEARLY_YEARS:]
    print(f"[demo] source={settings.universe.source} symbols={len(symbols)} years={min(years)}..{max(years)} "
          f"({len(added)} newly registered); yearly stages {min(yearly)}..{max(yearly)}")
    with RunProgress(instance) as progress:
        summary = run_graph(instance, symbols, years, yearly_years=yearly, tags={"tradelab/origin": "demo", **progress.tags},
                            progress=progress)
        progress.stage("live paper trading")
        live_lines = _paper_trade_demo(settings, instance)
        progress.stage("grid search")
        grid_line = _grid_search_demo(settings, defs, instance)
    seconds = time.perf_counter() - t0
    print()
    print(f"{'asset':<24}{'partitions':>12}{'rows':>12}{'step s':>10}")
    for name, s in summary.items():
        print(f"{name:<24}{s.partitions:>12}{s.rows:>12}{s.seconds:>10.2f}")
    print()
    print(_regime_line(settings))
    print(_cv_summary(settings, max(years)))
    print(_meta_summary(settings, max(years)))
    print(_atc_scan_line(settings))
    for line in live_lines:
        print(line)
    print(grid_line)
    print()
    print("headline")
    for line in _headline(settings, yearly):
        print(f"  {line}")
    print(f"  {failed_checks_line()}")
    print()
    print(f"total wall time   {seconds:.1f} s")
    print(f"data              {settings.data_dir}/<asset>/ (a Delta table per asset, partitioned by year)")
    print(f"reports           {settings.reports_dir}/<stage>/*.json")
    print(f"dagster instance  {home} (SQLite)")
    print("open the UI       make ui   ->  http://127.0.0.1:3000")
    return 0
