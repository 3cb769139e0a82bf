"""`make ui` stops with one Ctrl-C (pipeline/ui.py), tested with real processes and real signals.

1. `supervise` on a child that ignores SIGINT and SIGTERM and a grandchild that left the group
   (its own session): one SIGINT to the supervisor's process group, and both are SIGKILLed
   after the grace (a second or two); a child that exits by itself takes the rest of its
   group with it.
2. `make ui PORT=<free port>` as a terminal runs it (make in a process group of its own, the
   foreground group a Ctrl-C reaches), on a throw-away DAGSTER_HOME and a tiny settings file:
   once the port accepts connections and the daemon and the code server are up, ONE SIGINT to
   the group, and every process of the tree (make, the launcher, dagster dev, webserver,
   daemon, code servers) is gone within 10 s. `make` runs with VENV= a folder whose python
   is this interpreter (nothing installed). About a minute here: dagster dev starts slowly.

Processes are listed from /proc (Linux); polls wait on real conditions with deadlines.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
STOP_S = 10           # the promise: everything gone within 10 s of the Ctrl-C
SERVER_START_S = 180  # dagster dev: webserver, daemon and code server up (a loaded machine)

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="lists processes from /proc (Linux)")


def _default_sigint() -> None:
    # a SIGINT ignored by whoever started pytest (a background job of a non-interactive shell)
    # would be inherited and make the Ctrl-C a no-op for make
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of a process, None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), fields[0], int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _tree(root: int) -> dict[tuple[int, int], str]:
    """(pid, start time) -> command line of `root` and all its descendants, zombies left out."""
    table = {int(n): st for n in os.listdir("/proc") if n.isdigit() and (st := _stat(int(n))) is not None}
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in table and pid not in found:
            found.add(pid)
            todo.extend(p for p, st in table.items() if st[0] == pid)
    return {(pid, table[pid][2]): _cmdline(pid) for pid in found if table[pid][1] not in "ZX"}


def _alive(procs) -> list[str]:
    """The command lines of those of `procs` (pid, start time) still running (not zombies)."""
    out = []
    for pid, start in procs:
        st = _stat(pid)
        if st is not None and st[2] == start and st[1] not in "ZX":
            out.append(f"{pid} {_cmdline(pid)[:120]}")
    return out


def _wait_gone(procs, timeout_s: float) -> list[str]:
    """Poll until none of `procs` runs, at most `timeout_s`; returns those still running."""
    deadline = time.monotonic() + timeout_s
    while (left := _alive(procs)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _kill_all(procs) -> None:
    """Cleanup after a failure: SIGKILL whatever of `procs` still runs."""
    for pid, start in procs:
        st = _stat(pid)
        if st is not None and st[2] == start:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


STUBBORN = """
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if sys.argv[1] == "child":
    grandchild = subprocess.Popen([sys.executable, "-c", sys.argv[2], "grandchild", ""], start_new_session=True,
                                  stdout=subprocess.PIPE, text=True)
    assert grandchild.stdout.readline() == "ready\\n"
    print("ready", grandchild.pid, flush=True)
else:
    print("ready", flush=True)
while True:
    signal.pause()
"""


def test_one_sigint_sigkills_a_child_that_ignores_it_and_a_grandchild_that_left_the_group_after_the_grace():
    driver = ("import sys; from pipeline.ui import supervise; "
              "sys.exit(supervise([sys.executable, '-c', sys.argv[1], 'child', sys.argv[1]], grace_s=1.0))")
    proc = subprocess.Popen([sys.executable, "-c", driver, STUBBORN], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_default_sigint)  # noqa: PLW1509 (no threads yet)
    procs = {}
    try:
        words = proc.stdout.readline().split()
        assert words[:1] == ["ready"], proc.stderr.read()
        procs = _tree(proc.pid)
        assert len(procs) == 3 and any(pid == int(words[1]) for pid, _ in procs)  # supervisor, child, grandchild
        os.killpg(proc.pid, signal.SIGINT)
        assert not _wait_gone(procs, STOP_S)
        assert proc.wait(timeout=STOP_S) == 128 + signal.SIGINT
        err = proc.stderr.read()
        assert "[ui] SIGINT: stopping dagster dev and all its processes" in err and "SIGKILLed 2 left" in err, err
    finally:
        _kill_all(procs)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=30)


ORPHANING = """
import subprocess, sys
orphan = subprocess.Popen([sys.executable, "-c", sys.argv[1], "grandchild", ""], stdout=subprocess.PIPE, text=True)
assert orphan.stdout.readline() == "ready\\n"
print("ready", orphan.pid, flush=True)
sys.exit(3)
"""


def test_a_child_that_exits_by_itself_takes_what_is_left_of_its_group_with_it():
    """dagster dev ending on its own (a port in use, a crash) must not leave its webserver or
    daemon running: its exit status is returned, its group's orphans are SIGKILLed."""
    driver = ("import sys; from pipeline.ui import supervise; "
              "sys.exit(supervise([sys.executable, '-c', sys.argv[1], sys.argv[2]]))")
    proc = subprocess.Popen([sys.executable, "-c", driver, ORPHANING, STUBBORN], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    orphan = None
    try:
        words = proc.stdout.readline().split()
        assert words[:1] == ["ready"], proc.stderr.read()
        orphan = (int(words[1]), _stat(int(words[1]))[2])
        assert proc.wait(timeout=60) == 3
        assert not _wait_gone({orphan}, STOP_S)
        assert "SIGKILLed 1 of its processes left" in proc.stderr.read()
    finally:
        _kill_all({orphan} if orphan else set())
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=30)


@pytest.fixture
def ui_env(tmp_path):
    """A throw-away DAGSTER_HOME, a tiny settings file (2 symbols, 3 years, no chained runs)
    and a VENV folder for make whose python is this interpreter."""
    cfg = tmp_path / "settings.yaml"
    cfg.write_text(yaml.safe_dump({
        "paths": {"data": "data", "reports": "reports", "models": "models"},
        "years": {"start": 2000, "end": 2002},
        "universe": {"source": "synthetic", "synthetic": {"symbols": ["AAA", "BBB"], "seed": 3, "end_date": "2002-12-31"}},
        "automation": {"build_chain_sensor": False},
    }))
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".installed-stamp").touch()  # newer than pyproject.toml: make installs nothing
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "home")}
    env.pop("MAKEFLAGS", None)
    env.pop("PIPELINE_CONFIG_OVERRIDES", None)
    return env, venv


def test_one_ctrl_c_stops_make_ui_on_the_port_given_webserver_daemon_and_code_servers_within_10_s(ui_env, tmp_path):
    env, venv = ui_env
    port = _free_port()
    log = tmp_path / "make_ui.log"
    with open(log, "wb") as out:
        make = subprocess.Popen(["make", "-s", "-C", str(REPO), "ui", f"VENV={venv}", f"PORT={port}"], env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_default_sigint)  # noqa: PLW1509 (no threads yet)
    procs: dict = {}
    try:
        deadline = time.monotonic() + SERVER_START_S
        needed = ("dagster_webserver", "dagster._daemon", "code-server", "api grpc")
        while time.monotonic() < deadline:
            assert make.poll() is None, f"make ui exited with {make.returncode}:\n{log.read_text()[-3000:]}"
            procs = _tree(make.pid)
            if _accepts(port) and all(any(n in cmd for cmd in procs.values()) for n in needed):
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"make ui: port {port} not accepting, or {needed} not all running, within {SERVER_START_S} s:\n"
                        + "\n".join(procs.values()) + "\n" + log.read_text()[-3000:])

        os.killpg(make.pid, signal.SIGINT)  # ONE Ctrl-C: the terminal signals its foreground group
        t0 = time.monotonic()
        left = _wait_gone(procs, STOP_S)
        took = time.monotonic() - t0
        assert not left, f"still running {STOP_S} s after one SIGINT:\n" + "\n".join(left) + "\n" + log.read_text()[-3000:]
        assert make.wait(timeout=5) != 0  # interrupted
        assert not _accepts(port)
        stopped = [line for line in log.read_text().splitlines() if line.startswith("[ui] stopped in")]
        assert stopped, log.read_text()[-3000:]
        print(f"everything gone {took:.1f} s after the SIGINT ({len(procs)} processes); {stopped[0]}")
    finally:
        _kill_all(procs)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(make.pid, signal.SIGKILL)
        make.wait(timeout=30)
