"""The backend seam: which device runs which backend, and where each kernel family's backends live.

- `backend_for(device)` is the only map from a selected device kind (`cpu`, `cuda`, `rocm`,
  see `resources.compute.select_device`) to a kernel backend (`cpu` numba, `cuda`
  numba.cuda/CuPy, `torch` for ROCm, where torch.cuda is HIP).
- A registry per kernel family: family -> {backend name -> "module" or "module:attribute"}.
  Each family registers its backends in one place (its package's `__init__`), by dotted
  path only, so registering imports nothing; `load` imports an entry on first use. A new
  backend is one module per family plus one `register` line per family.

The families register here: `indicators` (`kernels/indicators/__init__.py`), `atc`, `gridsearch.*`,
`strategy`. Besides the registry this package holds only what every family's GPU path shares:
`routing` (the measured break-evens) and `device_io` (CUDA staging).
"""

from __future__ import annotations

import importlib

BACKENDS = ("cpu", "cuda", "torch")
DEVICES = ("auto", "cpu", "cuda", "rocm")
_BACKEND_OF_DEVICE = {"cpu": "cpu", "cuda": "cuda", "rocm": "torch"}

_REGISTRY: dict[str, dict[str, str]] = {}


def backend_for(device: str) -> str:
    """The kernel backend for a selected device kind: cpu -> "cpu", cuda -> "cuda", rocm -> "torch"."""
    try:
        return _BACKEND_OF_DEVICE[device]
    except KeyError:
        raise ValueError(f"device must be one of {tuple(_BACKEND_OF_DEVICE)}, got {device!r}") from None


def register(family: str, backend: str, target: str) -> None:
    """Register `target` ("package.module" or "package.module:attribute") as `family`'s
    `backend`; a later registration of the same name replaces the earlier one."""
    _REGISTRY.setdefault(family, {})[backend] = target


def unregister(family: str, backend: str) -> None:
    """Forget `family`'s `backend` (absent: nothing happens)."""
    _REGISTRY.get(family, {}).pop(backend, None)


def backends(family: str) -> tuple[str, ...]:
    """The backend names registered for `family`, in registration order."""
    return tuple(_REGISTRY.get(family, ()))


def check(family: str, backend: str, lead: str | None = None) -> str:
    """`backend` when `family` has it, else ValueError "backend must be one of (...), got '...'"
    or, with `lead`, "<lead> cpu, cuda or torch, got '...'" (the family's names)."""
    names = backends(family)
    if backend not in names:
        if lead is None:
            raise ValueError(f"backend must be one of {names}, got {backend!r}")
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        raise ValueError(f"{lead} {listed}, got {backend!r}")
    return backend


def load(family: str, backend: str):
    """The registered module (or its attribute) for `family`'s `backend`, imported now."""
    target = _REGISTRY.get(family, {}).get(check(family, backend))
    module, _, attribute = target.partition(":")
    mod = importlib.import_module(module)
    return getattr(mod, attribute) if attribute else mod

