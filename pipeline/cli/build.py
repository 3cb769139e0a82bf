"""Build commands: `build-features` (job historical_build_and_train over symbols x years),
`build-all` (the whole chain, pipeline.runs.run_graph) and `demo` (pipeline.demo)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from config.settings import load_settings
from pipeline.cli.common import command_settings, parse_years, print_results, resolved_job


def cmd_build_features(args: argparse.Namespace) -> int:
    from config.experiments import experiment_tags
    from pipeline.instance import get_instance
    from pipeline.jobs import historical_build_and_train
    from pipeline.progress import RunProgress
    from pipeline.runs import run_rectangle
    from pipeline.symbols import source_symbols, sync_symbols

    overrides = {"universe": {"source": "folder", "folder": {"path": str(Path(args.raw).resolve())}}} if args.raw else {}
    if args.workers:
        overrides["build"] = {"workers": args.workers}
    if args.strict:
        overrides["ingest"] = {"strict": True}
    cs = command_settings(overrides)
    settings = cs.settings
    instance = get_instance()
    sync_symbols(instance, settings)
    symbols = args.symbols.split(",") if args.symbols else source_symbols(settings)
    years = parse_years(args.years, settings)
    job = resolved_job(cs, historical_build_and_train)
    print(f"build-features: {len(symbols)} symbols x {years[0]}..{years[-1]} ({cs.path.name}"
          f"{' with the flags' if cs.overrides else ''})", file=sys.stderr)
    with RunProgress(instance) as progress:
        summary = run_rectangle(job, instance, symbols, years,
                                tags={"tradelab/origin": "cli", **experiment_tags(settings), **progress.tags},
                                log_level="WARNING")
    for name, s in summary.items():
        print(f"{name:<14}{s.partitions:>8} partitions {s.rows:>10} rows {s.seconds:>8.2f} s")
    print(f"data: {settings.data_dir}")
    return 0


def cmd_build_all(args: argparse.Namespace) -> int:
    from pipeline.instance import get_instance
    from pipeline.progress import RunProgress
    from pipeline.runs import run_graph
    from pipeline.symbols import source_symbols, sync_symbols

    cs = command_settings({"ingest": {"strict": True}} if args.strict else {})
    settings = cs.settings
    instance = get_instance()
    sync_symbols(instance, settings)
    symbols = args.symbols.split(",") if args.symbols else source_symbols(settings)
    years = parse_years(args.years, settings)
    with RunProgress(instance) as progress:
        run_graph(instance, symbols, years, lstm=args.lstm, settings_path=str(cs.path), overrides=cs.overrides,
                  tags=progress.tags, progress=progress)
    print(f"built {len(symbols)} symbols x {years[0]}..{years[-1]}; reports: {settings.reports_dir}")
    print_results(settings, years, symbols=len(symbols))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from pipeline.demo import run_demo

    return run_demo(load_settings())


def add_commands(sub) -> None:
    dp = sub.add_parser("demo", help="materialize the demo partitions and print a summary")
    dp.set_defaults(func=cmd_demo)
    bf = sub.add_parser("build-features", help="raw_bars, features, labels, specialists for symbols x years")
    bf.add_argument("--raw", help="a folder of CSV/Parquet bars to use as the source (default: settings universe)")
    bf.add_argument("--symbols", help="comma-separated (default: every symbol of the source)")
    bf.add_argument("--years", help="2005, 2005-2010 or 2005,2007 (default: settings years)")
    bf.add_argument("--workers", type=int, default=0, help="worker count (0: settings build.workers)")
    bf.add_argument("--strict", action="store_true", help="refuse dates that are not exchange sessions "
                    "(ingest.strict; default: a warning)")
    bf.set_defaults(func=cmd_build_features)
    ba = sub.add_parser("build-all", help="the whole chain: build, (LSTM), yearly stages, ATC scan")
    ba.add_argument("--symbols")
    ba.add_argument("--years")
    ba.add_argument("--lstm", action="store_true", help="also train the LSTM (slow on a CPU)")
    ba.add_argument("--strict", action="store_true", help="refuse dates that are not exchange sessions (ingest.strict)")
    ba.set_defaults(func=cmd_build_all)
