"""The learning stages, each the year-partitioned assets the Dagster jobs materialize, run as
a job named after the command: `train-lstm` (lstm_model, one run per year: walk-forward),
`train-meta` (regime, meta_model, predictions), `backtest` and `evaluate`."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from config.settings import field_choices
from pipeline.cli.common import command_settings, materialize_years, parse_years, print_results


def cmd_train_lstm(args: argparse.Namespace) -> int:
    lstm = {k: v for k, v in {"seq_len": args.seq_len, "epochs": args.epochs, "max_steps": args.max_steps}.items() if v}
    overrides: dict = {"lstm": lstm} if lstm else {}
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
    cs = command_settings(overrides)
    years = parse_years(args.years, cs.settings)
    materialize_years(cs, ["lstm_model"], years, "train-lstm", per_year=True)
    print(f"models: {cs.settings.models_dir}/lstm_*.pt")
    return 0


def cmd_train_meta(args: argparse.Namespace) -> int:
    cs = command_settings({"meta": {"horizons": [args.horizon]}} if args.horizon else {})
    settings = cs.settings
    years = parse_years(args.years, settings)
    materialize_years(cs, ["regime", "meta_model", "predictions"], years, "train-meta")
    hs = settings.meta.horizons or settings.labels.horizons
    for y in years:
        for h in hs:
            path = settings.stage_reports_dir("meta_model") / f"h{h}_{y}.json"
            if path.exists():
                report = json.loads(path.read_text())
                print(meta_year_line(report, h, y))
                if line := importance_line(report):
                    print(f"  {line}")
    print_results(settings, years, ("meta_model",))
    print(f"models: {settings.models_dir}/meta_h*_*.npz")
    return 0


def meta_year_line(m: dict, h: int, year: int) -> str:
    """One (year, horizon) meta model: its out-of-sample AUC and Brier of that year, what they
    stand on (domain.learning.coverage: symbols and rows used of those available, and why the
    rest were left out) and the input groups it was trained on."""
    from domain.learning.coverage import coverage_note

    fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731  (no labelled rows yet)
    cov = (m.get("coverage") or {}).get("test")
    stands = coverage_note(cov) if cov else f"{m.get('n', 'n/a')} rows, {m.get('symbols', 'n/a')} symbols"
    inputs = f"; inputs {'+'.join(m['inputs'])} ({m['input_columns']} columns, missing {m['missing']})" \
        if m.get("inputs") else ""
    return f"meta h{h} {year}: AUC {year} {fmt(m.get('auc'))}, Brier {fmt(m.get('brier'))} ({stands}){inputs}"


def importance_line(m: dict, top: int = 10) -> str | None:
    """`importance (<kind>): c1 0.231, c2 0.118, ...` of a meta model report's top `top`
    columns; None when the model kind has none."""
    imp = m.get("importance")
    if not isinstance(imp, dict) or not imp.get("values"):
        return None
    items = list(imp["values"].items())[:top]
    return f"importance ({imp['kind']}): " + ", ".join(f"{c} {v:.3f}" for c, v in items)


def parse_sweep(text: str) -> dict[str, list[float]]:
    """`--sweep "topk=10,20,50 n_drop=1,5"` (parameters separated by spaces or `;`) -> the grid
    mapping of backtest.sweep.grid; a malformed part is a ValueError of one line."""
    grid: dict[str, list[float]] = {}
    for part in text.replace(";", " ").split():
        name, _, values = part.partition("=")
        try:
            grid[name] = [float(v) for v in values.split(",") if v]
        except ValueError:
            raise ValueError(f"--sweep {text!r}: {part!r} is not NAME=V1,V2,...; expected e.g. topk=10,20,50") from None
        if not name or not grid[name]:
            raise ValueError(f"--sweep {text!r}: {part!r} is not NAME=V1,V2,...; expected e.g. topk=10,20,50")
    return grid


def cmd_backtest(args: argparse.Namespace) -> int:
    flags: dict = {"horizon": args.horizon, "strategy": args.strategy}
    flags = {k: v for k, v in flags.items() if v is not None}
    sweep = {k: v for k, v in {"grid": parse_sweep(args.sweep) if args.sweep else None,
                               "sort_by": args.sort_by}.items() if v is not None}
    if sweep:
        flags["sweep"] = sweep
    cs = command_settings({"backtest": flags} if flags else {})
    years = parse_years(args.years, cs.settings)
    materialize_years(cs, ["backtest"], years, "backtest")
    if args.log:
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cs.settings.stage_reports_dir("backtest") / "daily.jsonl", args.log)
    print_results(cs.settings, years, ("backtest",))
    if cs.settings.backtest.sweep.grid:
        from domain.backtest_sweep import sweep_lines

        report = json.loads((cs.settings.stage_reports_dir("backtest") / "sweep.json").read_text())
        print("\n".join(sweep_lines(report, cs.settings.backtest.sweep.top)))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    cs = command_settings()
    years = parse_years(args.years, cs.settings)
    materialize_years(cs, ["evaluation"], years, "evaluate")
    print_results(cs.settings, years, ("evaluation",))
    return 0


def cmd_migrate_models(args: argparse.Namespace) -> int:
    """Convert the experiment's pickled meta models of before to arrays (persistence.migrate_pickled)."""
    from config.settings import load_settings
    from domain.learning.persistence import migrate_pickled

    settings = load_settings()
    pickles = sorted(settings.models_dir.glob("meta_h*_*.joblib"))
    if not pickles:
        print(f"no pickled meta model under {settings.models_dir}: nothing to migrate")
        return 0
    for path in pickles:
        out = migrate_pickled(path, extra=lambda old, p=path: {"provenance": migrated_provenance(settings, p, old)})
        print(f"migrated {path.name} -> {out.name} (the pickle moved to {path.parent / '.pickled'})")
    print(f"{len(pickles)} meta model(s) migrated under {settings.models_dir}")
    return 0


def migrated_provenance(settings, path: Path, old: dict) -> dict:
    """The provenance of a migrated model: its partition from the file name, checked against its
    recorded training window (the horizon, trained through the year before: a renamed model is
    refused), its kind from the sidecar, the experiment and settings hash in force (the
    experiment's manifest froze them while the pickle was written), marked `migrated`."""
    import re

    from domain.learning.provenance import provenance

    h, y = map(int, re.fullmatch(r"meta_h(\d+)_(\d+)\.joblib", path.name).groups())
    window = old.get("window") or {}
    if window.get("horizon") != h or not str(window.get("train_to", ""))[:4] == str(y - 1):
        raise ValueError(f"{path}: its training window (horizon {window.get('horizon')}, trained through "
                         f"{window.get('train_to')}) is not that of meta_h{h}_{y} (horizon {h}, trained through {y - 1}); "
                         "not migrated: a renamed or misplaced model; expected the file meta_model wrote for that "
                         "partition, or materialize meta_model again")
    return old.get("provenance") or {**provenance(settings, year=y, horizon=h, kind=old.get("kind", settings.meta.model)),
                                     "migrated": True}


def add_commands(sub) -> None:
    mm = sub.add_parser("migrate-models", help="convert the experiment's pickled meta models of before to arrays "
                        "(each verified against its recorded sha256 first)")
    mm.set_defaults(func=cmd_migrate_models)
    tl = sub.add_parser("train-lstm", help="the LSTM specialist, year by year (walk-forward)")
    tl.add_argument("--years")
    tl.add_argument("--seq-len", type=int)
    tl.add_argument("--epochs", type=int)
    tl.add_argument("--max-steps", type=int)
    tl.add_argument("--device", choices=field_choices("device"), help="default: settings device")
    tl.add_argument("--strict-device", action="store_true", help="with --device cuda or rocm: stop (exit 3) when torch "
                    "sees no GPU instead of training on the CPU")
    tl.set_defaults(func=cmd_train_lstm)
    tm = sub.add_parser("train-meta", help="regime, meta models and predictions of the years")
    tm.add_argument("--horizon", type=int, help="train this horizon only (default: every labels.horizons)")
    tm.add_argument("--years")
    tm.set_defaults(func=cmd_train_meta)
    bt = sub.add_parser("backtest", help="the portfolio backtest of the stored predictions")
    bt.add_argument("--log", help="also copy the day log (JSON lines) here")
    bt.add_argument("--horizon", type=int, help="the p_h{H} that drives the weights (default: settings)")
    bt.add_argument("--strategy", choices=field_choices("backtest", "strategy"),
                    help="the weight rule (default: settings backtest.strategy; its parameters are settings)")
    bt.add_argument("--sweep", help='also backtest this grid in one pass, e.g. "topk=10,20,50 n_drop=1,5 fee_bps=0,10" '
                    "(default: settings backtest.sweep.grid; docs/learning.md, Sweeps)")
    bt.add_argument("--sort-by", choices=field_choices("backtest", "sweep", "sort_by"),
                    help="the figure the sweep's table is sorted by (default: settings backtest.sweep.sort_by)")
    bt.add_argument("--years")
    bt.set_defaults(func=cmd_backtest)
    ev = sub.add_parser("evaluate", help="AUC, PR-AUC, Brier, IC, deciles by regime of the stored predictions")
    ev.add_argument("--years")
    ev.set_defaults(func=cmd_evaluate)
