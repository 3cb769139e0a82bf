"""Feature packs and plugins: the public API for adding features and specialists.

A *pack* is a named list of entries declared in one place. The settings select packs
(`features: {packs: [core]}`, the default) and name plugin modules
(`features: {plugins: [my_research.features]}`); the `features` table holds the feature
columns of every selected pack, the `specialists` table their specialists' scores.

Entry types (all frozen dataclasses; `version` is part of the Dagster code version, bump
it when the formula changes; a plugin entry's changed formula or version is a new definition,
which the shared tables refuse under a column name they already hold: give it a new name,
resources.column_owners):

    Feature(name, formula, lookback_of=None, stream=None, inputs=HLC, warmup_rows=None,
            window=None, version="1")
        one column from kernel calls: formula(k) -> array, k as in
        kernels/registry/features.py (k(core, inputs, output=0, **params), k.column(name),
        k.per_symbol(fn, inputs)). Warm-up: the lookback of `lookback_of` or `warmup_rows`.
    Formula(name, fn, inputs=("close",), warmup=0, stream=None, window=None, version="1")
        one column from a NumPy function of ONE symbol's input arrays (in the feature
        dtype): fn(*arrays) -> array of the same length.
    Batch(name, columns, fn, inputs, warmup, window=None, version="1")
        many columns in one call over many symbols back to back:
        fn(arrays: {input: array}, offsets, dtype) -> {column: array}; `warmup` is one int
        or {column: int}.
    Specialist(name, fn, inputs, warmup, stream=None, window=None, version="1")
        (kernels.registry.specialists) a score in [-1, 1] from one symbol's Panel; stored
        as `spec_<name>_score`.

Inputs are bar fields: open, high, low, close, volume, and vwap (the source's `vwap`
column when present, else the typical price (high + low + close) / 3).

Streaming: an entry with a `stream` (O(1) updaters, see kernels.indicators.streaming) is updated per
bar; one without is recomputed by the live path over its last `window` rows (default
warm-up + 1), which equals the batch value bit for bit when the formula only looks back
over that window (recursive formulas need a `stream` or a longer `window`).

A plugin module defines `PACKS = [Pack(name, features=(...), specialists=(...)), ...]`
(or one `PACK`); naming it in `features.plugins` imports it (importlib) and selects its
packs. It is found in the folders `paths` (settings `features.plugin_paths`, absolute: put
first on sys.path, once per process, before the import; they travel in `Selection.names`,
so a worker process selecting again finds them too), else on sys.path.
`select(packs, plugins, atc, paths)` returns the `Selection`; it raises ValueError with one
line naming the setting and what was expected for an unknown pack, a module that cannot be
imported or defines no packs, a pack name that is not letters, digits and underscores
(PACK_PATTERN), an entry without a name or formula, a column name that is not
letters, digits and underscores starting with a letter (COLUMN_PATTERN; a specialist's name
likewise, its column being `spec_<name>_score`), and a column name that another selected
pack already makes.

Loading the user's module belongs to the domain (DESIGN.md): `domain.feature_packs` imports
it (importlib, the plugin folders put on sys.path) and registers itself here as the plugin
loader (`register_plugin_loader`) when imported; a worker process and the live path
(kernels.indicators.streaming) select again by name through it. Without a loader, `select`
takes the built-in packs only.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from kernels.registry import features as _features
from kernels.registry import specialists as _specialists
from kernels.registry.features import Feature, ResultShapeError, describe_result
from kernels.registry.specialists import Specialist

__all__ = ["Batch", "Feature", "Formula", "Pack", "Selection", "Specialist", "builtin_packs", "plugin_packs",
           "register_plugin_loader", "select",
           "BAR_INPUTS", "typical_price"]

BAR_INPUTS = ("open", "high", "low", "close", "volume", "vwap")
# a column of the shared tables: letters, digits and underscores, starting with a letter
COLUMN_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
PACK_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a pack name (settings features.packs, meta.inputs)


def typical_price(high: np.ndarray, low: np.ndarray, close: np.ndarray) -> np.ndarray:
    """The `vwap` input of a source without one: (high + low + close) / 3, in NumPy in the
    bars' float32 (the batch and the live path both call this, so they agree bit for bit)."""
    return (high + low + close) / np.float32(3.0)


@dataclass(frozen=True)
class Formula:
    """One column from a NumPy function of one symbol's input arrays (see the module doc)."""

    name: str
    fn: Callable[..., np.ndarray]
    inputs: tuple[str, ...] = ("close",)
    warmup: int = 0
    stream: Callable | None = None
    window: int | None = None
    version: str = "1"

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.name,)

    @property
    def warmups(self) -> dict[str, int]:
        return {self.name: int(self.warmup)}

    def compute(self, k) -> dict[str, np.ndarray]:
        return {self.name: k.per_symbol(self.fn, tuple(self.inputs))}


@dataclass(frozen=True)
class Batch:
    """Many columns from one function over many symbols back to back (see the module doc)."""

    name: str
    columns: tuple[str, ...]
    fn: Callable[..., Mapping[str, np.ndarray]]
    inputs: tuple[str, ...]
    warmup: int | Mapping[str, int] = 0
    window: int | None = None
    version: str = "1"
    stream = None  # the live path recomputes the window

    @property
    def warmups(self) -> dict[str, int]:
        if isinstance(self.warmup, Mapping):
            return {c: int(self.warmup[c]) for c in self.columns}
        return {c: int(self.warmup) for c in self.columns}

    def compute(self, k) -> dict[str, np.ndarray]:
        arrays = {c: k.column(c) for c in self.inputs}
        out = self.fn(arrays, k.offsets, k.dtype)
        if not isinstance(out, Mapping):
            raise ResultShapeError(f"returned {describe_result(out)}", "a dict {column: array of one value per row}")
        missing = [c for c in self.columns if c not in out]
        if missing:
            raise ResultShapeError(f"returned no column {missing[0]!r} ({len(missing)} of {len(self.columns)} "
                                   "columns missing)", "every column the entry declares")
        return {c: np.asarray(out[c], dtype=k.dtype) for c in self.columns}


@dataclass(frozen=True)
class Pack:
    """A named list of feature and specialist entries."""

    name: str
    features: tuple = ()
    specialists: tuple = ()
    version: str = "1"
    origin: str = field(default="kernels.registry.packs", compare=False)


def _core(atc: tuple = ()) -> Pack:
    """The registries (read when selected: a feature appended there is in `core`); `atc`:
    the ATC parameters as (name, value) pairs (settings `atc`) the `atc` entry runs with,
    none: the registry's own entry."""
    specialists = tuple(_specialists.SPECIALISTS)
    if atc:
        entry = _specialists.atc_specialist(**dict(atc))
        specialists = tuple(entry if s.name == "atc" else s for s in specialists)
    return Pack("core", tuple(_features.FEATURES), specialists)


def _alpha158() -> Pack:
    """Qlib's Alpha158 (kernels.alpha158): one Batch of 158 columns `a158_<QlibName>`."""
    from kernels import alpha158 as A

    def fn(arrays, offsets, dtype):
        return {f"a158_{n}": v for n, v in A.compute_alpha158(arrays, offsets, dtype).items()}

    columns = tuple(f"a158_{n}" for n in A.ALPHA158_NAMES)
    warmup = {f"a158_{n}": int(A.ALPHA158_WARMUP[n]) for n in A.ALPHA158_NAMES}
    return Pack("alpha158", (Batch("alpha158", columns, fn, BAR_INPUTS, warmup),))


# name -> factory; factories run when a pack is selected (alpha158 imports its kernels then)
_BUILTIN: dict[str, Callable[[], Pack]] = {"core": _core, "alpha158": _alpha158}


def builtin_packs() -> list[str]:
    return sorted(_BUILTIN)


@dataclass(frozen=True)
class Selection:
    """The packs in force, in order: built-in packs as listed, then each plugin's packs."""

    packs: tuple[Pack, ...]
    names: tuple = ()  # the settings' (packs, plugins[, atc[, paths]]), for workers to select again: select(*names)
    atc: tuple = ()  # the `atc` specialist's parameters, (name, value) pairs; () = the registry's

    @property
    def features(self) -> tuple:
        return tuple(e for p in self.packs for e in p.features)

    @property
    def specialists(self) -> tuple:
        return tuple(s for p in self.packs for s in p.specialists)

    @property
    def feature_columns(self) -> list[str]:
        return [c for e in self.features for c in e.columns]

    @property
    def specialist_columns(self) -> list[str]:
        return [f"spec_{s.name}_score" for s in self.specialists]

    @property
    def feature_inputs(self) -> list[str]:
        wanted = {c for e in self.features for c in e.inputs}
        return [c for c in BAR_INPUTS if c in wanted]

    def warmups(self) -> dict[str, int]:
        return {c: w for e in self.features for c, w in e.warmups.items()}

    def pack(self, name: str) -> Pack | None:
        return next((p for p in self.packs if p.name == name), None)

    def _version(self, kind: str) -> str:
        doc = [(p.name, p.version, [(e.name, e.version, list(e.columns) if kind == "features" else e.name)
                                    for e in getattr(p, kind)]) for p in self.packs]
        if kind == "specialists" and self.atc:  # other ATC parameters: other scores
            doc.append(["atc", [list(pair) for pair in self.atc]])
        return hashlib.sha256(json.dumps(doc).encode()).hexdigest()[:16]

    @property
    def features_version(self) -> str:
        """Dagster code version of the `features` asset: a hash of the selected packs' names,
        versions and entries (names, versions, columns); any change marks partitions stale."""
        return self._version("features")

    @property
    def specialists_version(self) -> str:
        """Dagster code version of the `specialists` asset (as features_version)."""
        return self._version("specialists")


# The plugin loader: (module name, plugin folders) -> that module's packs. Loading a user's
# module is the domain's (domain.feature_packs.load_plugin_packs, registered when that module
# is imported); the kernels only check and compose what it returns.
_PLUGIN_LOADER: Callable[[str, tuple], list] | None = None


def register_plugin_loader(loader: Callable[[str, tuple], list] | None) -> None:
    """Make `loader(module_name, paths) -> [Pack, ...]` the one that `select` calls for each
    module named in `plugins` (None: none; `select` then refuses plugins). The selections
    cached so far are dropped."""
    global _PLUGIN_LOADER
    _PLUGIN_LOADER = loader
    select.cache_clear()


def plugin_packs(module, module_name: str) -> list[Pack]:
    """The packs a plugin module (already imported) declares, `PACKS` or one `PACK`, each
    marked with `module_name` as its origin; ValueError when it declares none."""
    where = f"features.plugins: module {module_name!r}"
    packs = getattr(module, "PACKS", None)
    if packs is None and getattr(module, "PACK", None) is not None:
        packs = [module.PACK]
    if not packs or not all(isinstance(p, Pack) for p in packs):
        raise ValueError(f"{where} defines no PACKS; expected PACKS = [Pack(name, features=(...), "
                         "specialists=(...))] (kernels.registry.packs)")
    return [Pack(p.name, tuple(p.features), tuple(p.specialists), p.version, origin=module_name) for p in packs]


def _plugin_packs(module_name: str, paths: tuple[str, ...] = ()) -> list[Pack]:
    if not isinstance(module_name, str) or not module_name.strip():
        raise ValueError(f"features.plugins: {module_name!r} is not a module name; expected a dotted module name")
    if _PLUGIN_LOADER is None:
        raise ValueError(f"features.plugins: module {module_name!r} named, but no plugin loader is registered; "
                         "expected domain.feature_packs imported first (it loads plugin modules)")
    return list(_PLUGIN_LOADER(module_name, paths))


def _check_entries(pack: Pack, where: str) -> None:
    kinds = ((pack.features, (Feature, Formula, Batch)), (pack.specialists, (Specialist,)))
    for entries, types in kinds:
        for i, e in enumerate(entries):
            if not isinstance(e, types):
                raise ValueError(f"{where}, entry {i}: a {type(e).__name__}; expected one of "
                                 f"{[t.__name__ for t in types]} (kernels.registry.packs)")
            name = getattr(e, "name", None)
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"{where}, entry {i}: no name; expected a non-empty name")
            fn_field = "formula" if isinstance(e, Feature) else "fn"
            if not callable(getattr(e, fn_field, None)):
                raise ValueError(f"{where}, entry {name!r}: no formula; expected a callable {fn_field}")
            if isinstance(e, Batch) and (not e.columns or not all(isinstance(c, str) and c for c in e.columns)):
                raise ValueError(f"{where}, entry {name!r}: no columns; expected a tuple of column names")
            _check_column_names(e, where)


def _check_column_names(entry, where: str) -> None:
    """Every column `entry` makes fullmatches COLUMN_PATTERN (a specialist: its name)."""
    names = (entry.name,) if isinstance(entry, Specialist) else tuple(entry.columns)
    for c in names:
        if not COLUMN_PATTERN.fullmatch(c):
            what = "specialist name" if isinstance(entry, Specialist) else "column"
            raise ValueError(f"{where}, entry {entry.name!r}: {what} {c!r} is not a column name; expected letters, "
                             "digits and _, starting with a letter")


@functools.lru_cache(maxsize=32)
def select(packs: tuple[str, ...] = ("core",), plugins: tuple[str, ...] = (), atc: tuple = (),
           paths: tuple[str, ...] = ()) -> Selection:
    """The Selection of the built-in `packs` plus every pack of the `plugins` modules
    (ValueError naming the setting for anything unusable, see the module doc); `atc`: the
    parameters of the `core` pack's `atc` specialist as (name, value) pairs (settings `atc`);
    `paths`: the absolute folders the plugins are found in (settings `features.plugin_paths`),
    put first on sys.path before they are imported."""
    # pairs equal to the registered entry's parameters select that entry itself: the same
    # scores, so the same Selection and versions as without them
    atc = tuple(sorted((str(k), v) for k, v in atc if _specialists.ATC_DEFAULTS.get(k, v) != v or k not in
                       _specialists.ATC_DEFAULTS))
    chosen: list[Pack] = []
    paths = tuple(paths)
    plugin_packs = [p for m in plugins for p in _plugin_packs(m, paths)]
    known = {p.name: p for p in plugin_packs}
    for name in packs:
        if name in _BUILTIN:
            try:
                chosen.append(_core(atc) if name == "core" else _BUILTIN[name]())
            except ImportError as exc:
                raise ValueError(f"features.packs: pack {name!r} cannot be loaded ({exc})") from None
        elif name not in known:
            raise ValueError(f"features.packs: unknown pack {name!r}; expected one of "
                             f"{sorted(set(_BUILTIN) | set(known))}")
    chosen += plugin_packs
    seen_packs: dict[str, str] = {}
    owner: dict[str, str] = {}
    for p in chosen:
        where = f"features.plugins: module {p.origin!r}, pack {p.name!r}" if p.origin != Pack.origin else \
            f"features.packs: pack {p.name!r}"
        if not isinstance(p.name, str) or not PACK_PATTERN.fullmatch(p.name):
            raise ValueError(f"{where}: {p.name!r} is not a pack name; expected letters, digits and _, starting with a "
                             "letter or _ (as features.packs and meta.inputs name it)")
        if p.name in seen_packs:
            raise ValueError(f"{where}: the pack name is already used by {seen_packs[p.name]}; expected a new pack name")
        seen_packs[p.name] = repr(p.origin)
        _check_entries(p, where)
        cols = [c for e in p.features for c in e.columns] + [f"spec_{s.name}_score" for s in p.specialists]
        for c in cols:
            if c in ("date", "symbol", "year") or c in owner:
                by = owner.get(c, "the table's key columns")
                raise ValueError(f"{where}: column {c!r} is already made by {by}; expected a new column name")
            owner[c] = f"pack {p.name!r}"
    names = (tuple(packs), tuple(plugins)) + ((atc, paths) if paths else (atc,) if atc else ())
    return Selection(tuple(chosen), names, atc)
