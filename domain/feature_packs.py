"""The feature packs of the settings (`features.packs`, `features.plugins`), resolved.

`feature_selection(settings)` imports the plugin modules and returns the
kernels.registry.packs.Selection that the features and specialists stages, the Dagster code
versions, the live path and `meta.inputs` read. Anything unusable (an unknown pack, a
plugin that cannot be imported or defines no packs, an entry without a name or formula, a
column that another pack already makes, a column name that is not letters, digits and _) is
a SettingsError of one line naming the setting and what was expected (exit code 2 from the
CLI). Plugins are found in `features.plugin_paths` (relative to the settings file's folder),
put first on sys.path in every process that selects packs: no PYTHONPATH is needed.

Loading a plugin module is done here (`load_plugin_packs`: the plugin folders first on
sys.path, then importlib), registered with kernels.registry.packs as its plugin loader when
this module is imported: `select` (re-exported here) and the live path's SymbolStream, which
select again by name in workers, find plugins through it.

`column_owners(selection)` names, for every column the selection writes to the shared
`features` and `specialists` tables, its owner and the hash of its definition: what
resources.column_owners records with the table, so that a different definition under the
same name is refused before it is written.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import sys
import types

from config.settings import PROJECT_ROOT, FeatureSettings, Settings, SettingsError
from kernels.registry.features import EntryError
from kernels.registry.packs import Pack, Selection, Specialist, plugin_packs, register_plugin_loader, select

__all__ = ["add_plugin_paths", "column_owners", "claim_owners", "definition_hash", "entry_failure", "feature_selection",
           "load_plugin_packs", "plugin_entries", "select"]

BUILTIN_ORIGIN = Pack.origin  # the origin of the built-in packs (core, alpha158)


def add_plugin_paths(paths: tuple[str, ...]) -> None:
    """Put the folders `paths` first on sys.path, in order; a folder already there is left
    where it is (idempotent: calling again changes nothing)."""
    missing = [p for p in paths if p not in sys.path]
    if missing:
        sys.path[:0] = missing
        importlib.invalidate_caches()


def load_plugin_packs(module_name: str, paths: tuple[str, ...] = ()) -> list[Pack]:
    """Import the plugin module `module_name` (found in the folders `paths`, settings
    `features.plugin_paths`, else on sys.path) and return its packs (kernels.registry.packs.plugin_packs);
    ValueError of one line naming the setting when it cannot be imported or declares none."""
    add_plugin_paths(paths)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an ImportError, or anything the module raised while loading
        found = f"in features.plugin_paths {list(paths)} or on sys.path" if paths else \
            "on sys.path (name its folder in features.plugin_paths)"
        raise ValueError(f"features.plugins: module {module_name!r} cannot be imported ({type(exc).__name__}: {exc}); "
                         f"expected an importable module {found} that defines PACKS") from None
    return plugin_packs(module, module_name)


register_plugin_loader(load_plugin_packs)


def feature_selection(settings: Settings | FeatureSettings | None = None) -> Selection:
    """The Selection of `settings.features` (None: the default, the `core` pack), its `atc`
    specialist with the parameters of `settings.atc` (as the scanner's) when given Settings;
    the plugins are found in `features.plugin_paths` (relative to the settings file's folder;
    given FeatureSettings alone, to the project root)."""
    if settings is None:
        return select()
    features = settings.features if isinstance(settings, Settings) else settings
    atc = settings.atc.specialist_params() if isinstance(settings, Settings) else ()
    paths = settings.plugin_folders() if isinstance(settings, Settings) else features.plugin_folders(PROJECT_ROOT)
    try:
        return select(tuple(features.packs), tuple(features.plugins), atc, paths)
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
    import sys
    from pathlib import Path

    out: dict[str, dict] = {}
    for pack in chosen.packs:
        if pack.origin == BUILTIN_ORIGIN:
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


def column_owners(chosen: Selection) -> dict[str, dict]:
    """{column: {"owner": "<module>:<pack>/<entry>", "source_sha256": hash or None}} of every
    column of `chosen`, feature columns and `spec_<name>_score` alike. A plugin entry's hash
    is definition_hash (its formula's source and declared fields); a built-in pack's entries
    have None: the project's code versions cover their changes."""
    out: dict[str, dict] = {}
    for pack in chosen.packs:
        builtin = pack.origin == BUILTIN_ORIGIN
        for e in (*pack.features, *pack.specialists):
            owner = {"owner": f"{pack.origin}:{pack.name}/{e.name}",
                     "source_sha256": None if builtin else definition_hash(e)}
            columns = [f"spec_{e.name}_score"] if isinstance(e, Specialist) else list(e.columns)
            out.update({c: owner for c in columns})
    return out


def claim_owners(store, asset: str, chosen: Selection) -> list[str]:
    """Record with the shared table `asset` (`features` or `specialists` of the DeltaStore
    `store`) the owners of the columns `chosen` writes there (column_owners), before they are
    computed; a different definition under a recorded name is a ColumnOwnerError (a
    SettingsError of one line naming the column, both owners and what to do)."""
    owners = column_owners(chosen)
    mine = set(chosen.specialist_columns if asset == "specialists" else chosen.feature_columns)
    return store.claim_columns(asset, {c: o for c, o in owners.items() if c in mine})


def definition_hash(entry) -> str:
    """SHA-256 (hex) of what defines a plugin entry: its type, its declared fields other than
    the callables (columns, inputs, warm-up, window, version) and the source of each callable
    with the sources of the functions of its own module that it calls (followed through
    their calls). A formula imported from another module is covered by its `version`."""
    fields = {k: repr(v) for k, v in sorted(vars(entry).items()) if not callable(v)}
    callables = [v for _, v in sorted(vars(entry).items()) if callable(v)]
    doc = {"type": type(entry).__name__, "fields": fields, "code": _sources(callables)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _sources(fns: list) -> list[str]:
    """The source (else the bytecode) of each function in `fns` and of every function of
    its module it names, each once, in the order met."""
    seen: list = []
    out: list[str] = []
    todo = list(fns)
    while todo:
        fn = todo.pop(0)
        fn = getattr(fn, "__wrapped__", fn)
        if not isinstance(fn, types.FunctionType) or fn in seen:
            continue
        seen.append(fn)
        try:
            out.append(inspect.getsource(fn))
        except (OSError, TypeError):
            out.append(fn.__code__.co_code.hex() + repr(fn.__code__.co_consts))
        called = [fn.__globals__.get(n) for n in _names(fn.__code__)]
        todo += [f for f in called if isinstance(f, types.FunctionType) and f.__module__ == fn.__module__]
    return out


def _names(code: types.CodeType) -> list[str]:
    """The global names `code` and the code objects nested in it (lambdas, inner functions) load."""
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _names(const)
    return names


def _main(argv: list[str]) -> int:
    """`python -m domain.feature_packs PACKS_JSON PLUGINS_JSON [ATC_JSON [PATHS_JSON]]`: prints
    the code versions {"features", "specialists", "plugins"} as JSON (config.pack_versions
    runs this so that loading the code location imports no kernel; `plugins`:
    plugin_entries), or the one-line error on stderr with exit code 2. ATC_JSON: the `atc`
    specialist's [name, value] pairs; PATHS_JSON: the absolute plugin folders."""
    import sys

    atc = tuple(tuple(pair) for pair in json.loads(argv[2])) if len(argv) > 2 else ()
    paths = tuple(json.loads(argv[3])) if len(argv) > 3 else ()
    try:
        chosen = select(tuple(json.loads(argv[0])), tuple(json.loads(argv[1])), atc, paths)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(json.dumps({"features": chosen.features_version, "specialists": chosen.specialists_version,
                      "plugins": plugin_entries(chosen)}))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_main(sys.argv[1:]))
