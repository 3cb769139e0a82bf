"""The results block: what every build path ends with (`make demo`, build-all, train-meta,
backtest, evaluate, and a `dagster asset materialize` of the yearly stages through
`results_sensor`).

`results_lines(settings, years, stages)` reads the stored reports of `stages` (meta_model,
evaluation, backtest) through the settings' report folder and returns one line per figure
group, numbers rounded to what they mean (AUC 3 decimals, IC and ICIR 3 significant digits,
Sharpe 2 decimals, CAGR and drawdown in 0.1%). Every AUC says which one it is: "mean yearly
AUC" (the mean over years of each year's AUC, from the meta model reports), "pooled AUC" (one
AUC over every out-of-sample row of the years, from the evaluation), "AUC 2018" (one year):

    meta h7           mean yearly AUC 0.529 (0.512..0.548 over 5 years), mean yearly Brier 0.249
    meta pooled AUC   out of sample 2014-2018, 23 symbols: h7 0.531  h14 0.522
    h7                pooled AUC 0.531, PR-AUC 0.552, Brier 0.248, rank IC 0.0312, ICIR 0.235, long-short Sharpe 1.23
    backtest          p_h7 2014-01-02..2018-12-31, 23 symbols: Sharpe 0.84, CAGR 6.2%, max drawdown -12.3%, turnover 45x/yr
    backtest stats    1258 days, total return 35.1%, volatility 7.4%, Sortino 1.21, Calmar 0.50, drawdown 212 days
                      (recovered), exposure 0.93, 1840 trades, win rate 52.3% (days), costs 4.1% (18.7% of gross profit)
    benchmark         Sharpe 0.75, CAGR 13.8%; excess return -7.6%/yr, information ratio -0.62, tracking error 9.8%,
                      beta 0.62: the strategy lost to the benchmark (equal weight of 23 symbols, rebalanced daily) by 7.6%/yr
    figures           reports/eval/{reliability,ic,long_short,deciles}_h*_overall.png, reports/backtest/equity.png

A stage without a report says so on its line (`n/a`): nothing raises. `results_block`
prefixes a title with the symbol and year counts; `run_results` is the block of one
finished run (the stages it materialized) with its failed asset checks as warning lines.
"""

from __future__ import annotations

import json
from pathlib import Path

from config.settings import Settings
from domain.learning.coverage import coverage_note, left_out_reason, merge

STAGES = ("meta_model", "evaluation", "backtest")
class Unreadable(str):
    """Why a report could not be read: one line naming the file and what was expected."""


def _read(path: Path) -> dict | Unreadable | None:
    """The report at `path`; None when there is none; `Unreadable` when it is no JSON object
    (a truncated or hand-edited file): the block says so on the stage's line, never raises."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        return Unreadable(f"{path}: cannot be read ({getattr(err, 'strerror', None) or err}); expected a JSON report")
    try:
        data = json.loads(text)
    except ValueError as err:
        return Unreadable(f"{path}: line {err.lineno} column {err.colno}: {err.msg}; expected a JSON report")
    if not isinstance(data, dict):
        return Unreadable(f"{path}: a JSON {type(data).__name__}; expected a JSON object (a report)")
    return data


def _unreadable(stage: str, problem: Unreadable, command: str) -> list[str]:
    return [f"{stage:<18}n/a: {problem}; `{command}` rewrites it"]


def _num(value) -> float | None:
    """A figure as a float; None when it is missing or no number (null, a string, true)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _fmt(value, spec: str) -> str:
    v = _num(value)
    return "n/a" if v is None else format(v, spec)


def _span(years: list[int]) -> str:
    if not years:
        return "n/a"
    return f"{min(years)}-{max(years)}" if max(years) > min(years) else str(min(years))


def planted_line(settings: Settings, report: dict, years: list[int]) -> str | None:
    """The planted signal (universe.synthetic.planted) and what the chain recovered of it: the
    out-of-sample pooled AUC and IC (Spearman of p with the realised return, all rows) of the
    evaluation over `years`, at the planted horizon (or the nearest labelled one)."""
    if settings.universe.source != "synthetic":
        return None
    planted = settings.universe.synthetic.planted
    h = min(settings.labels.horizons, key=lambda x: (abs(x - planted.horizon), x))
    m = report.get(f"h{h}") or {}
    what = f"{planted.kind} over {planted.horizon} days" if planted.strength > 0 else "none planted: chance expected"
    return (f"planted signal strength {planted.strength:g}: recovered pooled AUC {_fmt(m.get('auc'), '.3f')}, "
            f"IC {_fmt(m.get('ic'), '.3f')} ({what}; h{h}, out of sample {_span(years)})")


def _meta_lines(settings: Settings, years: list[int]) -> list[str]:
    """Per horizon, the meta models' out-of-sample "mean yearly AUC" (the mean over `years` of
    each year's AUC, and their range) and mean yearly Brier."""
    lines = []
    for h in settings.meta.horizons or settings.labels.horizons:
        read = [_read(settings.stage_reports_dir("meta_model") / f"h{h}_{y}.json") for y in years]
        bad = [r for r in read if isinstance(r, Unreadable)]
        if bad:
            lines += _unreadable(f"meta h{h}", bad[0], "train-meta")
            continue
        reports = [r for r in read if r]
        aucs = [v for r in reports if (v := _num(r.get("auc"))) is not None]
        briers = [v for r in reports if (v := _num(r.get("brier"))) is not None]
        if not reports:
            lines.append(f"{'meta h' + str(h):<18}n/a (no meta model report of {_span(years)})")
            continue
        auc = f"{sum(aucs) / len(aucs):.3f}" if aucs else "n/a"
        spread = f" ({min(aucs):.3f}..{max(aucs):.3f} over {len(aucs)} years)" if len(aucs) > 1 else ""
        brier = f"{sum(briers) / len(briers):.3f}" if briers else "n/a"
        cov = merge([(r.get("coverage") or {}).get("test") for r in reports])
        stands = f" ({coverage_note(cov)})" if cov else ""
        last = reports[-1]
        inputs = (f"; inputs {'+'.join(last['inputs'])} ({last.get('input_columns', '?')} columns, missing "
                  f"{last.get('missing', '?')})" if isinstance(last.get("inputs"), list) else "")
        lines.append(f"{'meta h' + str(h):<18}mean yearly AUC {auc}{spread}, mean yearly Brier {brier}{stands}{inputs}")
    return lines


def _meta_coverage(settings: Settings, years: list[int], h: int) -> dict | None:
    """The meta models' out-of-sample coverage of horizon h over `years` (their reports),
    merged: why the rows without a prediction have none."""
    reports = [r for y in years if isinstance(r := _read(settings.stage_reports_dir("meta_model") / f"h{h}_{y}.json"), dict)]
    return merge([(r.get("coverage") or {}).get("test") for r in reports])


def _evaluation_coverage(m: dict, meta: dict | None) -> str:
    """` (U of A symbols, u of a rows; ...)` of one horizon of the evaluation: the symbols and
    rows with a prediction and a realised label against the labelled ones, and why the rest
    have no prediction (the meta models' coverage); '' for a report without coverage."""
    cov = m.get("coverage")
    if not isinstance(cov, dict) or not isinstance(cov.get("rows_available"), int):
        return ""
    text = (f"{cov['symbols_used']} of {cov['symbols_available']} symbols, "
            f"{cov['rows_used']:,} of {cov['rows_available']:,} rows")
    none = (cov.get("left_out") or {}).get("no prediction") or 0
    if none:
        # the meta models' own reason only where their rule left rows out (drop); under fill and
        # native a row without a prediction is a warm-up or a year without a model
        dropped = left_out_reason(meta) if meta and meta.get("missing") == "drop" else ""
        reason = dropped or "a warm-up (no input value), or no meta model of their year"
        text += f"; {none:,} without a prediction: {reason}"
    return f" ({text})"


def _evaluation_lines(settings: Settings, years: list[int]) -> list[str]:
    report = _read(settings.stage_reports_dir("evaluation") / "overall.json")
    if report is None:
        return [f"{'evaluation':<18}n/a (no report: run evaluate)"]
    if isinstance(report, Unreadable):
        return _unreadable("evaluation", report, "evaluate")
    years = report.get("years") or years
    lines = [line] if (line := planted_line(settings, report, years)) else []
    hs = settings.labels.horizons
    aucs = "  ".join(f"h{h} {_fmt((report.get(f'h{h}') or {}).get('auc'), '.3f')}" for h in hs)
    symbols = report.get("symbols", "n/a")
    if isinstance(report.get("symbols_available"), int) and report["symbols_available"] != symbols:
        symbols = f"{symbols} of {report['symbols_available']}"
    lines.append(f"meta pooled AUC   out of sample {_span(years)}, {symbols} symbols: {aucs}")
    for h in hs:
        m = report.get(f"h{h}") or {}
        lines.append(f"{'h' + str(h):<18}pooled AUC {_fmt(m.get('auc'), '.3f')}, PR-AUC {_fmt(m.get('pr_auc'), '.3f')}, "
                     f"Brier {_fmt(m.get('brier'), '.3f')}, rank IC {_fmt(m.get('rank_ic'), '.3g')}, "
                     f"ICIR {_fmt(m.get('icir'), '.3g')}, long-short Sharpe {_fmt(m.get('long_short_sharpe'), '.2f')}"
                     f"{_evaluation_coverage(m, _meta_coverage(settings, years, h))}")
    return lines


def _backtest_lines(settings: Settings) -> list[str]:
    """The backtest's headline (with the days it left out in cash, when any) and its benchmark
    line: the benchmark's Sharpe and CAGR, the relative figures and the verdict in words."""
    b = _read(settings.stage_reports_dir("backtest") / "overall.json")
    if b is None:
        return [f"{'backtest':<18}n/a (no report: run backtest)"]
    if isinstance(b, Unreadable):
        return _unreadable("backtest", b, "backtest")
    cash = _num(b.get("in_cash_days"))
    left_out = (f" ({int(cash)} days in cash left out: {b.get('in_cash_reason') or 'no prediction'})"
                if cash else "")
    lines = [f"{'backtest':<18}p_h{b.get('horizon', '?')} {b.get('from', '?')}..{b.get('to', '?')}{left_out}, "
             f"{b.get('symbols', 'n/a')} symbols: Sharpe {_fmt(b.get('sharpe'), '.2f')}, CAGR {_fmt(b.get('cagr'), '.1%')}, "
             f"max drawdown {_fmt(b.get('max_drawdown'), '.1%')}, turnover {_fmt(b.get('annual_turnover'), '.0f')}x/yr"]
    return lines + ([_stats_line(b)] if any(k in b for k in STATS_KEYS) else []) + [_benchmark_line(b)]


STATS_KEYS = ("sortino", "calmar", "max_drawdown_days", "exposure", "trades", "win_rate", "total_costs")


def _stats_line(b: dict) -> str:
    """The rest of the stats table (kernels.backtest.stats states each figure); a report
    written before the table had it (none of STATS_KEYS) has no such line."""
    rec = b.get("drawdown_recovered")
    share = _num(b.get("cost_share"))
    return (f"{'backtest stats':<18}{_fmt(b.get('n_days'), '.0f')} days, total return {_fmt(b.get('total_return'), '.1%')}, "
            f"volatility {_fmt(b.get('ann_vol'), '.1%')}, Sortino {_fmt(b.get('sortino'), '.2f')}, "
            f"Calmar {_fmt(b.get('calmar'), '.2f')}, drawdown {_fmt(b.get('max_drawdown_days'), '.0f')} days"
            f"{'' if rec is None else ' (recovered)' if rec else ' (not recovered)'}, "
            f"exposure {_fmt(b.get('exposure'), '.2f')}, {_fmt(b.get('trades'), '.0f')} trades, "
            f"win rate {_fmt(b.get('win_rate'), '.1%')} (days), costs {_fmt(b.get('total_costs'), '.1%')}"
            f"{'' if share is None else f' ({share:.1%} of gross profit)'}")


def _benchmark_line(b: dict) -> str:
    bench = b.get("benchmark")
    if not isinstance(bench, dict):
        return f"{'benchmark':<18}n/a (a report without a benchmark: run backtest)"
    excess = _num(b.get("excess_return"))
    words = b.get("verdict") if isinstance(b.get("verdict"), str) else f"against {bench.get('name', 'n/a')}: n/a"
    return (f"{'benchmark':<18}Sharpe {_fmt(bench.get('sharpe'), '.2f')}, CAGR {_fmt(bench.get('cagr'), '.1%')}; "
            f"excess return {'n/a' if excess is None else format(excess, '+.1%')}/yr, "
            f"information ratio {_fmt(b.get('information_ratio'), '.2f')}, "
            f"tracking error {_fmt(b.get('tracking_error'), '.1%')}, beta {_fmt(b.get('beta'), '.2f')}: "
            f"the strategy {words}")


def _figure_paths(settings: Settings, stages) -> list[str]:
    paths = []
    if "meta_model" in stages and any(settings.stage_reports_dir("meta_model").glob("calibration_h*.png")):
        paths.append(str(settings.stage_reports_dir("meta_model") / "calibration_h*_<year>.png"))
    if "evaluation" in stages and any(settings.stage_reports_dir("evaluation").glob("*_overall.png")):
        paths.append(str(settings.stage_reports_dir("evaluation") / "{reliability,ic,long_short,deciles}_h*_overall.png"))
    if "backtest" in stages and (settings.stage_reports_dir("backtest") / "equity.png").exists():
        paths.append(str(settings.stage_reports_dir("backtest") / "equity.png"))
    return paths


def results_lines(settings: Settings, years: list[int], stages=STAGES) -> list[str]:
    """The figures of `stages` over `years` (the evaluation's own years when its report
    names them), one line each, rounded; the paths of their figures last."""
    lines: list[str] = []
    if "meta_model" in stages:
        lines += _meta_lines(settings, years)
    if "evaluation" in stages:
        lines += _evaluation_lines(settings, years)
    if "backtest" in stages:
        lines += _backtest_lines(settings)
    paths = _figure_paths(settings, stages)
    if paths:
        lines.append(f"{'figures':<18}{', '.join(paths)}")
    return lines


def results_block(settings: Settings, years: list[int], stages=STAGES, symbols: int | None = None) -> str:
    """`results_lines` under a title naming the symbol and year counts."""
    who = f"{symbols} symbols x " if symbols is not None else ""
    title = f"results ({who}{len(years)} year{'s' if len(years) != 1 else ''}, {_span(years)})"
    return "\n".join([title] + [f"  {line}" for line in results_lines(settings, years, stages)])


def run_results(instance, run_id: str, settings: Settings) -> list[str]:
    """The results block of one finished run: the STAGES it materialized over the years it
    materialized, then one `warning: check ...` line per asset check that failed in it;
    [] when it materialized none of STAGES."""
    from dagster import DagsterEventType

    from pipeline.run_report import failed_check_lines

    entries = instance.all_logs(run_id, of_type={DagsterEventType.ASSET_MATERIALIZATION,
                                                 DagsterEventType.ASSET_CHECK_EVALUATION})
    stages, years = set(), set()
    for e in entries:
        event = e.dagster_event
        if event.event_type == DagsterEventType.ASSET_MATERIALIZATION and event.asset_key.to_user_string() in STAGES:
            stages.add(event.asset_key.to_user_string())
            if event.partition and event.partition.isdigit():
                years.add(int(event.partition))
    if not stages:
        return []
    block = results_block(settings, sorted(years), [s for s in STAGES if s in stages])
    return block.splitlines() + failed_check_lines([e.dagster_event for e in entries])
