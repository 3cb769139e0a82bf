"""Command line: `python -m pipeline.cli <command>` (or the `tradelab` script): `main` and
`build_parser`; each command group is one module that adds its commands (`add_commands`)
and names each command's function `cmd_<command>`:

    pipeline.cli.build        demo, build-features, build-all
    pipeline.cli.learning     train-lstm, train-meta, backtest, evaluate
    pipeline.cli.live         live-paper-trade, infer, atc-scan
    pipeline.cli.search       grid-search, grid-data, strategy-search
    pipeline.cli.store        symbols sync|list|remove, migrate-store, migrate-partitions, repair-store, prune-runs
    pipeline.cli.experiments  --experiment NAME, experiments, compare, migrate-reports

A command that runs a stage runs the job the assets belong to (pipeline.jobs, or the
selected stages as a job named after the command), so it calls the same stage function the
asset calls; its flags are settings applied in memory (pipeline.cli.common.command_settings).
`pipeline.cli.errors` is the failure path of `main`.
"""

from __future__ import annotations

import argparse
import sys

from config.errors import InputDataError
from config.settings import SettingsError, load_settings
from pipeline.cli import build, experiments, learning, live, search, store
from pipeline.cli.experiments import experiment_in_force, take_experiment_flag

GROUPS = (store, build, search, live, learning, experiments)  # the order of `--help`


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pipeline.cli", description="tradelab pipeline commands")
    ap.add_argument("--verbose", action="store_true", help="show Dagster's events of the runs on the console "
                    "(anywhere on the line; otherwise a failed run's events go to DAGSTER_HOME/logs/<run id>.log)")
    ap.add_argument("--experiment", metavar="NAME", help="the named experiment of the command's models, reports and "
                    "runs (anywhere on the line; default: settings `experiment`, else `default`)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for group in GROUPS:
        group.add_commands(sub)
    return ap


def _print_runtime_line() -> None:
    """The runtime line (device, backend, thread defaults, versions): one line on stderr before any work."""
    from resources.compute import runtime_line, select_device

    try:
        policy = load_settings().device
    except SettingsError:
        return  # the command itself reports the settings error as its one line
    print(runtime_line(select_device(policy), policy), file=sys.stderr)


def _print_loading_line(command: str) -> None:
    """A command that launches runs says what it does first, before the seconds of loading
    the Dagster definitions, syncing symbols and starting the run (pipeline.progress then
    takes over); nothing when progress is off (TRADELAB_PROGRESS=0)."""
    import datetime as dt

    from pipeline.cli.experiments import RUN_COMMANDS
    from pipeline.progress import progress_enabled

    if command in RUN_COMMANDS and progress_enabled():
        now = dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        print(f"progress: {now} {command}: loading the pipeline (settings, symbols, the Dagster definitions)",
              file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run one command. A failure is one line on stderr, first: exit 2 when the user's input,
    flags or settings caused it, 1 for the environment (disk full, read-only: the line names
    the path) or a failed run of another cause. Dagster's console output of the runs is off
    unless `--verbose` (anywhere on the line); a failed run's events go to a log file named
    on the error's second line (pipeline.run_report)."""
    from pipeline.cli.errors import Fd2ToFile, environment_line, keep_fd2_output, user_cause
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
        with experiment_in_force(experiment, args.cmd):
            _print_runtime_line()
            _print_loading_line(args.cmd)
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

