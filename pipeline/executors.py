"""The Dagster executor and the GPU concurrency pool, from settings (`executor.*`).

    in_process     every step in the run's process (debugging)
    multiprocess   a process per step, at most `max_concurrent` at once (the default)
    dask           dagster-dask: each step is a task on a Dask cluster: an existing scheduler
                   (`executor.dask.scheduler`) or a LocalCluster started for the run
    k8s            dagster-k8s: each step in its own Kubernetes pod (`executor.k8s`): the run
                   launcher (K8sRunLauncher, deploy/dagster.k8s.yaml) starts the run's pod

Steps that may use a GPU (GPU_ASSETS) belong to the Dagster concurrency pool `gpu`, whose
limit is the number of GPUs (`executor.gpus`, else the GPUs found, at least 1): two such
steps never share one GPU. On Dask they can also carry the resource requirement GPU=1
(`executor.dask.gpu_resources`), so the scheduler puts them on workers that declare GPUs.

A LocalCluster listens on `executor.dask.host` only (default 127.0.0.1: nothing reachable
from other machines): scheduler, workers, nannies and the scheduler's HTTP routes (on a
free port). It serves no dashboard unless `executor.dask.dashboard_port` names a port.
"""

from __future__ import annotations

from dagster import in_process_executor, multiprocess_executor

from config.settings import ExecutorDask, ExecutorK8s, Settings
from resources.compute import GPU_POOL

GPU_ASSETS = ("lstm_model", "atc_scan", "grid_search")  # declared with pool=GPU_POOL, op_tags=gpu_step_tags()


def build_executor(settings: Settings):
    ex = settings.executor
    if ex.kind == "in_process":
        return in_process_executor
    if ex.kind == "multiprocess":
        return multiprocess_executor.configured({"max_concurrent": ex.max_concurrent or 0}, name="multiprocess")
    if ex.kind == "k8s":
        try:
            from dagster_k8s import k8s_job_executor
        except ImportError:
            raise ImportError("executor.kind is k8s but dagster-k8s is not installed: pip install -e '.[k8s]'") from None
        return k8s_job_executor.configured(k8s_executor_config(ex.k8s), name="k8s")
    try:
        from dagster_dask import dask_executor
    except ImportError:
        raise ImportError("executor.kind is dask but dagster-dask is not installed: pip install -e '.[cluster]'") from None
    d = ex.dask
    cluster = {"existing": {"address": d.scheduler}} if d.scheduler else {"local": local_cluster_kwargs(d)}
    return dask_executor.configured({"cluster": cluster}, name="dask")


def local_cluster_kwargs(d: ExecutorDask) -> dict:
    """distributed.LocalCluster's arguments for `executor.dask` without a scheduler."""
    # LocalCluster's default dashboard ":8787" binds every interface even with `host` set, and
    # without a dashboard the scheduler still serves HTTP routes (health, metrics): both on `host`
    dashboard = f"{d.host}:{d.dashboard_port}" if d.dashboard_port else None
    return {"n_workers": d.workers, "threads_per_worker": d.threads_per_worker, "host": d.host,
            "dashboard_address": dashboard,
            "scheduler_kwargs": {"dashboard": dashboard is not None, "dashboard_address": dashboard or f"{d.host}:0"}}


def k8s_executor_config(k: ExecutorK8s) -> dict:
    """dagster-k8s `k8s_job_executor`'s config for `executor.k8s`: every step pod mounts the
    shared claim, reads the secrets and config maps, and requests `cpu`/`memory`; the steps of
    the `gpu` pool (GPU_ASSETS) also get the limit `nvidia.com/gpu`, so Kubernetes puts them on
    GPU nodes. Nothing here talks to a cluster."""
    resources = {"requests": {"cpu": k.cpu, "memory": k.memory}, "limits": {"memory": k.memory}}
    container: dict = {"resources": resources}
    pod_spec: dict = {}
    if k.volume_claim:
        container["volume_mounts"] = [{"name": "tradelab-shared", "mount_path": k.mount_path}]
        pod_spec["volumes"] = [{"name": "tradelab-shared", "persistent_volume_claim": {"claim_name": k.volume_claim}}]
    config: dict = {
        "job_namespace": k.namespace,
        "image_pull_policy": k.image_pull_policy,
        "env_config_maps": list(k.env_config_maps),
        "env_secrets": list(k.env_secrets),
        "step_k8s_config": {"container_config": container, "pod_spec_config": pod_spec},
    }
    if k.image:
        config["job_image"] = k.image
    if k.service_account:
        config["service_account_name"] = k.service_account
    if k.max_concurrent:
        config["max_concurrent"] = k.max_concurrent
    if k.gpus_per_gpu_step:
        gpu = {"requests": dict(resources["requests"]),
               "limits": {**resources["limits"], "nvidia.com/gpu": str(k.gpus_per_gpu_step)}}
        config["per_step_k8s_config"] = {
            step: {"container_config": {**container, "resources": gpu}} for step in GPU_ASSETS}
    return config


def gpu_count() -> int:
    """GPUs this process can see (CUDA through numba or CuPy, ROCm through torch); 0 if none."""
    from resources.compute import probe_cuda, probe_rocm

    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.device_count()
    except Exception:
        pass
    return 1 if (probe_cuda() or probe_rocm()) else 0


def gpu_pool_limit(settings: Settings) -> int:
    return settings.executor.gpus or max(1, gpu_count())


def ensure_gpu_pool(instance, settings: Settings) -> int:
    """Set the `gpu` pool's limit on `instance` (idempotent); returns the limit.

    Without `executor.gpus` the GPUs are counted once per instance (the count imports torch,
    about 2 s): a pool that already has a limit keeps it. Set `executor.gpus` to change it."""
    current = instance.event_log_storage.get_concurrency_info(GPU_POOL).slot_count
    if settings.executor.gpus is None and current:
        return current
    limit = gpu_pool_limit(settings)
    if current != limit:
        instance.event_log_storage.set_concurrency_slots(GPU_POOL, limit)
    return limit
