"""Named experiments end to end: two experiments that differ in one
setting keep their own models, reports and model-dependent tables; every run a command
launches is a named job tagged with the experiment and its settings hash; `compare` puts
their figures side by side; `experiments` lists them; `migrate-reports` moves a store of the
layout before experiments."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
import yaml

from config.settings import SettingsError, read_settings
from pipeline.cli.experiments import overrides_in_force
from tests.conftest import LEARNED_YEAR


def _cli(monkeypatch, cfg: Path, argv: list[str]) -> int:
    """`pipeline.cli argv` in this process, with `cfg` the settings in force (a command's
    --experiment holds for that command alone: $PIPELINE_CONFIG_OVERRIDES is restored after it)."""
    from pipeline.cli import main

    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    return main(argv)


def test_two_experiments_differing_in_calibration_keep_their_models_reports_and_tables(learned_copy, monkeypatch,
                                                                                        capsys, tmp_path):
    from dagster import DagsterInstance

    from config.experiments import settings_hash
    from config.settings import read_settings
    from resources.delta_store import DeltaStore

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    cfg_b = learned_copy.parent / "settings_sigmoid.yaml"
    cfg_b.write_text(yaml.safe_dump({**yaml.safe_load(learned_copy.read_text()), "meta": {"calibration": "sigmoid"}}))
    year = str(LEARNED_YEAR)
    assert _cli(monkeypatch, learned_copy, ["symbols", "sync"]) == 0  # a new DAGSTER_HOME: the yearly stages read these
    for cfg, name in ((learned_copy, "isotonic"), (cfg_b, "sigmoid")):
        for command in ("train-meta", "evaluate", "backtest"):
            assert _cli(monkeypatch, cfg, [command, "--years", year, "--experiment", name]) == 0, (command, name)
    assert _cli(monkeypatch, learned_copy, ["atc-scan", "--experiment", "isotonic"]) == 0
    capsys.readouterr()

    a = read_settings(learned_copy).model_copy(update={"experiment": "isotonic"})
    b = read_settings(cfg_b).model_copy(update={"experiment": "sigmoid"})
    for s in (a, b):  # each keeps its own, under its own folders
        assert (s.models_dir / f"meta_h7_{year}.npz").is_file()
        assert (s.stage_reports_dir("meta_model") / f"h7_{year}.json").is_file()
        assert json.loads((s.stage_reports_dir("evaluation") / "overall.json").read_text())["h7"]["n"] > 0
        assert (s.stage_reports_dir("backtest") / "overall.json").is_file()
        assert json.loads((s.reports_dir / "experiment.json").read_text())["settings_hash"] == settings_hash(s)
    assert settings_hash(a) != settings_hash(b)
    assert (a.models_dir / f"meta_h7_{year}.npz").read_bytes() != (b.models_dir / f"meta_h7_{year}.npz").read_bytes()
    pa, pb = (DeltaStore(s.experiment_data_dir).read("predictions", [LEARNED_YEAR])["p_h7"] for s in (a, b))
    assert pa.len() == pb.len() > 0 and not pa.equals(pb)  # the second experiment's table did not replace the first's
    # one folder per stage, named as the assets are; no eval/cv/meta pairs
    assert {p.name for p in a.reports_dir.iterdir() if p.is_dir()} == {"regime", "meta_model", "predictions",
                                                                         "evaluation", "backtest", "atc_scan"}

    runs = DagsterInstance.get().get_runs()
    assert {r.job_name for r in runs} == {"train_meta_job", "evaluate_job", "backtest_job", "atc_scan_job"}
    assert sorted((r.tags["tradelab/experiment"], r.tags["tradelab/settings_hash"]) for r in runs) == sorted(
        [("isotonic", settings_hash(a))] * 4 + [("sigmoid", settings_hash(b))] * 3)

    assert _cli(monkeypatch, learned_copy, ["compare", "isotonic", "sigmoid", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    auc = next(r for r in result["rows"] if r["figure"] == "h7 auc")
    ev_a, ev_b = (json.loads((s.stage_reports_dir("evaluation") / "overall.json").read_text())["h7"]["auc"] for s in (a, b))
    assert auc["values"] == {"isotonic": ev_a, "sigmoid": ev_b}
    assert auc["diff"]["sigmoid"] == ev_b - ev_a
    assert _cli(monkeypatch, learned_copy, ["compare", "isotonic", "sigmoid"]) == 0
    table = capsys.readouterr().out
    assert f"{ev_a:.3f}" in next(line for line in table.splitlines() if line.startswith("h7 pooled auc"))
    assert "backtest sharpe" in table

    assert _cli(monkeypatch, learned_copy, ["experiments", "--json"]) == 0
    listed = {e["experiment"]: e for e in json.loads(capsys.readouterr().out)}
    assert listed["isotonic"]["settings_hash"] == settings_hash(a) and listed["sigmoid"]["years"] == [LEARNED_YEAR]

    # sigmoid calibration under the isotonic experiment's name: refused, nothing run
    assert _cli(monkeypatch, cfg_b, ["evaluate", "--years", year, "--experiment", "isotonic"]) == 2
    assert len(DagsterInstance.get().get_runs()) == 7


def _report(folder: Path, name: str, payload: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(payload))


def test_compare_gives_the_difference_and_a_t_statistic_over_the_common_years(tmp_path):
    from config.experiments import MANIFEST
    from domain.experiment_compare import compare, format_table

    yearly = {"base": [0.50, 0.52, 0.51], "alt": [0.51, 0.54, 0.54]}  # differences 0.01, 0.02, 0.03
    for name, aucs in yearly.items():
        _report(tmp_path / name, MANIFEST, {"experiment": name, "settings_hash": name * 2})
        for y, v in zip((2001, 2002, 2003), aucs):
            _report(tmp_path / name / "evaluation", f"{y}.json", {"h7": {"auc": v}})
        _report(tmp_path / name / "evaluation", "overall.json", {"symbols": 4, "h7": {"auc": sum(aucs) / 3}})
    result = compare(tmp_path, ["base", "alt"])
    row = next(r for r in result["rows"] if r["figure"] == "h7 auc")
    assert round(row["diff"]["alt"], 12) == 0.02
    assert round(row["t"]["alt"], 4) == 3.4641 and row["years"]["alt"] == 3  # 0.02 / (0.01 / sqrt(3))
    backtest = next(r for r in result["rows"] if r["figure"] == "backtest sharpe")
    assert backtest["values"] == {"base": None, "alt": None} and backtest["t"]["alt"] is None  # no backtest: n/a
    line = next(x for x in format_table(result).splitlines() if x.startswith("h7 pooled auc"))
    assert line.split() == ["h7", "pooled", "auc", "0.510", "0.530", "+0.020", "3.46", "(3)"]


def test_migrate_reports_moves_the_layout_before_experiments_and_overwrites_nothing(tmp_path, monkeypatch, capsys):
    from config.settings import read_settings

    cfg = tmp_path / "settings.yaml"
    cfg.write_text(yaml.safe_dump({"paths": {"data": "data", "reports": "reports", "models": "models"}}))
    old_reports, models, data = tmp_path / "reports", tmp_path / "models", tmp_path / "data"
    _report(old_reports / "eval", "overall.json", {"h7": {"auc": 0.55}})
    _report(old_reports / "evaluation", "2003.json", {"stage": "evaluation", "git_sha": "abc"})  # a sidecar
    _report(old_reports / "cv" / "h7", "2003.json", {"folds": []})
    _report(old_reports / "backtest", "overall.json", {"sharpe": 1.0})
    _report(old_reports / "meta", "h7_2003.json", {"auc": 0.6})
    models.mkdir()
    (models / "meta_h7_2003.joblib").write_bytes(b"model")
    (data / "predictions" / "_delta_log").mkdir(parents=True)
    (data / "raw_bars" / "_delta_log").mkdir(parents=True)
    s = read_settings(cfg)
    _report(s.stage_reports_dir("meta_model"), "h7_2003.json", {"auc": 0.7})  # already there: kept

    assert _cli(monkeypatch, cfg, ["migrate-reports"]) == 0
    exp = old_reports / "default"
    assert json.loads((exp / "evaluation" / "overall.json").read_text()) == {"h7": {"auc": 0.55}}
    assert json.loads((exp / "evaluation" / "runs" / "2003.json").read_text())["git_sha"] == "abc"
    assert (exp / "cv_report" / "h7" / "2003.json").is_file() and (exp / "backtest" / "overall.json").is_file()
    assert json.loads((exp / "meta_model" / "h7_2003.json").read_text()) == {"auc": 0.7}  # not overwritten
    assert json.loads((old_reports / "meta" / "h7_2003.json").read_text()) == {"auc": 0.6}  # left in place
    assert (models / "default" / "meta_h7_2003.joblib").read_bytes() == b"model"
    assert (data / "experiments" / "default" / "predictions" / "_delta_log").is_dir()
    assert (data / "raw_bars" / "_delta_log").is_dir()  # shared tables stay
    assert sorted(p.name for p in old_reports.iterdir()) == ["default", "meta"]
    assert "moved 6 item(s) into experiment 'default'; 1 left in place" in capsys.readouterr().out
    assert not os.path.exists(old_reports / "eval")


def test_vacuum_reaches_the_tables_of_every_experiment(tmp_path):
    from pipeline.maintenance import vacuum_tables
    from resources.delta_store import DeltaStore

    frame = pl.DataFrame({"year": [2003], "horizon": [7], "auc": [0.6]})
    for root in (tmp_path / "data", tmp_path / "data" / "experiments" / "tree"):
        store = DeltaStore(root)
        store.write_year("evaluation", 2003, frame)
        store.write_year("evaluation", 2003, frame.with_columns(pl.lit(0.7).alias("auc")))  # the first file replaced
    removed = vacuum_tables(tmp_path / "data", retention_hours=0)
    assert removed == {"evaluation": 1, "experiments/tree/evaluation": 1}


def test_the_daemons_runs_carry_the_experiment_of_the_settings(instance, monkeypatch, make_settings):
    import datetime as dt

    from dagster import build_schedule_context

    from config.experiments import settings_hash
    from config.settings import read_settings
    from pipeline.schedules import nightly_rebuild

    cfg = make_settings(experiment="momentum", years={"start": 2000, "end": None})
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    from pipeline.symbols import register_symbols

    register_symbols(instance, ["AAA"])
    when = dt.datetime(2024, 3, 5, 2, 0, tzinfo=dt.timezone.utc)
    request = nightly_rebuild(build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert (request.tags["tradelab/experiment"], request.tags["tradelab/settings_hash"]) == (
        "momentum", settings_hash(read_settings(cfg)))


def test_a_run_launched_outside_the_cli_gets_the_experiments_tags_and_keeps_its_own(instance, make_settings):
    """A run the UI or `dagster asset materialize` launches carries no tag of ours: the
    project resource gives it the settings' experiment tags when it starts, so the Runs page
    filters every run by experiment; a tag the run already has is kept."""
    from assets.raw_bars import raw_bars
    from config.experiments import settings_hash
    from config.settings import read_settings
    from tests.conftest import run_assets

    cfg = make_settings(experiment="momentum")
    result = run_assets([raw_bars], cfg, instance, ["AAA"], [2000])
    tags = instance.get_run_by_id(result.run_id).tags
    assert (tags["tradelab/experiment"], tags["tradelab/settings_hash"]) == ("momentum", settings_hash(read_settings(cfg)))

    from dagster import materialize

    from pipeline.definitions import build_resources

    from tests.conftest import one_partition

    own = materialize([raw_bars], instance=instance, resources=build_resources(str(cfg)), **one_partition(
        instance, "AAA", 2000, tags={"tradelab/experiment": "momentum", "tradelab/settings_hash": "given"}))
    assert instance.get_run_by_id(own.run_id).tags["tradelab/settings_hash"] == "given"


def test_derived_settings_travel_in_the_environment_over_the_file_in_force_and_keep_its_relative_paths(
        make_settings, monkeypatch, tmp_path):
    """--experiment's settings: nothing written anywhere (the temp folder included), the
    relative paths of the file in force keep their meaning, another file read explicitly is
    read as written, and the environment is as before once the block ends."""
    import tempfile

    from config.settings import OVERRIDES_ENV, load_settings

    cfg = make_settings(universe={"source": "folder", "folder": {"path": "user_data"}})
    other = tmp_path / "other" / "settings.yaml"
    other.parent.mkdir()
    other.write_text(cfg.read_text())
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.delenv(OVERRIDES_ENV, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    before = cfg.read_text()
    with overrides_in_force({"meta": {"horizons": [7]}}):
        derived, original = load_settings(), read_settings(cfg)
        assert json.loads(os.environ[OVERRIDES_ENV]) == {"meta": {"horizons": [7]}}
        assert load_settings(other).meta.horizons != [7]  # not the file in force: read as written
    assert derived.meta.horizons == [7] and original.meta.horizons != [7]
    assert (derived.data_dir, derived.reports_root, derived.models_root) == (cfg.parent / "data", cfg.parent / "reports",
                                                                             cfg.parent / "models")
    assert derived.resolve(derived.universe.folder.path) == cfg.parent / "user_data"
    assert OVERRIDES_ENV not in os.environ and load_settings() == original
    assert cfg.read_text() == before and not list((tmp_path / "tmp").iterdir())  # the file in force is never modified


def test_a_derived_setting_that_is_invalid_names_the_key_and_leaves_the_environment_as_it_was(make_settings,
                                                                                               monkeypatch):
    from config.settings import OVERRIDES_ENV

    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings()))
    monkeypatch.setenv(OVERRIDES_ENV, '{"experiment": "outer"}')
    with pytest.raises(SettingsError, match="meta.horizons"), overrides_in_force({"meta": {"horizons": [5]}}):
        pass
    assert os.environ[OVERRIDES_ENV] == '{"experiment": "outer"}'


def test_two_commands_at_once_each_run_with_their_own_flags_and_so_do_the_processes_they_start(make_settings):
    """Real processes: A derives its settings, then B derives other ones while A is still
    running; A and a process A starts must still read A's flags."""
    import subprocess
    import sys

    cfg = make_settings()
    code = ("import subprocess, sys; from pipeline.cli.experiments import overrides_in_force\n"
            "with overrides_in_force({'universe': {'folder': {'path': sys.argv[1]}}}):\n"
            "    print('ready', flush=True); sys.stdin.readline()\n"
            "    subprocess.run([sys.executable, '-c', 'from config.settings import load_settings; "
            "print(load_settings().universe.folder.path, flush=True)'], check=True)\n")
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg)}
    env.pop("PIPELINE_CONFIG_OVERRIDES", None)
    run = lambda folder: subprocess.Popen([sys.executable, "-c", code, folder], env=env, text=True,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    a = run("/data/A")
    assert a.stdout.readline().strip() == "ready"
    b = run("/data/B")
    assert b.stdout.readline().strip() == "ready"
    out_a, _ = a.communicate("go\n", timeout=60)
    out_b, _ = b.communicate("go\n", timeout=60)
    assert (out_a.strip(), out_b.strip()) == ("/data/A", "/data/B")


def test_a_command_with_experiment_killed_by_sigkill_mid_run_leaves_nothing_in_the_temp_folder(make_settings,
                                                                                                tmp_path):
    """A real CLI process under --experiment, SIGKILLed once it says it is loading the
    pipeline (its experiment frozen, its settings derived): no atexit ran, and still no
    settings file of it is left in $TMPDIR (nor anything holding its settings)."""
    import signal
    import subprocess
    import sys

    cfg = make_settings()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp_path / "home").mkdir()
    env = {**os.environ, "PIPELINE_CONFIG": str(cfg), "TMPDIR": str(tmp), "DAGSTER_HOME": str(tmp_path / "home"),
           "TRADELAB_PROGRESS": "1"}
    env.pop("PIPELINE_CONFIG_OVERRIDES", None)
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "--experiment", "killed", "build-features",
                             "--years", "2000"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stderr.readline() for _ in range(2)]  # the runtime line, then the loading line
        assert "loading the pipeline" in lines[-1], lines
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
    left = [p for p in tmp.rglob("*") if p.is_file()]
    assert not [p for p in left if p.name.startswith("tradelab-cli-")]
    assert not [p for p in left if b"killed" in p.read_bytes()]


@pytest.mark.parametrize("command", ["evaluate", "backtest"])
def test_a_new_experiment_without_predictions_is_told_to_run_train_meta(learned_copy, monkeypatch, capsys, tmp_path,
                                                                         command):
    """A stage that reads predictions, run under an experiment that has none: exit 2 and one
    line naming the experiment and the command that stores them; no report is written."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    assert _cli(monkeypatch, learned_copy, ["symbols", "sync"]) == 0
    capsys.readouterr()
    assert _cli(monkeypatch, learned_copy, [command, "--years", str(LEARNED_YEAR), "--experiment", "fresh"]) == 2
    err = capsys.readouterr().err
    assert (f"error: {command.replace('evaluate', 'evaluation')}: experiment 'fresh' has no stored predictions: run "
            "`python -m pipeline.cli --experiment fresh train-meta` first") in err
    fresh = read_settings(learned_copy).model_copy(update={"experiment": "fresh"})
    assert not (fresh.stage_reports_dir(command.replace("evaluate", "evaluation")) / "overall.json").exists()


def test_experiments_by_a_figure_lists_the_best_first_and_those_without_it_last(tmp_path, monkeypatch, capsys):
    """Larger first, except the Brier score and the drawdown's magnitude (smaller first)."""
    from config.experiments import MANIFEST

    cfg = tmp_path / "settings.yaml"
    cfg.write_text(yaml.safe_dump({"paths": {"data": "data", "reports": "reports", "models": "models"}}))
    figures = {"a": (0.01, 0.24, -0.30), "b": (0.03, 0.26, -0.10), "c": (None, None, -0.20), "d": (0.02, 0.22, None)}
    for name, (rank_ic, brier, drawdown) in figures.items():
        _report(tmp_path / "reports" / name, MANIFEST, {"experiment": name, "settings_hash": f"{name}-hash"})
        if rank_ic is not None:
            _report(tmp_path / "reports" / name / "evaluation", "overall.json",
                    {"symbols": 3, "years": [2003], "h7": {"rank_ic": rank_ic, "brier": brier}})
        if drawdown is not None:
            _report(tmp_path / "reports" / name / "backtest", "overall.json", {"max_drawdown": drawdown})

    def ranked(figure: str) -> list[tuple]:
        assert _cli(monkeypatch, cfg, ["experiments", "--by", figure, "--json"]) == 0
        return [(r["experiment"], r["rank"], r["value"]) for r in json.loads(capsys.readouterr().out)]

    assert ranked("h7_rank_ic") == [("b", 1, 0.03), ("d", 2, 0.02), ("a", 3, 0.01), ("c", None, None)]
    assert ranked("h7_brier") == [("d", 1, 0.22), ("a", 2, 0.24), ("b", 3, 0.26), ("c", None, None)]
    assert ranked("backtest_max_drawdown") == [("b", 1, -0.10), ("c", 2, -0.20), ("a", 3, -0.30), ("d", None, None)]
    assert _cli(monkeypatch, cfg, ["experiments", "--by", "h7_rank_ic"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:3] == ["1", "b", "0.0300"] and lines[4].split()[:3] == ["-", "c", "n/a"]
    assert lines[-1].startswith("best first by h7_rank_ic (smaller first for brier, max drawdown's magnitude")


def test_report_materializes_every_experiment_as_a_partition_and_prints_its_report(make_settings, monkeypatch,
                                                                                  capsys, tmp_path):
    from dagster import AssetKey, DagsterInstance

    from tests.experiment_reports import write_experiment

    cfg = make_settings()
    reports = cfg.parent / "reports"
    write_experiment(reports, "baseline", auc=0.512, rank_ic=0.011, sharpe=0.42, cagr=0.051)
    write_experiment(reports, "trees", auc=0.537, rank_ic=0.043, sharpe=0.77, cagr=0.083)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    assert _cli(monkeypatch, cfg, ["report"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3] == (f"baseline             15 figures (h7_auc 0.512, h7_rank_ic 0.011, backtest_sharpe 0.42, "
                       f"backtest_cagr 0.051, backtest_excess_return 0.001); report "
                       f"{reports / 'baseline' / 'experiment_summary' / 'report.html'}")
    assert out[-2].startswith("trees                15 figures (h7_auc 0.537, h7_rank_ic 0.043, backtest_sharpe 0.77")
    assert out[-1] == ("experiment_summary: 2 partition(s) materialized (2 new); in the UI: Assets > "
                       "experiment_summary > Plots, by partition")
    instance = DagsterInstance.get()
    assert instance.get_dynamic_partitions("experiments") == ["baseline", "trees"]
    run = instance.get_runs(limit=1)[0]
    assert run.job_name == "experiment_summary_job" and run.tags["dagster/partition"] == "trees"
    assert _cli(monkeypatch, cfg, ["report", "trees"]) == 0  # one experiment again: no new partition
    assert capsys.readouterr().out.splitlines()[-1].startswith("experiment_summary: 1 partition(s) materialized (0 new)")
    assert len(instance.fetch_materializations(AssetKey("experiment_summary"), limit=10).records) == 3
    assert _cli(monkeypatch, cfg, ["report", "nope"]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: report: no experiment 'nope' under ")
