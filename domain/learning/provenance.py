"""A stored model serves only what trained it.

Every model the stages store (the meta models, the LSTM) records in its JSON sidecar a
`provenance`: the experiment, the settings hash (config.experiments.settings_hash: every
setting that changes a stored figure), the partition (year, horizon) and the kind
(`meta.model`, `lstm`); the sidecar also has the training window and the input columns.
`check_provenance(sidecar, request, path)` compares each field with what a caller asks for
(the experiment, settings, year and horizon it scores) and refuses a mismatch with one line
naming the field and both values (ModelMismatch: exit 2 from the CLI, a failed step naming
it in Dagster); a sidecar without provenance (a model saved before it was recorded) is
refused the same way. Look-ahead has its own check: a model whose training window reaches
into the year it would score (its last training day on or after January 1 of that year:
a later year's model copied over an earlier one's) is refused, whatever its provenance says.
"""

from __future__ import annotations

from pathlib import Path

from config.settings import SettingsError

FIELDS = ("experiment", "year", "horizon", "kind", "settings_hash")


class ModelMismatch(SettingsError):
    """A stored model asked to serve an experiment, settings, partition or kind that did not
    train it, or a year its training window reaches into."""


def provenance(settings, *, year: int, horizon: int, kind: str) -> dict:
    """The `provenance` a model of `settings` for (year, horizon) records."""
    from config.experiments import settings_hash

    return {"experiment": settings.experiment, "settings_hash": settings_hash(settings), "year": int(year),
            "horizon": int(horizon), "kind": kind}


def request(settings, *, kind: str) -> dict:
    """What a caller of `settings` asks of every model it loads (year and horizon are added
    per model): the experiment, the settings hash and the kind."""
    from config.experiments import settings_hash

    return {"experiment": settings.experiment, "settings_hash": settings_hash(settings), "kind": kind}


def _last_training_day(window: dict) -> str | None:
    """The latest day the window trained or validated on (ISO text), None when it says none."""
    days = [str(window[k])[:10] for k in ("train_to", "val_to") if window.get(k)]
    return max(days) if days else None


def check_provenance(sidecar: dict, want: dict, path: Path, rebuild: str) -> None:
    """ModelMismatch (one line naming `path`, the field and both values, and `rebuild`: how to
    make the right model) unless the sidecar's provenance equals `want` on every field `want`
    gives, and its training window ends before the year it is asked to score."""
    have = sidecar.get("provenance")
    if not isinstance(have, dict):
        raise ModelMismatch(f"{path}: the model records no provenance (saved before models recorded the experiment, "
                            f"settings and partition that trained them); expected a model of {_describe(want)}: {rebuild}")
    for field in FIELDS:
        if field in want and have.get(field) != want[field]:
            raise ModelMismatch(f"{path}: {field} is {have.get(field)!r} where the request is {want[field]!r}; a model "
                                f"serves only the {field} that trained it: {rebuild}")
    year = want.get("year")
    last = _last_training_day(sidecar.get("window") or {})
    if year is not None and last is not None and last >= f"{int(year):04d}-01-01":
        raise ModelMismatch(f"{path}: trained through {last}, it cannot score {year} out of sample (look-ahead); "
                            f"expected a model trained before {year}-01-01: {rebuild}")


def _describe(want: dict) -> str:
    return ", ".join(f"{k} {want[k]!r}" for k in FIELDS if k in want)
