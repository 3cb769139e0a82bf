"""Sensors. The new-symbol sensor: registers symbols that appear in the configured source (a new
file in the user's folder) and requests their runs.

Each evaluation compares the source's per-symbol fingerprints with the cursor: new symbols
are added to the `symbols` dynamic partitions and get ONE run over all their years (a
single-run backfill, via partition-range tags), whatever their number; a symbol whose rows
changed (in a long table: that symbol's rows, not the file) re-runs, changed symbols
batched by contiguous blocks of the registration order. A file the source cannot read is
logged and skipped, the others go on.
Off by default; `automation.new_symbol_sensor: true` starts it with the daemon.

`build_chain_sensor` continues the chain of jobs (pipeline.chain) after a successful run:
the yearly stages of the years a build covered, and of the years whose yearly stages failed
before (asked again until they succeed), then the ATC scan. On by default.
"""

from __future__ import annotations

import hashlib
import json

from dagster import (
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    RunStatusSensorContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    run_status_sensor,
    sensor,
)

from config.errors import InputDataError
from config.experiments import EXPERIMENT_TAG, HASH_TAG, experiment_tags
from config.partitions import SYMBOLS
from config.settings import load_settings
from pipeline.chain import LIVE_TAG, follow_ups, run_years, year_range_tags
from pipeline.jobs import (
    YEAR_ASSETS,
    atc_scan_job,
    historical_build_and_train,
    live_paper_trade,
    lstm_job,
    yearly_stages,
)
from pipeline.run_health import fail_stale_runs
from resources.partitions import GROUPED, make_key, range_tags, selection_blocks, symbol_partitions, years_partitions

_settings = load_settings()
CHAIN_MONITORED = ("historical_build_and_train", "lstm_job")
CHAIN_TAG = "tradelab/chain"  # on the runs build_chain_sensor requests
RETRIED_TAG = "tradelab/retried_years"  # on a yearly_stages run that also redoes years an earlier one failed
IN_FLIGHT = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]


def symbols_run_request(block: list[str], first_year: int, last_year: int, fingerprints: dict[str, str],
                        span: tuple[str, str] | None = None, extra: dict[str, str] | None = None) -> RunRequest:
    """One run over every year of `block`, symbols contiguous in the registration order
    (a partition range is a rectangle over that order); the run key changes with any of
    their fingerprints. Grouped, `span` is the block's first and last group and `extra`
    the tag naming the symbols the run computes (SYMBOLS_TAG)."""
    digest = hashlib.sha1(json.dumps({s: fingerprints.get(s) for s in block}, sort_keys=True).encode()).hexdigest()[:16]
    first, last = span or (block[0], block[-1])
    return RunRequest(
        run_key=f"symbols:{first}..{last}:{len(block)}:{digest}",
        tags={**range_tags(make_key(first, first_year), make_key(last, last_year)), **(extra or {}),
              **experiment_tags(load_settings())},
    )


@sensor(
    name="new_symbol_sensor",
    job=historical_build_and_train,
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.RUNNING if _settings.automation.new_symbol_sensor else DefaultSensorStatus.STOPPED,
)
def new_symbol_sensor(context: SensorEvaluationContext):
    """New and changed symbols of one tick go into as few runs as the registration order
    allows: one for the new symbols (registered together, at the end), one per contiguous
    block of changed ones."""
    from domain.sources import make_source
    from pipeline.symbols import contiguous_blocks, name_summary, record_absent

    settings = load_settings()
    errors: list[InputDataError] = []
    try:
        fingerprints = make_source(settings).fingerprints(errors)
    except InputDataError as err:
        context.log.error(f"new_symbol_sensor: source unreadable, nothing requested: {err}")
        return SkipReason(str(err))
    for err in errors:
        context.log.error(f"new_symbol_sensor: skipped: {err}")
    previous = json.loads(context.cursor) if context.cursor else {}
    registered = list(context.instance.get_dynamic_partitions(SYMBOLS))
    known = set(registered)
    record_absent(context.instance, [s for s in registered if s not in fingerprints])  # out of every run (io_manager)
    new = sorted(s for s in fingerprints if s not in known)
    changed = sorted(s for s, fp in fingerprints.items() if s in known and s in previous and previous[s] != fp)
    years = settings.years
    if GROUPED:  # registered here (groups and membership first), each group's symbols named in a tag
        from pipeline.symbols import register_symbols

        register_symbols(context.instance, new)
        requests = [symbols_run_request(block, years.start, years.last, fingerprints, (first, last), extra)
                    for first, last, extra, block in selection_blocks(context.instance, changed + new)]
    else:
        requests = [symbols_run_request(block, years.start, years.last, fingerprints)
                    for block in contiguous_blocks(registered + new, changed + new)]
    if new:
        context.log.info(f"new symbols ({len(new)}): {name_summary(new)}")
    if changed:
        context.log.info(f"changed symbols ({len(changed)}): {name_summary(changed)}")
    return SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[symbol_partitions.build_add_request(new)] if new and not GROUPED else [],
        cursor=json.dumps(fingerprints, sort_keys=True),
    )


@run_status_sensor(
    name="build_chain_sensor",
    run_status=DagsterRunStatus.SUCCESS,
    monitored_jobs=[historical_build_and_train, lstm_job],
    request_jobs=[yearly_stages, atc_scan_job, live_paper_trade],
    default_status=DefaultSensorStatus.RUNNING if _settings.automation.build_chain_sensor else DefaultSensorStatus.STOPPED,
)
def build_chain_sensor(context: RunStatusSensorContext):
    """Continue the chain of pipeline.chain.FOLLOW_UPS after a successful run.

    Many build runs (a sensor's new symbols, a backfill) must not each retrain the yearly
    stages: while another monitored run is still queued or running, this one waits; the
    last to finish requests the follow-ups once, over the years of every monitored run that
    succeeded since the chain last ran and the years whose yearly stages failed before (a
    failed chain run still counts as the chain's last run, so without them its years would
    stay missing); those are logged in the tick and tagged RETRIED_TAG on the run."""
    run = context.dagster_run
    instance = context.instance
    if run.tags.get(LIVE_TAG):  # the day's bars are in: trade on them now, whatever else is in flight
        return [RunRequest(run_key=f"chain:{run.run_id}:{step.job}", job_name=step.job,
                           tags={"tradelab/after": run.run_id, CHAIN_TAG: "1"}) for step in follow_ups(run.job_name, run.tags)]
    in_flight = [r for job in CHAIN_MONITORED for r in instance.get_runs(RunsFilter(job_name=job, statuses=IN_FLIGHT))
                 if r.run_id != run.run_id]
    busy, stale = fail_stale_runs(instance, in_flight, load_settings().automation.max_run_hours * 3600)
    for reason in stale:
        context.log.warning(f"build_chain_sensor: not waiting for a run that will never end: {reason}; marked failed")
    if busy:
        ignored = f" (ignored as stale and marked failed: {'; '.join(stale)})" if stale else ""
        return SkipReason(f"{len(busy)} build run(s) still in flight; the last to finish continues the chain{ignored}")
    last = instance.get_runs(RunsFilter(tags={CHAIN_TAG: "1"}), limit=1)
    since = instance.get_run_record_by_id(last[0].run_id).create_timestamp if last else None
    done = [run] + [r.dagster_run for job in CHAIN_MONITORED for r in instance.get_run_records(
        RunsFilter(job_name=job, statuses=[DagsterRunStatus.SUCCESS], updated_after=since))]
    built = {y for r in done for y in run_years(r.tags)}
    retried = [y for y in failed_years(instance, context.repository_def) if y not in built]
    if retried:
        context.log.warning(f"build_chain_sensor: the yearly stages of {_years_text(retried)} did not succeed in an "
                            f"earlier run (Dagster marks those partitions failed): requested again with these builds")
    years = sorted(built | set(retried))
    jobs = {r.job_name for r in done}
    steps = {s.job: s for job in sorted(jobs) for s in follow_ups(job, year_range_tags(years) if years else {})}
    retry_tag = {RETRIED_TAG: ",".join(map(str, retried))} if retried else {}
    requests = [RunRequest(run_key=f"chain:{run.run_id}:{step.job}", job_name=step.job,
                           tags={**step.tags, "tradelab/after": run.run_id, CHAIN_TAG: "1",
                                 # the follow-ups belong to the build's experiment
                                 **{k: v for k, v in run.tags.items() if k in (EXPERIMENT_TAG, HASH_TAG)},
                                 **(retry_tag if step.job == "yearly_stages" else {})}) for step in steps.values()]
    return requests or SkipReason(f"{run.job_name} run {run.run_id} covered no years")


def failed_years(instance, repository) -> list[int]:
    """The years whose yearly stages have not succeeded since their last attempt: Dagster's
    own status of the year partitions of every asset in `yearly_stages` (YEAR_ASSETS of
    `repository`, the code location's definitions) is FAILED there (a failed or killed run
    marks each partition it planned; a later materialization clears it). Years never
    attempted are not failed."""
    from dagster import AssetPartitionStatus

    graph = repository.asset_graph
    keys = [k for k in graph.get_all_asset_keys() if k.to_user_string() in YEAR_ASSETS]
    year_keys = years_partitions.get_partition_keys()
    out: set[int] = set()
    for key in keys:
        status = instance.get_status_by_partition(key, year_keys, years_partitions)
        out |= {int(y) for y, st in (status or {}).items() if st == AssetPartitionStatus.FAILED}  # None: never attempted
    return sorted(out)


def _years_text(years: list[int]) -> str:
    """2016-2019 for a contiguous span, else the years listed."""
    if years == list(range(years[0], years[-1] + 1)) and len(years) > 1:
        return f"{years[0]}-{years[-1]}"
    return ", ".join(map(str, years))
