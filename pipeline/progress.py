"""Progress lines of the runs a command launches, from their events as they arrive.

`RunProgress(instance)` is a context manager: the runs launched inside it carry its `tags`
(`tradelab/invocation`: this command alone), and a thread reads the instance's event log of
those runs every `interval` seconds and writes one line per finished year of a yearly stage
(domain.progress: the stage's `{stage} {year} done` message) and one per finished step:

    progress: meta_model 2014 done (3/5 years, 12.3 s)
    progress: meta_model done (step 2/4, 61.0 s)

`K/N years` counts the years of the run (its partition tags); `step i/n` the steps of the
run's execution plan; the seconds run from the step's start (for a year: from the previous
year done, or the step's start). On leaving, a last read writes what is left: every line of
a finished run is out before the command prints its results.

Lines go to stderr through tqdm.write (an active tqdm bar stays whole) when stderr is a
terminal or TRADELAB_PROGRESS=1; TRADELAB_PROGRESS=0 hides them. The event log is only read:
a watcher that fails to read it (a database gone) stops quietly, the run goes on.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid

INVOCATION_TAG = "tradelab/invocation"


def progress_enabled() -> bool:
    flag = os.environ.get("TRADELAB_PROGRESS")
    if flag is not None:
        return flag not in ("", "0", "false", "no")
    return sys.stderr.isatty()


class _RunState:
    def __init__(self, total_steps: int, years: int):
        self.cursor: str | None = None
        self.total_steps, self.years = total_steps, years
        self.done_steps = 0
        self.started: dict[str, float] = {}
        self.last_year: dict[str, float] = {}
        self.years_done: dict[str, int] = {}


class RunProgress:
    """Watch the runs tagged with `self.tags` on `instance`; write their progress lines."""

    def __init__(self, instance, interval: float = 0.5, enabled: bool | None = None, write=None):
        self.instance = instance
        self.interval = interval
        self.enabled = progress_enabled() if enabled is None else enabled
        self.tags = {INVOCATION_TAG: f"{os.getpid()}-{uuid.uuid4().hex[:12]}"}
        self._write = write
        self._runs: dict[str, _RunState] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._broken = False
        self._lock = threading.Lock()  # the thread and the command's own poll() never write a line twice

    def __enter__(self) -> RunProgress:
        if self.enabled:
            self._thread = threading.Thread(target=self._loop, name="tradelab-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.poll()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def _emit(self, line: str) -> None:
        if self._write is not None:
            self._write(line)
            return
        from tqdm import tqdm

        tqdm.write(line, file=sys.stderr)

    def _state(self, run) -> _RunState:
        from pipeline.chain import run_years

        try:
            plan = self.instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
            steps = len(plan.steps)
        except Exception:  # no plan stored: the count is shown without a total
            steps = 0
        return _RunState(steps, len(run_years(run.tags)))

    def poll(self) -> None:
        """Read the new events of every tagged run; write their lines."""
        if self._broken or not self.enabled:
            return
        with self._lock:
            try:
                self._poll()
            except Exception:  # progress is a courtesy: never the reason a run fails
                self._broken = True

    def _poll(self) -> None:
        from dagster import DagsterEventType, RunsFilter

        from domain.progress import YEAR_DONE

        for record in self.instance.get_run_records(RunsFilter(tags=self.tags), ascending=True):
            run = record.dagster_run
            state = self._runs.get(run.run_id)
            if state is None:
                state = self._runs[run.run_id] = self._state(run)
            while True:
                conn = self.instance.get_records_for_run(run.run_id, cursor=state.cursor, limit=1000)
                for record in conn.records:
                    entry = record.event_log_entry
                    event, step, ts = entry.dagster_event, entry.step_key, entry.timestamp
                    if event is not None and event.event_type == DagsterEventType.STEP_START:
                        state.started[step] = ts
                    elif event is not None and event.event_type == DagsterEventType.STEP_SUCCESS:
                        state.done_steps += 1
                        total = f"/{state.total_steps}" if state.total_steps else ""
                        seconds = ts - state.started.get(step, ts)
                        self._emit(f"progress: {step} done (step {state.done_steps}{total}, {seconds:.1f} s)")
                    elif event is None and entry.user_message and (m := YEAR_DONE.match(entry.user_message.strip())):
                        stage = m.group("stage")
                        k = state.years_done[stage] = state.years_done.get(stage, 0) + 1
                        since = state.last_year.get(stage, state.started.get(step, ts))
                        state.last_year[stage] = ts
                        of = f"/{state.years}" if state.years else ""
                        self._emit(f"progress: {stage} {m.group('year')} done ({k}{of} years, {ts - since:.1f} s)")
                state.cursor = conn.cursor
                if not conn.has_more:
                    break
