"""What a command shows of a finished in-process run: one line, never the run's event stream.

The contract (pipeline.cli main prints it):

- A failed run ends in `RunFailed`: its first line is the root cause (`root_cause`), its exit
  code 2 when the user's input or settings caused it (an input error that domain.observe
  turned into a `Failure`, an `InputDataError`/`SettingsError` (or a subclass named in
  USER_ERRORS: a `ColumnOwnerError`) anywhere in the error chain, or
  a `ValueError` raised by the project's own code), 1 for the environment (disk full,
  read-only, no permission: the line names the path) and for defects.
- Unless the command runs with `--verbose`, Dagster's console logger is silenced
  (`console_level`): a failed run's events (every step, with stacks) go to a log file under
  DAGSTER_HOME/logs (`write_run_log`), named on the error's second line; a run's WARNING
  messages are printed as one `warning:` line each (`print_warnings`).
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

USER_ERRORS = frozenset({"InputDataError", "SettingsError", "CoverageError", "ModelMismatch", "ColumnOwnerError"})
ENV_ERRNOS = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system",
              errno.EACCES: "permission denied", errno.EPERM: "operation not permitted"}
_ERRNO = re.compile(r"\[Errno (\d+)\]|\(os error (\d+)\)")
_QUIET = {"on": False}


def quiet_dagster(on: bool = True) -> None:
    """The CLI's default: Dagster's console logger silenced for the runs of this process."""
    _QUIET["on"] = on


def console_level(level: str = "WARNING") -> str:
    """The console logger's level for a run: `level`, or CRITICAL when quiet (the events are
    in the run's event log, the UI and, for a failed run, the log file)."""
    return "CRITICAL" if _QUIET["on"] else level


def console_run_config(level: str = "WARNING") -> dict:
    return {"loggers": {"console": {"config": {"log_level": console_level(level)}}}}


def env_errno(text: str) -> int | None:
    """The errno of an environment failure named in an error message (Python's `[Errno N]`
    or Rust's `(os error N)`, as deltalake and polars say it), if it is one of ENV_ERRNOS."""
    for m in _ERRNO.finditer(text):
        code = int(m.group(1) or m.group(2))
        if code in ENV_ERRNOS:
            return code
    return None


@dataclass(frozen=True)
class Cause:
    line: str  # the one line: what went wrong, where, and what was expected
    exit_code: int  # 2: the user's input or settings; 1: the environment or a defect
    step: str | None = None
    errno: int | None = None


def _text(error) -> str:
    """An error's message without its `module.Class: ` prefix, first line only."""
    msg = (error.message or "").strip()
    if error.cls_name:
        msg = re.sub(rf"^[\w.]*{re.escape(error.cls_name)}: ", "", msg)
    return msg.splitlines()[0] if msg else (error.cls_name or "unknown error")


def _chain(error):
    """The error, then what caused it (or, failing that, what it happened during)."""
    while error is not None:
        yield error
        error = error.cause or error.context


def _ours(error) -> bool:
    """Raised by the project's code: the innermost frame is a file of this checkout."""
    from config.settings import PROJECT_ROOT

    if not error.stack:
        return False
    frame = re.search(r'File "([^"]+)"', error.stack[-1])
    return bool(frame) and frame.group(1).startswith(str(PROJECT_ROOT) + os.sep) and "site-packages" not in frame.group(1)


def root_cause(result) -> Cause | None:
    """The first failed step's root cause in an in-process run result (None when no step failed)."""
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        data, step = event.step_failure_data, event.step_key
        if data.user_failure_data is not None and data.user_failure_data.description:
            return Cause(data.user_failure_data.description, 2, step)  # domain.observe: an input error
        chain = [e for e in _chain(data.error) if e.cls_name != "_RemoteTraceback"]  # loky's text copy
        if not chain:
            return Cause(f"{step}: failed", 1, step)
        for e in chain:
            if e.cls_name in USER_ERRORS:
                return Cause(_text(e), 2, step)
        for e in chain:
            code = env_errno(e.message or "")
            if code is not None:
                return Cause(f"{ENV_ERRNOS[code]} ({step}: {_text(e)})", 1, step, code)
        inner = chain[-1]
        user = inner.cls_name == "ValueError" and _ours(inner)
        return Cause(f"{step}: {_text(inner)}", 2 if user else 1, step)
    return None


class RunFailed(RuntimeError):
    """A failed run: `line` first (the root cause), then where its log is; `exit_code` as in
    `Cause`."""

    def __init__(self, line: str, exit_code: int, detail: str):
        super().__init__(f"{line}\n{detail}")
        self.line, self.exit_code, self.detail = line, exit_code, detail


def _logs_dir() -> Path:
    home = os.environ.get("DAGSTER_HOME")
    return Path(home) / "logs" if home else Path(tempfile.gettempdir())


def _format(entry) -> str:
    when = dt.datetime.fromtimestamp(entry.timestamp, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    level = {10: "DEBUG", 20: "INFO", 30: "WARNING", 40: "ERROR", 50: "CRITICAL"}.get(entry.level, str(entry.level))
    kind = entry.dagster_event.event_type_value if entry.dagster_event else ""
    text = f"{when} {level:<8} {entry.step_key or '-'} {kind} {entry.user_message or entry.message or ''}".rstrip()
    error = getattr(entry.dagster_event, "step_failure_data", None) if entry.dagster_event and entry.dagster_event.is_step_failure else None
    if error is not None and error.error is not None:
        text += "\n" + error.error.to_string()
    return text


def run_log_entries(run_id: str):
    """The run's stored log entries (events and user messages), or [] when the instance of
    DAGSTER_HOME cannot be read (e.g. a disk so full that its database fails)."""
    if not os.environ.get("DAGSTER_HOME"):
        return []
    try:
        from dagster import DagsterInstance

        return list(DagsterInstance.get().all_logs(run_id))
    except Exception:  # the log is a courtesy: the failure line is the answer
        return []


def write_run_log(result, entries) -> Path | None:
    """The failed run's events (stored entries, else the in-process events) as a text file
    DAGSTER_HOME/logs/<run id>.log, written atomically; None when it cannot be written."""
    if entries:
        lines = [_format(e) for e in entries]
    else:
        lines = [f"{e.event_type_value} {e.step_key or '-'} {e.message or ''}"
                 + (f"\n{e.step_failure_data.error.to_string()}" if e.is_step_failure and e.step_failure_data.error else "")
                 for e in result.all_events]
    path = _logs_dir() / f"{result.run_id}.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text("\n".join(lines) + "\n")
        os.replace(tmp, path)
    except OSError:
        return None
    return path


def print_warnings(entries) -> None:
    """A run's WARNING messages (not Dagster's own events) as one `warning:` line each."""
    for e in entries:
        if e.dagster_event is None and e.level == 30 and e.user_message:
            print(f"warning: {e.user_message.strip().splitlines()[0]}", file=sys.stderr)


WORST = 3  # the entries of a per-name count (a check's `<unit>_by_<kind>` metadata) a warning line names


def _number(value) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"


def _words(key: str) -> str:
    """A metadata key as words: `nan_rows` -> `NaN rows`."""
    return " ".join("NaN" if w == "nan" else w for w in key.split("_"))


def worst_text(key: str, counts: dict) -> str | None:
    """A check's per-name counts as a few words of its warning line: the WORST largest nonzero
    entries (ties by name), the unit after the first, and how many more there are. A key
    `<unit>_by_<kind>` names both: `nan_rows_by_column` gives `a158_VMA5 1,204 NaN rows,
    a158_VSTD5 1,204, a158_VMA10 1,100 (3 more columns)`; any other key leads: `shares: 1 0.9`.
    None when no entry is a nonzero number."""
    items = [(str(k), v) for k, v in counts.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and v]
    if not items:
        return None
    items.sort(key=lambda kv: (-abs(kv[1]), kv[0]))
    unit, _, kind = key.partition("_by_")
    head = [f"{k} {_number(v)}" for k, v in items[:WORST]]
    rest = len(items) - WORST
    if kind:
        head[0] += f" {_words(unit)}"
        return ", ".join(head) + (f" ({rest} more {_words(kind)}{'s' if rest > 1 else ''})" if rest > 0 else "")
    return f"{_words(key)}: " + ", ".join(head) + (f" ({rest} more)" if rest > 0 else "")


def failed_check_lines(events) -> list[str]:
    """One `warning: check ASSET/CHECK failed: ...` line per failed asset check among a run's
    events (DagsterEvents), bounded: the check's counts, its worst names of each per-name count
    (`worst_text`, at most WORST each) and its first offenders (at most 3)."""
    lines = []
    for event in events:
        if event.event_type_value != "ASSET_CHECK_EVALUATION":
            continue
        evaluation = event.event_specific_data
        if evaluation.passed:
            continue
        meta = {k: getattr(v, "value", v) for k, v in evaluation.metadata.items()}
        first = meta.pop("first", None) or []
        facts = ", ".join(f"{k} {v}" for k, v in sorted(meta.items()) if isinstance(v, (int, float, str)) and not isinstance(v, bool))
        worst = [text for k, v in meta.items() if isinstance(v, dict) and (text := worst_text(k, v))]
        said = "; ".join(([facts] if facts else []) + worst)
        where = f" ({'; '.join(str(x) for x in first[:3])}{'; ...' if len(first) > 3 else ''})" if first else ""
        lines.append(f"warning: check {evaluation.asset_key.to_user_string()}/{evaluation.check_name} failed"
                     + (f": {said}" if said else "") + where)
    return lines


FAILED_CHECKS: list[str] = []  # `ASSET/CHECK` of every failed check this process printed: the results block counts them


def failed_checks_line() -> str:
    """The results block's last line: how many asset checks failed in this process's runs."""
    if not FAILED_CHECKS:
        return f"{'checks':<18}every asset check passed"
    names = sorted(set(FAILED_CHECKS))
    return f"{'checks':<18}{len(FAILED_CHECKS)} failed ({', '.join(names)}): the warning lines above name their counts"


def check_run(result, what: str, path_hint=None) -> None:
    """After a run: print its warnings when quiet and its failed checks; raise RunFailed when it failed.
    `path_hint(step)` names the path an environment failure of `step` was writing when the
    error itself names none (deltalake's Rust errors do not)."""
    entries = run_log_entries(result.run_id) if _QUIET["on"] else []
    print_warnings(entries)
    for line in failed_check_lines(result.all_events):
        print(line, file=sys.stderr)
        FAILED_CHECKS.append(line.removeprefix("warning: check ").split(" failed", 1)[0])
    if result.success:
        return
    cause = root_cause(result) or Cause(f"{what} failed", 1)
    line = cause.line
    if cause.errno is not None and path_hint is not None and cause.step and "/" not in line:
        line = f"{path_hint(cause.step)}: {line}"  # the path first, as an OSError names it
    detail = f"({what}: run {result.run_id} failed"
    if _QUIET["on"]:
        log = write_run_log(result, entries)
        detail += f"; its log: {log})" if log else "; its events: `make ui`)"
    else:
        detail += "; details in `make ui`)"
    raise RunFailed(line, cause.exit_code, detail)
