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
from kernels.registry.features import EntryError
from kernels.registry.packs import Pack, Selection, select


def feature_selection(settings: Settings | FeatureSettings | None = None) -> Selection:
    """The Selection of `settings.features` (None: the default, the `core` pack), its `atc`
    specialist with the parameters of `settings.atc` (as the scanner's) when given Settings."""
    if settings is None:
        return select()
    features = settings.features if isinstance(settings, Settings) else settings
    atc = settings.atc.specialist_params() if isinstance(settings, Settings) else ()
    try:
        return select(tuple(features.packs), tuple(features.plugins), atc)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def entry_failure(chosen: Selection, err: EntryError) -> Exception:
    """What to raise for a feature or specialist entry of `chosen` that raised or returned a
    wrong-shaped result. A plugin's: a SettingsError (exit 2 from the CLI) of one line,
    `features plugin <module>.<entry> (column <col>): <what happened>; expected <what>`. A
    built-in pack's entry is the project's own failure: the original exception."""
    pack = next((p for p in chosen.packs if any(e.name == err.entry for e in (*p.features, *p.specialists))), None)
    if pack is None or pack.origin == Pack.origin:
        return err.__cause__ or err
    return SettingsError(f"features plugin {pack.origin}.{err.entry} (column {err.column}): {err.what}; "
                         f"expected {err.expected}")


def plugin_entries(chosen: Selection) -> dict[str, dict]:
    """{plugin module: {"source": the first 16 hex digits of the SHA-256 of the module's
    source file, "entries": {"<pack>/<entry>": its declared version}}} of the plugin packs of
    `chosen` (built-in packs are left out): the identity of every plugin entry, so that
    editing a plugin's formula changes it even when its `version` was not bumped. Only the
    module's own file is hashed: a formula imported from another file is covered by its
    entry's `version`."""
    import hashlib
    import sys
    from pathlib import Path

    out: dict[str, dict] = {}
    for pack in chosen.packs:
        if pack.origin == "kernels.registry.packs":
            continue
        if pack.origin not in out:
            path = getattr(sys.modules.get(pack.origin), "__file__", None)
            try:
                source = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] if path else None
            except OSError:
                source = None
            out[pack.origin] = {"source": source, "entries": {}}
        entries = out[pack.origin]["entries"]
        for e in (*pack.features, *pack.specialists):
            entries[f"{pack.name}/{e.name}"] = str(e.version)
    return out


def _main(argv: list[str]) -> int:
    """`python -m domain.feature_packs PACKS_JSON PLUGINS_JSON [ATC_JSON]`: prints the code
    versions {"features", "specialists", "plugins"} as JSON (config.pack_versions runs this
    so that loading the code location imports no kernel; `plugins`: plugin_entries), or the
    one-line error on stderr with exit code 2. ATC_JSON: the `atc` specialist's [name,
    value] pairs."""
    import json
    import sys

    atc = tuple(tuple(pair) for pair in json.loads(argv[2])) if len(argv) > 2 else ()
    try:
        chosen = select(tuple(json.loads(argv[0])), tuple(json.loads(argv[1])), atc)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(json.dumps({"features": chosen.features_version, "specialists": chosen.specialists_version,
                      "plugins": plugin_entries(chosen)}))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_main(sys.argv[1:]))
