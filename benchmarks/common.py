"""What every benchmark script shares: the machine line, peak RSS, phases in fresh
processes, a synthetic universe in a fresh Dagster instance, and recording to RESULTS.md."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "RESULTS.md"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def peak_rss_mb() -> float:
    """This process's peak RSS since its exec (VmHWM; ru_maxrss would carry the parent's
    high-water mark across fork and exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


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


def run_json(cmd: list[str], what: str, env: dict | None = None, cwd: Path | None = None) -> dict:
    """Run `cmd` in a fresh process; its last stdout line is a JSON object, returned with
    `process_s` (the process's wall, imports included). A failure raises naming `what`."""
    import time

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


def emit(lines: list[str], record: bool) -> None:
    """Print a results section; with `record`, append it to benchmarks/RESULTS.md."""
    text = "\n".join(lines)
    print(text)
    if record:
        with RESULTS.open("a") as fh:
            fh.write("\n" + text)
