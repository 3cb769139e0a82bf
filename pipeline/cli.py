"""Command line: `python -m pipeline.cli <command>`.

    symbols sync     register every symbol of the configured source in DAGSTER_HOME
    symbols list     the registered symbols
    demo             the main job on the built-in data, with a summary
    grid-search      the trade-log grid search: the grid_search_job assets from the settings, or a
                     direct run on --market-data and --trade-log (the same stage functions)
    grid-data        write realistic grid-search inputs (seed 001 formats) for a try-out
    atc-scan         the current ATC state of every symbol in the store (raw_bars)
    migrate-store    --from OLD_DATA_DIR: convert a hive Parquet store into Delta tables (paths.data)
    migrate-partitions  move the instance to partitions.symbols_per_group (symbol groups <-> a key
                     per symbol; pipeline.migrate_partitions), the Delta tables unchanged
    repair-store     roll damaged Delta tables back to their last good version and drop missing
                     data files from their logs (resources.delta_repair); lists what to rebuild
    prune-runs       delete finished Dagster runs older than N days with their events (pipeline.maintenance)
    build-features, train-lstm, train-meta, backtest, evaluate, build-all, infer:
                     the stages, materialized through Dagster (pipeline.stage_commands)
"""

from __future__ import annotations

import argparse
import sys

from config.errors import InputDataError
from config.experiments import experiment_tags
from config.settings import SettingsError, field_choices, load_settings
from pipeline.experiments import add_experiment_commands, take_experiment_flag, use_experiment
from pipeline.stage_commands import add_stage_commands


def _symbols(args: argparse.Namespace) -> int:
    from config.partitions import SYMBOLS
    from pipeline.instance import get_instance
    from pipeline.symbols import remove_symbols, sync_source

    if args.action == "remove" and not args.names:
        raise ValueError("symbols remove: name at least one symbol, e.g. `symbols remove GOOG`")
    instance = get_instance()
    if args.action == "sync":
        result = sync_source(instance, load_settings(), prune=args.prune)
        for line in result.skipped:  # a file of the folder that cannot be read: one line each, the others go on
            print(f"warning: {line}", file=sys.stderr)
        print(result.line())
    elif args.action == "remove":
        removed = remove_symbols(instance, args.names)
        print(f"removed {', '.join(removed)}; {len(instance.get_dynamic_partitions(SYMBOLS))} symbol(s) left")
    else:
        for sym in instance.get_dynamic_partitions(SYMBOLS):
            print(sym)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from pipeline.demo import run_demo

    return run_demo(load_settings())


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
    return {"grid_search": gs, **({"device": args.device} if args.device else {})}


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


def _print_grid_report(report: dict, out) -> None:
    import json

    size = {"trials": report["combinations"]} if report["engine"] == "optuna" else \
        {"combinations": report["combinations"], "trades": report["trades"]}
    print(json.dumps({"winner": report["top"][0] if report["top"] else None, **size,
                      "seconds": round(report["seconds"], 3), "out": str(out)}, indent=2))


def _grid_search(args: argparse.Namespace) -> int:
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
              desc=f"{gs.engine} on {backend}", disable=args.quiet or not one_process) as bar:
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


def _grid_data(args: argparse.Namespace) -> int:
    from pathlib import Path

    from domain.gridsearch.synthetic import generate_grid_data

    paths = generate_grid_data(Path(args.out), days=args.days, trades_per_day=args.trades_per_day, seed=args.seed)
    print(f"market data: {paths.market_data}\ntrade log:   {paths.trade_log}")
    return 0


def _atc_scan(args: argparse.Namespace) -> int:
    """Materialize `atc_scan` (job atc_scan_job; flags become derived settings), then print the stored table."""
    from config.settings import config_path
    from domain.atc_scan import STATES
    from pipeline.instance import get_instance
    from pipeline.jobs import atc_scan_job
    from pipeline.run_report import console_run_config
    from pipeline.runs import raise_if_failed
    from pipeline.stage_commands import derived_settings, resolved_job
    from resources.delta_store import DeltaStore

    atc = {k: v for k, v in {"scan_bars": args.bars, "robustness": args.robustness, "length": args.length}.items() if v}
    overrides = {**({"atc": atc} if atc else {}), **({"device": args.device} if args.device else {})}
    cfg = derived_settings(overrides, "atc-scan") if overrides else config_path()
    settings = load_settings(cfg)
    res = resolved_job(cfg, atc_scan_job).execute_in_process(instance=get_instance(), raise_on_error=False,
                                                             run_config=console_run_config(), tags=experiment_tags(settings))
    raise_if_failed(res, "atc_scan")
    table = DeltaStore(settings.data_dir).read("atc_scan")
    if args.out:
        table.write_parquet(args.out) if args.out.endswith(".parquet") else table.write_csv(args.out)
    print(f"{'symbol':<10}{'date':<12}{'ATC':>8}  state")
    for r in table.sort("atc", descending=True).iter_rows(named=True):
        print(f"{r['symbol']:<10}{r['date']:%Y-%m-%d}  {r['atc']:+.3f}  {STATES[int(r['state'])]}")
    meta = res.asset_materializations_for_node("atc_scan")[0].metadata
    print(f"{table.height} symbols; {meta['states'].value}", file=sys.stderr)
    return 0


def _migrate_store(args: argparse.Namespace) -> int:
    """Convert an old hive Parquet store into Delta tables under the configured data dir."""
    from pathlib import Path

    from resources.delta_store import DeltaStore, migrate_parquet_store

    settings = load_settings()
    src, dst = Path(args.source).resolve(), settings.data_dir.resolve()
    if not src.is_dir():
        raise FileNotFoundError(f"migrate-store --from {src}: not a folder; expected the old data dir "
                                f"(<asset>/symbol=<S>/year=<Y>/part.parquet)")
    if src == dst:
        raise ValueError(f"migrate-store --from {src}: that is paths.data itself; move the old store aside "
                         f"(e.g. mv data data.parquet) and migrate from there")
    olds = sorted(p.name for p in src.iterdir() if p.is_dir() and any(p.glob("**/part.parquet")))
    if not olds:
        raise ValueError(f"migrate-store --from {src}: no <asset>/.../part.parquet found; expected the old data dir")
    taken = sorted(set(olds) & set(DeltaStore(dst).assets()))
    if taken:
        raise ValueError(f"migrate-store: {dst} already has Delta tables for {taken}; migrate into an empty data dir")
    counts = migrate_parquet_store(src, dst)
    for asset, rows in counts.items():
        print(f"{asset:<20}{rows:>14,} rows")
    print(f"migrated {len(counts)} asset(s), {sum(counts.values()):,} rows, from {src} into {dst}")
    return 0


def _migrate_partitions(args: argparse.Namespace) -> int:
    from pipeline.instance import get_instance
    from pipeline.migrate_partitions import migrate
    from resources.delta_store import DeltaStore

    settings = load_settings()
    print(migrate(get_instance(), settings.partitions.symbols_per_group, DeltaStore(settings.data_dir)).line())
    return 0


def _repair_store(args: argparse.Namespace) -> int:
    """Repair every Delta table under paths.data; one line per table, then how to rebuild."""
    from resources.delta_repair import repair_store

    settings = load_settings()
    reports = repair_store(settings.data_dir, dry_run=args.dry_run)
    for report in reports:
        print(report.line(dry_run=args.dry_run))
    damaged = [r for r in reports if r.damaged]
    print(f"{len(damaged)} of {len(reports)} table(s) under {settings.data_dir} "
          + ("damaged (dry run: nothing changed)" if args.dry_run else "repaired" if damaged else "damaged"))
    example = next(((r.table.name, k) for r in damaged for k in r.rebuild if not k.startswith("(")), None)
    if example:
        print(f"then re-materialize the partitions listed after `rebuild:`, e.g. dagster asset materialize "
              f"-m pipeline.definitions --select {example[0]} --partition '{example[1]}'")
    return 0


def _prune_runs(args: argparse.Namespace) -> int:
    """Delete old finished runs from DAGSTER_HOME (default age: automation.run_retention_days)."""
    from pipeline.instance import get_instance
    from pipeline.maintenance import prune_runs

    days = args.older_than_days if args.older_than_days is not None else load_settings().automation.run_retention_days
    report = prune_runs(get_instance(), days, dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    print(f"{verb} {len(report.deleted)} run(s) finished more than {days:g} day(s) ago ({report.bytes_freed:,} bytes of "
          f"run shards); kept {len(report.kept_for_assets)} old run(s) that hold the latest materialization of a partition")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pipeline.cli", description="tradelab pipeline commands")
    ap.add_argument("--verbose", action="store_true", help="show Dagster's events of the runs on the console "
                    "(anywhere on the line; otherwise a failed run's events go to DAGSTER_HOME/logs/<run id>.log)")
    ap.add_argument("--experiment", metavar="NAME", help="the named experiment of the command's models, reports and "
                    "runs (anywhere on the line; default: settings `experiment`, else `default`)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("symbols", help="register, list or remove the symbols partitions")
    sp.add_argument("action", choices=["sync", "list", "remove"])
    sp.add_argument("names", nargs="*", help="remove: the symbols to unregister (their stored data stays)")
    sp.add_argument("--prune", action="store_true", help="sync: also unregister symbols the source does not hold "
                    "(done without asking when the source changed since the last sync)")
    sp.set_defaults(func=_symbols)
    dp = sub.add_parser("demo", help="materialize the demo partitions and print a summary")
    dp.set_defaults(func=_demo)
    gp = sub.add_parser("grid-search", help="exact top-k parameter combinations over a trade log")
    gp.add_argument("--market-data", help="folder of Raw_Market_data_MM-DD-YYYY.csv; with --trade-log, a direct run "
                    "on these files; without both, the grid_search_job assets are materialized from the settings")
    gp.add_argument("--trade-log", help="all_trade_logs.csv")
    gp.add_argument("--tickers", help="comma-separated (default: settings grid_search.tickers)")
    gp.add_argument("--engine", choices=["auto", "brute", "cube", "optuna"], help="default: settings grid_search.engine")
    gp.add_argument("--sampler", choices=["tpe", "nsga2", "random"], help="optuna engine: sampler (default: settings)")
    gp.add_argument("--trials", type=int, help="optuna engine: trials (default: settings)")
    gp.add_argument("--storage", help="optuna engine: journal file (*.log) or DB URL shared by workers")
    gp.add_argument("--study-name", help="optuna engine: study name")
    gp.add_argument("--overfitting", action="store_true", help="add in/out-of-sample ROI, PBO and deflated Sharpe")
    gp.add_argument("--device", choices=field_choices("device"), help="default: settings device")
    gp.add_argument("--top", type=int, help="default: settings grid_search.top")
    gp.add_argument("--min-trades", type=int, help="default: settings grid_search.min_trades")
    gp.add_argument("--params", help="YAML file with the parameter lists (keys as grid_search.params)")
    gp.add_argument("--out", help="the JSON report to write (required for a direct run; else a copy of top10.json)")
    gp.add_argument("--quiet", action="store_true", help="no progress bar")
    gp.set_defaults(func=_grid_search)
    ap_ = sub.add_parser("atc-scan", help="the current ATC state of every symbol in the store")
    ap_.add_argument("--bars", type=int, help="last N bars per symbol (default: settings atc.scan_bars)")
    ap_.add_argument("--robustness", choices=["Narrow", "Medium", "Wide"])
    ap_.add_argument("--length", type=int)
    ap_.add_argument("--device", choices=field_choices("device"), help="default: settings device")
    ap_.add_argument("--out", help="write the table (.parquet or .csv)")
    ap_.set_defaults(func=_atc_scan)
    gd = sub.add_parser("grid-data", help="write realistic grid-search inputs (seed 001 formats)")
    gd.add_argument("--out", required=True)
    gd.add_argument("--days", type=int, default=3)
    gd.add_argument("--trades-per-day", type=int, default=200)
    gd.add_argument("--seed", type=int, default=11)
    gd.set_defaults(func=_grid_data)
    mp = sub.add_parser("migrate-store", help="convert an old hive Parquet store into Delta tables under paths.data")
    mp.add_argument("--from", dest="source", required=True, help="the old data dir (<asset>/symbol=<S>/year=<Y>/part.parquet)")
    mp.set_defaults(func=_migrate_store)
    mpp = sub.add_parser("migrate-partitions", help="move the Dagster instance to partitions.symbols_per_group "
                                                     "(groups <-> a key per symbol); the Delta tables are unchanged")
    mpp.set_defaults(func=_migrate_partitions)
    rp = sub.add_parser("repair-store", help="repair damaged Delta tables under paths.data and list what to rebuild")
    rp.add_argument("--dry-run", action="store_true", help="report the damage and the repair, change nothing")
    rp.set_defaults(func=_repair_store)
    pr = sub.add_parser("prune-runs", help="delete finished Dagster runs older than N days, with their events")
    pr.add_argument("--older-than-days", type=float, help="default: settings automation.run_retention_days")
    pr.add_argument("--dry-run", action="store_true", help="report what would be deleted, delete nothing")
    pr.set_defaults(func=_prune_runs)
    add_stage_commands(sub)
    add_experiment_commands(sub)
    return ap


def _print_runtime_line() -> None:
    """The runtime line (device, backend, thread defaults, versions): one line on stderr before any work."""
    from resources.compute import runtime_line, select_device

    try:
        policy = load_settings().device
    except SettingsError:
        return  # the command itself reports the settings error as its one line
    print(runtime_line(select_device(policy), policy), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run one command. A failure is one line on stderr, first: exit 2 when the user's input,
    flags or settings caused it, 1 for the environment (disk full, read-only: the line names
    the path) or a failed run of another cause. Dagster's console output of the runs is off
    unless `--verbose` (anywhere on the line); a failed run's events go to a log file named
    on the error's second line (pipeline.run_report)."""
    from pipeline.cli_errors import Fd2ToFile, environment_line, keep_fd2_output, user_cause
    from pipeline.run_report import FAILED_CHECKS, RunFailed, quiet_dagster
    from pipeline.startup import prepare_process

    prepare_process()
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv
    try:
        argv, experiment = take_experiment_flag([a for a in argv if a != "--verbose"])
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    quiet_dagster(not verbose)
    FAILED_CHECKS.clear()  # the results block counts this command's failed checks
    fd2 = None if verbose else Fd2ToFile()
    try:
        use_experiment(experiment, args.cmd)
        _print_runtime_line()
        return args.func(args)
    except BrokenPipeError:  # `... | head`: the reader has what it wanted
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except RunFailed as err:
        print(f"error: {err.line}\n{err.detail}", file=sys.stderr)
        return err.exit_code
    except (SettingsError, InputDataError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:  # a failed run: its id is in the message
        print(f"error: {err}", file=sys.stderr)
        return 1
    except Exception as err:
        user = user_cause(err)
        line = None if user else environment_line(err)
        if user is None and line is None:
            raise  # a defect: its stack is the report
        if verbose:
            import traceback

            traceback.print_exc()
        print(f"error: {user or line}", file=sys.stderr)
        return 2 if user else 1
    finally:
        quiet_dagster(False)
        if fd2 is not None:
            keep_fd2_output(fd2.restore())


if __name__ == "__main__":
    sys.exit(main())
