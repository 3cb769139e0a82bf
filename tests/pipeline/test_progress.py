"""What a command shows while its runs go (pipeline.progress): on a terminal a status line drawn
at once and redrawn at least every 5 s with the running step, its seconds and, while numba
compiles, "compiling kernels"; in a log file plain lines, one per step start and finish, never
a carriage return. Time is a fake clock advanced by the test; the watcher's beats are called
by the test (thread=False) from inside a real run's op, so a step is running while they fire."""

from __future__ import annotations

import io
import re
import time

import pytest

from pipeline.progress import COMPILING, HEARTBEAT_S, RunProgress, progress_mode

TS = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"


class FakeClock:
    """Seconds since the epoch that move only when told to."""

    def __init__(self, now: float | None = None):
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Terminal(io.StringIO):
    """A stream that says it is a terminal and records the fake time of every status draw."""

    def __init__(self, clock: FakeClock):
        super().__init__()
        self.clock, self.draws = clock, []

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text.startswith("\r\x1b[K") and len(text) > 4:
            self.draws.append((self.clock(), text[4:]))
        return super().write(text)


def _job(*ops_body):
    """A job of ops in a line (`first` -> `second` ...), each calling its body with no argument."""
    from dagster import In, Nothing, job, op

    def make(name: str, body, after: bool):
        @op(name=name, ins={"after": In(Nothing)} if after else {})
        def _op():
            body()

        return _op

    made = [make(("first", "second", "third")[i], body, i > 0) for i, body in enumerate(ops_body)]

    @job(name="progress_job")
    def progress_job():
        last = None
        for o in made:
            last = o(last) if last is not None else o()

    return progress_job


def test_progress_mode_is_off_with_the_flag_tty_on_a_terminal_and_lines_elsewhere(monkeypatch):
    monkeypatch.delenv("TRADELAB_PROGRESS", raising=False)
    assert progress_mode(Terminal(FakeClock())) == "tty"
    assert progress_mode(io.StringIO()) == "lines"  # a log file, a pipe, CI
    for off in ("0", "", "false", "no"):
        monkeypatch.setenv("TRADELAB_PROGRESS", off)
        assert progress_mode(Terminal(FakeClock())) == "off"
    monkeypatch.setenv("TRADELAB_PROGRESS", "1")
    assert progress_mode(io.StringIO()) == "lines"


def test_a_terminal_shows_a_status_line_at_once_before_any_run_exists(instance):
    clock = FakeClock()
    term = Terminal(clock)
    with RunProgress(instance, stream=term, mode="tty", clock=clock, thread=False):
        assert term.draws == [(clock.now, "progress 0:00  starting")]  # drawn on entering, no tick needed
    assert term.getvalue().endswith("\r\x1b[K")  # erased on leaving: the command's output starts clean


def test_the_heartbeat_redraws_every_second_of_a_long_step_never_5_s_apart_with_its_seconds(instance):
    clock = FakeClock()
    term = Terminal(clock)
    progress = RunProgress(instance, stream=term, mode="tty", clock=clock, thread=False)

    def long_step():  # 12 s of fake time in beats of 0.5 s (the watcher's interval)
        for _ in range(24):
            clock.advance(0.5)
            progress.tick()

    with progress:
        _job(long_step).execute_in_process(instance=instance, tags=progress.tags)
    times = [t for t, _ in term.draws]
    assert max(b - a for a, b in zip(times, times[1:])) <= 1.0 <= HEARTBEAT_S
    during = [text for _, text in term.draws if "first" in text]
    assert len(during) >= 11, term.draws
    seconds = [int(re.search(r"progress_job: first (\d+) s", text).group(1)) for text in during]
    assert seconds == sorted(seconds) and seconds[-1] >= 11  # the step's own seconds move
    assert re.fullmatch(r"progress \d:\d\d  progress_job: first \d+ s", during[-1]), during[-1]
    assert "progress: " in term.getvalue() and "progress_job: first done (step 1/1, " in term.getvalue()


def test_a_redraw_period_beyond_the_heartbeat_is_capped_at_5_s(instance):
    clock = FakeClock()
    term = Terminal(clock)
    with RunProgress(instance, stream=term, mode="tty", clock=clock, thread=False, redraw=60) as progress:
        for _ in range(40):  # 20 s with nothing happening
            clock.advance(0.5)
            progress.tick()
    times = [t for t, _ in term.draws]
    assert len(times) >= 4 and max(b - a for a, b in zip(times, times[1:])) <= HEARTBEAT_S


def test_a_numba_compile_event_shows_compiling_kernels_while_it_lasts(instance):
    from numba.core import event

    clock = FakeClock()
    term = Terminal(clock)
    with RunProgress(instance, stream=term, mode="tty", clock=clock, thread=False) as progress:
        event.start_event("numba:compile", data={"dispatcher": None})  # what a dispatcher broadcasts
        clock.advance(1)
        progress.tick()
        event.end_event("numba:compile", data={"dispatcher": None})
        clock.advance(1)
        progress.tick()
    assert term.draws[-2][1] == f"progress 0:01  starting - {COMPILING}"
    assert term.draws[-1][1] == "progress 0:02  starting"
    assert COMPILING == "compiling kernels (first run after install)"


def test_a_real_numba_compilation_is_seen_by_the_watch(instance):
    from numba import njit

    with RunProgress(instance, stream=io.StringIO(), mode="lines", clock=FakeClock(), thread=False) as progress:
        @njit(cache=False)
        def fresh(x):  # a new function: numba compiles it on this first call
            return x * 3 + 1

        assert fresh(2) == 7
        assert progress.compiles.seen >= 1 and not progress.compiles.active
    seen = progress.compiles.seen
    njit(cache=False)(lambda x: x + 1)(1)  # after leaving: the listener is gone
    assert progress.compiles.seen == seen


def test_a_log_file_gets_one_plain_line_per_step_start_and_finish_and_no_carriage_return(instance):
    clock = FakeClock()
    log = io.StringIO()
    progress = RunProgress(instance, stream=log, mode="lines", clock=clock, thread=False)

    def beat():
        for _ in range(10):  # many beats inside one step: still one line per event
            clock.advance(0.5)
            progress.tick()

    with progress:
        progress.stage("chain 1/1 progress_job 2000..2000")
        _job(beat, beat).execute_in_process(instance=instance, tags=progress.tags)
    text = log.getvalue()
    assert "\r" not in text and "\x1b" not in text
    shapes = [re.sub(r"\d+\.\d s\)", "S s)", re.sub(TS, "T", line)) for line in text.splitlines()]
    assert shapes == ["progress: T started",
                      "progress: T chain 1/1 progress_job 2000..2000 started",
                      "progress: T progress_job: first started",
                      "progress: T progress_job: first done (step 1/2, S s)",
                      "progress: T progress_job: second started",
                      "progress: T progress_job: second done (step 2/2, S s)"], text


def test_a_log_file_says_once_per_step_that_kernels_are_compiling(instance):
    from numba.core import event

    log = io.StringIO()
    progress = RunProgress(instance, stream=log, mode="lines", clock=FakeClock(), thread=False)

    def compiling():
        event.start_event("numba:compile", data={"dispatcher": None})
        for _ in range(3):
            progress.tick()
        event.end_event("numba:compile", data={"dispatcher": None})

    with progress:
        _job(compiling).execute_in_process(instance=instance, tags=progress.tags)
    lines = [re.sub(TS, "T", line) for line in log.getvalue().splitlines()]
    assert lines.count(f"progress: T progress_job: first {COMPILING}") == 1, lines
    assert lines.index(f"progress: T progress_job: first {COMPILING}") == lines.index("progress: T progress_job: first started") + 1


def test_a_failed_step_is_a_line_too(instance):
    log = io.StringIO()

    def boom():
        raise ValueError("no")

    with RunProgress(instance, stream=log, mode="lines", clock=FakeClock(), thread=False) as progress:
        _job(boom).execute_in_process(instance=instance, tags=progress.tags, raise_on_error=False)
    assert re.search(rf"^progress: {TS} progress_job: first failed \(\d+\.\d s\)$", log.getvalue(), re.M), log.getvalue()


def test_other_writes_to_stderr_erase_the_status_line_and_the_next_beat_draws_it_again(instance, monkeypatch):
    import sys

    clock = FakeClock()
    term = Terminal(clock)
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setattr(sys, "stdout", term)  # stdout on the same terminal
    with RunProgress(instance, mode="tty", clock=clock, thread=False) as progress:
        print("warning: check raw_bars/plausible_moves failed", file=sys.stderr)
        progress.tick()
        print("[demo] generating grid-search inputs")
        progress.tick()
    out = term.getvalue()
    assert "\r\x1b[Kwarning: check raw_bars/plausible_moves failed\n\r\x1b[Kprogress " in out, repr(out)
    assert "\r\x1b[K[demo] generating grid-search inputs\n\r\x1b[Kprogress " in out, repr(out)
    assert sys.stderr is term and sys.stdout is term  # given back on leaving


@pytest.mark.parametrize("mode", ["tty", "lines"])
def test_progress_off_writes_nothing(instance, mode, monkeypatch):
    monkeypatch.setenv("TRADELAB_PROGRESS", "0")
    out = Terminal(FakeClock()) if mode == "tty" else io.StringIO()
    with RunProgress(instance, stream=out, thread=False) as progress:
        _job(lambda: None).execute_in_process(instance=instance, tags=progress.tags)
        progress.tick()
    assert out.getvalue() == ""


def test_the_status_line_names_the_chain_position_and_the_job_once(instance):
    clock = FakeClock()
    term = Terminal(clock)
    progress = RunProgress(instance, stream=term, mode="tty", clock=clock, thread=False)

    def step():
        clock.advance(2)
        progress.tick()

    with progress:
        progress.stage("chain 1/2 progress_job 2000..2004")
        _job(step).execute_in_process(instance=instance, tags=progress.tags)
        progress.stage("chain 2/2 other_job 2000..2004")
    texts = [text for _, text in term.draws]
    assert "progress 0:00  chain 1/2 progress_job 2000..2004" in texts
    assert any(re.fullmatch(r"progress 0:02  chain 1/2 progress_job 2000\.\.2004: first \d s", t) for t in texts), texts
    assert texts[-1] == "progress 0:02  chain 2/2 other_job 2000..2004"  # the finished step is out before it
