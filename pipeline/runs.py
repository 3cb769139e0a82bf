"""Launching single-run backfills over symbol x year rectangles, in process."""

from __future__ import annotations

from dataclasses import dataclass

from dagster import DagsterInstance, JobDefinition

from config.partitions import SYMBOLS, make_key, range_tags


def contiguous_blocks(registered: list[str], wanted: list[str]) -> list[list[str]]:
    """Split `wanted` into runs that are contiguous in the registration order.

    A multi-partition range is a rectangle over the dynamic dimension's order, so each
    block can be one run without touching unwanted symbols.
    """
    wanted_set = set(wanted)
    unknown = sorted(wanted_set - set(registered))
    if unknown:
        raise ValueError(f"symbols not registered: {unknown}")
    blocks: list[list[str]] = []
    current: list[str] = []
    for sym in registered:
        if sym in wanted_set:
            current.append(sym)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


@dataclass
class AssetSummary:
    partitions: int = 0
    rows: int = 0
    seconds: float = 0.0
    write_seconds: float = 0.0


def run_rectangle(
    job: JobDefinition,
    instance: DagsterInstance,
    symbols: list[str],
    years: list[int],
    tags: dict | None = None,
    log_level: str = "INFO",
) -> dict[str, AssetSummary]:
    """Materialize `job` for symbols x [min(years), max(years)], one run per contiguous block."""
    registered = list(instance.get_dynamic_partitions(SYMBOLS))
    summary: dict[str, AssetSummary] = {}
    y0, y1 = min(years), max(years)
    for block in contiguous_blocks(registered, symbols):
        run_tags = {**range_tags(make_key(block[0], y0), make_key(block[-1], y1)), **(tags or {})}
        result = job.execute_in_process(
            instance=instance,
            tags=run_tags,
            run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
        )
        per_asset: dict[str, list[dict]] = {}
        for event in result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            meta = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
            per_asset.setdefault(mat.asset_key.to_user_string(), []).append(meta)
        for name, metas in per_asset.items():
            # One step writes all partitions of the run; its figures repeat on each event.
            s = summary.setdefault(name, AssetSummary())
            s.partitions += len(metas)
            s.rows += int(metas[0].get("rows", 0))
            s.seconds += float(metas[0].get("seconds", 0.0))
            s.write_seconds += float(metas[0].get("write_seconds", 0.0))
    return summary
