"""CLI side of named experiments (config.experiments): `--experiment NAME`, `experiments`,
`compare A B [C ...]` and `migrate-reports`.

- `--experiment NAME` (anywhere on the line, like --verbose) runs the command with
  `experiment: NAME` over the file in force, carried in the environment
  ($PIPELINE_CONFIG_OVERRIDES, config.settings.env_overrides) for the command and the
  processes it starts; nothing is written, so nothing outlives the command however it ends
  (a SIGKILL included). The environment, not in-memory overrides as a command's other flags
  are: the experiment must hold for everything that reads the settings in force without a
  resource (pipeline.definitions and the sensors and schedules at import,
  domain.live.inference for `infer`, the error path) and in the processes the command starts
  (domain.symbol_chunks' worker processes, Dagster's multiprocess executor). Before a
  command that launches runs, the experiment is frozen (config.experiments.freeze_experiment):
  a changed model setting under a name that has results is refused with one line (exit 2).
- `experiments` lists the experiments under paths.reports: settings hash, created, years and
  symbols of their evaluation (`--json`); `--by FIGURE` (h7_rank_ic, backtest_sharpe, ...)
  ranks them best first on one overall figure, those without it last.
- `compare A B ...` prints what differs between the experiments (coverage, settings, code
  versions), then their headline figures side by side (domain.experiment_compare);
  `--common` recomputes the evaluation figures on the rows they share
  (domain.experiment_common); `--json` for machines.
- `report [NAME ...]` (default: every experiment) registers the experiments as partitions of
  `experiment_summary` and materializes them (job `experiment_summary_job`): each
  experiment's headline figures become numeric metadata the UI plots by partition, and its
  report one self-contained HTML file (domain.experiment_report); prints one line per
  experiment with the file's path.
- `migrate-reports` moves a store of the layout before experiments (reports/eval, reports/cv,
  reports/meta, reports/paper, reports/<stage>, models/*, the model-dependent tables under
  paths.data) into the settings' experiment; nothing existing is overwritten.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator

from config.settings import (EXPERIMENT_PATTERN, LEGACY_REPORT_DIRS, OVERRIDES_ENV, STAGE_DIRS, config_path,
                             env_overrides, merge_settings)

# Commands that launch Dagster runs (and so write under the experiment).
RUN_COMMANDS = {"build-features", "train-lstm", "train-meta", "backtest", "evaluate", "build-all", "live-paper-trade",
                "strategy-search", "demo", "grid-search", "atc-scan"}


@contextlib.contextmanager
def overrides_in_force(overrides: dict) -> Iterator[None]:
    """`overrides` (a nested mapping) over the settings in force, for the block and the
    processes started in it: merged into $PIPELINE_CONFIG_OVERRIDES (what is there already
    stays, key by key), validated (SettingsError naming the key), and the variable restored
    on exit. Nothing is written: no file can outlive the command, the file in force is never
    modified, two commands at once never see each other's flags."""
    from config.settings import load_settings

    before = os.environ.get(OVERRIDES_ENV)
    if overrides:
        os.environ[OVERRIDES_ENV] = json.dumps(merge_settings(env_overrides(config_path()), overrides))
    try:
        if overrides:
            load_settings()
        yield
    finally:
        if before is None:
            os.environ.pop(OVERRIDES_ENV, None)
        else:
            os.environ[OVERRIDES_ENV] = before


def take_experiment_flag(argv: list[str]) -> tuple[list[str], str | None]:
    """(argv without `--experiment NAME` / `--experiment=NAME`, NAME or None); ValueError
    (one line) for a missing or malformed name."""
    out, name = [], None
    it = iter(range(len(argv)))
    for i in it:
        arg = argv[i]
        if arg == "--experiment" or arg.startswith("--experiment="):
            if arg == "--experiment":
                if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                    raise ValueError("--experiment: a name is missing; expected e.g. --experiment baseline")
                name = argv[i + 1]
                next(it)
            else:
                name = arg.split("=", 1)[1]
            if not EXPERIMENT_PATTERN.fullmatch(name):
                raise ValueError(f"--experiment {name!r}: not an experiment name; expected 1-64 letters, digits, "
                                 "'.', '_' or '-', starting with a letter or digit")
            if name in STAGE_DIRS or name in LEGACY_REPORT_DIRS:
                raise ValueError(f"--experiment {name!r}: the name of a stage's report folder; expected another "
                                 "experiment name")
            continue
        out.append(arg)
    return out, name


@contextlib.contextmanager
def experiment_in_force(name: str | None, command: str) -> Iterator[None]:
    """Make `name` the experiment of this command and the processes it starts (None: the
    settings' own) for the block, then freeze the experiment when the command launches runs."""
    from config.experiments import freeze_experiment
    from config.settings import load_settings

    with overrides_in_force({"experiment": name} if name is not None else {}):
        if command in RUN_COMMANDS:
            freeze_experiment(load_settings())
        yield


def _print_ranked(rows: list[dict], figure: str, settings) -> None:
    from domain.experiment_compare import format_figure

    print(f"{'rank':<6}{'experiment':<20}{figure:>18}  {'settings':<14}{'years':<12}{'symbols':>8}")
    for r in rows:
        years = f"{r['years'][0]}..{r['years'][-1]}" if r["years"] else "-"
        print(f"{r['rank'] or '-':<6}{r['experiment']:<20}{format_figure(figure, r['value']):>18}  "
              f"{r['settings_hash'] or '-':<14}{years:<12}{r['symbols'] if r['symbols'] is not None else '-':>8}")
    print(f"best first by {figure} (smaller first for brier, max drawdown's magnitude and turnover); "
          f"reports: {settings.reports_root}/<experiment>/<stage>/")


def cmd_experiments(args: argparse.Namespace) -> int:
    from config.settings import load_settings
    from domain.experiment_compare import list_experiments, rank

    settings = load_settings()
    if args.by:
        rows = rank(settings.reports_root, args.by, settings.labels.horizons)
        if args.json:
            print(json.dumps(rows, indent=2))
        elif not rows:
            print(f"no experiment under {settings.reports_root} yet (run a command with --experiment NAME)")
        else:
            _print_ranked(rows, args.by, settings)
        return 0
    rows = list_experiments(settings.reports_root)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no experiment under {settings.reports_root} yet (run a command with --experiment NAME)")
        return 0
    print(f"{'experiment':<20}{'settings':<14}{'created':<22}{'years':<12}{'symbols':>8}")
    for r in rows:
        years = f"{r['years'][0]}..{r['years'][-1]}" if r["years"] else "-"
        print(f"{r['experiment']:<20}{r['settings_hash'] or '-':<14}{r['created_at'] or '-':<22}{years:<12}"
              f"{r['symbols'] if r['symbols'] is not None else '-':>8}")
    print(f"reports: {settings.reports_root}/<experiment>/<stage>/")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from config.settings import load_settings
    from domain.experiment_compare import compare, format_table

    if len(args.names) < 2:
        raise ValueError(f"compare: {len(args.names)} experiment named; expected two or more, e.g. compare baseline momentum")
    settings = load_settings()
    common = None
    if args.common:
        from domain.experiment_common import common_figures
        from domain.experiment_compare import check_names

        check_names(settings.reports_root, args.names)
        common = common_figures(settings, args.names)
    result = compare(settings.reports_root, args.names, common=common)
    print(json.dumps(result, indent=2) if args.json else format_table(result))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from dagster import Definitions

    from config.settings import load_settings
    from domain.experiment_compare import check_names, experiment_names
    from domain.experiment_report import headline, report_path
    from pipeline.cli.common import command_settings
    from pipeline.definitions import ALL_ASSETS
    from pipeline.instance import get_instance
    from pipeline.jobs import experiment_summary_job
    from pipeline.run_report import console_run_config
    from pipeline.runs import raise_if_failed
    from resources.partitions import register_experiments

    settings = load_settings()
    root = settings.reports_root
    names = args.names or experiment_names(root)
    if not names:
        print(f"no experiment under {root} yet (run a command with --experiment NAME)")
        return 0
    check_names(root, names, "report")
    instance = get_instance()
    added = register_experiments(instance, names)
    cs = command_settings(freeze=False)  # reads reports only: no experiment is frozen
    job = Definitions(assets=ALL_ASSETS, jobs=[experiment_summary_job],
                      resources=cs.resources()).resolve_job_def(experiment_summary_job.name)
    for name in names:
        res = job.execute_in_process(instance=instance, partition_key=name, raise_on_error=False,
                                     run_config=console_run_config())
        raise_if_failed(res, f"report {name}")
        figs = headline(root, name)
        shown = ", ".join(f"{k} {figs[k]:.4g}" for k in ("h7_auc", "h7_rank_ic", "backtest_sharpe", "backtest_cagr",
                                                          "backtest_excess_return") if k in figs)
        print(f"{name:<20}{len(figs):>3} figures ({shown or 'none yet'}); report {report_path(root, name)}")
    print(f"experiment_summary: {len(names)} partition(s) materialized ({len(added)} new); in the UI: "
          "Assets > experiment_summary > Plots, by partition")
    return 0


def cmd_migrate_reports(args: argparse.Namespace) -> int:
    from config.settings import load_settings
    from domain.experiment_migrate import migrate_layout

    settings = load_settings()
    moved, kept = migrate_layout(settings, dry_run=args.dry_run)
    verb = "would move" if args.dry_run else "moved"
    for src, dst in moved:
        print(f"{verb} {src} -> {dst}")
    for src, dst in kept:
        print(f"warning: kept {src}: {dst} exists already", file=sys.stderr)
    print(f"{verb} {len(moved)} item(s) into experiment {settings.experiment!r}; {len(kept)} left in place")
    return 0


def add_commands(sub) -> None:
    ex = sub.add_parser("experiments", help="the named experiments: settings hash, created, years, symbols")
    ex.add_argument("--json", action="store_true")
    ex.add_argument("--by", metavar="FIGURE", help="rank the experiments best first on one overall figure, e.g. "
                    "h7_rank_ic, h7_auc, backtest_sharpe (smaller first: brier, max drawdown's magnitude, turnover)")
    ex.set_defaults(func=cmd_experiments)
    cp = sub.add_parser("compare", help="the headline figures of experiments side by side, with differences "
                        "and t-statistics over years")
    cp.add_argument("names", nargs="+", help="two or more experiment names; the first is the baseline")
    cp.add_argument("--json", action="store_true")
    cp.add_argument("--common", action="store_true", help="recompute the evaluation figures on the (symbol, date) "
                    "rows every experiment has a finite prediction for (reads the predictions and labels tables)")
    cp.set_defaults(func=cmd_compare)
    rp = sub.add_parser("report", help="each experiment's headline figures as metadata of experiment_summary "
                        "(partitions: the experiments) and its report as one self-contained HTML file")
    rp.add_argument("names", nargs="*", help="experiment names (default: every experiment under paths.reports)")
    rp.set_defaults(func=cmd_report)
    mr = sub.add_parser("migrate-reports", help="move reports/models/tables of the layout before experiments into "
                        "the settings' experiment (default: `default`)")
    mr.add_argument("--dry-run", action="store_true", help="list what would move, move nothing")
    mr.set_defaults(func=cmd_migrate_reports)
