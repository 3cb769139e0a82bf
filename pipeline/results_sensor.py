"""`results_sensor`: a run that materialized meta_model, evaluation or backtest ends with its
results block, also when it was launched outside the CLI (`dagster asset materialize
--select evaluation --partition 2014`, the UI, a schedule, the chain sensor).

On every successful run of the instance (`monitor_all_code_locations`: a run of
`dagster asset materialize` belongs to no code location), the sensor reads the run's
materializations and asset check evaluations, and logs pipeline.results.run_results: the
block of the stages the run materialized over its years (reports of the settings in force),
then one `warning: check ...` line per failed check. The same text is the tick's skip
reason, so the UI's sensor page shows it next to the run. It requests nothing.
"""

from __future__ import annotations

from dagster import DagsterRunStatus, DefaultSensorStatus, RunStatusSensorContext, SkipReason, run_status_sensor

from config.settings import load_settings


@run_status_sensor(
    name="results_sensor",
    run_status=DagsterRunStatus.SUCCESS,
    monitor_all_code_locations=True,
    default_status=DefaultSensorStatus.RUNNING,
    description="Logs the results block (pipeline.results) of every successful run that materialized meta_model, "
                "evaluation or backtest, with its failed asset checks.",
)
def results_sensor(context: RunStatusSensorContext):
    from pipeline.results import run_results

    run = context.dagster_run
    lines = run_results(context.instance, run.run_id, load_settings())
    if not lines:
        return SkipReason(f"run {run.run_id} materialized none of meta_model, evaluation, backtest")
    for line in lines:
        (context.log.warning if line.startswith("warning:") else context.log.info)(line)
    return SkipReason("\n".join([f"run {run.run_id} ({run.job_name})"] + lines))
