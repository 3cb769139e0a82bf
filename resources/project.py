"""ProjectResource: the validated project settings, injected into assets."""

from __future__ import annotations

import logging

from dagster import ConfigurableResource, InitResourceContext

from config.settings import Settings, config_path, load_settings


class ProjectResource(ConfigurableResource):
    """`config_path`: a settings file; unset means $PIPELINE_CONFIG or dagster_project.yaml.

    Every step of every run requires it, so it logs the runtime line at start
    (resources.compute.runtime_line: device, backend, threads, versions) and freezes the
    settings' experiment (config.experiments.freeze_experiment)."""

    config_path: str | None = None

    def setup_for_execution(self, context: InitResourceContext) -> None:
        from resources.compute import runtime_line, select_device

        from config.experiments import freeze_experiment

        log = context.log if context.log is not None else logging.getLogger(__name__)
        # a run launched from the UI or a sensor is judged as a CLI command is: an experiment
        # with results refuses other model settings (config.experiments)
        freeze_experiment(self.settings())
        policy = self.settings().device
        log.info(runtime_line(select_device(policy, log=log), policy))

    def settings(self) -> Settings:
        return load_settings(self.config_path or config_path())
