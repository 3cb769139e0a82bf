"""`make ui`: the Dagster web UI (`dagster dev -w workspace.yaml`) that one Ctrl-C stops.

`python -m pipeline.ui [--host HOST] [--port PORT]` (the Makefile's `HOST ?= 127.0.0.1`,
`PORT ?= 3000`) prepares the instance (pipeline.instance.get_instance: DAGSTER_HOME's
dagster.yaml, the `gpu` pool), then runs `dagster dev` under `supervise`: in a session of its
own, so the terminal's Ctrl-C reaches this process alone, which forwards it once to the whole
process group of `dagster dev` (webserver, daemon, code servers, run workers). Whatever of that
group, or of `dagster dev`'s descendants that left it, is still alive `GRACE_S` later is
SIGKILLed, so everything is gone within 10 s; a second Ctrl-C kills at once.

Without it, `dagster dev` in the terminal's process group got the Ctrl-C together with its
children: the daemon logged "Daemon threads shut down" and stayed, and processes remained
after SIGTERM and SIGINT. Linux finds the descendants under /proc; elsewhere the group alone
is watched.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
WORKSPACE = PROJECT_ROOT / "workspace.yaml"
GRACE_S = 5.0    # from the forwarded signal to SIGKILL: the whole stop stays under 10 s on a loaded machine
POLL_S = 0.1     # how often the launcher looks at its child and, while stopping, at the group
# what each signal received becomes for the group: a closed terminal (SIGHUP) stops it as SIGTERM does
FORWARD = {signal.SIGINT: signal.SIGINT, signal.SIGTERM: signal.SIGTERM, signal.SIGHUP: signal.SIGTERM}


# ---------------------------------------------------------------- processes under /proc


def _stat(pid: int) -> tuple[int, int, str, int] | None:
    """(parent pid, process group, state letter, start time in clock ticks) of `pid` from
    /proc/<pid>/stat, or None when it is gone (or there is no /proc)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the name in parentheses may hold spaces
    return int(fields[1]), int(fields[2]), fields[0], int(fields[19])


def _table() -> dict[int, tuple[int, int, str, int]]:
    """Every process under /proc: pid -> _stat."""
    out = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit() and (st := _stat(int(name))) is not None:
                out[int(name)] = st
    return out


def tree(leader: int) -> set[tuple[int, int]]:
    """(pid, start time) of `leader`, every process of its process group and every descendant
    of it (through parent pids, whatever group or session it moved to); zombies left out."""
    table = _table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [leader] + [pid for pid, st in table.items() if st[1] == leader]
    while todo:
        pid = todo.pop()
        if pid in found or pid not in table:
            continue
        found.add(pid)
        todo.extend(children.get(pid, []))
    return {(pid, table[pid][3]) for pid in found if table[pid][2] not in "ZX"}


def alive(procs: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Those of `procs` (pid, start time) still running: same pid and start time (a reused pid
    is another process), not a zombie."""
    out = set()
    for pid, start in procs:
        st = _stat(pid)
        if st is not None and st[3] == start and st[2] not in "ZX":
            out.add((pid, start))
    return out


def group_alive(pgid: int) -> bool:
    """Whether process group `pgid` has a member (zombies count: the fallback without /proc)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------- the supervisor


def _signal_all(leader: int, procs: set[tuple[int, int]], signum: int) -> None:
    """`signum` to the process group `leader` and to each of `procs` still running."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signum)
    for pid, _ in alive(procs):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def _name(pid: int) -> str:
    """`pid`'s command line, cut to 100 characters (its name in brackets when it has none)."""
    try:
        line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:100].strip()
        return line or f"[{Path(f'/proc/{pid}/comm').read_text().strip()}]"
    except OSError:
        return "?"


def stop(proc: subprocess.Popen, signum: int, received: list[int], grace_s: float = GRACE_S) -> list[str]:
    """Stop `proc` (the leader of its own process group) and everything it started: `signum`
    to its group, then wait until the group and every descendant seen meanwhile are gone, at
    most `grace_s` (cut short by a further signal in `received`); SIGKILL for what is left.
    Returns once the leader is reaped: the command lines of the processes SIGKILLed."""
    have_proc = os.path.isdir("/proc/self")
    seen = tree(proc.pid)
    _signal_all(proc.pid, seen, signum)
    deadline, count = time.monotonic() + grace_s, len(received)
    while time.monotonic() < deadline and len(received) == count:
        proc.poll()  # reap the leader: a zombie leader keeps its group id alive
        if proc.returncode is not None:
            seen = alive(seen)
        else:
            seen |= tree(proc.pid)
        if not (alive(seen) if have_proc else group_alive(proc.pid)) and proc.returncode is not None:
            return []
        time.sleep(POLL_S)
    left = alive(seen | (tree(proc.pid) if proc.returncode is None else set()))
    names = [f"{pid} {_name(pid)}" for pid, _ in sorted(left)]
    _signal_all(proc.pid, left, signal.SIGKILL)
    proc.wait()
    return names


def supervise(cmd: list[str], grace_s: float = GRACE_S, **popen) -> int:
    """Run `cmd` in a session of its own until it ends (its exit status; what is left of its
    process group is SIGKILLed) or this process gets SIGINT, SIGTERM or SIGHUP: then `stop`
    it, its group and its descendants (FORWARD says which signal they get; SIGKILL after
    `grace_s`) and return 128 + the signal number."""
    received: list[int] = []
    # a SIGHUP ignored already (nohup) stays ignored, here and in dagster dev
    caught = [s for s in FORWARD if not (s == signal.SIGHUP and signal.getsignal(s) == signal.SIG_IGN)]
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum)) for s in caught}
    try:
        proc = subprocess.Popen(cmd, start_new_session=True, **popen)
        while not received:
            try:
                code = proc.wait(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                continue
            left = alive(tree(proc.pid)) if os.path.isdir("/proc/self") else set()
            _signal_all(proc.pid, left, signal.SIGKILL)  # its group outlives it: orphans, no one stops them
            if left:
                print(f"[ui] dagster dev exited ({code}); SIGKILLed {len(left)} of its processes left",
                      file=sys.stderr, flush=True)
            return code
        first, t0 = received[0], time.monotonic()
        print(f"[ui] {signal.Signals(first).name}: stopping dagster dev and all its processes (SIGKILL after "
              f"{grace_s:g} s)", file=sys.stderr, flush=True)
        killed = stop(proc, FORWARD[first], received, grace_s)
        print(f"[ui] stopped in {time.monotonic() - t0:.1f} s" + (f"; SIGKILLed {len(killed)} left: " + ", ".join(killed)
              if killed else ""), file=sys.stderr, flush=True)
        return 128 + first
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def dev_command(host: str, port: int) -> list[str]:
    """`dagster dev` on the project's workspace, bound to `host`:`port`."""
    return [sys.executable, "-m", "dagster", "dev", "-w", str(WORKSPACE), "-h", host, "-p", str(port)]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pipeline.ui", description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1", help="address the web UI listens on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=3000, help="port of the web UI (default 3000)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Prepare the instance (in a child process: this one stays free of Dagster, quick to
    start and to exit), then run `dagster dev` until it ends or a signal stops it."""
    args = _parser().parse_args(argv)
    os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / ".dagster"))  # as pipeline.instance does
    try:  # a Ctrl-C here reaches the child too (same process group): nothing else to stop
        prepared = subprocess.run([sys.executable, "-c", "from pipeline.instance import get_instance; "
                                   "get_instance().dispose()"], cwd=PROJECT_ROOT, check=False)
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    if prepared.returncode != 0:
        return prepared.returncode
    print(f"[ui] dagster dev on http://{args.host}:{args.port} (DAGSTER_HOME={os.environ['DAGSTER_HOME']}); "
          "Ctrl-C stops it and all its processes", file=sys.stderr, flush=True)
    return supervise(dev_command(args.host, args.port), cwd=PROJECT_ROOT)


if __name__ == "__main__":
    sys.exit(main())
