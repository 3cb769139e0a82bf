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


def test_a_materialization_runs_its_steps_as_tasks_on_a_dask_cluster(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed", reason="the cluster extra: pip install -e '.[cluster]'")
    cfg = tmp_path / "settings.yaml"
    home = tmp_path / "home"
    settings = {
        "paths": {"data": "data", "reports": "reports", "models": "models"},
        "years": {"start": 2000, "end": 2002},
        "universe": {"source": "synthetic", "synthetic": {"symbols": ["AAA", "BBB"], "seed": 3, "end_date": "2002-12-31"}},
    }
    # the workers share the run's instance and settings: they inherit this environment
    monkeypatch.setenv("PIPELINE_CONFIG", str(cfg))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        settings["executor"] = {"kind": "dask", "dask": {"scheduler": cluster.scheduler_address}}
        cfg.write_text(yaml.safe_dump(settings))
        env = {**os.environ}
        sync = subprocess.run([sys.executable, "-m", "pipeline.cli", "symbols", "sync"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=300)
        assert sync.returncode == 0, sync.stderr[-2000:]
        out = subprocess.run([DAGSTER, "asset", "materialize", "-m", "pipeline.definitions", "--select", "raw_bars,labels",
                              "--partition-range", "AAA|2001...BBB|2001"], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert {"ASSET_JOB.raw_bars", "ASSET_JOB.labels"} <= set(prefixes)  # each step was a Dask task
    df = DeltaStore(tmp_path / "data").read("labels", [SymbolYear("BBB", 2001)])
    assert df.height > 200


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
