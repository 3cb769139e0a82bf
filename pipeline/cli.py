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
from config.settings import SYMBOL_PATTERN, SettingsError, load_settings
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


def _grid_search_assets(args: argparse.Namespace) -> int:
    """Materialize market_data -> trade_log -> grid_search from the settings; the flags
    become derived settings (pipeline.stage_commands.derived_settings)."""
    import json
    import shutil
    from pathlib import Path

    import yaml

    from pipeline.instance import get_instance
    from pipeline.jobs import grid_search_job
    from pipeline.run_report import console_run_config
    from pipeline.runs import raise_if_failed
    from pipeline.stage_commands import derived_settings, resolved_job

    gs = {k: v for k, v in {"engine": args.engine, "top": args.top, "min_trades": args.min_trades}.items()
          if v is not None}  # only the flags given override the settings
    if args.tickers:
        gs["tickers"] = args.tickers.split(",")
    if args.overfitting:
        gs["overfitting"] = True
    if args.params:
        gs["params"] = yaml.safe_load(Path(args.params).read_text()) or {}
    smart = {k: v for k, v in {"sampler": args.sampler, "trials": args.trials, "storage": args.storage,
                               "study_name": args.study_name}.items() if v}
    if smart:
        gs["smart"] = smart
    overrides = {"grid_search": gs, **({"device": args.backend} if args.backend != "auto" else {})}
    cfg = derived_settings(overrides, "grid-search")
    settings = load_settings(cfg)
    res = resolved_job(cfg, grid_search_job).execute_in_process(instance=get_instance(), raise_on_error=False,
                                                                run_config=console_run_config(),
                                                                tags=experiment_tags(settings))
    raise_if_failed(res, "grid_search_job")
    report_path = settings.stage_reports_dir("grid_search") / "top10.json"
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(report_path, args.out)
    report = json.loads(report_path.read_text())
    print(json.dumps({"winner": report["top"][0] if report["top"] else None, "combinations": report["combinations"],
                      "trades": report["trades"], "seconds": round(report["seconds"], 3),
                      "out": str(args.out or report_path)}, indent=2))
    return 0


MAX_TICKERS = 127  # ticker codes are int8


def _check_grid_flags(args: argparse.Namespace) -> None:
    """Every grid-search flag a user can get wrong, as one line each (exit code 2)."""
    from pathlib import Path

    if args.top is not None and not 1 <= args.top <= 1000:
        raise ValueError(f"--top {args.top}: expected a whole number from 1 to 1000")
    if args.min_trades is not None and args.min_trades < 1:
        raise ValueError(f"--min-trades {args.min_trades}: expected a whole number >= 1")
    if args.trials is not None and args.trials < 1:
        raise ValueError(f"--trials {args.trials}: expected a whole number >= 1")
    if args.out and Path(args.out).is_dir():
        raise ValueError(f"--out {args.out}: is a folder; expected the path of the JSON report to write")
    if args.params and not Path(args.params).is_file():
        raise ValueError(f"--params {args.params}: file not found; expected a YAML file of grid values")
    if args.tickers:
        names = args.tickers.split(",")
        if len(names) > MAX_TICKERS:
            raise ValueError(f"--tickers: {len(names)} tickers; expected at most {MAX_TICKERS}")
        bad = [n for n in names if not SYMBOL_PATTERN.match(n)]
        if bad:
            raise ValueError(f"--tickers: {bad[0]!r} is not a ticker; expected names matching [A-Z0-9._-]{{1,16}}")


def _grid_search(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    _check_grid_flags(args)
    if not args.market_data and not args.trade_log:
        return _grid_search_assets(args)
    if not (args.market_data and args.trade_log and args.out):
        print("error: a direct run needs --market-data, --trade-log and --out (or none of the first two: the "
              "settings' inputs through Dagster)", file=sys.stderr)
        return 2

    import yaml
    from tqdm import tqdm

    from config.settings import GridParams
    from domain.gridsearch.inputs import TradeArrays, read_market_data, read_trade_log
    from domain.gridsearch.search import run_grid_search
    from domain.gridsearch.stage import write_reports
    from kernels.gridsearch.grid import Grid
    from resources.compute import select_device

    settings = load_settings()
    # flags not given: the settings' values, as on the asset path
    args.engine = args.engine or settings.grid_search.engine
    args.top = args.top if args.top is not None else settings.grid_search.top
    args.min_trades = args.min_trades if args.min_trades is not None else settings.grid_search.min_trades
    params = settings.grid_search.params
    if args.params:
        try:  # merged over the settings' lists key by key, as derived settings are on the asset path
            params = GridParams(**{**params.model_dump(), **(yaml.safe_load(Path(args.params).read_text()) or {})})
        except Exception as err:  # pydantic's message names the key
            print(f"error: {args.params}: {err}", file=sys.stderr)
            return 2
    grid = Grid.from_mapping(params.model_dump())
    tickers = args.tickers.split(",") if args.tickers else settings.grid_search.tickers
    backend = {"cpu": "cpu", "cuda": "cuda", "torch": "torch"}[select_device("rocm" if args.backend == "rocm" else args.backend).backend]
    market = read_market_data(Path(args.market_data), tickers)
    trades, rejected = read_trade_log(Path(args.trade_log), tickers, market)
    if rejected.total:
        print(f"left out {rejected.total} trade(s): {rejected.by_reason}; first ids {rejected.first_ids}", file=sys.stderr)
    arrays = TradeArrays.from_frame(trades)
    out = Path(args.out)
    if args.engine == "optuna":
        from domain.gridsearch.stage import run_smart_search
        from domain.gridsearch.stage import write_reports as _write

        smart = settings.grid_search.smart.model_copy(update={k: v for k, v in {
            "sampler": args.sampler, "trials": args.trials, "storage": args.storage, "study_name": args.study_name}.items() if v})
        gs = settings.grid_search.model_copy(update={"smart": smart, "top": args.top, "min_trades": args.min_trades})
        result, _ = run_smart_search(market["price"].to_numpy(), arrays, gs, backend)
        result.rejected = rejected.summary()
        _write(result, out.parent, grid, arrays, None, json_path=out)
        print(json.dumps({"winner": result.top[0] if result.top else None, "trials": result.combinations,
                          "seconds": round(result.seconds, 3), "out": str(out)}, indent=2))
        return 0
    with tqdm(total=grid.n_combinations, unit="comb", unit_scale=True, desc=f"{args.engine} on {backend}",
              disable=args.quiet) as bar:
        result, results = run_grid_search(market["price"].to_numpy(), arrays, grid, engine=args.engine, backend=backend,
                                          top=args.top, min_trades=args.min_trades, progress=bar.update)
    result.rejected = rejected.summary()
    if args.overfitting:
        from domain.gridsearch.overfit import overfitting_report

        result.overfitting = overfitting_report(arrays, results, grid, result.top, min_trades=args.min_trades)
    write_reports(result, out.parent, grid, arrays, results, json_path=out)
    best = result.top[0] if result.top else None
    print(json.dumps({"winner": best, "combinations": result.combinations, "trades": result.trades,
                      "seconds": round(result.seconds, 3), "out": str(out)}, indent=2))
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
    overrides = {**({"atc": atc} if atc else {}), **({"device": args.backend} if args.backend != "auto" else {})}
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
    gp.add_argument("--backend", choices=["auto", "cpu", "cuda", "rocm"], default="auto")
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
    ap_.add_argument("--backend", choices=["auto", "cpu", "cuda", "rocm"], default="auto")
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
    """Seed 000's "env / thread defaults printed": one line on stderr before any work."""
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
