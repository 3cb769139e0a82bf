"""ProjectResource: the validated project settings, injected into assets."""

from __future__ import annotations

from dagster import ConfigurableResource

from config.settings import Settings, config_path, load_settings


class ProjectResource(ConfigurableResource):
    """`config_path`: a settings file; unset means $PIPELINE_CONFIG or dagster_project.yaml."""

    config_path: str | None = None

    def settings(self) -> Settings:
        return load_settings(self.config_path or config_path())
