"""CLI commands that materialize stages: the same assets, the same code path as Dagster.

    build-features   raw_bars, features, labels, specialists (historical_build_and_train)
    train-lstm       lstm_model per year (walk-forward; one run per year, in order)
    train-meta       regime, meta_model, predictions of the years (optionally one horizon)
    backtest         the backtest of the stored predictions; --log copies the day log
    evaluate         evaluation of the stored predictions
    build-all        the whole chain (pipeline.runs.run_graph)
    live-paper-trade the current year's new bars in (raw_bars .. specialists), then the
                     live_paper_trade job (paper orders of the day): pipeline.live
    strategy-search  the strategy_search asset of one symbol: NSGA-II over seller-exhaustion parameter sets
    infer            infer_one / infer_batch on the stored data (prints JSON)

Each command runs a named job in process, on DAGSTER_HOME's instance (the UI shows the runs
under the job's name, never `__ephemeral_asset_job__`): a job of pipeline.jobs, or for
train-lstm, train-meta, backtest and evaluate the selected stages as a job named after the
command (`train_meta_job`, ...), with partition tags and the experiment's run tags
(config.experiments: `tradelab/experiment`, `tradelab/settings_hash`).
Flags that change settings (--raw, --epochs, --horizon, ...) write a derived settings file
of the invocation alone (`derived_settings`: a private temporary file, its relative paths made
absolute) and run with it; the file in force is never modified.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

from config.settings import config_path, field_choices, load_settings, parse_settings


def _absolute_paths(data: dict, model, root: Path) -> None:
    """Every path setting of `model` (defaults included) written into `data` as an absolute
    path against `root`: the derived file lives elsewhere, its paths must mean the same."""
    from pydantic import BaseModel

    for key in type(model).model_fields:
        value = getattr(model, key)
        if isinstance(value, BaseModel):
            sub = data.get(key) if isinstance(data.get(key), dict) else {}
            _absolute_paths(sub, value, root)
            if sub:
                data[key] = sub
        elif isinstance(value, Path) and key != "root":
            data[key] = str(value if value.is_absolute() else root / value)


def derived_settings(overrides: dict, name: str) -> Path:
    """The settings file in force with `overrides` (nested dict) applied, validated, as a file
    of this invocation alone: a private temporary file (`tradelab-cli-<name>-<pid>-*.yaml`,
    mode 0600: it may hold a storage URL with a password) whose relative paths are made
    absolute against the folder of the file in force, removed when the process exits. The
    folder of the settings may be read-only; two commands at once never read each other's
    flags; the file in force is never modified."""
    base = config_path()
    data = yaml.safe_load(base.read_text()) or {}

    def merge(dst: dict, src: dict) -> None:
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v)
            else:
                dst[k] = v

    merge(data, overrides)
    _absolute_paths(data, parse_settings(data, origin=f"{base} with the command's flags", root=base.parent), base.parent)
    fd, tmp = tempfile.mkstemp(prefix=f"tradelab-cli-{name}-{os.getpid()}-", suffix=".yaml")
    path = Path(tmp)
    atexit.register(path.unlink, missing_ok=True)
    with os.fdopen(fd, "w") as fh:  # mkstemp: mode 0600
        fh.write(yaml.safe_dump(data, sort_keys=False))
    return path


def parse_years(text: str | None, settings) -> list[int]:
    """`2005`, `2005-2010` or `2005,2007`; default: the configured years."""
    if not text:
        return settings.years.all()
    out: list[int] = []
    for part in text.split(","):
        try:
            a, b = (int(x) for x in part.split("-", 1)) if "-" in part else (int(part), int(part))
        except ValueError:
            raise ValueError(f"--years {text}: {part!r} is not a year or a range; expected e.g. 2005, 2005-2010 or 2005,2006") from None
        if b < a:
            raise ValueError(f"--years {text}: the range {part} runs backwards; expected {b}-{a}")
        out.extend(range(a, b + 1))
    bad = [y for y in out if y not in settings.years.all()]
    if bad:
        raise ValueError(f"--years {text}: {bad} outside the configured years {settings.years.start}..{settings.years.last}")
    years = sorted(set(out))
    if years != list(range(years[0], years[-1] + 1)):
        raise ValueError(f"--years {text}: the years must be contiguous (runs cover ranges), got {years}")
    return years


def _materialize_years(cfg: Path, selection: list[str], years: list[int], desc: str, per_year: bool = False) -> None:
    """Materialize year-partitioned `selection` for `years`: one run over the range, or one
    run per year in order (per_year: walk-forward stages whose year Y reads Y-1's output);
    a progress line per finished year and step (pipeline.progress)."""
    from tqdm import tqdm

    from config.experiments import experiment_tags
    from pipeline.chain import year_range_tags
    from pipeline.instance import get_instance
    from pipeline.progress import RunProgress
    from pipeline.run_report import console_run_config
    from pipeline.runs import raise_if_failed

    instance = get_instance()
    job = stage_job(cfg, selection, desc)
    tags = experiment_tags(load_settings(cfg))
    batches = [[y] for y in years] if per_year else [years]
    with RunProgress(instance) as progress:
        for batch in tqdm(batches, desc=desc, unit="run" if not per_year else "year", disable=len(batches) == 1):
            res = job.execute_in_process(instance=instance, tags={**year_range_tags(batch), **tags, **progress.tags},
                                         raise_on_error=False, run_config=console_run_config())
            progress.poll()  # this run's last lines before its warnings or its error
            raise_if_failed(res, f"{desc} {batch[0]}..{batch[-1]}")


def print_results(settings, years: list[int], stages=None, symbols: int | None = None) -> None:
    """The results block of a command's stages (pipeline.results), then how many asset
    checks failed in its runs (their warning lines were printed as each run ended)."""
    from pipeline.results import STAGES, results_block
    from pipeline.run_report import failed_checks_line

    print(results_block(settings, years, stages or STAGES, symbols=symbols))
    print(f"  {failed_checks_line()}")


def resolved_job(cfg: Path, job):
    """`job` (a job of pipeline.jobs) resolved with the resources of the settings file `cfg`:
    a command's run carries the job's name in the UI."""
    from dagster import Definitions

    from pipeline.definitions import ALL_ASSETS, build_resources

    return Definitions(assets=ALL_ASSETS, jobs=[job], resources=build_resources(str(cfg))).resolve_job_def(job.name)


def stage_job(cfg: Path, selection: list[str], command: str):
    """The year-partitioned `selection` as a job named after the command (`train_meta_job`,
    `evaluate_job`, ...: the UI names the run, not `__ephemeral_asset_job__`), with the
    resources of the settings file `cfg`."""
    from dagster import define_asset_job

    from resources.partitions import years_partitions

    job = define_asset_job(command.replace("-", "_") + "_job", selection=selection, partitions_def=years_partitions,
                           description=f"`pipeline.cli {command}`: {', '.join(selection)} of the selected years")
    return resolved_job(cfg, job)


def _cfg_and_settings(overrides: dict, name: str):
    """The settings file of the command (derived when flags change settings) and its
    settings; their experiment is frozen (config.experiments: a changed model setting under
    a name with results stops here with one line)."""
    from config.experiments import freeze_experiment

    cfg = derived_settings(overrides, name) if overrides else config_path()
    settings = load_settings(cfg)
    freeze_experiment(settings)
    return cfg, settings


def cmd_build_features(args: argparse.Namespace) -> int:
    from dagster import Definitions

    from config.experiments import experiment_tags
    from domain.sources import make_source
    from pipeline.definitions import ALL_ASSETS, build_resources
    from pipeline.instance import get_instance
    from pipeline.jobs import historical_build_and_train
    from pipeline.progress import RunProgress
    from pipeline.runs import run_rectangle
    from pipeline.symbols import sync_symbols

    overrides = {"universe": {"source": "folder", "folder": {"path": str(Path(args.raw).resolve())}}} if args.raw else {}
    if args.workers:
        overrides["build"] = {"workers": args.workers}
    if args.strict:
        overrides["ingest"] = {"strict": True}
    cfg, settings = _cfg_and_settings(overrides, "build-features")
    instance = get_instance()
    sync_symbols(instance, settings)
    symbols = args.symbols.split(",") if args.symbols else make_source(settings).symbols()
    years = parse_years(args.years, settings)
    job = Definitions(assets=ALL_ASSETS, jobs=[historical_build_and_train],
                      resources=build_resources(str(cfg))).resolve_job_def("historical_build_and_train")
    print(f"build-features: {len(symbols)} symbols x {years[0]}..{years[-1]} ({cfg.name})", file=sys.stderr)
    with RunProgress(instance) as progress:
        summary = run_rectangle(job, instance, symbols, years,
                                tags={"tradelab/origin": "cli", **experiment_tags(settings), **progress.tags},
                                log_level="WARNING")
    for name, s in summary.items():
        print(f"{name:<14}{s.partitions:>8} partitions {s.rows:>10} rows {s.seconds:>8.2f} s")
    print(f"data: {settings.data_dir}")
    return 0


def cmd_train_lstm(args: argparse.Namespace) -> int:
    lstm = {k: v for k, v in {"seq_len": args.seq_len, "epochs": args.epochs, "max_steps": args.max_steps}.items() if v}
    overrides = {"lstm": lstm} if lstm else {}
    if args.device:
        overrides["device"] = args.device
    if args.device in ("cuda", "rocm"):
        import torch

        if not torch.cuda.is_available():
            if args.strict_device:
                print(f"error: --device {args.device}: torch sees no CUDA/ROCm device (--strict-device)", file=sys.stderr)
                return 3
            print(f"warning: --device {args.device}: torch sees no CUDA/ROCm device; training on the CPU instead "
                  "(--strict-device stops here)", file=sys.stderr)
            overrides["device"] = "cpu"
    cfg, settings = _cfg_and_settings(overrides, "train-lstm")
    years = parse_years(args.years, settings)
    _materialize_years(cfg, ["lstm_model"], years, "train-lstm", per_year=True)
    print(f"models: {settings.models_dir}/lstm_*.pt")
    return 0


def cmd_train_meta(args: argparse.Namespace) -> int:
    cfg, settings = _cfg_and_settings({"meta": {"horizons": [args.horizon]}} if args.horizon else {}, "train-meta")
    years = parse_years(args.years, settings)
    _materialize_years(cfg, ["regime", "meta_model", "predictions"], years, "train-meta")
    hs = settings.meta.horizons or settings.labels.horizons
    for y in years:
        for h in hs:
            path = settings.stage_reports_dir("meta_model") / f"h{h}_{y}.json"
            if path.exists():
                m = json.loads(path.read_text())
                fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731  (no labelled rows yet)
                print(f"meta h{h} {y}: AUC {fmt(m['auc'])} Brier {fmt(m['brier'])} n {m['n']} symbols {m.get('symbols', 'n/a')}")
    print_results(settings, years, ("meta_model",))
    print(f"models: {settings.models_dir}/meta_h*_*.joblib")
    return 0


def cmd_backtest(args: argparse.Namespace) -> int:

    cfg, settings = _cfg_and_settings({"backtest": {"horizon": args.horizon}} if args.horizon else {}, "backtest")
    years = parse_years(args.years, settings)
    _materialize_years(cfg, ["backtest"], years, "backtest")
    if args.log:
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(settings.stage_reports_dir("backtest") / "daily.jsonl", args.log)
    print_results(settings, years, ("backtest",))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    cfg, settings = _cfg_and_settings({}, "evaluate")
    years = parse_years(args.years, settings)
    _materialize_years(cfg, ["evaluation"], years, "evaluate")
    print_results(settings, years, ("evaluation",))
    return 0


def cmd_build_all(args: argparse.Namespace) -> int:
    from domain.sources import make_source
    from pipeline.instance import get_instance
    from pipeline.progress import RunProgress
    from pipeline.runs import run_graph
    from pipeline.symbols import sync_symbols

    cfg, settings = _cfg_and_settings({"ingest": {"strict": True}} if args.strict else {}, "build-all")
    instance = get_instance()
    sync_symbols(instance, settings)
    symbols = args.symbols.split(",") if args.symbols else make_source(settings).symbols()
    years = parse_years(args.years, settings)
    with RunProgress(instance) as progress:
        run_graph(instance, symbols, years, lstm=args.lstm, settings_path=str(cfg),
                  tags=progress.tags)
    print(f"built {len(symbols)} symbols x {years[0]}..{years[-1]}; reports: {settings.reports_dir}")
    print_results(settings, years, symbols=len(symbols))
    return 0


STALE_AFTER_DAYS = 5  # calendar days between the latest bar and --now before `infer` warns


def json_safe(obj):
    """NaN and infinities as null: what `infer` prints is valid JSON (RFC 8259 has no NaN)."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def cmd_infer(args: argparse.Namespace) -> int:
    import datetime as dt

    from domain.live.inference import infer_batch, infer_one

    try:
        now = dt.datetime.fromisoformat(args.now) if args.now else dt.datetime.now()
    except ValueError:
        raise ValueError(f"--now {args.now}: expected an ISO date or date-time, e.g. 2024-03-15 or 2024-03-15T16:00") from None
    symbols = args.symbols.split(",")
    if len(symbols) == 1:
        rows = [infer_one(symbols[0], now)]
        text = json.dumps(json_safe(rows[0]), indent=2, default=str, allow_nan=False)
    else:
        frame = infer_batch(symbols, now)
        rows = frame.to_dicts()
        text = json.dumps(json_safe(rows), default=str, allow_nan=False)
    for row in rows:
        last = row["date"]
        if last is not None and (now - last).days > STALE_AFTER_DAYS:
            print(f"warning: {row['symbol']}: the latest stored bar is {last:%Y-%m-%d}, {(now - last).days} days before "
                  f"{now:%Y-%m-%d}; build the new bars first (live-paper-trade does)", file=sys.stderr)
    print(text)
    return 0


def cmd_live_paper_trade(args: argparse.Namespace) -> int:
    from pipeline.instance import get_instance
    from pipeline.live import run_live

    summary, res = run_live(get_instance(), now=args.now)
    for name, s in summary.items():
        print(f"{name:<14}{s.partitions:>8} partitions {s.rows:>10} rows (new bars in)", file=sys.stderr)
    orders = res.output_for_node("paper_trades")
    refused = res.asset_materializations_for_node("paper_trades")[0].metadata.get("refused")
    if refused is not None:  # a session already traded: one line, nothing ordered or written
        print(refused.value, file=sys.stderr)
    print(orders.write_json() if args.json else orders)
    return 0


def cmd_strategy_search(args: argparse.Namespace) -> int:
    """NSGA-II over seller-exhaustion parameter sets on one stored symbol's bars: the
    `strategy_search` asset of partition SYMBOL, materialized through Dagster; the flags
    become derived settings (`strategy_search.*`)."""
    import polars as pl

    from config.experiments import experiment_tags
    from config.partitions import SYMBOLS
    from pipeline.instance import get_instance
    from pipeline.jobs import strategy_search_job
    from pipeline.run_report import console_run_config
    from pipeline.runs import raise_if_failed
    from resources.delta_store import DeltaStore

    ss = {k: v for k, v in {"population": args.population, "generations": args.generations, "min_trades": args.min_trades,
                            "seed": args.seed, "backend": args.backend}.items() if v is not None}
    cfg, settings = _cfg_and_settings({"strategy_search": ss} if ss else {}, "strategy-search")
    store = DeltaStore(settings.data_dir)
    if not store.exists("raw_bars") or store.scan("raw_bars").filter(
            pl.col("symbol") == args.symbol).select(pl.len()).collect().item() == 0:
        raise ValueError(f"strategy-search: no raw_bars of {args.symbol} under {settings.data_dir / 'raw_bars'}: "
                         f"run build-features first")
    instance = get_instance()
    if args.symbol not in instance.get_dynamic_partitions(SYMBOLS):
        from pipeline.symbols import register_symbols

        register_symbols(instance, [args.symbol])  # stored bars of an unregistered symbol (and its group)
    s = settings.strategy_search
    print(f"strategy-search: {args.symbol}, {s.generations} generations x {s.population} ({cfg.name})", file=sys.stderr)
    res = resolved_job(cfg, strategy_search_job).execute_in_process(
        partition_key=args.symbol, instance=instance, raise_on_error=False, run_config=console_run_config(),
        tags=experiment_tags(settings))
    raise_if_failed(res, f"strategy_search {args.symbol}")
    path = settings.stage_reports_dir("strategy_search") / f"front_{args.symbol}.json"
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, args.out)
    report = json.loads(path.read_text())
    front = pl.DataFrame(report["front"]) if report["front"] else pl.DataFrame()
    print(front.head(10))
    print(f"Pareto front: {len(report['front'])} parameter sets of {report['trials']} trials on {report['bars']} bars; "
          f"{args.out or path}")
    return 0


def add_stage_commands(sub) -> None:
    bf = sub.add_parser("build-features", help="raw_bars, features, labels, specialists for symbols x years")
    bf.add_argument("--raw", help="a folder of CSV/Parquet bars to use as the source (default: settings universe)")
    bf.add_argument("--symbols", help="comma-separated (default: every symbol of the source)")
    bf.add_argument("--years", help="2005, 2005-2010 or 2005,2007 (default: settings years)")
    bf.add_argument("--workers", type=int, default=0, help="worker count (0: settings build.workers)")
    bf.add_argument("--strict", action="store_true", help="refuse dates that are not exchange sessions "
                    "(ingest.strict; default: a warning)")
    bf.set_defaults(func=cmd_build_features)
    tl = sub.add_parser("train-lstm", help="the LSTM specialist, year by year (walk-forward)")
    tl.add_argument("--years")
    tl.add_argument("--seq-len", type=int)
    tl.add_argument("--epochs", type=int)
    tl.add_argument("--max-steps", type=int)
    tl.add_argument("--device", choices=field_choices("device"), help="default: settings device")
    tl.add_argument("--strict-device", action="store_true", help="with --device cuda or rocm: stop (exit 3) when torch "
                    "sees no GPU "
                    "instead of training on the CPU")
    tl.set_defaults(func=cmd_train_lstm)
    tm = sub.add_parser("train-meta", help="regime, meta models and predictions of the years")
    tm.add_argument("--horizon", type=int, help="train this horizon only (default: every labels.horizons)")
    tm.add_argument("--years")
    tm.set_defaults(func=cmd_train_meta)
    bt = sub.add_parser("backtest", help="the portfolio backtest of the stored predictions")
    bt.add_argument("--log", help="also copy the day log (JSON lines) here")
    bt.add_argument("--horizon", type=int, help="the p_h{H} that drives the weights (default: settings)")
    bt.add_argument("--years")
    bt.set_defaults(func=cmd_backtest)
    ev = sub.add_parser("evaluate", help="AUC, PR-AUC, Brier, IC, deciles by regime of the stored predictions")
    ev.add_argument("--years")
    ev.set_defaults(func=cmd_evaluate)
    ba = sub.add_parser("build-all", help="the whole chain: build, (LSTM), yearly stages, ATC scan")
    ba.add_argument("--symbols")
    ba.add_argument("--years")
    ba.add_argument("--lstm", action="store_true", help="also train the LSTM (slow on a CPU)")
    ba.add_argument("--strict", action="store_true", help="refuse dates that are not exchange sessions (ingest.strict)")
    ba.set_defaults(func=cmd_build_all)
    lp = sub.add_parser("live-paper-trade", help="latest bars -> inference -> paper orders -> log (job live_paper_trade)")
    lp.add_argument("--now", help="ISO date (default: the last stored bar)")
    lp.add_argument("--json", action="store_true", help="print the orders as JSON")
    lp.set_defaults(func=cmd_live_paper_trade)
    ss = sub.add_parser("strategy-search", help="NSGA-II over seller-exhaustion parameters (population backtests)")
    ss.add_argument("--symbol", required=True)
    ss.add_argument("--population", type=int, help="trials per generation (default: settings strategy_search.population)")
    ss.add_argument("--generations", type=int, help="default: settings strategy_search.generations")
    ss.add_argument("--min-trades", type=int, help="default: settings strategy_search.min_trades")
    ss.add_argument("--seed", type=int, help="default: settings strategy_search.seed")
    ss.add_argument("--backend", choices=field_choices("strategy_search", "backend"), help="default: settings strategy_search.backend")
    ss.add_argument("--out", help="also copy the JSON report here (written to reports/strategy_search/front_<symbol>.json)")
    ss.set_defaults(func=cmd_strategy_search)
    inf = sub.add_parser("infer", help="probabilities per horizon for symbols at a time (incremental path)")
    inf.add_argument("symbols", help="one symbol, or comma-separated for the batch variant")
    inf.add_argument("--now", help="ISO date/time (default: now): the last bar at or before it")
    inf.set_defaults(func=cmd_infer)
