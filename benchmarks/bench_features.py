"""Benchmark: full feature and label rebuild of 500 symbols x 26 years (about 3.3M rows).

Phases, each in a fresh process:
  stage    the stage code alone (build_features: with --executor thread and kernel-call
           packs one pass whose kernel calls split the symbols over the workers, else a pool
           over symbol chunks; + build_labels) on the whole universe in memory: rows/s, peak RSS, and the
           largest worker's RSS growth against its chunk's input bytes
  seed     the seed's baseline for the same work (the notebook way): per symbol, pandas
           round trip, rolling_mean/rsi numba kernels (2 features) + labels; rows/s
  raw      raw_bars of the universe materialized (one run), for a later `dagster` phase
  dagster  through Dagster, one single-run backfill for features + labels after raw_bars
           is materialized (in this process, unless a `raw` phase ran before it: then this
           process runs only features + labels, so its peak RSS is theirs): rows/s end to
           end, with the split between our code, the writes and Dagster's per-partition
           bookkeeping

`--packs core,alpha158` selects the feature packs (settings `features.packs`; default core)
for the `stage` and `dagster` phases.

`--baseline DIR` runs the `stage` phase a second time with DIR's packages first on the path
(an older checkout, e.g. `git worktree add --detach /tmp/base 26a9383`), alternating with this
checkout's `--rounds` times (fresh processes, same bars): the medians and their ratio.

Usage: python benchmarks/bench_features.py [--symbols 500] [--years 2000-2025] [--packs core]
    [--phases stage,seed,dagster] [--symbols-per-group 50] [--baseline DIR --baseline-label TEXT --rounds 3] [--record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import (emit, machine, peak_rss_mb, run_phases, symbol_names as names,  # noqa: E402
                               synthetic_instance, use_checkout)


def _universe(args):
    from domain.sources.synthetic import SyntheticMarket
    from config.partitions import SymbolYear

    bars = SyntheticMarket(7, dt.date(args.y0, 1, 1), dt.date(args.y1, 12, 31)).generate(names(args.symbols))
    keys = [SymbolYear(s, y) for s in names(args.symbols) for y in range(args.y0, args.y1 + 1)]
    return bars, keys


def reset_peak_rss() -> float:
    """Reset this process's VmHWM to its current RSS (Linux: `5` into /proc/self/clear_refs);
    returns the current RSS in MB."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _samples(runs: list[dict]) -> str:
    return ", ".join(f"{r['features_s']:.3f}" for r in runs)


def _packs(args) -> list[str]:
    return args.packs.split(",")


def phase_stage(args) -> dict:
    if args.code:  # the baseline: an older checkout's packages instead of this one's
        use_checkout(args.code)
    from domain.features import build_features
    from domain.labels import build_labels

    try:
        from kernels.registry.packs import select

        packs = {"selection": select(tuple(_packs(args)))}
    except ImportError:  # a checkout from before feature packs: its one feature set is `core`
        if _packs(args) != ["core"]:
            raise
        packs = {}
    bars, keys = _universe(args)
    build_features(bars.head(20_000), keys[:1], **packs)  # JIT/cache warm-up outside the timing
    rss_before = reset_peak_rss()  # the peak below is the build's, not the data generation's
    t0 = time.perf_counter()
    feats, _, stats = build_features(bars, keys, workers=args.workers, chunk_rows=args.chunk_rows, executor=args.executor,
                                     **packs)
    t1 = time.perf_counter()
    labs = build_labels(bars, keys, {3: 0.0, 7: 0.0, 14: 0.0})
    t2 = time.perf_counter()
    import domain.features as features_module

    return {"code": str(Path(features_module.__file__).resolve().parent.parent),
            "rows": feats.height, "features_s": t1 - t0, "labels_s": t2 - t1, "seconds": t2 - t0,
            "rows_per_s": feats.height / (t2 - t0), "peak_rss_mb": peak_rss_mb(), "rss_before_mb": rss_before,
            "features_mb": feats.estimated_size() / 2**20, "workers": stats.workers,
            "chunks": stats.chunks, "chunk_input_mb": stats.max_chunk_input_mb,
            "worker_rss_growth_mb": stats.max_worker_rss_growth_mb, "label_rows": labs.height}


def phase_seed(args) -> dict:
    """The seed's section-2 builder, per symbol (pandas in the loop), on the same bars."""
    import numpy as np
    from numba import njit

    @njit(cache=True, fastmath=True)
    def rolling_mean(arr, w):
        n = arr.size
        out = np.empty(n, dtype=np.float32)
        s = 0.0
        for i in range(n):
            s += arr[i]
            if i >= w:
                s -= arr[i - w]
            out[i] = s / min(i + 1, w)
        return out

    @njit(cache=True, fastmath=True)
    def rsi(close, w=14):
        n = close.size
        out = np.empty(n, dtype=np.float32)
        gain = 0.0
        loss = 0.0
        for i in range(1, n):
            d = close[i] - close[i - 1]
            g = d if d > 0 else 0.0
            lo = -d if d < 0 else 0.0
            gain = (gain * (w - 1) + g) / w
            loss = (loss * (w - 1) + lo) / w
            out[i] = 100.0 - (100.0 / (1.0 + gain / (loss + 1e-8)))
        out[0] = 50.0
        return out

    bars, _ = _universe(args)
    t0 = time.perf_counter()
    rows = 0
    for df_sym in bars.partition_by("symbol"):
        pdf = df_sym.sort("date").to_pandas()
        close = pdf["close"].to_numpy(dtype=np.float32)
        pdf["f_sma20"] = rolling_mean(close, 20)
        pdf["f_rsi14"] = rsi(close, 14)
        for h in (3, 7, 14):
            fut = np.full_like(close, np.nan)
            fut[:-h] = (close[h:] - close[:-h]) / close[:-h]
            pdf[f"label_ret_h{h}"] = fut
            pdf[f"label_bin_h{h}"] = (fut > 0.0).astype("int8")
        rows += len(pdf)
    sec = time.perf_counter() - t0
    return {"rows": rows, "seconds": sec, "rows_per_s": rows / sec, "peak_rss_mb": peak_rss_mb()}


RAW_DONE = "raw_bars.done"  # in --tmp: the `raw` phase materialized raw_bars there


def _instance(args):
    return synthetic_instance(Path(args.tmp), args.symbols, args.y0, args.y1, features={"packs": _packs(args)},
                              partitions={"symbols_per_group": args.symbols_per_group},
                              build={"stream_chunk_mb": args.stream_chunk_mb})


def _materialize_raw(args, instance) -> None:
    from pipeline.definitions import ALL_ASSETS, defs
    from pipeline.runs import run_rectangle

    raw_job = defs.resolve_job_def("historical_build_and_train").get_subset(asset_selection={ALL_ASSETS[0].key})
    run_rectangle(raw_job, instance, names(args.symbols), list(range(args.y0, args.y1 + 1)), log_level="WARNING")


def phase_raw(args) -> dict:
    t0 = time.perf_counter()
    _materialize_raw(args, _instance(args))
    (Path(args.tmp) / RAW_DONE).touch()
    return {"seconds": time.perf_counter() - t0, "peak_rss_mb": peak_rss_mb()}


def phase_dagster(args) -> dict:
    instance = _instance(args)
    from dagster import materialize
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    from pipeline.definitions import ALL_ASSETS, build_resources
    syms = names(args.symbols)
    raw_in_process = not (Path(args.tmp) / RAW_DONE).exists()
    if raw_in_process:
        _materialize_raw(args, instance)
    from resources.partitions import all_keys_range

    first, last = all_keys_range(instance)  # symbols, or groups of them (--symbols-per-group)
    tags = {ASSET_PARTITION_RANGE_START_TAG: f"{first}|{args.y0}", ASSET_PARTITION_RANGE_END_TAG: f"{last}|{args.y1}"}
    selection = [a for a in ALL_ASSETS if a.key.to_user_string() in ("features", "labels")]
    t0 = time.perf_counter()
    result = materialize(ALL_ASSETS, selection=selection, instance=instance, tags=tags, resources=build_resources(),
                         run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}})
    sec = time.perf_counter() - t0
    meta: dict[str, dict] = {}
    for ev in result.get_asset_materialization_events():
        mat = ev.event_specific_data.materialization
        meta.setdefault(mat.asset_key.to_user_string(), {k: getattr(v, "value", v) for k, v in mat.metadata.items()})
    rows = meta["features"]["rows"]
    # a streamed stage (`stream_chunks` in its metadata) writes inside its own `seconds`
    ours = sum(m["seconds"] - (m["write_seconds"] if "stream_chunks" in m else 0) for m in meta.values())
    writes = sum(m["write_seconds"] for m in meta.values())
    return {"rows": rows, "partitions": 2 * len(syms) * (args.y1 - args.y0 + 1), "seconds": sec, "rows_per_s": rows / sec,
            "our_code_s": ours, "write_s": writes, "bookkeeping_s": sec - ours - writes, "peak_rss_mb": peak_rss_mb(),
            "raw_in_process": raw_in_process,
            "features_s": meta["features"]["seconds"] - (meta["features"]["write_seconds"] if "stream_chunks" in meta["features"] else 0),
            "streamed_chunks": meta["features"].get("stream_chunks"),
            "features_write_s": meta["features"]["write_seconds"],
            "features_rss_before_write_mb": meta["features"]["peak_rss_mb"],
            "features_bytes": meta["features"]["bytes"], "columns": len(meta["features"]["dtypes"]) - 2}


PHASES = {"stage": phase_stage, "seed": phase_seed, "raw": phase_raw, "dagster": phase_dagster}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--symbols", type=int, default=500)
    ap.add_argument("--years", default="2000-2025")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--chunk-rows", type=int, default=131_072)
    ap.add_argument("--executor", choices=["thread", "process"], default="thread")
    ap.add_argument("--packs", default="core", help="features.packs, comma-separated")
    ap.add_argument("--symbols-per-group", type=int, default=1,
                    help="partitions.symbols_per_group for the dagster phase (1: a partition per symbol)")
    ap.add_argument("--stream-chunk-mb", type=int, default=128, help="build.stream_chunk_mb for the dagster phase")
    ap.add_argument("--phases", default="stage,seed,dagster")
    ap.add_argument("--phase", choices=sorted(PHASES))
    ap.add_argument("--tmp")
    ap.add_argument("--baseline", help="a checkout whose stage code is measured too (an older commit)")
    ap.add_argument("--baseline-label", default="baseline")
    ap.add_argument("--rounds", type=int, default=1, help="with --baseline: stage runs per side, alternating")
    ap.add_argument("--code", help=argparse.SUPPRESS)  # set by main for the baseline's stage phase
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    args.y0, args.y1 = (int(x) for x in args.years.split("-"))
    if args.phase:
        print(json.dumps(PHASES[args.phase](args)))
        return 0
    phases = args.phases.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        common = ["--tmp", tmp, "--symbols", str(args.symbols), "--years", args.years, "--workers",
                  str(args.workers), "--chunk-rows", str(args.chunk_rows), "--executor", args.executor,
                  "--packs", args.packs, "--symbols-per-group", str(args.symbols_per_group),
                  "--stream-chunk-mb", str(args.stream_chunk_mb)]
        base_runs, ours_runs = [], []
        if args.baseline and "stage" in phases:
            for _ in range(args.rounds):  # alternating: the load drifts on a shared machine
                base_runs.append(run_phases(__file__, ["stage"], [*common, "--code", args.baseline])["stage"])
                ours_runs.append(run_phases(__file__, ["stage"], common)["stage"])
        results = run_phases(__file__, [p for p in phases if not (p == "stage" and ours_runs)], common)
    if ours_runs:
        results["stage"] = sorted(ours_runs, key=lambda r: r["seconds"])[len(ours_runs) // 2]
    cmd = (f"python benchmarks/bench_features.py --symbols {args.symbols} --years {args.years} "
           f"--workers {args.workers} --executor {args.executor}"
           + (f" --packs {args.packs}" if args.packs != "core" else "")
           + (f" --phases {args.phases}" if args.phases != "stage,seed,dagster" else "")
           + (f" --baseline <{args.baseline_label} checkout> --baseline-label '{args.baseline_label}' --rounds {args.rounds}"
              if args.baseline else ""))
    what = "19 features" if args.packs == "core" else f"packs {args.packs}"
    lines = [f"### Features + labels rebuild: {args.symbols} symbols x {args.y1 - args.y0 + 1} years ({dt.date.today()})", "",
             f"Machine: {machine()}. Command: `{cmd}`.", "",
             "| path | rows | seconds | rows/s | peak RSS MB |", "|---|---:|---:|---:|---:|"]
    if "stage" in results:
        s = results["stage"]
        how = (f"one pass, each kernel call over {s['workers']} threads" if s["chunks"] == 1 and args.executor == "thread"
               else f"{args.executor} pool of {s['workers']} over {s['chunks']} chunks")
        lines.append(f"| stage code: {what} ({how}) + 6 labels | {s['rows']:,} | "
                     f"{s['seconds']:.2f} | {s['rows_per_s']:,.0f} | {s['peak_rss_mb']:.0f} |")
    if base_runs:
        b = sorted(base_runs, key=lambda r: r["seconds"])[len(base_runs) // 2]
        lines.append(f"| stage code of {args.baseline_label} + 6 labels (median of {len(base_runs)}) | {b['rows']:,} | "
                     f"{b['seconds']:.2f} | {b['rows_per_s']:,.0f} | {b['peak_rss_mb']:.0f} |")
    if "seed" in results:
        b = results["seed"]
        lines.append(f"| seed baseline: 2 features + labels per symbol via pandas | {b['rows']:,} | {b['seconds']:.2f} | "
                     f"{b['rows_per_s']:,.0f} | {b['peak_rss_mb']:.0f} |")
    if "raw" in results:
        r = results["raw"]
        lines.append(f"| raw_bars materialized first (another process) | - | {r['seconds']:.2f} | - | {r['peak_rss_mb']:.0f} |")
    if "dagster" in results:
        d = results["dagster"]
        lines.append(f"| through Dagster: {what} features + labels, one run ({d['partitions']:,} partition events) | {d['rows']:,} | "
                     f"{d['seconds']:.2f} | {d['rows_per_s']:,.0f} | {d['peak_rss_mb']:.0f} |")
    lines.append("")
    if "stage" in results:
        s = results["stage"]
        lines.append(f"Stage code: features {s['features_s']:.2f} s, labels {s['labels_s']:.2f} s; RSS before the "
                     f"build {s['rss_before_mb']:,.0f} MB (the bars generated; peak reset there), peak during it "
                     f"{s['peak_rss_mb']:,.0f} MB, the features frame {s['features_mb']:,.0f} MB. Largest chunk "
                     f"{s['chunk_input_mb']:.1f} MB of input."
                     + (f" Largest process worker's peak RSS growth after warm-up: {s['worker_rss_growth_mb']:.1f} MB "
                        f"({s['worker_rss_growth_mb'] / max(s['chunk_input_mb'], 1e-9):.2f}x its chunk)."
                        if args.executor == "process" else ""))
        if base_runs:
            import statistics

            def med(runs, key):
                return statistics.median(r[key] for r in runs)

            bf, sf, bt, st = (med(base_runs, "features_s"), med(ours_runs, "features_s"),
                              med(base_runs, "seconds"), med(ours_runs, "seconds"))
            lines.append(f"Against {args.baseline_label} (medians of {len(base_runs)} alternating runs, same bars): "
                         f"features {bf:.3f} -> {sf:.3f} s ({bf / sf:.2f}x), "
                         f"features + labels {bt:.3f} -> {st:.3f} s ({bt / st:.2f}x); "
                         f"samples, ours: {_samples(ours_runs)}; {args.baseline_label}: {_samples(base_runs)} s (features).")
        if "seed" in results:
            lines.append(f"Ratio stage code / seed baseline (rows/s): {s['rows_per_s'] / results['seed']['rows_per_s']:.1f}x "
                         "(with 19 features instead of 2).")
    if "dagster" in results:
        d = results["dagster"]
        lines.append(f"Inside the Dagster run: the `features` step {d['features_s']:.1f} s of its code + "
                     f"{d['features_write_s']:.1f} s of writes ({d['columns']} feature columns, the frame "
                     f"{d['features_bytes'] / 2**20:,.0f} MB; peak RSS {d['features_rss_before_write_mb']:,.0f} MB "
                     "when the step's code returned, before the write); peak RSS of the process "
                     + ("(raw_bars materialized in it first)" if d["raw_in_process"] else
                        "(features + labels only: raw_bars came from the `raw` phase)") + f" {d['peak_rss_mb']:.0f} MB. "
                     f"Our code {d['our_code_s']:.1f} s, Parquet writes {d['write_s']:.1f} s, "
                     f"Dagster bookkeeping {d['bookkeeping_s']:.1f} s ({1e3 * d['bookkeeping_s'] / d['partitions']:.1f} ms "
                     "per partition event in the SQLite event log)."
                     + (f" The features were streamed in {d['streamed_chunks']} chunk(s) (build.stream_chunk_mb), so the "
                        "peak RSS above is the step's whole peak, writes included." if d.get("streamed_chunks") else ""))
        if "stage" in results:
            lines.append(f"Through Dagster / stage code: {d['seconds'] / results['stage']['seconds']:.2f}x the time "
                         f"(goal <= 2x); peak RSS {d['peak_rss_mb']:,.0f} MB.")
    lines.append("")
    emit(lines, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
