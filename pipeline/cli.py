"""Command line: `python -m pipeline.cli <command>`.

    symbols sync     register every symbol of the configured source in DAGSTER_HOME
    symbols list     the registered symbols
    demo             the main job on the built-in data, with a summary
"""

from __future__ import annotations

import argparse
import sys

from assets.errors import InputDataError
from pipeline.settings import SettingsError, load_settings


def _symbols(args: argparse.Namespace) -> int:
    from pipeline.instance import get_instance
    from pipeline.partitions import SYMBOLS
    from pipeline.symbols import sync_symbols

    instance = get_instance()
    if args.action == "sync":
        added = sync_symbols(instance, load_settings())
        total = len(instance.get_dynamic_partitions(SYMBOLS))
        print(f"registered {len(added)} new symbol(s); {total} in all" + (f": {', '.join(added)}" if added else ""))
    else:
        for sym in instance.get_dynamic_partitions(SYMBOLS):
            print(sym)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from pipeline.demo import run_demo

    return run_demo(load_settings())


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pipeline.cli", description="tradelab pipeline commands")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("symbols", help="register or list the symbols partitions")
    sp.add_argument("action", choices=["sync", "list"])
    sp.set_defaults(func=_symbols)
    dp = sub.add_parser("demo", help="materialize the demo partitions and print a summary")
    dp.set_defaults(func=_demo)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SettingsError, InputDataError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
