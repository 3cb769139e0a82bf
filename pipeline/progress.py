"""Progress of the runs a command launches, from their events as they arrive.

`RunProgress(instance)` is a context manager: the runs launched inside it carry its `tags`
(`tradelab/invocation`: this command alone), and a thread reads the instance's event log of
those runs every `interval` seconds. It writes to stderr in one of two modes:

- `tty` (stderr is a terminal): a status line, redrawn at least every `HEARTBEAT_S` seconds
  (every `redraw` seconds, 1 by default) and drawn at once on entering, naming the chain's
  position, the running job and steps, the seconds since the command started and since the
  step started, and "compiling kernels (first run after install)" while numba compiles in
  this process (a `numba:compile` listener, numba.core.event):

      progress 0:42  chain 1/3 historical_build_and_train 2000..2004: features 38 s - compiling kernels (first run after install)

  A finished year of a yearly stage and a finished step are kept as lines above it.
- `lines` (a log file, CI): plain lines only, never a carriage return: one when the command
  starts, one per chain position (`stage`), one per step start and finish, one per finished
  year, and one the first time a step compiles kernels. Each begins with the UTC time:

      progress: 2026-11-27 16:40:01 started
      progress: 2026-11-27 16:40:01 historical_build_and_train: features started
      progress: 2026-11-27 16:40:43 historical_build_and_train: features compiling kernels (first run after install)
      progress: 2026-11-27 16:41:02 train_meta_job: meta_model 2014 done (3/5 years, 12.3 s)
      progress: 2026-11-27 16:41:40 train_meta_job: meta_model done (step 2/3, 61.0 s)

`K/N years` counts the years of the run (its partition tags); `step i/n` the steps of the
run's execution plan; the seconds run from the step's start (for a year: from the previous
year done, or the step's start). On leaving, a last read writes what is left: every line of
a finished run is out before the command prints its results.

The mode is `progress_mode()`: TRADELAB_PROGRESS=0 hides everything, otherwise `tty` when
stderr is a terminal, else `lines`. The event log is only read: a watcher that fails to read
it (a database gone) stops quietly, the run goes on. Compilation in other processes (a
process pool's workers) is not seen: the status line still moves with the step's seconds.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import threading
import time
import uuid

INVOCATION_TAG = "tradelab/invocation"
HEARTBEAT_S = 5.0  # the longest a terminal's status line may go without a redraw
COMPILING = "compiling kernels (first run after install)"


def _isatty(stream) -> bool:
    """Whether `stream` is a terminal (False for a stream without isatty, or a closed one)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress_mode(stream=None) -> str:
    """`off` (TRADELAB_PROGRESS empty, 0, false or no), `tty` (`stream`, stderr by default, is
    a terminal) or `lines` (anything else: a log file, a pipe, CI)."""
    flag = os.environ.get("TRADELAB_PROGRESS")
    if flag is not None and flag.strip().lower() in ("", "0", "false", "no"):
        return "off"
    return "tty" if _isatty(sys.stderr if stream is None else stream) else "lines"


def progress_enabled() -> bool:
    """Whether a command shows progress at all (progress_mode() is not `off`)."""
    return progress_mode() != "off"


class CompileWatch:
    """Counts the numba compilations in flight in this process (`numba:compile` events nest:
    a kernel compiles the functions it calls). `active` is true while one runs; `seen` once
    any ran. Registered with numba on `start()`, removed on `stop()`."""

    def __init__(self):
        self.depth = 0
        self.seen = 0
        self.kernel: str | None = None
        self._lock = threading.Lock()
        self._listener = None

    @property
    def active(self) -> bool:
        return self.depth > 0

    def on_start(self, event) -> None:
        with self._lock:
            self.depth += 1
            self.seen += 1
            func = getattr((event.data or {}).get("dispatcher"), "py_func", None)
            self.kernel = getattr(func, "__qualname__", None) or self.kernel

    def on_end(self, event) -> None:
        with self._lock:
            self.depth = max(0, self.depth - 1)

    def start(self) -> None:
        """Listen to numba's compile events (nothing when numba is not installed)."""
        try:
            from numba.core import event as numba_event
        except ImportError:
            return
        watch = self

        class _Listener(numba_event.Listener):
            def on_start(self, event):
                watch.on_start(event)

            def on_end(self, event):
                watch.on_end(event)

        self._listener = _Listener()
        numba_event.register("numba:compile", self._listener)

    def stop(self) -> None:
        if self._listener is not None:
            from numba.core import event as numba_event

            numba_event.unregister("numba:compile", self._listener)
            self._listener = None


class _RunState:
    def __init__(self, job: str, total_steps: int, years: int):
        self.job = job
        self.cursor: str | None = None
        self.total_steps, self.years = total_steps, years
        self.done_steps = 0
        self.started: dict[str, float] = {}
        self.running: dict[str, float] = {}  # step -> start time, until it ends
        self.compiled: set[str] = set()  # steps whose compiling line was written (lines mode)
        self.last_year: dict[str, float] = {}
        self.years_done: dict[str, int] = {}


class _StatusStream:
    """stderr (and stdout on the same terminal) while a terminal's status line is shown: any
    other write first erases the status line (the next heartbeat draws it again below what was
    written)."""

    def __init__(self, real, progress: RunProgress):
        self._real, self._progress = real, progress

    def write(self, text: str) -> int:
        with self._progress._lock:
            self._progress._erase()
            n = self._real.write(text)
            self._progress._at_line_start = text.endswith("\n") if text else self._progress._at_line_start
            return n

    def __getattr__(self, name):
        return getattr(self._real, name)


def _clock_text(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class RunProgress:
    """Watch the runs tagged with `self.tags` on `instance`; show their progress (module doc).

    `mode`: `tty`, `lines` or `off` (default: progress_mode(); `enabled=False` is `off`,
    `enabled=True` keeps the mode of the stream, `lines` when that is `off`). `stream`: where
    to write (stderr). `clock`: seconds since the epoch (time.time; the event log's
    timestamps are on it). `redraw`: the status line's period in seconds (<= HEARTBEAT_S).
    `thread=False` starts no watcher thread: the caller calls `tick()` (tests, with a fake
    clock). `write(line)`: a callable that takes the lines instead of `stream` (no status line)."""

    def __init__(self, instance, interval: float = 0.5, enabled: bool | None = None, write=None, *,
                 mode: str | None = None, stream=None, clock=time.time, redraw: float = 1.0, thread: bool = True,
                 watch_compiles: bool = True):
        self.instance = instance
        self.interval = interval
        self.stream = stream
        if mode is None:
            mode = progress_mode(stream)
            if enabled is not None:
                mode = ("lines" if mode == "off" else mode) if enabled else "off"
        if write is not None and mode == "tty":
            mode = "lines"
        self.mode = mode
        self.enabled = mode != "off"
        self.tags = {INVOCATION_TAG: f"{os.getpid()}-{uuid.uuid4().hex[:12]}"}
        self.clock = clock
        self.redraw = min(float(redraw), HEARTBEAT_S)
        self.compiles = CompileWatch()
        self._watch_compiles = watch_compiles
        self._write = write
        self._use_thread = thread
        self._runs: dict[str, _RunState] = {}
        self._stage: str | None = None
        self._t0 = clock()
        self._last_draw: float | None = None
        self._shown = False  # a status line is on the terminal
        self._at_line_start = True
        self._saved_stderr = None
        self._saved_stdout = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._broken = False
        self._lock = threading.RLock()  # what is written: the watcher's lines and status, other writes to stderr
        self._poll_lock = threading.Lock()  # the event cursors: the thread and the command's own poll() read once
        self._compile_noted = False

    # ------------------------------------------------------------------ life cycle

    def __enter__(self) -> RunProgress:
        if not self.enabled:
            return self
        self._t0 = self.clock()
        if self.mode == "tty":
            self._draw()  # at once: the first thing a cold run shows
            if self.stream is None and self._write is None:
                self._saved_stderr, sys.stderr = sys.stderr, _StatusStream(sys.stderr, self)
                if _isatty(sys.stdout):
                    self._saved_stdout, sys.stdout = sys.stdout, _StatusStream(sys.stdout, self)
        else:
            self._emit("started")
        if self._watch_compiles:
            self.compiles.start()
        if self._use_thread:
            self._thread = threading.Thread(target=self._loop, name="tradelab-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if not self.enabled:
            return
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        self.poll()
        self.compiles.stop()
        with self._lock:
            self._erase()
            if self._saved_stderr is not None:
                sys.stderr, self._saved_stderr = self._saved_stderr, None
            if self._saved_stdout is not None:
                sys.stdout, self._saved_stdout = self._saved_stdout, None

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def tick(self) -> None:
        """One beat of the watcher: read the new events, then (tty) redraw the status line
        when `redraw` seconds have passed since the last draw."""
        self.poll()
        if self.mode == "tty":
            with self._lock:
                if self._last_draw is None or self.clock() - self._last_draw >= self.redraw or not self._shown:
                    self._draw()

    def stage(self, label: str) -> None:
        """What the command runs now, e.g. `chain 2/4 yearly_stages 2000..2004`: the status
        line's first words (tty), one line (lines). The events so far are read first: the
        previous run's last lines come before it."""
        self.poll()
        self._stage = label
        if self.mode == "lines":
            self._emit(f"{label} started")
        elif self.mode == "tty":
            with self._lock:
                self._draw()

    # ------------------------------------------------------------------ output

    def _out(self):
        return self.stream if self.stream is not None else (self._saved_stderr or sys.stderr)

    def _erase(self) -> None:
        if self._shown:
            out = self._out()
            out.write("\r\x1b[K")
            out.flush()  # before a write to another stream (stdout) of the same terminal
            self._shown = False

    def status_text(self) -> str:
        """The status line's text (without the carriage return): elapsed time, the stage, the
        running steps with their seconds, and the compiling note."""
        now = self.clock()
        label = self._stage or ""
        running = [(state.job, step, since) for state in list(self._runs.values()) for step, since in list(state.running.items())]
        if running:
            job = running[0][0]
            steps = ", ".join(f"{step} {max(0.0, now - since):.0f} s" for _, step, since in running[:3])
            steps += f" (+{len(running) - 3} more)" if len(running) > 3 else ""
            # the stage names the job already (`chain 1/4 historical_build_and_train 2000..2004`): once is enough
            what = f"{label}: {steps}" if job in label.split() else f"{label} {job}: {steps}".lstrip()
        else:
            what = label or ("waiting for the next step" if self._runs else "starting")
        text = f"progress {_clock_text(now - self._t0)}  {what}"
        return f"{text} - {COMPILING}" if self.compiles.active else text

    def _draw(self) -> None:
        text = self.status_text()
        width = self._width()
        if len(text) > width - 1:
            text = text[: max(0, width - 2)] + "~"
        out = self._out()
        if not self._at_line_start and not self._shown:
            out.write("\n")
            self._at_line_start = True
        out.write("\r\x1b[K" + text)
        out.flush()
        self._shown = True
        self._last_draw = self.clock()

    def _width(self) -> int:
        try:
            return shutil.get_terminal_size((120, 24)).columns
        except (OSError, ValueError):
            return 120

    def _emit(self, message: str) -> None:
        """One kept line: `progress: <UTC time> <message>`."""
        when = dt.datetime.fromtimestamp(self.clock(), dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        line = f"progress: {when} {message}"
        if self._write is not None:
            self._write(line)
            return
        with self._lock:
            out = self._out()
            self._erase()
            out.write(line + "\n")
            out.flush()
            self._at_line_start = True
            if self.mode == "tty":
                self._draw()

    # ------------------------------------------------------------------ events

    def _state(self, run) -> _RunState:
        from pipeline.chain import run_years

        try:
            plan = self.instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
            steps = len(plan.steps)
        except Exception:  # no plan stored: the count is shown without a total
            steps = 0
        job = run.job_name if not run.job_name.startswith("__") else "materialize"
        return _RunState(job, steps, len(run_years(run.tags)))

    def poll(self) -> None:
        """Read the new events of every tagged run; write their lines."""
        if self._broken or not self.enabled:
            return
        with self._poll_lock:
            try:
                self._poll()
            except Exception:  # progress is a courtesy: never the reason a run fails
                self._broken = True

    def _poll(self) -> None:
        from dagster import DagsterEventType, RunsFilter

        from domain.progress import YEAR_DONE

        ended = (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE, DagsterEventType.STEP_SKIPPED)
        for record in self.instance.get_run_records(RunsFilter(tags=self.tags), ascending=True):
            run = record.dagster_run
            state = self._runs.get(run.run_id)
            if state is None:
                state = self._runs[run.run_id] = self._state(run)
            while True:
                conn = self.instance.get_records_for_run(run.run_id, cursor=state.cursor, limit=1000)
                for record in conn.records:
                    self._on_entry(state, record.event_log_entry, DagsterEventType, ended, YEAR_DONE)
                state.cursor = conn.cursor
                if not conn.has_more:
                    break
            if self.mode == "lines" and self.compiles.active:
                for step in state.running:
                    if step not in state.compiled:
                        state.compiled.add(step)
                        self._compile_noted = True
                        self._emit(f"{state.job}: {step} {COMPILING}")
        if self.mode == "lines" and self.compiles.active and not self._compile_noted:
            self._compile_noted = True  # compiling outside any step (e.g. before the first run)
            self._emit(COMPILING)

    def _on_entry(self, state: _RunState, entry, kinds, ended, year_done) -> None:
        event, step, ts = entry.dagster_event, entry.step_key, entry.timestamp
        if event is not None and event.event_type == kinds.STEP_START:
            state.started[step] = state.running[step] = ts
            if self.mode == "lines":
                self._emit(f"{state.job}: {step} started")
        elif event is not None and event.event_type in ended:
            state.running.pop(step, None)
            seconds = ts - state.started.get(step, ts)
            if event.event_type == kinds.STEP_SUCCESS:
                state.done_steps += 1
                total = f"/{state.total_steps}" if state.total_steps else ""
                self._emit(f"{state.job}: {step} done (step {state.done_steps}{total}, {seconds:.1f} s)")
            elif self.mode == "lines":
                what = "failed" if event.event_type == kinds.STEP_FAILURE else "skipped"
                self._emit(f"{state.job}: {step} {what} ({seconds:.1f} s)")
        elif event is None and entry.user_message and (m := year_done.match(entry.user_message.strip())):
            stage = m.group("stage")
            k = state.years_done[stage] = state.years_done.get(stage, 0) + 1
            since = state.last_year.get(stage, state.started.get(step, ts))
            state.last_year[stage] = ts
            of = f"/{state.years}" if state.years else ""
            self._emit(f"{state.job}: {stage} {m.group('year')} done ({k}{of} years, {ts - since:.1f} s)")
