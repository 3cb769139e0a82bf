"""An updater's state as plain data (JSON-ready) and back into a freshly built updater.

The streaming updaters (kernels.indicators.updaters, kernels.atc.stream, a plugin's own) are plain
Python objects. `to_plain(obj)` writes an object's attributes as nested plain values:

    float, int, bool, None, str     as they are (JSON keeps a float's bits: repr round-trips;
                                    NaN and inf as JSON's NaN / Infinity tokens)
    NumPy scalar                    {"np": dtype, "v": value}
    NumPy array                     {"nd": dtype, "shape": [...], "v": [flat values]}
    list, tuple, deque, dict        {"list": [...]}, {"tuple": [...]}, {"deque": [...], "maxlen": m},
                                    {"dict": {str key: value}}
    another object with attributes  {"obj": class name, "attrs": {...}}

Functions, classes, modules, NumPy dtypes, frozen dataclasses and named tuples are
configuration, not state: left out (the fresh object has them). `restore(fresh, plain)` sets the state into an object built anew the
same way (same class, same parameters: the caller checks the parameters, e.g. SymbolStream's
node keys): nested objects are restored in place, a named tuple keeps its type, and a class
name that differs, an attribute the fresh object does not have or a non-numeric array is a
ValueError (the state belongs to other code: rebuild it from history). Nothing here imports or calls anything a file names: the
data can only set numbers and containers on objects the caller built.
"""

from __future__ import annotations

import types
from collections import deque

import numpy as np

_CONFIG = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType, type, np.dtype)


def _is_config(v) -> bool:
    """Functions, classes, modules, dtypes, frozen dataclasses and named tuples: parameters
    the fresh object was built with, not state."""
    import functools

    frozen = getattr(getattr(type(v), "__dataclass_params__", None), "frozen", False)
    return (isinstance(v, _CONFIG) or isinstance(v, functools.partial) or frozen
            or (isinstance(v, tuple) and hasattr(v, "_fields")))


def to_plain(v):
    """The plain form of `v` (see the module docstring); TypeError for a value it cannot keep."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, np.generic):
        return {"np": v.dtype.str, "v": v.item()}
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in "biuf":
            raise TypeError(f"an array of dtype {v.dtype} is no updater state")
        return {"nd": v.dtype.str, "shape": list(v.shape), "v": v.ravel().tolist()}
    if isinstance(v, deque):
        return {"deque": [to_plain(x) for x in v], "maxlen": v.maxlen}
    if isinstance(v, list):
        return {"list": [to_plain(x) for x in v]}
    if isinstance(v, tuple):
        return {"tuple": [to_plain(x) for x in v]}
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            raise TypeError("a dict with keys other than str is no updater state")
        return {"dict": {k: to_plain(x) for k, x in v.items()}}
    attrs = _attributes(v)
    if attrs is None:
        raise TypeError(f"a {type(v).__name__} is no updater state")
    return {"obj": type(v).__name__, "attrs": {k: to_plain(x) for k, x in attrs.items() if not _is_config(x)}}


def _attributes(obj) -> dict | None:
    """The instance attributes of `obj` (its __dict__ and __slots__), None for neither."""
    out = dict(getattr(obj, "__dict__", {}) or {})
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if hasattr(obj, name):
                out[name] = getattr(obj, name)
    return out if out or hasattr(obj, "__dict__") else None


def _value(fresh, p):
    """The value of plain `p`, restored into `fresh` where it is an object (in place)."""
    if p is None or isinstance(p, (bool, int, float, str)):
        return p
    if "np" in p:
        dtype = np.dtype(p["np"])
        if dtype.kind not in "biuf":
            raise ValueError(f"a scalar of dtype {dtype} is no updater state")
        return dtype.type(p["v"])
    if "nd" in p:
        dtype = np.dtype(p["nd"])
        if dtype.kind not in "biuf":
            raise ValueError(f"an array of dtype {dtype} is no updater state")
        return np.array(p["v"], dtype=dtype).reshape(p["shape"])
    if "deque" in p:
        return deque((_value(None, x) for x in p["deque"]), maxlen=p["maxlen"])
    if "list" in p:
        old = fresh if isinstance(fresh, list) else []
        return [_value(old[i] if i < len(old) else None, x) for i, x in enumerate(p["list"])]
    if "tuple" in p:
        old = fresh if isinstance(fresh, tuple) else ()
        items = [_value(old[i] if i < len(old) else None, x) for i, x in enumerate(p["tuple"])]
        return type(fresh)(*items) if isinstance(fresh, tuple) and hasattr(fresh, "_fields") else tuple(items)
    if "dict" in p:
        old = fresh if isinstance(fresh, dict) else {}
        return {k: _value(old.get(k), x) for k, x in p["dict"].items()}
    if "obj" in p:
        if fresh is None or type(fresh).__name__ != p["obj"]:
            raise ValueError(f"a saved {p['obj']} where the code now builds {type(fresh).__name__}: rebuild it from history")
        restore(fresh, p)
        return fresh
    raise ValueError(f"not a plain updater state: {sorted(p)}")


def from_plain(plain, fresh=None):
    """The value of `plain` (to_plain's form), restored into `fresh` where it is an object of
    the saved class (in place); containers and numbers are built anew."""
    return _value(fresh, plain)


def restore(fresh, plain: dict) -> None:
    """Set the state `plain` (to_plain of an object of the same class) into `fresh`."""
    if not isinstance(plain, dict) or "obj" not in plain:
        raise ValueError("not a plain updater state: rebuild it from history")
    if type(fresh).__name__ != plain["obj"]:
        raise ValueError(f"a saved {plain['obj']} where the code now builds {type(fresh).__name__}: "
                         "rebuild it from history")
    have = _attributes(fresh) or {}
    for name, p in plain["attrs"].items():
        if name not in have or name.startswith("__"):  # only the state the fresh object has
            raise ValueError(f"a saved {plain['obj']} with an attribute {name!r} the code does not build: "
                             "rebuild it from history")
        setattr(fresh, name, _value(have[name], p))
