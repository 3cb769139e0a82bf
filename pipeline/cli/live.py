"""Commands on the latest data: `live-paper-trade` (new bars in, then job live_paper_trade:
pipeline.live), `infer` (domain.live.inference on the stored data, JSON) and `atc-scan`
(the atc_scan asset, job atc_scan_job, then the stored table)."""

from __future__ import annotations

import argparse
import json
import sys

from config.experiments import experiment_tags
from config.settings import field_choices
from pipeline.cli.common import command_settings, resolved_job

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


def cmd_atc_scan(args: argparse.Namespace) -> int:
    """Materialize `atc_scan` (job atc_scan_job; the flags as in-memory settings), then print the stored table."""
    from domain.atc_scan import STATES
    from pipeline.instance import get_instance
    from pipeline.jobs import atc_scan_job
    from pipeline.run_report import console_run_config
    from pipeline.runs import raise_if_failed
    from resources.delta_store import DeltaStore

    atc = {k: v for k, v in {"scan_bars": args.bars, "robustness": args.robustness, "length": args.length}.items() if v}
    cs = command_settings({**({"atc": atc} if atc else {}), **({"device": args.device} if args.device else {})},
                          freeze=False)  # pipeline.cli.experiments froze the settings in force before the command
    settings = cs.settings
    res = resolved_job(cs, atc_scan_job).execute_in_process(instance=get_instance(), raise_on_error=False,
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


def add_commands(sub) -> None:
    ap_ = sub.add_parser("atc-scan", help="the current ATC state of every symbol in the store")
    ap_.add_argument("--bars", type=int, help="last N bars per symbol (default: settings atc.scan_bars)")
    ap_.add_argument("--robustness", choices=field_choices("atc", "robustness"), help="default: settings atc.robustness")
    ap_.add_argument("--length", type=int)
    ap_.add_argument("--device", choices=field_choices("device"), help="default: settings device")
    ap_.add_argument("--out", help="write the table (.parquet or .csv)")
    ap_.set_defaults(func=cmd_atc_scan)
    lp = sub.add_parser("live-paper-trade", help="latest bars -> inference -> paper orders -> log (job live_paper_trade)")
    lp.add_argument("--now", help="ISO date (default: the last stored bar)")
    lp.add_argument("--json", action="store_true", help="print the orders as JSON")
    lp.set_defaults(func=cmd_live_paper_trade)
    inf = sub.add_parser("infer", help="probabilities per horizon for symbols at a time (incremental path)")
    inf.add_argument("symbols", help="one symbol, or comma-separated for the batch variant")
    inf.add_argument("--now", help="ISO date/time (default: now): the last bar at or before it")
    inf.set_defaults(func=cmd_infer)
