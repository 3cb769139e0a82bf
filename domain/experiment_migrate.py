"""Move a store of the layout before experiments into one experiment (`migrate-reports`).

Before experiments, reports were `reports/<folder>/` (eval, cv, meta, paper: not the asset's
name; the other stages under their asset's name, sidecars beside the reports), models
`models/*`, and the model-dependent tables `data/<asset>`. `migrate_layout(settings)` moves
them into the settings' experiment: reports/<experiment>/<stage>/ (sidecars, JSON files with
`stage` and `git_sha`, into runs/), models/<experiment>/, data/experiments/<experiment>/<asset>.
Each item is one rename on the same file system; an item whose destination exists is left
where it is (reported, never overwritten). Emptied legacy folders are removed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from config.settings import EXPERIMENT_TABLES, LEGACY_REPORT_DIRS, STAGE_DIRS, Settings


def _is_sidecar(path: Path) -> bool:
    if path.suffix != ".json":
        return False
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "stage" in data and "git_sha" in data


def _plan(settings: Settings) -> list[tuple[Path, Path]]:
    root, moves = settings.reports_root, []
    for old in sorted(root.iterdir()) if root.is_dir() else []:
        if not old.is_dir() or (old.name not in LEGACY_REPORT_DIRS and old.name not in STAGE_DIRS):
            continue
        stage = LEGACY_REPORT_DIRS.get(old.name, old.name)
        for f in sorted(p for p in old.rglob("*") if p.is_file()):
            rel = f.relative_to(old)
            sidecar = old.name in STAGE_DIRS and len(rel.parts) == 1 and _is_sidecar(f)
            moves.append((f, settings.stage_reports_dir(stage) / ("runs" if sidecar else "") / rel))
    models = settings.models_root
    moves += [(f, settings.models_dir / f.name) for f in sorted(models.iterdir()) if f.is_file()] if models.is_dir() else []
    for asset in EXPERIMENT_TABLES:
        table = settings.data_dir / asset
        if (table / "_delta_log").is_dir():
            moves.append((table, settings.experiment_data_dir / asset))
    return moves


def migrate_layout(settings: Settings, dry_run: bool = False) -> tuple[list[tuple[Path, Path]], list[tuple[Path, Path]]]:
    """(moved, kept: destination exists) pairs of (source, destination)."""
    moved, kept = [], []
    for src, dst in _plan(settings):
        if dst.exists():
            kept.append((src, dst))
            continue
        if not dry_run:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.rename(src, dst)
        moved.append((src, dst))
    if not dry_run:
        for name in [*LEGACY_REPORT_DIRS, *STAGE_DIRS]:
            old = settings.reports_root / name
            if old.is_dir():
                for d in sorted((p for p in old.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [old]:
                    try:
                        d.rmdir()  # empty folders only
                    except OSError:
                        pass
    return moved, kept
