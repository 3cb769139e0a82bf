"""Store and instance maintenance: `symbols sync|list|remove` (the symbols partitions,
pipeline.symbols), `migrate-store` (hive Parquet -> Delta tables), `migrate-partitions`
(pipeline.migrate_partitions), `repair-store` (resources.delta_repair) and `prune-runs`
(pipeline.maintenance)."""

from __future__ import annotations

import argparse
import sys

from config.settings import load_settings


def cmd_symbols(args: argparse.Namespace) -> int:
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


def cmd_migrate_store(args: argparse.Namespace) -> int:
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


def cmd_migrate_partitions(args: argparse.Namespace) -> int:
    from pipeline.instance import get_instance
    from pipeline.migrate_partitions import migrate
    from resources.delta_store import DeltaStore

    settings = load_settings()
    print(migrate(get_instance(), settings.partitions.symbols_per_group, DeltaStore(settings.data_dir)).line())
    return 0


def cmd_repair_store(args: argparse.Namespace) -> int:
    """Repair every Delta table under paths.data (experiment tables included), finishing first a
    repair a kill interrupted (its journal); one line per table, the quarantine folders, then
    how to rebuild."""
    from resources.delta_repair import quarantine_folders, repair_store

    settings = load_settings()
    root = settings.data_dir
    reports = repair_store(root, dry_run=args.dry_run)
    for report in reports:
        print(report.line(dry_run=args.dry_run))
    damaged = [r for r in reports if r.damaged]
    print(f"{len(damaged)} of {len(reports)} table(s) under {root} "
          + ("damaged (dry run: nothing changed)" if args.dry_run else "repaired" if damaged else "damaged"))
    folders = quarantine_folders(root)
    if folders:
        print("quarantine folders (moved log files, never deleted, this repair's and earlier ones): "
              + ", ".join(str(f.relative_to(root)) for f in folders))
    example = next(((r, k) for r in damaged for k in r.rebuild if not k.startswith("(")), None)
    if example:
        report, key = example
        parts = report.name.split("/")  # experiments/<name>/<asset>: rebuilt with that experiment in force
        other = f" (with `experiment: {parts[1]}` in the settings)" if (
            len(parts) == 3 and parts[0] == "experiments" and parts[1] != settings.experiment) else ""
        print(f"then re-materialize the partitions listed after `rebuild:`, e.g. dagster asset materialize "
              f"-m pipeline.definitions --select {report.table.name} --partition '{key}'{other}")
    return 0


def cmd_prune_runs(args: argparse.Namespace) -> int:
    """Delete old finished runs from DAGSTER_HOME (default age: automation.run_retention_days)."""
    from pipeline.instance import get_instance
    from pipeline.maintenance import prune_runs

    days = args.older_than_days if args.older_than_days is not None else load_settings().automation.run_retention_days
    report = prune_runs(get_instance(), days, dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    print(f"{verb} {len(report.deleted)} run(s) finished more than {days:g} day(s) ago ({report.bytes_freed:,} bytes of "
          f"run shards); kept {len(report.kept_for_assets)} old run(s) that hold the latest materialization of a partition")
    return 0


def add_commands(sub) -> None:
    sp = sub.add_parser("symbols", help="register, list or remove the symbols partitions")
    sp.add_argument("action", choices=["sync", "list", "remove"])
    sp.add_argument("names", nargs="*", help="remove: the symbols to unregister (their stored data stays)")
    sp.add_argument("--prune", action="store_true", help="sync: also unregister symbols the source does not hold "
                    "(done without asking when the source changed since the last sync)")
    sp.set_defaults(func=cmd_symbols)
    mp = sub.add_parser("migrate-store", help="convert an old hive Parquet store into Delta tables under paths.data")
    mp.add_argument("--from", dest="source", required=True, help="the old data dir (<asset>/symbol=<S>/year=<Y>/part.parquet)")
    mp.set_defaults(func=cmd_migrate_store)
    mpp = sub.add_parser("migrate-partitions", help="move the Dagster instance to partitions.symbols_per_group "
                                                     "(groups <-> a key per symbol); the Delta tables are unchanged")
    mpp.set_defaults(func=cmd_migrate_partitions)
    rp = sub.add_parser("repair-store", help="repair damaged Delta tables under paths.data and list what to rebuild")
    rp.add_argument("--dry-run", action="store_true", help="report the damage and the repair, change nothing")
    rp.set_defaults(func=cmd_repair_store)
    pr = sub.add_parser("prune-runs", help="delete finished Dagster runs older than N days, with their events")
    pr.add_argument("--older-than-days", type=float, help="default: settings automation.run_retention_days")
    pr.add_argument("--dry-run", action="store_true", help="report what would be deleted, delete nothing")
    pr.set_defaults(func=cmd_prune_runs)
