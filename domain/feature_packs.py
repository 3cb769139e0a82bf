"""The feature packs of the settings (`features.packs`, `features.plugins`), resolved.

`feature_selection(settings)` imports the plugin modules and returns the
kernels.registry.packs.Selection that the features and specialists stages, the Dagster code
versions, the live path and `meta.inputs` read. Anything unusable (an unknown pack, a
plugin that cannot be imported or defines no packs, an entry without a name or formula, a
column that another pack already makes) is a SettingsError of one line naming the setting
and what was expected (exit code 2 from the CLI).
"""

from __future__ import annotations

from config.settings import FeatureSettings, Settings, SettingsError
from kernels.registry.packs import Selection, select


def feature_selection(settings: Settings | FeatureSettings | None = None) -> Selection:
    """The Selection of `settings.features` (None: the default, the `core` pack)."""
    if settings is None:
        return select()
    features = settings.features if isinstance(settings, Settings) else settings
    try:
        return select(tuple(features.packs), tuple(features.plugins))
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
