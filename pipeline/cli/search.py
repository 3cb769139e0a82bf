"""Search commands: `grid-search` (the trade-log grid search: the grid_search_job assets, or
a direct run on --market-data and --trade-log; both domain.gridsearch.stage.grid_search_stage),
`grid-data` (realistic grid-search inputs for a try-out) and `strategy-search` (the
strategy_search asset of one symbol: NSGA-II over seller-exhaustion parameter sets)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from config.experiments import experiment_tags
from config.settings import field_choices, load_settings
from pipeline.cli.common import command_settings, resolved_job


# flag -> the grid_search setting it sets: its bounds and checks are the settings model's
GRID_FLAGS = {"engine": ("engine",), "top": ("top",), "min_trades": ("min_trades",), "tickers": ("tickers",),
              "sampler": ("smart", "sampler"), "trials": ("smart", "trials"), "storage": ("smart", "storage"),
              "study_name": ("smart", "study_name")}


def _grid_overrides(args: argparse.Namespace) -> dict:
    """The settings the grid-search flags given set (only those: the rest stay the settings'),
    as a nested mapping over `grid_search` (and `device` for --device)."""
    from pathlib import Path

    import yaml

    if args.out and Path(args.out).is_dir():
        raise ValueError(f"--out {args.out}: is a folder; expected the path of the JSON report to write")
    if args.params and not Path(args.params).is_file():
        raise ValueError(f"--params {args.params}: file not found; expected a YAML file of grid values")
    gs: dict = {}
    for flag, path in GRID_FLAGS.items():
        value = getattr(args, flag)
        if value is None or value == "":
            continue
        node = gs
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value.split(",") if flag == "tickers" else value
    if args.overfitting:
        gs["overfitting"] = True
    if args.params:  # merged over the settings' lists key by key
        gs["params"] = yaml.safe_load(Path(args.params).read_text()) or {}
    device = _device_flag(args)
    return {"grid_search": gs, **({"device": device} if device else {})}


def _device_flag(args: argparse.Namespace) -> str | None:
    """--device, or the old --backend (announced once as a `warning:` line naming --device);
    a ValueError when both are given with different values."""
    old = getattr(args, "backend", None)
    if old is None:
        return args.device
    if args.device is not None and args.device != old:
        raise ValueError(f"--backend {old} and --device {args.device}: both given; expected --device alone "
                         "(--backend is its old name)")
    from kernels.deprecations import renamed

    renamed("grid-search --backend", emit=lambda text: print(f"warning: {text}", file=sys.stderr))
    return old


def _flag_line(err, args: argparse.Namespace) -> str:
    """A pydantic error of the grid_search settings as the one line of the flag that set the
    value: `--top -5: expected a whole number from 1 to 1000` (the bounds read from the
    model's field), `--tickers: <the validator's message>`, `--params FILE: <key>: <message>`."""
    from config.settings import GridSearch

    e = err.errors()[0]
    loc = tuple(str(x) for x in e["loc"])
    message = e["msg"].removeprefix("Value error, ")
    if loc[:1] == ("params",):
        return f"--params {args.params}: {'.'.join(loc) or 'params'}: {message}"
    flag = next((f for f, path in GRID_FLAGS.items() if loc[:len(path)] == path), None)
    if flag is None:
        return f"grid_search.{'.'.join(loc)}: {message}"
    name = "--" + flag.replace("_", "-")
    if e["type"] == "value_error":
        return f"{name}: {message}"
    model = GridSearch
    for key in GRID_FLAGS[flag][:-1]:
        model = model.model_fields[key].annotation
    field = model.model_fields[GRID_FLAGS[flag][-1]]
    bound = {k: getattr(m, k) for m in field.metadata for k in ("ge", "le") if getattr(m, k, None) is not None}
    kind = "a whole number" if field.annotation is int else "a number"
    if "ge" in bound and "le" in bound:
        expected = f"{kind} from {bound['ge']} to {bound['le']}"
    elif bound:
        expected = " and ".join(f"{kind} {'>=' if k == 'ge' else '<='} {v}" for k, v in bound.items())
    else:
        expected = message
    return f"{name} {getattr(args, flag)}: expected {expected}"


def _grid_settings(args: argparse.Namespace):
    """(the settings in force with the grid-search flags applied, the overrides as JSON). A
    flag the settings model refuses is ONE line naming the flag (ValueError: exit code 2)."""
    import json

    from pydantic import ValidationError

    from config.settings import GridSearch, config_path, derive_settings, merge_settings

    base = load_settings()
    overrides = _grid_overrides(args)
    try:  # the flags alone against the grid_search model: the error names the flag, not the file
        GridSearch.model_validate(merge_settings(base.grid_search.model_dump(), overrides["grid_search"]))
    except ValidationError as err:
        raise ValueError(_flag_line(err, args)) from None
    text = json.dumps(overrides, default=str)
    return derive_settings(config_path(), text), text


ROI_MEANS = "the sum of the kept trades' returns, percent (not a return on capital)"


def winner_line(report: dict) -> str:
    """The full-sample winner in words, one line: `grid-search winner (full sample, chosen on
    all trades): sum of kept trades' returns 13.97% over 412 trades` (no winner: says so)."""
    if not report["top"]:
        return "grid-search winner: none (no combination kept enough trades)"
    w = report["top"][0]
    return (f"grid-search winner (full sample, chosen on all trades): sum of kept trades' returns "
            f"{w['roi']:.2f}% over {w['trades']} trades")


def _print_grid_report(report: dict, out) -> None:
    """The report's summary as JSON on stdout (`winner` is the report's first row, its `roi`
    key as stored; `roi_means` says what that is) and the winner in words on stderr."""
    import json

    size = {"trials": report["combinations"]} if report["engine"] == "optuna" else \
        {"combinations": report["combinations"], "trades": report["trades"]}
    print(json.dumps({"winner": report["top"][0] if report["top"] else None, "roi_means": ROI_MEANS, **size,
                      "seconds": round(report["seconds"], 3), "out": str(out)}, indent=2))
    print(winner_line(report), file=sys.stderr)


def cmd_grid_search(args: argparse.Namespace) -> int:
    """`grid-search`: with --market-data and --trade-log, a direct run on those files (no
    Dagster); without both, the grid_search_job assets over the settings' inputs. Both run
    domain.gridsearch.stage.grid_search_stage with the settings in force and the flags given
    over them (the settings' `grid_search.dask` included)."""
    if not (args.market_data or args.trade_log):
        return _grid_search_assets(args)
    if not (args.market_data and args.trade_log and args.out):
        print("error: a direct run needs --market-data, --trade-log and --out (or none of the first two: the "
              "settings' inputs through Dagster)", file=sys.stderr)
        return 2
    from pathlib import Path

    from tqdm import tqdm

    from domain.gridsearch.inputs import read_market_data, read_trade_log
    from domain.gridsearch.stage import grid_from_settings, grid_search_stage
    from resources.compute import select_device

    settings, _ = _grid_settings(args)
    gs = settings.grid_search
    backend = select_device(settings.device).backend
    market = read_market_data(Path(args.market_data), gs.tickers)
    trades, rejected = read_trade_log(Path(args.trade_log), gs.tickers, market)
    if rejected.total:
        print(f"left out {rejected.total} trade(s): {rejected.by_reason}; first ids {rejected.first_ids}", file=sys.stderr)
    out = Path(args.out)
    one_process = gs.engine != "optuna" and not gs.dask.enabled
    with tqdm(total=grid_from_settings(settings).n_combinations, unit="comb", unit_scale=True,
              desc=f"{gs.engine} on {backend}",
              disable=args.quiet or not one_process or not sys.stderr.isatty()) as bar:  # no \r lines in a log
        stage = grid_search_stage(market, trades, settings, backend, json_path=out, rejected=rejected.summary(),
                                  progress=bar.update)
    _print_grid_report(stage.result.to_json(), out)
    return 0


def _grid_search_assets(args: argparse.Namespace) -> int:
    """Materialize market_data -> trade_log -> grid_search with the settings in force and the
    flags given over them (resources.project.ProjectResource `overrides`: no file written)."""
    import json
    import shutil
    from pathlib import Path

    from dagster import Definitions

    from pipeline.definitions import ALL_ASSETS, build_resources
    from pipeline.instance import get_instance
    from pipeline.jobs import grid_search_job
    from pipeline.run_report import console_run_config
    from pipeline.runs import raise_if_failed

    settings, overrides = _grid_settings(args)
    job = Definitions(assets=ALL_ASSETS, jobs=[grid_search_job],
                      resources=build_resources(overrides=overrides)).resolve_job_def(grid_search_job.name)
    res = job.execute_in_process(instance=get_instance(), raise_on_error=False, run_config=console_run_config(),
                                 tags=experiment_tags(settings))
    raise_if_failed(res, "grid_search_job")
    report_path = settings.stage_reports_dir("grid_search") / "top10.json"
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(report_path, args.out)
    _print_grid_report(json.loads(report_path.read_text()), args.out or report_path)
    return 0


def cmd_grid_data(args: argparse.Namespace) -> int:
    from pathlib import Path

    from domain.gridsearch.synthetic import generate_grid_data

    paths = generate_grid_data(Path(args.out), days=args.days, trades_per_day=args.trades_per_day, seed=args.seed)
    print(f"market data: {paths.market_data}\ntrade log:   {paths.trade_log}")
    return 0


def cmd_strategy_search(args: argparse.Namespace) -> int:
    """NSGA-II over seller-exhaustion parameter sets on one stored symbol's bars: the
    `strategy_search` asset of partition SYMBOL, materialized through Dagster; the flags
    are in-memory settings (`strategy_search.*`)."""
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
    cs = command_settings({"strategy_search": ss} if ss else {})
    settings = cs.settings
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
    print(f"strategy-search: {args.symbol}, {s.generations} generations x {s.population} ({cs.path.name}"
          f"{' with the flags' if cs.overrides else ''})", file=sys.stderr)
    res = resolved_job(cs, strategy_search_job).execute_in_process(
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


def add_commands(sub) -> None:
    gp = sub.add_parser("grid-search", help="exact top-k parameter combinations over a trade log")
    gp.add_argument("--market-data", help="folder of Raw_Market_data_MM-DD-YYYY.csv; with --trade-log, a direct run "
                    "on these files; without both, the grid_search_job assets are materialized from the settings")
    gp.add_argument("--trade-log", help="all_trade_logs.csv")
    gp.add_argument("--tickers", help="comma-separated (default: settings grid_search.tickers)")
    gp.add_argument("--engine", choices=field_choices("grid_search", "engine"), help="default: settings grid_search.engine")
    gp.add_argument("--sampler", choices=field_choices("grid_search", "smart", "sampler"),
                    help="optuna engine: sampler (default: settings)")
    gp.add_argument("--trials", type=int, help="optuna engine: trials (default: settings)")
    gp.add_argument("--storage", help="optuna engine: journal file (*.log) or DB URL shared by workers")
    gp.add_argument("--study-name", help="optuna engine: study name")
    gp.add_argument("--overfitting", action="store_true", help="add the in/out-of-sample sum of kept "
                    "trades' returns (roi_in, roi_out), PBO and deflated Sharpe")
    gp.add_argument("--device", choices=field_choices("device"), help="default: settings device")
    gp.add_argument("--backend", choices=field_choices("device"), help=argparse.SUPPRESS)  # the old --device
    gp.add_argument("--top", type=int, help="default: settings grid_search.top")
    gp.add_argument("--min-trades", type=int, help="default: settings grid_search.min_trades")
    gp.add_argument("--params", help="YAML file with the parameter lists (keys as grid_search.params)")
    gp.add_argument("--out", help="the JSON report to write (required for a direct run; else a copy of top10.json)")
    gp.add_argument("--quiet", action="store_true", help="no progress bar")
    gp.set_defaults(func=cmd_grid_search)
    gd = sub.add_parser("grid-data", help="write realistic grid-search inputs (market data and trade log)")
    gd.add_argument("--out", required=True)
    gd.add_argument("--days", type=int, default=3)
    gd.add_argument("--trades-per-day", type=int, default=200)
    gd.add_argument("--seed", type=int, default=11)
    gd.set_defaults(func=cmd_grid_data)
    ss = sub.add_parser("strategy-search", help="NSGA-II over seller-exhaustion parameters (population backtests)")
    ss.add_argument("--symbol", required=True)
    ss.add_argument("--population", type=int, help="trials per generation (default: settings strategy_search.population)")
    ss.add_argument("--generations", type=int, help="default: settings strategy_search.generations")
    ss.add_argument("--min-trades", type=int, help="default: settings strategy_search.min_trades")
    ss.add_argument("--seed", type=int, help="default: settings strategy_search.seed")
    ss.add_argument("--backend", choices=field_choices("strategy_search", "backend"), help="default: settings strategy_search.backend")
    ss.add_argument("--out", help="also copy the JSON report here (written to reports/strategy_search/front_<symbol>.json)")
    ss.set_defaults(func=cmd_strategy_search)
