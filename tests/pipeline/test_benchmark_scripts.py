"""The benchmark scripts share one harness (benchmarks/common.py): the same flags, an entry
that names the machine and its load, `--record` appending that entry to the log and printing
its rows for benchmarks/RESULTS.md, `--json` writing the figures. Run as processes, tiny sizes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# the scripts on the harness (the others adopt it when they are next rewritten)
HARNESS_SCRIPTS = ["bench_import.py", "bench_ingest.py", "bench_lstm.py", "bench_backtest.py", "bench_strategy.py",
                   "bench_executors.py", "bench_long_file.py", "bench_grid.py", "bench_grid_dask.py", "bench_infer.py",
                   "bench_alpha158.py", "bench_gpu.py", "event_log_growth.py", "honesty_cross_section.py",
                   "honesty_real_data.py", "profile_bookkeeping.py", "profile_features_write.py", "ab_grid_exits.py",
                   "bench_yearly.py", "probe_chains.py", "profile_alpha158.py"]


def _run(args: list[str], tmp_path: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRADELAB_BENCH_LOG": str(tmp_path / "LOG.md")}
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.mark.parametrize("script", HARNESS_SCRIPTS)
def test_every_script_on_the_harness_takes_the_shared_flags(script, tmp_path):
    run = _run([f"benchmarks/{script}", "--help"], tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "--record" in run.stdout and "--json PATH" in run.stdout


def test_record_appends_a_dated_entry_with_machine_and_load_and_prints_the_results_row(tmp_path):
    out = tmp_path / "figures.json"
    run = _run(["benchmarks/bench_backtest.py", "--days", "60", "--symbols", "5", "--repeat", "1", "--record",
                "--json", str(out)], tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    log = (tmp_path / "LOG.md").read_text()
    assert re.search(r"^### backtest: daily portfolio, 60 days x 5 symbols \(\d{4}-\d\d-\d\d\)$", log, flags=re.M)
    assert re.search(r"^Machine: .+, \d+ cores, \d+ GiB, .+, Python 3\.\d+\.\d+; load average [\d.]+ [\d.]+ [\d.]+ at the start",
                     log, flags=re.M)
    command = "python benchmarks/bench_backtest.py --days 60 --symbols 5 --repeat 1"  # without --record / --json
    assert f"Command: `{command}`." in log
    assert "| engine | seconds (best) | days x symbols / s | time / kernel |" in log
    row = next(line for line in run.stdout.splitlines() if line.startswith("| portfolio backtest hot loop"))
    assert row.count(" | ") == 6 and f"| `{command}` |" in row
    figures = json.loads(out.read_text())
    assert figures["command"] == command and len(figures["load"]["start"]) == 3
    assert {"cpu", "cores", "ram_gib", "python"} <= set(figures["machine"]) and figures["figures"]["kernel s"] > 0


def test_without_record_nothing_is_appended(tmp_path):
    run = _run(["benchmarks/bench_backtest.py", "--days", "30", "--symbols", "3", "--repeat", "1"], tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "### backtest: daily portfolio" in run.stdout and not (tmp_path / "LOG.md").exists()


def test_the_cross_section_benchmark_checks_its_data_path_and_configs(tmp_path):
    run = _run(["benchmarks/honesty_cross_section.py", "--self-test"], tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("self-test: --configs ok")


def test_the_yearly_benchmark_builds_a_store_times_every_yearly_stage_and_reads_what_they_found(tmp_path):
    out, store = tmp_path / "figures.json", tmp_path / "store"
    run = _run(["benchmarks/bench_yearly.py", "--build", "--symbols", "3", "--symbols-per-group", "3",
                "--years", "2019..2021", "--json", str(out), "--root", str(store)], tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "| yearly_stages, one run | seconds |" in run.stdout
    run_figures = json.loads(out.read_text())["figures"]["run"]
    assert run_figures["build"]["s"] > 0 and run_figures["yearly"]["process_s"] >= run_figures["yearly"]["run_s"] > 0
    assert set(run_figures["yearly"]["steps"]) == {"regime", "cv_report", "meta_model", "predictions", "backtest",
                                                    "evaluation"}
    # an "after" store: the same reports and models, one h7 fit with another C
    after = tmp_path / "after"
    settings = json.loads((store / "settings.yaml").read_text())
    for key in ("reports", "models"):
        shutil.copytree(settings["paths"][key], after / key)
        settings["paths"][key] = str(after / key)
    (after / "settings.yaml").write_text(json.dumps(settings))
    sidecar = sorted((after / "models" / "default").glob("meta_h7_*.json"))[-1]
    meta = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({**meta, "C": meta["C"] * 10}))
    found = _run(["benchmarks/bench_yearly.py", "--quality", f"{store},{after}"], tmp_path)
    assert found.returncode == 0, found.stderr[-2000:]
    q = json.loads(next(line for line in found.stdout.splitlines() if line.startswith("[{")))
    assert set(q[0]) == {"h3", "h7", "h14"} and 0 < q[0]["h7"]["meta_auc"] < 1
    assert q[1]["h7"]["meta_auc"] == q[0]["h7"]["meta_auc"] and q[1]["h3"] == q[0]["h3"]
    assert "| h3 | fits whose C changed | 0 of 2 |" in found.stdout
    assert "| h7 | fits whose C changed | 1 of 2 |" in found.stdout


def test_a_baseline_checkout_replaces_this_ones_packages_in_a_phase(tmp_path):
    """`--baseline DIR` phases (bench_features, bench_atc) import DIR's packages, never this
    checkout's, even though this one is on PYTHONPATH and installed in editable mode: a
    package the baseline lacks (here `resources`) is missing, not taken from this checkout."""
    base = tmp_path / "base"
    for package in ("domain", "kernels"):
        (base / package).mkdir(parents=True)
        (base / package / "__init__.py").write_text(f"WHERE = 'baseline {package}'\n")
    code = ("import sys; sys.path.insert(0, '.'); from benchmarks.common import use_checkout; "
            f"use_checkout({str(base)!r}); import domain, kernels; print(domain.WHERE, '|', kernels.WHERE); "
            "import importlib.util; print(importlib.util.find_spec('resources'))")
    run = _run(["-c", code], tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[:2] == ["baseline domain | baseline kernels", "None"]


def test_the_sweep_benchmark_without_takt_compares_with_talib_and_prints_its_table(tmp_path):
    run = _run(["benchmarks/bench_sweeps.py", "--rows", "3000", "--rounds", "1", "--no-takt", "--names", "ema,atr"],
               tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    table = [line for line in run.stdout.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| indicator | sweep f32 ms | sweep f64 ms | f32 out= ms | f64 out= ms | TA-Lib loop ms |")
    assert "takt" not in table[0] and "f32 / TA-Lib" in table[0]
    assert [line.split(" | ")[0] for line in table[1:]] == ["| ema", "| atr"]


def test_the_fresh_pages_probe_times_blocks_with_and_without_huge_pages(tmp_path):
    for flags in ([], ["--no-hugepages"]):
        run = _run(["benchmarks/probe_fresh_pages.py", "block", "--rows", "2000", "--gaps", "0", "--calls", "2",
                    *flags], tmp_path)
        assert run.returncode == 0, run.stderr[-2000:]
        assert re.fullmatch(r"gap 0 s: ms \[[\d., ]+\]  minor faults \[\d+, \d+\]\n", run.stdout)


def test_the_chain_probe_sets_each_core_beside_the_latency_of_its_chain(tmp_path):
    out = tmp_path / "figures.json"
    run = _run(["benchmarks/probe_chains.py", "--rows", "20000", "--repeat", "1", "--json", str(out)], tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    figures = json.loads(out.read_text())["figures"]
    assert set(figures["chains_ns"]) == {"add", "add+sub", "mul+add", "fma", "sub+mul+add", "sub+fma"}
    assert all(v > 0 for v in figures["chains_ns"].values())
    assert {"sma(20)", "wma(20)", "ema(20)", "tema(20)", "kama(10)", "atr(14)"} <= set(figures)
    assert "| indicator | our chain | its ns/row | core, reused output ns/row |" in run.stdout
    assert set(figures["atr_dtypes_ns"]) == {f"{i} in, {o} out" for i in ("float64", "float32") for o in ("float64", "float32")}


def test_the_gpu_break_even_sweep_checks_each_size_equal_and_prints_the_routing_entry(tmp_path):
    """Under the CUDA simulator (TRADELAB_GPU=0) the times mean nothing; the sweep, the
    equality check and the break-even line are what is tested."""
    run = subprocess.run(
        [sys.executable, "benchmarks/gpu_break_even.py", "--quick", "--families", "strategy", "--out", str(tmp_path)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "TRADELAB_GPU": "0"}, capture_output=True, text=True,
        timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((tmp_path / "gpu_break_even.json").read_text())
    assert [(r["count"], r["equal"]) for r in report["rows"]] == [(2, True), (3, True)]
    assert "break-even strategy: " in run.stdout and "BreakEven('individual-bars', " in run.stdout


def test_the_old_atc_break_even_script_warns_once_and_runs_the_atc_sweep(tmp_path):
    run = subprocess.run([sys.executable, "benchmarks/atc_gpu_break_even.py", "--symbols", "2", "--bars", "60",
                          "--repeat", "1", "--out", str(tmp_path)], cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO), "TRADELAB_GPU": "0"}, capture_output=True,
                         text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stderr.count("atc_gpu_break_even.py is deprecated since 2026-11-27; use benchmarks/gpu_break_even.py "
                            "--families atc") == 1
    rows = json.loads((tmp_path / "gpu_break_even.json").read_text())["rows"]
    assert [(r["family"], r["count"], r["bars"]) for r in rows] == [("atc", 2, 60)]
