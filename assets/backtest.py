"""Stage `backtest` (year, and overall): the daily portfolio of the meta model's predictions.

The Dagster objects only (asset, checks, config); the stage's contract and logic are in
`domain.backtest`, whose docstring states them.
"""

import base64

import polars as pl
from dagster import AssetCheckResult, AssetCheckSpec, AssetExecutionContext, MetadataValue, Output

from resources.partitions import yearly_asset
from resources.project import ProjectResource


@yearly_asset(
    reads=("predictions", "raw_bars"),
    group_name="evaluation",
    kinds={"numba", "polars"},
    check_specs=[
        AssetCheckSpec("equity_finite_positive", asset="backtest",
                       description="equity finite and > 0 and net returns finite and > -1 on every day"),
        AssetCheckSpec("weights_within_caps", asset="backtest",
                       description="each day |w| <= backtest.max_weight for the symbols traded (topk_dropout: bought), gross <= backtest.max_gross"),
    ],
)
def backtest(context: AssetExecutionContext, predictions: pl.LazyFrame, raw_bars: pl.LazyFrame,
             project: ProjectResource):
    """The daily portfolio of the out-of-sample predictions: per year and over the whole span,
    the stats table (kernels.backtest.stats); the equity curve as a PNG. The overall figures
    are top-level numeric metadata (`sharpe`, `cagr`, `max_drawdown`, `turnover`, `sortino`,
    `calmar`, `ann_vol`, `max_drawdown_days`, `exposure`, `trades`, `win_rate`, `total_costs`,
    `cost_share`, and against the
    benchmark `benchmark_sharpe`, `benchmark_cagr`, `excess_return`, `information_ratio`,
    `tracking_error`, `beta`: domain.figures) that the Plots tab charts; `verdict` says in words
    whether the book beat its benchmark, `in_cash_days` how many days the headline left out."""
    from domain import checks
    from domain.backtest import build_backtest, headline_figures
    from domain.schema import require_stored
    from resources.observe import observe

    settings = project.settings()
    require_stored(predictions, "predictions", settings.experiment, "train-meta")
    bt = settings.backtest
    years = [int(k) for k in context.partition_keys]
    with observe(context, settings.reports_dir, "backtest", args=bt.model_dump()) as obs:
        report = build_backtest(predictions, raw_bars, years, bt, settings.stage_reports_dir("backtest"), log=context.log)
        headline = report.headline()
        obs.extra["overall"] = headline
        if report.sweep is not None:
            obs.extra["sweep"] = {k: report.sweep[k] for k in ("lanes", "books", "days", "symbols", "seconds")}
        obs.record(report.table)
    from domain.figures import backtest_figures, rounded_tree

    yield Output(report.table, metadata={
        **{k: MetadataValue.int(v) if isinstance(v, int) else MetadataValue.float(v)
           for k, v in backtest_figures(headline).items()},
        "experiment": MetadataValue.text(settings.experiment),  # which experiment each plotted point is
        "n_days": MetadataValue.int(int(headline.get("n_days") or 0)),
        "in_cash_days": MetadataValue.int(int(report.overall["in_cash_days"])),
        "verdict": MetadataValue.text(report.overall["verdict"]),
        "per_year": MetadataValue.json(rounded_tree({str(y): headline_figures(v) for y, v in report.per_year.items()})),
        **({"equity_png": MetadataValue.path(str(report.equity_png)),
            "equity_curve": MetadataValue.md("![equity curve](data:image/png;base64,"
                                             f"{base64.b64encode(report.equity_png.read_bytes()).decode()})")}
           if report.equity_png is not None else {}),
        **(sweep_metadata(report.sweep) if report.sweep is not None else {}),
    })
    passed, meta = checks.equity_finite_positive(report.table)
    yield AssetCheckResult(check_name="equity_finite_positive", passed=passed, metadata=meta)
    passed, meta = checks.weights_within_caps(report.table, bt.max_weight, bt.max_gross)
    yield AssetCheckResult(check_name="weights_within_caps", passed=passed, metadata=meta)


def sweep_metadata(sweep: dict) -> dict:
    """The sweep's figures in the UI: the best row's figure, PBO and deflated Sharpe as numbers,
    the table (top rows) and the heatmap as markdown."""
    from pathlib import Path

    from domain.backtest_sweep import sweep_lines
    from domain.figures import rounded

    best = sweep["rows"][0] if sweep["rows"] else {}
    out = {"sweep_lanes": MetadataValue.int(int(sweep["lanes"])),
           "sweep_table": MetadataValue.md("```\n" + "\n".join(sweep_lines(sweep)) + "\n```")}
    for name, value in (("sweep_best_" + sweep["sort_by"], best.get(sweep["sort_by"])),
                        ("sweep_pbo", sweep["pbo"].get("pbo")), ("sweep_dsr", sweep["deflated_sharpe"].get("dsr"))):
        if rounded(value) is not None:
            out[name] = MetadataValue.float(float(value))
    if sweep.get("heatmap"):
        png = Path(sweep["heatmap"]["path"])
        out["sweep_heatmap"] = MetadataValue.md("![sweep heatmap](data:image/png;base64,"
                                                f"{base64.b64encode(png.read_bytes()).decode()})")
    return out
