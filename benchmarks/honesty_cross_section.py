"""Honesty on real data, cross-sectional: daily rank IC, ICIR and long-short
decile Sharpe of the meta model, out of sample, on a real cross-section the tests never saw:
the 20 S&P 500 stocks of 1990-2022 that ship inside the `skfolio` package
(`skfolio.datasets.load_sp500_dataset`: daily adjusted closes, no open/high/low/volume).

Install (skfolio's own dependencies, cvxpy and others, are heavy and NOT needed: the data
file is read with polars and skfolio is never imported):

    pip install --no-deps skfolio

The file is found with importlib.util.find_spec("skfolio").submodule_search_locations and
read from `datasets/data/sp500_dataset.csv.gz` (columns Date, AAPL, AMD, ..., XOM).

Bars: open = high = low = close = the adjusted close, volume = a constant (`--volume`).
That degrades what needs a range or a volume (measured on the stored tables and printed):
- f_atr14, f_vol_pct, f_vol_ratio: the true range max(H - L, |H - C[-1]|, |L - C[-1]|) is
  |C - C[-1]|, so the ATR is a smoothed mean absolute close-to-close change (no intraday
  range); still varies, but it is a close-only volatility, not an ATR;
- f_plus_di14, f_minus_di14, f_adx14: +DM = max(C - C[-1], 0), -DM = max(C[-1] - C, 0) and
  TR = |C - C[-1]|, so with the same Wilder smoothing +DI14 IS f_rsi14 and -DI14 is
  100 - f_rsi14 (measured on AAPL: equal to 4e-6, float32), and ADX14 is the Wilder
  average of |2 RSI14 - 100|: three columns that repeat the RSI;
- spec_seller_exhaustion_score: constant 0 (the close location (C - L) / (H - L) is NaN when
  H == L, and the volume z-score is 0 with a constant volume: no signal bar can exist);
- the other features and specialists use the close only and are the same as with real OHLC:
  returns, moving averages, KAMA, RSI, rolling std / z-score, mean reversion, RSI, ATC; the
  regime (equal-weight index of the closes) and the labels (close to close) too.
The closes are rounded to 3 decimals in the file (AAPL starts at 0.098): a few percent of
days have a zero return, more in the early low-priced years.

Pipeline, through Dagster in a fresh DAGSTER_HOME (a user folder source: one long Parquet
table with a symbol column, `universe.source: folder`): raw_bars, features, labels,
specialists for every symbol x year (one single-run backfill), regime for every year, then
per configuration (meta.inputs x meta.model x meta.seed) meta_model, predictions and
evaluation for the test years (walk-forward: the model of year Y is trained on labels known
before Y, from --train-from on). Nothing is tuned on this data: every setting is the
project's default except the ones named here. The cross-sectional figures come from
`reports/<experiment>/evaluation/<Y>.json` (domain.evaluation: days with at least evaluation.min_symbols_per_day
symbols, default 5 of the 20). The logistic meta model is deterministic (newton-cholesky on unshuffled
purged folds; `meta.seed` changes nothing), so it runs once; lightgbm and hist_gbm run once
per --seeds entry (`meta.seed`).

Configurations (`--configs`, comma-separated `INPUTS:MODEL[:PACKS]`): INPUTS is `meta.inputs`,
`specialists`, `features+specialists`, or `+`-joined names that become a list
(`specialists+alpha158` -> [specialists, alpha158]); MODEL is `meta.model`; PACKS (optional,
`+`-joined) are `features.packs`, a dotted name among them a `features.plugins` module. The
store is built once with the union of every configuration's packs (the specialists and
labels do not depend on them), so `specialists:logistic,specialists+alpha158:lightgbm:core+alpha158`
compares the default model with LightGBM on Alpha158 on the same rows.

Markets (`--market`): `sp500` (the file above) or `planted`: the synthetic market with a
planted signal (`universe.synthetic.planted`, docs/learning.md "Planted signal": `--planted-strength`,
`--planted-kind`, horizon 7), `--symbols` synthetic symbols (seed 7) from --train-from to
--last-year, through the same chain. On `sp500` the full `alpha158` pack has no usable row
(its 10 volume correlations are NaN with a constant volume): use the plugin pack
`alpha158_close` (`kernels.alpha158.close_only`, a plugin module), the other 148 columns.

Usage: python benchmarks/honesty_cross_section.py [--market sp500|planted] [--symbols 30]
    [--first-test-year 2000] [--last-year 2022] [--horizons 7]
    [--configs specialists:logistic,features+specialists:logistic] [--seeds 0,1,2] [--record] [--json PATH]
    [--meta-variants '[{}, {"calibration_copies": 1}]']   # each configuration also with these meta settings
       python benchmarks/honesty_cross_section.py --self-test   # the data path and --configs parsing, in seconds
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import os

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# plugin modules (kernels.alpha158.close_only) import in the subprocesses the pipeline spawns too
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)

from benchmarks.common import configured_instance, emit, machine, parser, symbol_names  # noqa: E402

DATA_FILE = ("datasets", "data", "sp500_dataset.csv.gz")
SEEDED_MODELS = ("lightgbm", "hist_gbm")
METRICS = ("auc", "rank_ic", "icir", "long_short_sharpe")
LITERAL_INPUTS = ("specialists", "features+specialists")


def parse_config(text: str) -> tuple[str, str | list[str], str, list[str], list[str]]:
    """`INPUTS:MODEL[:PACKS]` -> (label, meta.inputs, meta.model, features.packs, features.plugins);
    a dotted name in PACKS is a plugin module."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise SystemExit(f"--configs: {text!r} is not INPUTS:MODEL[:PACKS]")
    inputs = parts[0] if parts[0] in LITERAL_INPUTS else parts[0].split("+")
    names = parts[2].split("+") if len(parts) == 3 else ["core"]
    packs = [n for n in names if "." not in n]
    return (f"{parts[0]}, {parts[1]}", inputs, parts[1], packs or ["core"], [n for n in names if "." in n])


def union(lists) -> list[str]:
    out: list[str] = []
    for names in lists:
        out += [n for n in names if n not in out]
    return out


def sp500_csv() -> Path:
    """skfolio's packaged S&P 500 file, located without importing skfolio."""
    spec = importlib.util.find_spec("skfolio")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("skfolio is not installed: pip install --no-deps skfolio")
    path = Path(list(spec.submodule_search_locations)[0]).joinpath(*DATA_FILE)
    if not path.is_file():
        raise SystemExit(f"{path} not found in the installed skfolio")
    return path


def sp500_bars(volume: float) -> pl.DataFrame:
    """Long table: date, symbol, open = high = low = close (adjusted close), constant volume."""
    wide = pl.read_csv(sp500_csv(), try_parse_dates=True).rename({"Date": "date"})
    long = wide.unpivot(index="date", variable_name="symbol", value_name="close").drop_nulls("close")
    return long.select("date", "symbol", *[pl.col("close").alias(c) for c in ("open", "high", "low", "close")],
                       pl.lit(volume).alias("volume")).sort("symbol", "date")


def degeneracy(store, symbols: list[str], years: list[int]) -> list[dict]:
    """Per stored feature / specialist column: rows with a value, distinct values, std, and
    the share of symbols whose column is constant (over the rows with a value)."""
    from config.partitions import SymbolYear

    keys = [SymbolYear(s, y) for s in symbols for y in years]
    out = []
    for asset in ("features", "specialists"):
        df = store.read(asset, keys)
        for col in [c for c in df.columns if c not in ("date", "symbol")]:
            v = df.select("symbol", pl.col(col).cast(pl.Float64).fill_nan(None).alias("v")).drop_nulls("v")
            per = v.group_by("symbol").agg(pl.col("v").std().alias("sd"))
            out.append({"asset": asset, "column": col, "rows": v.height, "distinct": v["v"].n_unique(),
                        "std": float(v["v"].std() or 0.0),
                        "constant_symbols": int((per["sd"].fill_null(0.0) == 0.0).sum()), "symbols": per.height})
    return out


def eval_figures(reports: Path, years: list[int], horizons: list[int]) -> dict:
    """{scope: {h: {rank_ic, icir, long_short_sharpe, days_used}}} from reports/<experiment>/evaluation/."""
    out = {}
    for scope in [str(y) for y in years] + ["overall"]:
        path = reports / "evaluation" / f"{scope}.json"
        if not path.exists():
            continue
        rep = json.loads(path.read_text())
        out[scope] = {h: {**{k: rep[f"h{h}"][k] for k in METRICS},
                          "days_used": rep[f"h{h}"]["cross_section"]["days_used"]} for h in horizons}
    return out


def _f(v, spec: str) -> str:
    return "n/a" if v is None or not np.isfinite(v) else format(v, spec)


def _ms(x: np.ndarray, spec: str) -> str:
    x = x[np.isfinite(x)]
    if not len(x):
        return "n/a"
    sd = x.std(ddof=1) if len(x) > 1 else 0.0
    return f"{format(x.mean(), spec)} +- {format(sd, spec.lstrip('+'))}"


def self_test(volume: float) -> int:
    """What the run relies on, checked in seconds (tests/pipeline/test_benchmark_scripts.py runs
    it): --configs parse into settings, and skfolio's S&P 500 closes become a long table that the
    folder source accepts (skipped, with a line, where skfolio is not installed)."""
    from config.settings import SYMBOL_PATTERN

    assert parse_config("specialists:logistic") == ("specialists, logistic", "specialists", "logistic", ["core"], [])
    assert parse_config("features+specialists:hist_gbm")[1] == "features+specialists"
    assert parse_config("specialists+alpha158:lightgbm:core+alpha158") == (
        "specialists+alpha158, lightgbm", ["specialists", "alpha158"], "lightgbm", ["core", "alpha158"], [])
    assert parse_config("specialists+alpha158_close:lightgbm:core+kernels.alpha158.close_only")[3:] == (
        ["core"], ["kernels.alpha158.close_only"])
    try:
        parse_config("specialists")
    except SystemExit as err:
        assert "is not INPUTS:MODEL" in str(err)
    else:
        raise AssertionError("parse_config('specialists') did not refuse a configuration without a model")
    if importlib.util.find_spec("skfolio") is None:
        print("self-test: --configs ok; the S&P 500 data path skipped (skfolio not installed)")
        return 0
    from domain.sources.folder import FolderSource
    from kernels.panel import Panel
    from kernels.registry.specialists import seller_exhaustion_score

    bars = sp500_bars(volume)
    symbols = sorted(bars["symbol"].unique().to_list())
    assert len(symbols) == 20 and all(SYMBOL_PATTERN.match(s) for s in symbols)
    assert bars["date"].dt.year().min() == 1990 and bars["date"].dt.year().max() == 2022
    with tempfile.TemporaryDirectory() as tmp:
        bars.filter(pl.col("date").dt.year() >= 2021).write_parquet(Path(tmp) / "sp500.parquet")
        src = FolderSource(Path(tmp))
        assert src.symbols() == symbols
        raw = src.history(["AAPL", "XOM"])
    assert raw.height == 2 * bars.filter((pl.col("symbol") == "AAPL") & (pl.col("date").dt.year() >= 2021)).height
    assert (raw["open"] == raw["close"]).all() and (raw["high"] == raw["low"]).all()
    # the documented degradation: no seller-exhaustion bar can exist without a range and a volume
    one = raw.filter(pl.col("symbol") == "AAPL")
    panel = Panel.from_columns({c: one[c].to_numpy().astype(np.float32) for c in ("open", "high", "low", "close", "volume")})
    assert np.all(seller_exhaustion_score(panel) == 0)
    print("self-test: --configs ok; the S&P 500 data path ok")
    return 0


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--self-test", action="store_true", help="check the data path and the --configs parsing, run nothing")
    ap.add_argument("--market", choices=["sp500", "planted"], default="sp500")
    ap.add_argument("--symbols", type=int, default=30, help="planted: synthetic symbols")
    ap.add_argument("--planted-strength", type=float, default=0.1, help="planted: universe.synthetic.planted.strength")
    ap.add_argument("--planted-kind", choices=["linear", "nonlinear"], default="linear")
    ap.add_argument("--train-from", type=int, default=1990, help="first year of bars (the file starts in 1990)")
    ap.add_argument("--first-test-year", type=int, default=2000)
    ap.add_argument("--last-year", type=int, default=2022)
    ap.add_argument("--configs", default="specialists:logistic,features+specialists:logistic",
                    help="comma-separated INPUTS:MODEL[:PACKS] (meta.inputs, meta.model, features.packs)")
    ap.add_argument("--seeds", default="0,1,2", help="meta.seed values for lightgbm / hist_gbm")
    ap.add_argument("--horizons", default="7", help="labels.horizons (thresholds 0); 7 = backtest.horizon")
    ap.add_argument("--volume", type=float, default=1e6, help="the constant volume of every bar")
    ap.add_argument("--meta-variants", default="[{}]", help=(
        'a JSON list of `meta` settings each configuration also runs with, on the same store, e.g. '
        '\'[{}, {"calibration_copies": 2}]\' ({} = the configuration as it is); the meta_model stage is timed alone too'))
    args = ap.parse_args()
    if args.self_test:
        return self_test(args.volume)
    t_start, cpu_start = time.perf_counter(), time.process_time()
    configs = [parse_config(c) for c in args.configs.split(",")]
    features = {"packs": union(c[3] for c in configs), "plugins": union(c[4] for c in configs)}
    seeds = [int(s) for s in args.seeds.split(",")]
    horizons = [int(h) for h in args.horizons.split(",")]
    head = 7 if 7 in horizons else horizons[0]
    years = list(range(args.train_from, args.last_year + 1))
    test_years = list(range(args.first_test_year, args.last_year + 1))
    if args.market == "sp500":
        bars = sp500_bars(args.volume).filter(pl.col("date").dt.year().is_between(args.train_from, args.last_year))
        symbols = sorted(bars["symbol"].unique().to_list())
    else:
        bars, symbols = None, symbol_names(args.symbols)
    timings: dict[str, float] = {}
    results: dict[str, dict] = {}  # config label -> {seed: eval figures}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if bars is not None:
            (tmp / "user_data").mkdir()
            bars.write_parquet(tmp / "user_data" / "sp500.parquet")
            universe = {"source": "folder", "folder": {"path": str(tmp / "user_data")}}
        else:
            universe = {"source": "synthetic", "synthetic": {
                "symbols": symbols, "seed": 7, "end_date": f"{args.last_year}-12-31",
                "planted": {"strength": args.planted_strength, "kind": args.planted_kind, "horizon": 7}}}
        base = {
            "paths": {"data": str(tmp / "data"), "reports": str(tmp / "reports"), "models": str(tmp / "models")},
            "years": {"start": args.train_from, "end": args.last_year},
            "universe": universe,
            "features": features,
            "labels": {"horizons": horizons, "thresholds": {h: 0.0 for h in horizons}},
            "backtest": {"horizon": head},
            "lstm": {"horizon": head},
            "evaluation": {"min_symbols_per_day": 5},
        }
        cfg, settings, instance = configured_instance(tmp, base)
        from dagster import AssetKey
        from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

        from pipeline.definitions import defs
        from pipeline.runs import run_rectangle
        from resources.delta_store import DeltaStore

        quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
        yearly = defs.resolve_job_def("yearly_stages")

        def run_years(assets: list[str], y0: int, y1: int) -> None:
            res = yearly.execute_in_process(instance=instance, run_config=quiet, raise_on_error=False,
                                            asset_selection=[AssetKey(a) for a in assets],
                                            tags={ASSET_PARTITION_RANGE_START_TAG: str(y0),
                                                  ASSET_PARTITION_RANGE_END_TAG: str(y1)})
            if not res.success:
                raise RuntimeError(f"yearly_stages {assets} {y0}..{y1} failed")

        t = time.perf_counter()
        run_rectangle(defs.resolve_job_def("historical_build_and_train"), instance, symbols, years, log_level="WARNING")
        run_years(["regime"], args.train_from, args.last_year)
        timings["build (raw_bars, features, labels, specialists, regime)"] = time.perf_counter() - t
        degenerate = degeneracy(DeltaStore(settings.data_dir), symbols, years)

        variants = json.loads(args.meta_variants)
        for config_label, inputs, model, _, _ in configs:
            for variant in variants:
                label = config_label + (f" {json.dumps(variant, sort_keys=True)}" if variant else "")
                results[label] = {}
                for seed in (seeds if model in SEEDED_MODELS else [None]):
                    t = time.perf_counter()
                    run_cfg = {**base, "meta": {"inputs": inputs, "model": model, "seed": seed or 0, **variant}}
                    cfg.write_text(json.dumps(run_cfg))  # a rewritten file is read again (load_settings)
                    for d in (settings.models_dir, settings.reports_dir):  # the experiment anew: its settings change
                        shutil.rmtree(d, ignore_errors=True)
                    run_years(["meta_model"], args.first_test_year, args.last_year)
                    t_meta = time.perf_counter() - t
                    run_years(["predictions", "evaluation"], args.first_test_year, args.last_year)
                    results[label][seed] = eval_figures(settings.reports_dir, test_years, horizons)
                    key = f"{label}{'' if seed is None else f', seed {seed}'}"
                    timings[key] = time.perf_counter() - t
                    timings[f"{key}: meta_model"] = t_meta
                    print(f"{label} seed={seed}: {time.perf_counter() - t:.0f} s (meta_model {t_meta:.1f} s); overall "
                          f"h{head} {results[label][seed].get('overall', {}).get(head)}", flush=True)
    total, cpu = time.perf_counter() - t_start, time.process_time() - cpu_start
    if args.json:
        Path(args.json).write_text(json.dumps({"results": {k: {str(s): v for s, v in r.items()} for k, r in results.items()},
                                               "degeneracy": degenerate, "timings": timings}, indent=1))

    planted = args.market == "planted"
    cmd = ("python benchmarks/honesty_cross_section.py" + (
        f" --market planted --symbols {args.symbols} --planted-strength {args.planted_strength} --planted-kind "
        f"{args.planted_kind}" if planted else "") + (f" --train-from {args.train_from}" if args.train_from != 1990
                                                       else "")
        + f" --first-test-year {args.first_test_year} --last-year {args.last_year} --configs {args.configs}"
        + (f" --seeds {args.seeds}" if any(c[2] in SEEDED_MODELS for c in configs) else "")
        + (f" --horizons {args.horizons}" if horizons != [7] else "")
        + (f" --meta-variants '{args.meta_variants}'" if args.meta_variants != "[{}]" else ""))
    title = (f"Planted market: {len(symbols)} synthetic symbols, {args.planted_kind} signal of strength "
             f"{args.planted_strength}" if planted else "Honesty on real data, cross-sectional: 20 S&P 500 stocks "
             "from skfolio")
    data = (f"Symbols: {len(symbols)} ({symbols[0]}..{symbols[-1]}), the synthetic market (seed 7) with "
            f"`universe.synthetic.planted` {{strength: {args.planted_strength}, kind: {args.planted_kind}, horizon: 7}}, "
            f"{args.train_from}-{args.last_year} ({len(years)} years)" if planted else
            f"`pip install --no-deps skfolio` first. Symbols: {len(symbols)}, {', '.join(symbols)} (adjusted closes "
            f"{args.train_from}-{args.last_year}, {len(years)} years; open = high = low = close, constant volume)")
    lines = [f"### {title} ({dt.date.today()})", "",
             f"Machine: {machine()}. Command: `{cmd}` ({total / 60:.1f} min wall, {cpu / 60:.1f} min CPU of this "
             f"process). Settings: `features: {json.dumps(features)}` for the build of every configuration. "
             f"{data}. Test years {args.first_test_year}-{args.last_year} ({len(test_years)}), walk-forward: "
             f"the model of year Y is trained on labels known before Y, from {args.train_from} on. Per test year the "
             "AUC of the meta model's probability against the label, the daily cross-sectional rank IC (mean over "
             "the year's days), ICIR (mean / sd of the daily IC) and the long-short top-minus-bottom decile Sharpe "
             f"(k = {max(1, len(symbols) // 10)} of {len(symbols)} symbols a side, each day's value an H-day "
             "return, annualized with 252 / H); `evaluation.min_symbols_per_day` 5. Spread = mean +- sd over the "
             "test years; `overall` = the figures over every test day pooled. Defaults everywhere else; nothing "
             "tuned on this data.", ""]
    lines += [f"Per test year, horizon {head} (the first seed of a seeded model):", "",
              "| year | " + " | ".join(f"{lab}: AUC / rank IC / ICIR / L-S Sharpe" for lab in results) + " |",
              "|---|" + "---:|" * len(results)]
    for y in [str(y) for y in test_years] + ["overall"]:
        cells = []
        for per_seed in results.values():
            r = per_seed[next(iter(per_seed))].get(y, {}).get(head)
            cells.append("n/a" if r is None else
                         f"{_f(r['auc'], '.3f')} / {_f(r['rank_ic'], '+.3f')} / {_f(r['icir'], '+.3f')} / "
                         f"{_f(r['long_short_sharpe'], '+.2f')}")
        lines.append(f"| {y if y != 'overall' else '**overall**'} | " + " | ".join(cells) + " |")
    lines += ["", "Over the test years, every horizon (mean +- sd over years; for a seeded model, per seed the "
              "mean over years, then mean +- sd across seeds in the last columns):", "",
              "| configuration | horizon | years | AUC | rank IC | ICIR | L-S Sharpe | overall AUC / rank IC / ICIR / "
              "L-S Sharpe | seeds | rank IC over seeds | L-S Sharpe over seeds |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for lab, per_seed in results.items():
        first = per_seed[next(iter(per_seed))]
        for h in horizons:
            col = {m: np.array([first[str(y)][h][m] if str(y) in first and first[str(y)][h][m] is not None
                                else np.nan for y in test_years], dtype=float) for m in METRICS}
            o = first.get("overall", {}).get(h, {})
            n = int(np.isfinite(col["rank_ic"]).sum())
            if None in per_seed:
                seed_cells = "deterministic | - | -"
            else:
                by_seed = {m: np.array([np.nanmean([r[str(y)][h][m] if str(y) in r and r[str(y)][h][m] is not None
                                                    else np.nan for y in test_years]) for r in per_seed.values()])
                           for m in METRICS}
                seed_cells = (f"{','.join(str(s) for s in per_seed)} | {_ms(by_seed['rank_ic'], '+.4f')} | "
                              f"{_ms(by_seed['long_short_sharpe'], '+.3f')}")
            lines.append(f"| {lab} | {h} | {n} | {_ms(col['auc'], '.3f')} | {_ms(col['rank_ic'], '+.3f')} | "
                         f"{_ms(col['icir'], '+.3f')} | {_ms(col['long_short_sharpe'], '+.2f')} | "
                         f"{_f(o.get('auc'), '.3f')} / {_f(o.get('rank_ic'), '+.4f')} / "
                         f"{_f(o.get('icir'), '+.3f')} / {_f(o.get('long_short_sharpe'), '+.2f')} | {seed_cells} |")
    flat = [d for d in degenerate if d["distinct"] <= 1 or d["constant_symbols"] == d["symbols"]]
    lines += ["", "Constant inputs, measured on the stored tables (rows with a value, all symbols and years; a "
              "column constant within every symbol counts): "
              + (", ".join(f"`{d['column']}`" + (f" ({d['std']:.3g})" if d["distinct"] > 1 else "") for d in flat)
                 or "none") + f" ({len(flat)} of {len(degenerate)} columns)"
              + (". With open = high = low = close, `f_atr14`, `f_vol_pct` and `f_vol_ratio` are close-to-close "
                 "volatilities (true range = |C - C[-1]|), `f_plus_di14` equals `f_rsi14`, `f_minus_di14` is "
                 "100 - `f_rsi14` and `f_adx14` the Wilder average of |2 RSI14 - 100| (see the script's "
                 "docstring); the other features and specialists read the close only." if not planted else "."),
              "", "Time: " + "; ".join(f"{k} {v:.0f} s" for k, v in timings.items()) + ".", ""]
    emit(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
