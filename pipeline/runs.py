"""Launching runs in process: single-run backfills over symbol x year rectangles, and the
whole chain of jobs (`run_graph`, in the order `pipeline.chain.FOLLOW_UPS` states)."""

from __future__ import annotations

from dataclasses import dataclass

from dagster import DagsterInstance, JobDefinition

from resources.partitions import make_key, range_tags, selection_blocks
from pipeline.chain import YEAR_JOBS, follow_ups, year_range_tags
from pipeline.run_report import check_run, console_run_config, root_cause


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
    """Materialize `job` for symbols x [min(years), max(years)], one run per block of
    contiguous keys (symbols, or their groups: a run then computes only `symbols` of them,
    named in its SYMBOLS_TAG, unless they are all of its groups' symbols)."""
    summary: dict[str, AssetSummary] = {}
    y0, y1 = min(years), max(years)
    for first, last, extra, block in selection_blocks(instance, symbols):
        run_tags = {**range_tags(make_key(first, y0), make_key(last, y1)), **extra, **(tags or {})}
        result = job.execute_in_process(
            instance=instance,
            tags=run_tags,
            run_config=console_run_config(log_level),
            raise_on_error=False,
        )
        raise_if_failed(result, f"{job.name} {block[0]}..{block[-1]} x {y0}..{y1}")
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


def run_graph(instance, symbols: list[str], years: list[int], *, lstm: bool = False, yearly_years: list[int] | None = None,
              tags: dict | None = None, log_level: str = "WARNING", progress=None,
              settings_path: str | None = None, overrides: str | None = None) -> dict:
    """Run the chain in process: the symbol x year build, the regimes of every year (when
    the yearly stages are narrower), the LSTM (when asked), then the follow-ups of the build
    in `FOLLOW_UPS` order. `progress` (a pipeline.progress.RunProgress, or None) is told each
    run's place in the chain (`chain 2/4 yearly_stages 2000..2004`). `yearly_years` narrows the yearly
    stages (e.g. the last few years in a demo); `settings_path` runs them on another
    settings file instead of the one in force, `overrides` (JSON, config.settings.derive_settings)
    a command's flags over it. Returns the build's per-asset summary."""
    from dagster import Definitions, materialize

    from config.experiments import experiment_tags
    from config.settings import config_path, derive_settings, load_settings
    from pipeline.definitions import ALL_ASSETS, build_resources, defs

    if settings_path is not None or overrides:
        defs = Definitions(assets=ALL_ASSETS, jobs=defs.jobs, executor=defs.executor,
                           resources=build_resources(settings_path, overrides=overrides))

    run_config = console_run_config(log_level)
    yearly = sorted(yearly_years or years)
    settings = derive_settings(settings_path or config_path(), overrides) if overrides else load_settings(settings_path)
    tags = {**experiment_tags(settings), **(tags or {})}
    steps = [("historical_build_and_train", years)]
    if min(yearly) > min(years):  # the meta models of `yearly` train on earlier rows: tag their regimes too
        steps.append(("regime", years))
    if lstm:
        steps.append(("lstm_job", yearly))
    steps += [(step.job, yearly) for step in follow_ups("historical_build_and_train", year_range_tags(yearly))]
    summary: dict = {}
    for i, (name, span) in enumerate(steps, start=1):
        if progress is not None:
            progress.stage(f"chain {i}/{len(steps)} {name} {min(span)}..{max(span)}")
        if name == "historical_build_and_train":
            summary = run_rectangle(defs.resolve_job_def(name), instance, symbols, span, tags=tags, log_level=log_level)
            continue
        run_tags = {**(year_range_tags(span) if name in YEAR_JOBS or name == "regime" else {}), **tags}
        if name == "regime":
            res = materialize(ALL_ASSETS, selection=["regime"], instance=instance, resources=build_resources(settings_path, overrides=overrides),
                              tags=run_tags, run_config=run_config, raise_on_error=False)
        else:
            res = defs.resolve_job_def(name).execute_in_process(instance=instance, tags=run_tags, run_config=run_config,
                                                                raise_on_error=False)
        raise_if_failed(res, f"{name} {min(span)}..{max(span)}")
    return summary


def failure_line(result) -> str | None:
    """The first failed step's root cause as one line (pipeline.run_report.root_cause)."""
    cause = root_cause(result)
    return cause.line if cause else None


def _table_of(step: str):
    """Where a step's output table lives: an environment failure's path when its error names none."""
    from config.settings import load_settings

    try:
        return load_settings().data_dir / step
    except Exception:  # the settings of the run may not be the file in force
        return f"the table of {step}"


def raise_if_failed(result, what: str) -> None:
    """A failed run as pipeline.run_report.RunFailed (a RuntimeError): its root cause as the
    first line (root_cause, classified: exit 2 for the user's input, 1 for the
    environment, naming the path), the run id and its log as the second."""
    check_run(result, what, path_hint=_table_of)
