"""The benchmark harness every script in benchmarks/ shares.

A script builds its flags on `parser()` (the shared `--rows`, `--repeat`, `--record`,
`--json`, plus its own), times with `repeat()` (median and min of repeats after a warm-up),
writes its tables with `table()` and ends with one `Report`:

    ap = parser(__doc__, rows=1_000_000, repeat=5)
    args = ap.parse_args()
    report = Report("Indicators vs TA-Lib", args)
    t = repeat(lambda: K.ema(x, 20), args.repeat)
    report.table(["indicator", "ms"], [["ema(20)", f"{t.median * 1e3:.1f}"]])
    report.figure("ema_ms", t.median * 1e3)
    report.result("indicators vs TA-Lib", "<= 1.0x", "ema 0.95x", "yes")
    report.finish()

`finish()` prints the entry (title with the date, the machine and the load captured
automatically, the command as run, the tables and notes); `--json PATH` writes the figures,
machine and load as JSON; `--record` appends the entry to benchmarks/LOG.md (the history) and
prints each `result()` as a row for the table of benchmarks/RESULTS.md (the current figure per
goal, which the lead updates). Also shared: peak RSS, phases in fresh processes, a synthetic
universe in a fresh Dagster instance.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
# the history --record appends to (TRADELAB_BENCH_LOG: another file, e.g. a test's)
LOG = Path(os.environ.get("TRADELAB_BENCH_LOG") or REPO / "benchmarks" / "LOG.md")
RESULTS = REPO / "benchmarks" / "RESULTS.md"  # the current figure per goal; scripts never write it
HARNESS_FLAGS = ("--record", "--json")  # flags that change where the output goes, not what is measured


# --- the machine and its load ------------------------------------------------------------


def _lscpu_model() -> str | None:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return None


def _cpuinfo_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine_info() -> dict:
    """CPU model (lscpu, else /proc/cpuinfo), cores, RAM, OS and Python of this machine."""
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": _lscpu_model() or _cpuinfo_model(), "cores": os.cpu_count(), "ram_gib": round(mem),
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version()}


def machine() -> str:
    """The machine as one line: `AMD EPYC, 2 cores, 24 GiB, Linux 6.1, Python 3.11.7`."""
    m = machine_info()
    return f"{m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB, {m['os']}, Python {m['python']}"


def load() -> tuple[float, float, float]:
    """The load average over 1, 5 and 15 minutes (`uptime`'s three figures)."""
    return tuple(round(x, 2) for x in os.getloadavg())


def peak_rss_mb() -> float:
    """This process's peak RSS since its exec (VmHWM; ru_maxrss would carry the parent's
    high-water mark across fork and exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# --- flags ---------------------------------------------------------------------------------


def parser(doc: str | None, *, rows: int | None = None, repeat: int | None = None) -> argparse.ArgumentParser:
    """An ArgumentParser with the shared flags: `--record`, `--json PATH`, and, when the
    script has such a size, `--rows N` (default `rows`) and `--repeat N` (default `repeat`).
    The script's docstring is the help text."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if rows is not None:
        ap.add_argument("--rows", type=int, default=rows, help=f"rows of the measured data (default {rows:,})")
    if repeat is not None:
        ap.add_argument("--repeat", type=int, default=repeat, help=f"timed repeats after a warm-up (default {repeat})")
    ap.add_argument("--record", action="store_true",
                    help="append the entry to benchmarks/LOG.md and print its rows for benchmarks/RESULTS.md")
    ap.add_argument("--json", metavar="PATH", help="also write the figures, machine and load to this JSON file")
    return ap


def command_line(argv: list[str] | None = None) -> str:
    """The command as run, without the harness's output flags: what a reader types to
    measure the same thing again."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve()
    try:
        script = script.relative_to(REPO)
    except ValueError:
        pass
    rest, skip = [], False
    for a in argv[1:]:
        if skip:
            skip = False
            continue
        if a == "--json":
            skip = True
            continue
        if a in HARNESS_FLAGS or a.startswith("--json="):
            continue
        rest.append(a)
    return shlex.join(["python", str(script), *rest])


# --- timing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Wall seconds of each timed repeat."""
    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)


def repeat(fn: Callable[[], object], n: int, *, warmup: int = 1, clock: Callable[[], float] = time.perf_counter) -> Timing:
    """Call `fn` `warmup` times untimed (compilation, caches), then `n` times timed."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(max(1, n)):
        t0 = clock()
        fn()
        samples.append(clock() - t0)
    return Timing(tuple(samples))


def interleaved(fns: dict[str, Callable[[], object]], n: int, *, warmup: int = 1,
                clock: Callable[[], float] = time.perf_counter) -> dict[str, Timing]:
    """Time several variants round-robin (A, B, C, A, B, C, ...) so that a change in the
    machine's load hits every variant alike; compare them by ratios of the results."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(max(1, n)):
        for name, fn in fns.items():
            t0 = clock()
            fn()
            samples[name].append(clock() - t0)
    return {k: Timing(tuple(v)) for k, v in samples.items()}


# --- tables and the report ---------------------------------------------------------------------


def _is_number(text: str) -> bool:
    t = text.strip().replace(",", "").replace("_", "").rstrip("x%").lstrip("+-*")
    try:
        float(t)
    except ValueError:
        return False
    return True


def table(header: list[str], rows: list[list[object]]) -> list[str]:
    """A markdown table: numeric columns (every cell a number, `-` or empty) right-aligned."""
    cells = [[str(c) for c in r] for r in rows]
    numeric = [bool(cells) and all(_is_number(r[i]) or r[i] in ("-", "") for r in cells) for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in cells]
    return out


@dataclass
class Report:
    """One run's entry: title, the machine and load at the start, the command, tables, notes,
    figures for --json and rows for RESULTS.md."""
    title: str
    args: argparse.Namespace | None = None
    command: str = field(default_factory=command_line)
    lines: list[str] = field(default_factory=list)
    figures: dict = field(default_factory=dict)
    results: list[tuple[str, str, str, str]] = field(default_factory=list)
    machine: dict = field(default_factory=machine_info)
    load_start: tuple[float, float, float] = field(default_factory=load)
    date: dt.date = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).date())

    def table(self, header: list[str], rows: list[list[object]]) -> None:
        self.lines += [*table(header, rows), ""]

    def note(self, text: str) -> None:
        self.lines += [text, ""]

    def figure(self, key: str, value) -> None:
        """A figure for --json (and for whoever compares runs later)."""
        self.figures[key] = value

    def result(self, goal: str, target: str, figure: str, met: str) -> None:
        """A row for RESULTS.md's table: goal, target, current figure, met?"""
        self.results.append((goal, target, figure, met))

    def machine_short(self) -> str:
        return f"{self.machine['cpu']}, {self.machine['cores']} cores, {self.machine['ram_gib']} GiB"

    def entry(self) -> list[str]:
        m = self.machine
        head = [f"### {self.title} ({self.date})", "",
                f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB, {m['os']}, Python {m['python']}; "
                f"load average {' '.join(map(str, self.load_start))} at the start, {' '.join(map(str, load()))} at the end. "
                f"Command: `{self.command}`.", ""]
        return head + self.lines

    def result_rows(self) -> list[str]:
        return [f"| {g} | {t} | {f} | {met} | `{self.command}` | {self.machine_short()} | {self.date} |"
                for g, t, f, met in self.results]

    def finish(self, record: bool | None = None, json_path: str | None = None) -> None:
        """Print the entry; write --json; with --record append it to LOG.md and print the
        RESULTS.md rows."""
        record = getattr(self.args, "record", False) if record is None else record
        json_path = getattr(self.args, "json", None) if json_path is None else json_path
        text = "\n".join(self.entry())
        print(text)
        if json_path:
            Path(json_path).write_text(json.dumps(
                {"title": self.title, "date": str(self.date), "command": self.command, "machine": self.machine,
                 "load": {"start": self.load_start, "end": load()}, "figures": self.figures,
                 "results": [dict(zip(("goal", "target", "figure", "met"), r, strict=True)) for r in self.results]},
                indent=2, default=str) + "\n")
        if record:
            append_log(text)
            if self.results:
                print("\nRows for benchmarks/RESULTS.md (goal | target | figure | met? | command | machine | date):")
                print("\n".join(self.result_rows()))


def append_log(text: str) -> None:
    """Append one entry to benchmarks/LOG.md (the history, oldest first)."""
    with LOG.open("a") as fh:
        fh.write("\n" + text.rstrip("\n") + "\n")


def emit(lines: list[str], record: bool) -> None:
    """Print a results section written by hand; with `record`, append it to benchmarks/LOG.md.
    (The scripts not yet on `Report` use this.)"""
    text = "\n".join(lines)
    print(text)
    if record:
        append_log(text)


# --- fresh processes and a synthetic universe ---------------------------------------------------


def symbol_names(n: int) -> list[str]:
    return [f"S{i:04d}" for i in range(n)]


def configured_instance(tmp: Path, settings: dict):
    """`settings` written to tmp/settings.yaml as PIPELINE_CONFIG, a fresh DAGSTER_HOME under
    tmp, the configured source's symbols registered; returns (settings file, Settings,
    the Dagster instance)."""
    cfg = tmp / "settings.yaml"
    cfg.write_text(json.dumps(settings))
    os.environ["PIPELINE_CONFIG"] = str(cfg)
    os.environ["DAGSTER_HOME"] = str(tmp / "home")
    from config.settings import load_settings
    from pipeline.instance import get_instance
    from pipeline.symbols import sync_symbols

    loaded, instance = load_settings(), get_instance()
    sync_symbols(instance, loaded)
    return cfg, loaded, instance


def synthetic_instance(tmp: Path, n_symbols: int, y0: int, y1: int, **more):
    """`configured_instance` for n synthetic symbols and years y0..y1 (`more`: further
    top-level settings sections, e.g. features={"packs": [...]}); returns the instance."""
    return configured_instance(tmp, {
        "paths": {"data": str(tmp / "data"), "reports": str(tmp / "reports"), "models": str(tmp / "models")},
        "years": {"start": y0, "end": y1},
        "universe": {"source": "synthetic", "synthetic": {"symbols": symbol_names(n_symbols), "seed": 7, "end_date": f"{y1}-12-31"}},
        **more,
    })[2]


def use_checkout(path: str | Path) -> str:
    """Import the project's packages from another checkout (an older commit, a baseline) in
    this process: its root first on sys.path, this checkout's root (PYTHONPATH) and the
    editable install's finder taken away, so no module of this checkout is imported instead.
    Call before any project import; the phases record `__file__` of what they imported."""
    root = Path(path).resolve()
    here = Path(__file__).resolve().parent.parent
    sys.path[:] = [str(root)] + [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in getattr(f, "__name__", type(f).__name__).lower()]
    return str(root)


def run_json(cmd: list[str], what: str, env: dict | None = None, cwd: Path | None = None) -> dict:
    """Run `cmd` in a fresh process; its last stdout line is a JSON object, returned with
    `process_s` (the process's wall, imports included). A failure raises naming `what`."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"{what} failed:\n{out.stderr[-4000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_s"] = wall
    return res


def run_phases(script: str, phases: list[str], args: list[str], env: dict | None = None) -> dict[str, dict]:
    """Run `script --phase P *args` for each phase in a fresh process; each prints one JSON line."""
    results = {}
    for phase in phases:
        results[phase] = run_json([sys.executable, script, "--phase", phase, *args], f"phase {phase}",
                                  env={**os.environ, **(env or {})})
        results[phase].pop("process_s")
        print(phase, results[phase], flush=True)
    return results
