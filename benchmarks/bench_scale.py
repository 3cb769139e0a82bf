"""Scale: 5,000 registered symbols x 27 years (a full market on one machine).

135,000 partitions per symbol x year asset (Dagster recommends at most 100,000). In a temp
folder with its own DAGSTER_HOME (our dagster.yaml) and settings (synthetic universe of the
`--symbols` names of benchmarks.common.symbol_names, years `--years`):

  set-up (timed, not against the goal)
    register   pipeline.symbols.register_symbols of every name, in one process
    build      raw_bars alone over every symbol x the years before `--build-years` (runs of
               `--block` symbols: specialists read all stored history), then raw_bars,
               features, labels, specialists over every symbol x `--build-years` in one run
               (pipeline.runs.run_rectangle over historical_build_and_train), so that the UI
               and the sensors have partition status to compute
  measured, each sample in a fresh process (median of `--repeat`), goal <= 5 s each
    load       what a code server does to load the location: `import pipeline.definitions`,
               `defs.get_repository_def()` (the asset graph resolved) and the repository
               snapshot it serves to the webserver and the daemon (RepositorySnap.from_def)
    sensor     build_chain_sensor (run-status sensor; its stale-run check, pipeline.run_health,
               included) evaluated against the real instance with a cursor before the build
               run's success: Dagster's event query + our function -> the yearly-stage and ATC
               run requests; new_symbol_sensor (fingerprints vs the registered symbols)
    schedule   nightly_rebuild evaluated for 02:00 on 1 June of the last year -> its RunRequest;
               then what the daemon does before it launches that run: the run created from the
               request (execution plan + planned-materialization events of 5,000 x 4
               partitions), deleted again afterwards
    yearly     one yearly stage: `regime` of the last year over every symbol (reads raw_bars of
               the years Y-2..Y of all symbols), `dagster.materialize` in process
    ui         `dagster-webserver -w workspace.yaml` on a free port (no daemon); headless
               Chromium (Selenium, /usr/bin/chromium + /usr/bin/chromedriver as
               tests/pipeline/test_ui_browser.py) opens /assets/features?view=partitions; time
               until the partition status is drawn (the page names the materialized count);
               and the GraphQL request behind it (assetNodeOrError: partitionKeysByDimension,
               assetPartitionStatuses, partitionStats) timed directly: the first (cold) and the
               median of the next ones

    python benchmarks/bench_scale.py [--symbols 5000] [--years 1999-2025] [--build-years 2025]
                                     [--repeat 3] [--block 1000] [--build-block N]
                                     [--parts load,sensor,schedule,yearly,ui]
                                     [--reuse DIR] [--keep] [--profile] [--record]
                                     [--symbols-per-group N]

`--symbols-per-group N` (partitions.symbols_per_group): the dynamic keys are groups of N
symbols (5,000 / 50 = 100 groups: 2,700 partitions per asset instead of 135,000).

`--reuse DIR` measures a folder a previous `--keep` run prepared (no register, no build);
`--profile` writes a cProfile of each measured phase's first sample to benchmarks/out/.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

T_START = time.perf_counter()
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import emit, machine, run_json, symbol_names

GOAL_S = 5.0
WEBSERVER = str(Path(sys.executable).parent / "dagster-webserver")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
MEASURED = ("load", "sensor", "schedule", "yearly", "ui")

PARTITION_QUERY = """
query ScaleBench($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      id
      partitionKeysByDimension { name type partitionKeys }
      partitionStats { numMaterialized numMaterializing numFailed numPartitions }
      assetPartitionStatuses {
        ... on MultiPartitionStatuses {
          primaryDimensionName
          ranges {
            primaryDimStartKey primaryDimEndKey
            secondaryDim {
              ... on DefaultPartitionStatuses { materializedPartitions failedPartitions materializingPartitions }
              ... on TimePartitionStatuses { ranges { status startKey endKey } }
            }
          }
        }
      }
    }
  }
}
"""


# ---------------------------------------------------------------- the folder

def write_settings(root: Path, n_symbols: int, y0: int, y1: int, per_group: int = 1) -> Path:
    cfg = root / "settings.yaml"
    cfg.write_text(json.dumps({
        "paths": {"data": str(root / "data"), "reports": str(root / "reports"), "models": str(root / "models")},
        "years": {"start": y0, "end": y1},
        "universe": {"source": "synthetic", "synthetic": {"symbols": symbol_names(n_symbols), "seed": 7,
                                                          "end_date": f"{y1}-12-31"}},
        # the UI's webserver runs without a daemon; nothing should launch runs behind the bench
        "automation": {"build_chain_sensor": False},
        "partitions": {"symbols_per_group": per_group},
    }))
    return cfg


def env_for(root: Path) -> dict:
    return {**os.environ, "DAGSTER_HOME": str(root / "home"), "PIPELINE_CONFIG": str(root / "settings.yaml"),
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def prepare_home(root: Path) -> None:
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    # our dagster.yaml (batched event log), and no first-visit dialog over the UI
    subprocess.run([sys.executable, "-c", "from pipeline.instance import ensure_dagster_home; ensure_dagster_home()"],
                   env=env_for(root), cwd=REPO, check=True)
    (home / ".nux").mkdir(exist_ok=True)
    (home / ".nux" / "nux.yaml").write_text("seen: 1\n")


def phase(root: Path, name: str, args, extra: list[str] | None = None, profile: Path | None = None) -> dict:
    """`bench_scale.py --phase name` in a fresh process; its JSON line plus `process_s`."""
    cmd = [sys.executable, *(["-m", "cProfile", "-o", str(profile)] if profile else []), __file__, "--phase", name,
           "--root", str(root), "--symbols", str(args.symbols), "--years", args.years,
           "--build-years", args.build_years, "--block", str(args.block), "--build-block", str(args.build_block),
           "--symbols-per-group", str(args.symbols_per_group), *(extra or [])]
    return run_json(cmd, f"phase {name}", env=env_for(root), cwd=REPO)


# ---------------------------------------------------------------- phases (in the child process)

def _years(text: str) -> tuple[int, int]:
    a, _, b = text.partition("-")
    return int(a), int(b or a)


def _defs():
    from pipeline.startup import prepare_process

    prepare_process()
    from pipeline.definitions import defs
    from pipeline.instance import get_instance

    return defs, get_instance()


def phase_register(args) -> dict:
    from pipeline.instance import get_instance
    from pipeline.symbols import register_symbols

    instance = get_instance()
    t0 = time.perf_counter()
    added = register_symbols(instance, symbol_names(args.symbols))
    return {"seconds": time.perf_counter() - t0, "added": len(added)}


def phase_build(args) -> dict:
    from dagster import materialize

    from resources.partitions import make_key, range_tags, selection_blocks
    from pipeline.definitions import ALL_ASSETS, build_resources
    from pipeline.runs import run_rectangle

    defs, instance = _defs()
    y0, _ = _years(args.years)
    b0, b1 = _years(args.build_years)
    names = symbol_names(args.symbols)
    # raw_bars of every year before the first built year: specialists read all stored history
    # (features two years of halo, regime Y-2..Y)
    halo = list(range(y0, b0))
    t0 = time.perf_counter()
    for i in range(0, len(names), args.block) if halo else ():
        block = names[i:i + args.block]
        for first, last, extra, _ in selection_blocks(instance, block):  # symbols, or their groups
            res = materialize(ALL_ASSETS, selection=["raw_bars"], instance=instance, resources=build_resources(),
                              tags={**range_tags(make_key(first, halo[0]), make_key(last, halo[-1])), **extra},
                              run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}})
            assert res.success
        print(f"raw_bars {block[0]}..{block[-1]} x {halo[0]}-{halo[-1]}: {time.perf_counter() - t0:.0f} s",
              file=sys.stderr, flush=True)
    t_halo = time.perf_counter() - t0
    import resource

    t0 = time.perf_counter()
    step = args.build_block or len(names)  # runs of --build-block symbols bound the run's memory
    rows: dict[str, int] = {}
    partitions = 0
    for i in range(0, len(names), step):
        summary = run_rectangle(defs.resolve_job_def("historical_build_and_train"), instance, names[i:i + step],
                                list(range(b0, b1 + 1)), log_level="WARNING")
        partitions += sum(s.partitions for s in summary.values())
        for k, v in summary.items():
            rows[k] = rows.get(k, 0) + v.rows
        print(f"build {names[i]}..{names[min(i + step, len(names)) - 1]} x {b0}-{b1}: {time.perf_counter() - t0:.0f} s",
              file=sys.stderr, flush=True)
    return {"seconds": time.perf_counter() - t0, "partitions": partitions, "runs": -(-len(names) // step),
            "halo_years": halo, "halo_s": t_halo, "rows": rows,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def phase_load(args) -> dict:
    t0 = time.perf_counter()
    from pipeline.startup import prepare_process

    prepare_process()
    import pipeline.definitions as mod

    t1 = time.perf_counter()
    repo = mod.defs.get_repository_def()
    repo.asset_graph  # noqa: B018  (resolved on first use)
    t2 = time.perf_counter()
    from dagster._core.remote_representation.external_data import RepositorySnap

    snap = RepositorySnap.from_def(repo)  # job snapshots included (not deferred)
    t3 = time.perf_counter()
    return {"seconds": t3 - t0, "import_s": t1 - t0, "resolve_s": t2 - t1, "snapshot_s": t3 - t2,
            "since_start_s": t3 - T_START, "jobs": len(snap.job_datas or snap.job_refs or [])}


def phase_sensor(args) -> dict:
    from dagster import build_sensor_context
    from dagster._core.definitions.run_status_sensor_definition import (
        RunStatusSensorCursor,
    )

    defs, instance = _defs()
    repo = defs.get_repository_def()
    chain = repo.get_sensor_def("build_chain_sensor")
    t0 = time.perf_counter()
    ctx = build_sensor_context(instance=instance, cursor=RunStatusSensorCursor(record_id=-1).to_json(),
                               repository_def=repo)
    data = chain.evaluate_tick(ctx)
    t1 = time.perf_counter()
    new = repo.get_sensor_def("new_symbol_sensor")
    data2 = new.evaluate_tick(build_sensor_context(instance=instance, repository_def=repo))
    t2 = time.perf_counter()
    return {"seconds": t1 - t0, "chain_requests": [r.job_name for r in data.run_requests or []],
            "chain_skip": data.skip_message, "new_symbol_s": t2 - t1,
            "new_symbol_requests": len(data2.run_requests or [])}


def phase_schedule(args) -> dict:
    from dagster import build_schedule_context

    defs, instance = _defs()
    repo = defs.get_repository_def()
    sched = repo.get_schedule_def("nightly_rebuild")
    _, y1 = _years(args.years)
    when = dt.datetime(y1, 6, 1, 2, 0, tzinfo=dt.UTC)
    t0 = time.perf_counter()
    data = sched.evaluate_tick(build_schedule_context(instance=instance, scheduled_execution_time=when,
                                                      repository_def=repo))
    t1 = time.perf_counter()
    (request,) = data.run_requests
    job = repo.get_job(sched.job_name)
    run = instance.create_run_for_job(job_def=job, run_config={}, tags={**request.tags})
    t2 = time.perf_counter()
    planned = len(instance.get_records_for_run(run.run_id, limit=100_000).records)
    instance.delete_run(run.run_id)  # it must not look in flight to the chain sensor
    return {"seconds": t1 - t0, "create_run_s": t2 - t1, "tags": dict(request.tags), "events": planned}


def phase_yearly(args) -> dict:
    from dagster import materialize

    from pipeline.definitions import ALL_ASSETS, build_resources

    _, instance = _defs()
    _, b1 = _years(args.build_years)
    t0 = time.perf_counter()
    res = materialize(ALL_ASSETS, selection=["regime"], partition_key=str(b1), instance=instance,
                      resources=build_resources(),
                      run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}}, raise_on_error=False)
    sec = time.perf_counter() - t0
    if not res.success:
        from pipeline.runs import failure_line

        raise RuntimeError(f"regime {b1} failed: {failure_line(res)}")
    meta = {}
    for ev in res.get_asset_materialization_events():
        meta = {k: getattr(v, "value", v) for k, v in ev.event_specific_data.materialization.metadata.items()}
    return {"seconds": sec, "stage_s": float(meta.get("seconds", 0.0)), "write_s": float(meta.get("write_seconds", 0.0)),
            "rows": int(meta.get("rows", 0))}


PHASES = {"register": phase_register, "build": phase_build, "load": phase_load, "sensor": phase_sensor,
          "schedule": phase_schedule, "yearly": phase_yearly}


# ---------------------------------------------------------------- the UI (in the parent)

def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(base: str, query: str, variables: dict, timeout: float = 600) -> tuple[float, dict]:
    body = json.dumps({"query": query, "variables": variables}).encode()
    req = urllib.request.Request(f"{base}/graphql", data=body, headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        data = json.loads(resp.read())
    sec = time.perf_counter() - t0
    if data.get("errors"):
        raise RuntimeError(f"GraphQL errors: {data['errors']}")
    return sec, data["data"]


# The asset's partitions view draws its status as counts next to the health bars:
# "135,000 Partitions Selected | Failed (0) | Materialized (5,000) | ... | Missing (130,000)".
# Drawn = the materialized count is the expected one; returns the counts, or null.
_DRAWN = """
const want = arguments[0];
const txt = document.body ? document.body.innerText : '';
const num = (re) => { const m = txt.match(re); return m ? parseInt(m[1].replace(/,/g, ''), 10) : null; };
const got = {materialized: num(/Materialized \\(([\\d,]+)\\)/), missing: num(/Missing \\(([\\d,]+)\\)/),
             selected: num(/([\\d,]+) Partitions? Selected/)};
return got.materialized === want ? got : null;
"""


def ui_samples(root: Path, args, expect_materialized: int) -> dict:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = root / "webserver.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([WEBSERVER, "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)], cwd=REPO,
                                env=env_for(root), stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
    out: dict = {"page": [], "graphql": []}
    drv = None
    try:
        t0 = time.perf_counter()
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"webserver exited:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(urllib.error.URLError, OSError, ValueError), \
                    urllib.request.urlopen(f"{base}/server_info", timeout=3) as resp:
                if resp.status == 200:
                    break
            if time.perf_counter() - t0 > 300:
                raise RuntimeError("webserver did not answer within 300 s")
            time.sleep(0.25)
        # the code location is loaded once /graphql answers a workspace query
        while True:
            _, data = graphql(base, "{ workspaceOrError { ... on Workspace { locationEntries { name "
                                    "locationOrLoadError { __typename } } } } }", {})
            entries = data["workspaceOrError"]["locationEntries"]
            if entries and entries[0]["locationOrLoadError"] and \
                    entries[0]["locationOrLoadError"]["__typename"] == "RepositoryLocation":
                break
            if time.perf_counter() - t0 > 300:
                raise RuntimeError(f"code location not loaded: {entries}")
            time.sleep(0.25)
        out["server_ready_s"] = time.perf_counter() - t0

        # the GraphQL request behind the partitions view: cold, then warm samples
        variables = {"assetKey": {"path": ["features"]}}
        for i in range(args.repeat + 1):
            sec, data = graphql(base, PARTITION_QUERY, variables)
            out["graphql"].append(sec)
            print(f"ui graphql {i}: {sec:.2f} s", flush=True)
        node = data["assetNodeOrError"]
        out["stats"] = node["partitionStats"]
        out["dims"] = {d["name"]: len(d["partitionKeys"]) for d in node["partitionKeysByDimension"]}

        opts = Options()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                  "--window-size=1920,1400", "--no-first-run", "--no-default-browser-check"):
            opts.add_argument(a)
        drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
        drv.set_page_load_timeout(300)
        want = expect_materialized
        for i in range(args.repeat + 1):  # sample 0: the browser's cache of the UI bundle, unrecorded
            drv.get("about:blank")
            t1 = time.perf_counter()
            drv.get(f"{base}/assets/features?view=partitions")
            counts = WebDriverWait(drv, 600, poll_frequency=0.05).until(lambda d: d.execute_script(_DRAWN, want))
            sec = time.perf_counter() - t1
            if i:
                out["page"].append(sec)
            print(f"ui page {i}: {sec:.2f} s", flush=True)
            if i == 0:
                out["page_counts"] = counts
                shot = root / "ui_features_partitions.png"
                drv.save_screenshot(str(shot))
                if (REPO / "benchmarks" / "out").is_dir():
                    shutil.copy(shot, REPO / "benchmarks" / "out" / f"scale_ui_{args.symbols}.png")
    finally:
        if drv is not None:
            drv.quit()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    return out


# ---------------------------------------------------------------- report

def verdict(sec: float) -> str:
    return "yes" if sec <= GOAL_S else "NO"


def report(args, res: dict, setup: dict, load_avg: tuple) -> list[str]:
    y0, y1 = _years(args.years)
    b0, b1 = _years(args.build_years)
    n_years = y1 - y0 + 1
    n_build = b1 - b0 + 1
    parts_per_asset = -(-args.symbols // args.symbols_per_group) * n_years  # symbols (or groups) x years
    cmd = (f"python benchmarks/bench_scale.py --symbols-per-group {args.symbols_per_group} --symbols {args.symbols} --years {args.years} --build-years "
           f"{args.build_years} --repeat {args.repeat} --parts {args.parts}" + (" --profile" if args.profile else "")
           + (f" --build-block {args.build_block}" if args.build_block else ""))
    lines = [(f"### Scale: {args.symbols:,} symbols x {n_years} years, {parts_per_asset:,} partitions per asset "
              f"({dt.date.today()})"), "",
             (f"Machine: {machine()}; load average at the start {load_avg[0]:.1f} (the 2 cores are shared with other "
              f"sessions). Command: `{cmd}`. Each sample a fresh process (the UI: one webserver, fresh page loads); "
              f"medians of {args.repeat}."), ""]
    if setup:
        reg, build = setup.get("register"), setup.get("build")
        what = (f"Materialized before measuring: raw_bars, features, labels and specialists of all {args.symbols:,} "
                f"symbols x {b0}-{b1} ({args.symbols * n_build:,} partitions per asset, "
                f"{args.symbols * n_build * 4:,} symbol-year materializations, "
                f"{'one run' if build is None or build.get('runs', 1) == 1 else str(build['runs']) + ' runs'})")
        if build:
            what += f" in {build['seconds']:.0f} s ({build['process_s']:.0f} s with the process"
            what += f", peak memory {build['max_rss_mb']:,.0f} MiB)" if build.get("max_rss_mb") else ")"
            if build.get("halo_years"):
                h = build["halo_years"]
                what += (f", after raw_bars alone for {h[0]}-{h[-1]} (the history specialists read; "
                         f"{args.symbols * len(h):,} partitions in runs of {args.block} symbols, "
                         f"{build['halo_s']:.0f} s)")
        if reg:
            what += f"; registering the {args.symbols:,} symbols took {reg['seconds']:.1f} s"
        lines += [what + f". So raw_bars is materialized for every partition, features, labels and specialists for "
                  f"{args.symbols * n_build:,} of {args.symbols * n_years:,} symbol-years.", ""]
    lines += ["| what | median s | samples s | goal | met? |", "|---|---:|---|---|---|"]

    def row(label, xs):
        lines.append(f"| {label} | {statistics.median(xs):.2f} | {', '.join(f'{x:.2f}' for x in xs)} | <= {GOAL_S:g} s "
                     f"| {verdict(statistics.median(xs))} |")

    notes = []
    if "load" in res:
        r = res["load"]
        row("definitions load: import + resolve + repository snapshot (in the process)", [x["seconds"] for x in r])
        row("definitions load: the whole process (interpreter start included)", [x["process_s"] for x in r])
        m = r[len(r) // 2]
        notes.append(f"load: import {m['import_s']:.2f} s, asset graph resolved {m['resolve_s']:.2f} s, repository "
                     f"snapshot {m['snapshot_s']:.2f} s.")
    if "sensor" in res:
        r = res["sensor"]
        row("sensor tick: build_chain_sensor after the build run (run-status query + stale-run check + requests)",
            [x["seconds"] for x in r])
        row("sensor tick: new_symbol_sensor (fingerprints of the source vs the registered symbols)",
            [x["new_symbol_s"] for x in r])
        skip = f" (skip: {r[0]['chain_skip']})" if r[0]["chain_skip"] else ""
        notes.append(f"sensor: build_chain_sensor requested {r[0]['chain_requests']}{skip}; "
                     f"new_symbol_sensor requested {r[0]['new_symbol_requests']} runs.")
    if "schedule" in res:
        r = res["schedule"]
        row("nightly_rebuild tick: the schedule function -> RunRequest", [x["seconds"] for x in r])
        row("nightly_rebuild tick + the run created from it (what the daemon does before launching)",
            [x["seconds"] + x["create_run_s"] for x in r])
        notes.append(f"schedule: the request's tags {r[0]['tags']}; the created run held {r[0]['events']} events "
                     "(planned materializations) before it was deleted.")
    if "yearly" in res:
        r = res["yearly"]
        row(f"one yearly stage: regime {b1} over {args.symbols:,} symbols, the run", [x["seconds"] for x in r])
        row("one yearly stage: the whole process (imports, instance)", [x["process_s"] for x in r])
        m = r[len(r) // 2]
        notes.append(f"yearly: regime {b1}: stage compute {m['stage_s']:.2f} s, write {m['write_s']:.2f} s, "
                     f"{m['rows']:,} rows; the rest of the run ({m['seconds'] - m['stage_s'] - m['write_s']:.1f} s) is "
                     "Dagster's (input partition mapping of raw_bars, run bookkeeping).")
    if "ui" in res:
        u = res["ui"]
        row("UI: /assets/features?view=partitions until the partition status is drawn (headless Chromium)", u["page"])
        g = u["graphql"]
        row("UI: its GraphQL request (partition keys, statuses, stats of features), warm", g[1:])
        lines.append(f"| UI: the same GraphQL request, first after the webserver started (cold) | {g[0]:.2f} | "
                     f"{g[0]:.2f} | <= {GOAL_S:g} s | {verdict(g[0])} |")
        notes.append(f"ui: webserver and code location ready after {u['server_ready_s']:.1f} s; the page drew "
                     f"{u['page_counts']}; GraphQL partitionStats {u['stats']}; keys per dimension {u['dims']}.")
    return lines + ["", *notes, ""]


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--symbols", type=int, default=5000)
    ap.add_argument("--years", default="1999-2025")
    ap.add_argument("--build-years", default=None, help="years materialized before measuring (default: the last)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--block", type=int, default=1000, help="symbols per raw_bars history run")
    ap.add_argument("--build-block", type=int, default=0,
                    help="symbols per run of the --build-years rectangle (0: one run; a from-scratch build of "
                         "5,000 x 27 holds every row of a run in memory)")
    ap.add_argument("--parts", default=",".join(MEASURED))
    ap.add_argument("--reuse", help="a folder a previous --keep run prepared")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder (printed)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--phase", choices=sorted(PHASES))
    ap.add_argument("--root")
    ap.add_argument("--symbols-per-group", type=int, default=1, help="partitions.symbols_per_group")
    args = ap.parse_args()
    args.build_years = args.build_years or args.years.split("-")[-1]
    if args.phase:
        print(json.dumps(PHASES[args.phase](args)))
        return 0

    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(MEASURED)
    if unknown:
        ap.error(f"unknown parts {sorted(unknown)}; choose from {MEASURED}")
    load_avg = os.getloadavg()
    root = Path(args.reuse) if args.reuse else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    out_dir = REPO / "benchmarks" / "out"
    if args.profile:
        out_dir.mkdir(exist_ok=True)
    setup: dict = {}
    res: dict = {}
    try:
        if not args.reuse:
            y0, y1 = _years(args.years)
            write_settings(root, args.symbols, y0, y1, args.symbols_per_group)
            prepare_home(root)
            setup["register"] = phase(root, "register", args)
            print("register", setup["register"], flush=True)
            setup["build"] = phase(root, "build", args)
            print("build", setup["build"], flush=True)
            (root / "setup.json").write_text(json.dumps(setup))
        elif (root / "setup.json").exists():
            setup = json.loads((root / "setup.json").read_text())
        for name in parts:
            if name == "ui":
                b0, b1 = _years(args.build_years)
                keys = -(-args.symbols // args.symbols_per_group)  # symbols, or groups
                res["ui"] = ui_samples(root, args, keys * (b1 - b0 + 1))
                print("ui", res["ui"], flush=True)
                continue
            res[name] = []
            for i in range(args.repeat):
                prof = out_dir / f"scale_{name}_{args.symbols}.prof" if args.profile and i == 0 else None
                res[name].append(phase(root, name, args, profile=prof))
                print(name, i, res[name][-1], flush=True)
    finally:
        if args.keep or args.reuse:
            print(f"kept {root}", flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    emit(report(args, res, setup, load_avg), args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
