"""ProjectResource: the validated project settings, injected into assets."""

from __future__ import annotations

import logging

from dagster import ConfigurableResource, InitResourceContext

from config.settings import Settings, config_path, derive_settings, load_settings


class ProjectResource(ConfigurableResource):
    """`config_path`: a settings file; unset means $PIPELINE_CONFIG or dagster_project.yaml;
    `overrides`: JSON settings over it (a CLI command's flags, no file written).

    Every step of every run requires it, so it logs the runtime line at start
    (resources.compute.runtime_line: device, backend, threads, versions) and freezes the
    settings' experiment (config.experiments.freeze_experiment) and gives the run the
    experiment's tags when it has none (a run launched from the UI or the shell)."""

    config_path: str | None = None
    # JSON of settings applied over the file's (a command's flags, e.g. grid-search's), key by
    # key into nested sections; validated with the file's (config.settings.derive_settings)
    overrides: str | None = None

    def setup_for_execution(self, context: InitResourceContext) -> None:
        from resources.compute import runtime_line, select_device

        from config.experiments import freeze_experiment

        log = context.log if context.log is not None else logging.getLogger(__name__)
        # a run launched from the UI or a sensor is judged as a CLI command is: an experiment
        # with results refuses other model settings (config.experiments)
        settings = self.settings()
        freeze_experiment(settings)
        _tag_run(context, settings)
        policy = settings.device
        log.info(runtime_line(select_device(policy, log=log), policy))

    def settings(self) -> Settings:
        path = self.config_path or config_path()
        if self.overrides:
            return derive_settings(path, self.overrides)
        return load_settings(path)


def _tag_run(context: InitResourceContext, settings: Settings) -> None:
    """Give a run launched outside the CLI (the UI, `dagster asset materialize`, a sensor)
    the experiment's run tags the CLI's runs carry, so the Runs page filters every run by
    experiment; tags a run already has are left as they are."""
    from config.experiments import experiment_tags

    run, instance = context.dagster_run, context.instance
    if run is None or instance is None:
        return
    missing = {k: v for k, v in experiment_tags(settings).items() if k not in run.tags}
    if missing:
        instance.add_run_tags(run.run_id, missing)


class ReportsResource(ProjectResource):
    """The settings of a reader of every experiment's reports (experiment_summary, whose
    partitions are the experiments): ProjectResource without its run-time side effects. It
    freezes no experiment and tags no run, since the run writes under no experiment of the
    settings in force (a summary of experiment B from a session whose settings name A must
    neither create A nor be refused by A's settings)."""

    def setup_for_execution(self, context: InitResourceContext) -> None:
        return None
