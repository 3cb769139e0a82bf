"""What the CLI's command modules share: the settings of a command (the file in force with
the command's flags over it, in memory), year ranges, the jobs a command runs, and the
results block it prints.

A flag that changes a setting (--raw, --epochs, --horizon, --bars, ...) becomes an override
of this invocation alone: a JSON mapping applied over the file in force
(config.settings.derive_settings) and handed to the runs through
resources.project.ProjectResource `overrides`. No file is written; the file in force is
never modified; two commands at once never see each other's flags.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from config.settings import Settings, config_path, derive_settings, load_settings


@dataclass(frozen=True)
class CommandSettings:
    """The settings a command runs with: the file in force, the flags' overrides over it
    (JSON, None when no flag changes a setting) and the validated result."""

    path: Path
    overrides: str | None
    settings: Settings

    def resources(self) -> dict:
        """The Dagster resources of these settings (pipeline.definitions.build_resources)."""
        from pipeline.definitions import build_resources

        return build_resources(str(self.path), overrides=self.overrides)


def command_settings(overrides: dict | None = None, *, freeze: bool = True) -> CommandSettings:
    """The settings in force with `overrides` (a nested mapping) applied in memory and
    validated as one (an invalid value: SettingsError naming the key). `freeze`: the
    experiment is frozen (config.experiments: a changed model setting under a name with
    results stops here with one line)."""
    from config.experiments import freeze_experiment

    path = config_path()
    text = json.dumps(overrides, default=str) if overrides else None
    settings = derive_settings(path, text) if text else load_settings(path)
    if freeze:
        freeze_experiment(settings)
    return CommandSettings(path, text, settings)


def parse_years(text: str | None, settings) -> list[int]:
    """`2005`, `2005-2010` or `2005,2007`; default: the configured years."""
    if not text:
        return settings.years.all()
    out: list[int] = []
    for part in text.split(","):
        try:
            a, b = (int(x) for x in part.split("-", 1)) if "-" in part else (int(part), int(part))
        except ValueError:
            raise ValueError(f"--years {text}: {part!r} is not a year or a range; expected e.g. 2005, 2005-2010 or 2005,2006") from None
        if b < a:
            raise ValueError(f"--years {text}: the range {part} runs backwards; expected {b}-{a}")
        out.extend(range(a, b + 1))
    bad = [y for y in out if y not in settings.years.all()]
    if bad:
        raise ValueError(f"--years {text}: {bad} outside the configured years {settings.years.start}..{settings.years.last}")
    years = sorted(set(out))
    if years != list(range(years[0], years[-1] + 1)):
        raise ValueError(f"--years {text}: the years must be contiguous (runs cover ranges), got {years}")
    return years


def resolved_job(cs: CommandSettings, job):
    """`job` (a job of pipeline.jobs) resolved with the resources of the command's settings:
    a command's run carries the job's name in the UI."""
    from dagster import Definitions

    from pipeline.definitions import ALL_ASSETS

    return Definitions(assets=ALL_ASSETS, jobs=[job], resources=cs.resources()).resolve_job_def(job.name)


def stage_job(cs: CommandSettings, selection: list[str], command: str):
    """The year-partitioned `selection` as a job named after the command (`train_meta_job`,
    `evaluate_job`, ...: the UI names the run, not `__ephemeral_asset_job__`), with the
    resources of the command's settings."""
    from dagster import define_asset_job

    from resources.partitions import years_partitions

    job = define_asset_job(command.replace("-", "_") + "_job", selection=selection, partitions_def=years_partitions,
                           description=f"`pipeline.cli {command}`: {', '.join(selection)} of the selected years")
    return resolved_job(cs, job)


def materialize_years(cs: CommandSettings, selection: list[str], years: list[int], desc: str,
                      per_year: bool = False) -> None:
    """Materialize year-partitioned `selection` for `years`: one run over the range, or one
    run per year in order (per_year: walk-forward stages whose year Y reads Y-1's output);
    progress per run, step and finished year (pipeline.progress)."""
    from config.experiments import experiment_tags
    from pipeline.chain import year_range_tags
    from pipeline.instance import get_instance
    from pipeline.progress import RunProgress
    from pipeline.run_report import console_run_config
    from pipeline.runs import raise_if_failed

    instance = get_instance()
    job = stage_job(cs, selection, desc)
    tags = experiment_tags(cs.settings)
    batches = [[y] for y in years] if per_year else [years]
    with RunProgress(instance) as progress:
        for i, batch in enumerate(batches, start=1):
            if len(batches) > 1:
                progress.stage(f"{desc} {batch[0]}..{batch[-1]} ({i}/{len(batches)} runs)")
            res = job.execute_in_process(instance=instance, tags={**year_range_tags(batch), **tags, **progress.tags},
                                         raise_on_error=False, run_config=console_run_config())
            progress.poll()  # this run's last lines before its warnings or its error
            raise_if_failed(res, f"{desc} {batch[0]}..{batch[-1]}")


def print_results(settings, years: list[int], stages=None, symbols: int | None = None) -> None:
    """The results block of a command's stages (pipeline.results), then how many asset
    checks failed in its runs (their warning lines were printed as each run ended)."""
    from pipeline.results import STAGES, results_block
    from pipeline.run_report import failed_checks_line

    print(results_block(settings, years, stages or STAGES, symbols=symbols))
    print(f"  {failed_checks_line()}")
