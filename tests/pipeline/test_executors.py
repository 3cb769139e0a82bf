"""The executor from settings (in-process, multiprocess, dagster-dask) and the `gpu` pool."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dagster import AssetKey

from pipeline.executors import GPU_ASSETS, build_executor, ensure_gpu_pool
from config.settings import read_settings
from config.partitions import SymbolYear
from resources.compute import DASK_RESOURCES_TAG, GPU_POOL
from resources.delta_store import DeltaStore

REPO = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).parent / "dagster")


def test_executor_kind_from_settings(make_settings):
    assert build_executor(read_settings(make_settings(executor={"kind": "in_process"}))).name == "in_process"
    multi = build_executor(read_settings(make_settings(executor={"kind": "multiprocess", "max_concurrent": 3})))
    assert multi.name == "multiprocess"
    dask = build_executor(read_settings(make_settings(executor={"kind": "dask", "dask": {"scheduler": "tcp://127.0.0.1:8786"}})))
    assert dask.name == "dask"


def test_gpu_pool_is_sized_from_settings_and_set_once(make_settings, instance):
    s = read_settings(make_settings(executor={"gpus": 2}))
    assert ensure_gpu_pool(instance, s) == 2
    assert ensure_gpu_pool(instance, s) == 2
    assert instance.event_log_storage.get_concurrency_info(GPU_POOL).slot_count == 2


def test_steps_that_may_use_a_gpu_are_in_the_gpu_pool_without_dask_tags_by_default():
    from pipeline.definitions import defs

    for name in GPU_ASSETS:
        op = defs.get_assets_def(AssetKey(name)).op
        assert op.pool == GPU_POOL
        assert DASK_RESOURCES_TAG not in op.tags


def test_gpu_steps_request_the_dask_gpu_resource_when_configured(make_settings, monkeypatch):
    monkeypatch.setenv("PIPELINE_CONFIG", str(make_settings(executor={"kind": "dask", "dask": {"gpu_resources": True}})))
    from resources.compute import gpu_step_tags

    assert gpu_step_tags() == {DASK_RESOURCES_TAG: {"GPU": 1}}


def _materialize_on_a_dask_cluster(tmp_path, monkeypatch, symbols: list[str], partition_range: str,
                                   **extra) -> list[str]:
    """`symbols sync`, then `dagster asset materialize` of raw_bars and labels over
    `partition_range` with `executor: dask` pointed at a 2-worker LocalCluster (the workers
    inherit the run's settings and instance from this environment); the scheduler's task prefixes."""
    distributed = pytest.importorskip("distributed", reason="the cluster extra: pip install -e '.[cluster]'")
    cfg = tmp_path / "settings.yaml"
    settings = {
        "paths": {"data": "data", "reports": "reports", "models": "models"},
        "years": {"start": 2000, "end": 2002},
        "universe": {"source": "synthetic", "synthetic": {"symbols": symbols, "seed": 3, "end_date": "2002-12-31"}},
        **extra,
    }
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    # The project's instance without compute-log capture: each step's capture runs two `tail -F`
    # processes that Dagster stops with SIGTERM, waiting 30 s; inside the full parallel suite those
    # tails outlived the SIGTERM (benchmarks/LOG.md, "make test ... 2 and 3 workers"), which made
    # each of these tests take ~130 s instead of ~12 s. What they test is the executor, not the logs.
    from pipeline.instance import DAGSTER_YAML

    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "dagster.yaml").write_text(
        DAGSTER_YAML.format(base_dir=tmp_path / "home" / "history" / "runs")
        + "compute_logs:\n  module: dagster._core.storage.noop_compute_log_manager\n  class: NoOpComputeLogManager\n")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        settings["executor"] = {"kind": "dask", "dask": {"scheduler": cluster.scheduler_address}}
        cfg.write_text(yaml.safe_dump(settings))
        env = {**os.environ}
        sync = subprocess.run([sys.executable, "-m", "pipeline.cli", "symbols", "sync"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=300)
        assert sync.returncode == 0, sync.stderr[-2000:]
        out = subprocess.run([DAGSTER, "asset", "materialize", "-m", "pipeline.definitions", "--select", "raw_bars,labels",
                              "--partition-range", partition_range], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        return client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))


def test_a_materialization_runs_its_steps_as_tasks_on_a_dask_cluster(tmp_path, monkeypatch):
    prefixes = _materialize_on_a_dask_cluster(tmp_path, monkeypatch, ["AAA", "BBB"], "AAA|2001...BBB|2001")
    assert {"ASSET_JOB.raw_bars", "ASSET_JOB.labels"} <= set(prefixes)  # each step was a Dask task
    df = DeltaStore(tmp_path / "data").read("labels", [SymbolYear("BBB", 2001)])
    assert df.height > 200


def test_grouped_partitions_run_on_a_dask_cluster_and_write_every_symbol_of_their_groups(tmp_path, monkeypatch):
    """partitions.symbols_per_group 2: three symbols are the groups G0000 (AAA, BBB) and G0001
    (CCC); a run over both groups runs its steps as Dask tasks and writes every symbol."""
    prefixes = _materialize_on_a_dask_cluster(tmp_path, monkeypatch, ["AAA", "BBB", "CCC"], "G0000|2001...G0001|2001",
                                              partitions={"symbols_per_group": 2})
    assert {"ASSET_JOB.raw_bars", "ASSET_JOB.labels"} <= set(prefixes)
    store = DeltaStore(tmp_path / "data")
    for symbol in ("AAA", "BBB", "CCC"):
        assert store.read("labels", [SymbolYear(symbol, 2001)]).height > 200, symbol
    assert store.partitions("raw_bars") == [SymbolYear(s, 2001) for s in ("AAA", "BBB", "CCC")]


def _listening_addresses() -> set[tuple[str, int]]:
    """(ip, port) of every socket this process and its children listen on."""
    import psutil

    me = psutil.Process()
    return {(c.laddr.ip, c.laddr.port) for p in [me, *me.children(recursive=True)]
            for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}


@pytest.mark.parametrize("dask_settings, ips", [({}, {"127.0.0.1"}), ({"host": "0.0.0.0"}, {"0.0.0.0"})],
                         ids=["default_loopback_only", "host_named_in_settings"])
def test_the_dask_executors_local_cluster_listens_only_on_its_host_without_a_dashboard(dask_settings, ips):
    """The LocalCluster dagster-dask starts for a run, from the executor's resolved config:
    every socket (scheduler, HTTP routes, nanny, worker) on the settings' host, none on 8787."""
    pytest.importorskip("distributed", reason="the cluster extra: pip install -e '.[cluster]'")
    from dagster_dask.executor import DaskExecutor
    from distributed import LocalCluster

    from config.settings import parse_settings

    settings = parse_settings({"executor": {"kind": "dask", "dask": {"workers": 1, **dask_settings}}}, "f.yaml")
    resolved = build_executor(settings).config_schema.resolve_config({})
    assert resolved.success, resolved.errors
    local = resolved.value["config"]["cluster"]["local"]
    before = _listening_addresses()
    with LocalCluster(**DaskExecutor("local", local).build_dict("job")):
        opened = _listening_addresses() - before
    assert len(opened) >= 4  # scheduler, its HTTP routes, nanny, worker
    assert {ip for ip, _ in opened} == ips
    assert 8787 not in {port for _, port in opened}


K8S = {"kind": "k8s", "k8s": {"image": "registry.example.com/tradelab:1", "namespace": "research",
                              "volume_claim": "tradelab-shared", "cpu": "2", "memory": "6Gi",
                              "env_config_maps": ["tradelab-env"], "max_concurrent": 8}}


def _step_job(settings, step: str):
    """The Kubernetes Job dagster-k8s would submit for `step`, built from the executor's
    resolved config the way its step handler builds it (no cluster is contacted)."""
    from dagster_k8s.container_context import K8sContainerContext
    from dagster_k8s.job import UserDefinedDagsterK8sConfig, construct_dagster_k8s_job

    resolved = build_executor(settings).config_schema.resolve_config({})
    assert resolved.success, resolved.errors
    cfg = resolved.value["config"]
    context = K8sContainerContext(
        image_pull_policy=cfg.get("image_pull_policy"), env_config_maps=cfg.get("env_config_maps"),
        env_secrets=cfg.get("env_secrets"), namespace=cfg.get("job_namespace"),
        run_k8s_config=UserDefinedDagsterK8sConfig.from_dict(cfg.get("step_k8s_config", {})),
    ).merge(K8sContainerContext(
        run_k8s_config=UserDefinedDagsterK8sConfig.from_dict(cfg.get("per_step_k8s_config", {}).get(step, {}))))
    # the launcher's part of a step pod (DAGSTER_HOME, the instance config map), as deployed
    launcher = yaml.safe_load((REPO / "deploy" / "dagster.k8s.yaml").read_text())["run_launcher"]["config"]
    from types import SimpleNamespace

    job_config = context.get_k8s_job_config(cfg.get("job_image"), SimpleNamespace(
        job_image=launcher["job_image"], dagster_home=launcher["dagster_home"],
        instance_config_map=launcher["instance_config_map"], postgres_password_secret=None))
    job = construct_dagster_k8s_job(job_config=job_config, args=["dagster", "api", "execute_step"],
                                    job_name=f"dagster-step-{step}", pod_name=f"dagster-step-{step}",
                                    component="step_worker",
                                    user_defined_k8s_config=context.run_k8s_config, labels={})
    return cfg, job


def test_k8s_executor_config_from_settings_validates_against_dagster_k8s_without_a_cluster(make_settings):
    pytest.importorskip("dagster_k8s", reason="the k8s extra: pip install -e '.[k8s]'")
    settings = read_settings(make_settings(executor=K8S))
    assert build_executor(settings).name == "k8s"
    cfg, job = _step_job(settings, "features")
    assert (cfg["job_namespace"], cfg["max_concurrent"], cfg["env_secrets"]) == ("research", 8, ["dagster-postgres"])
    pod = job.spec.template.spec
    (container,) = pod.containers
    assert container.image == "registry.example.com/tradelab:1"
    assert container.resources.requests == {"cpu": "2", "memory": "6Gi"}
    assert "nvidia.com/gpu" not in (container.resources.limits or {})
    assert [(m.name, m.mount_path) for m in container.volume_mounts] == [("tradelab-shared", "/srv/tradelab")]
    assert pod.volumes[0].persistent_volume_claim.claim_name == "tradelab-shared"
    assert {e.config_map_ref.name for e in container.env_from if e.config_map_ref} == {"tradelab-env"}


@pytest.mark.parametrize("step", GPU_ASSETS)
def test_k8s_steps_of_the_gpu_pool_ask_for_a_gpu_and_keep_the_shared_volume(make_settings, step):
    pytest.importorskip("dagster_k8s", reason="the k8s extra: pip install -e '.[k8s]'")
    _, job = _step_job(read_settings(make_settings(executor=K8S)), step)
    (container,) = job.spec.template.spec.containers
    assert container.resources.limits == {"memory": "6Gi", "nvidia.com/gpu": "1"}
    assert [m.mount_path for m in container.volume_mounts] == ["/srv/tradelab"]


@pytest.mark.parametrize("field,value", [("memory", "4 GB"), ("cpu", "two"), ("gpus_per_gpu_step", -1)])
def test_k8s_settings_refuse_quantities_kubernetes_would_reject(make_settings, field, value):
    from config.settings import SettingsError

    with pytest.raises(SettingsError, match=rf"executor\.k8s\.{field}: "):
        read_settings(make_settings(executor={"kind": "k8s", "k8s": {field: value}}))


def test_the_k8s_instance_template_validates_against_the_run_launchers_schema():
    pytest.importorskip("dagster_k8s", reason="the k8s extra: pip install -e '.[k8s]'")
    from dagster._config import process_config
    from dagster._config.field import resolve_to_config_type
    from dagster_k8s import K8sRunLauncher

    launcher = yaml.safe_load((REPO / "deploy" / "dagster.k8s.yaml").read_text())["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("dagster_k8s", "K8sRunLauncher")
    result = process_config(resolve_to_config_type(K8sRunLauncher.config_type()), launcher["config"])
    assert result.success, result.errors


def test_definitions_load_with_the_k8s_executor_and_every_job_accepts_an_empty_run_config(make_settings):
    """The code location as a k8s run pod loads it: every job's run config (the executor's
    included) validates; dagster-k8s is only asked to check its config, not to start pods."""
    pytest.importorskip("dagster_k8s", reason="the k8s extra: pip install -e '.[k8s]'")
    code = ("from dagster import validate_run_config\n"
            "from pipeline.definitions import defs\n"
            "jobs = [j for j in defs.resolve_all_job_defs() if not j.name.startswith('__')]\n"
            "names = {j.executor_def.name for j in jobs if j.executor_def}\n"
            "[validate_run_config(j, {}) for j in jobs]\n"
            "print(len(jobs), sorted(names))\n")
    env = {**os.environ, "PIPELINE_CONFIG": str(make_settings(executor=K8S)), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    count, names = out.stdout.split(" ", 1)
    assert int(count) > 5 and "k8s" in names
