"""The trade-log grid search on a Dask cluster: orchestration, not a kernel.

Where the work goes
- Exit resolution runs once, on the driver, exactly as in `run_grid_search` (numba over
  all cores, or the GPU): it is one pass per trade, and the driver needs every result
  row anyway for the report (`describe`, the heatmap, the overfitting guard).
- The inputs of the search, the features [5, trades] and the resolved results
  [pairs, trades], are scattered ONCE to every worker (`client.scatter(...,
  broadcast=True)`); tasks receive the futures, never the arrays. With `scatter="rows"`
  the features are broadcast and each shard's own result rows (one contiguous block) are
  sent once, to one worker, where its task then runs: the results cross the network once
  in all rather than once per worker (the larger input: pairs x trades int32).
- Shards are contiguous ranges of the (target, stop_loss) exit pairs p = target_index *
  n_stops + stop_index. Both exact engines make this natural: the dominance sums build one
  histogram per pair (so a pair range splits both the O(trades x pairs) binning and the
  O(cells x pairs) suffix sums), and the brute force's work is combinations x trades with
  the pair the fastest axis, so a pair range is an even share of it too. A range of pairs
  is at most three rectangles target[a:b] x stop_loss[c:d] (a partial first target row,
  whole middle rows, a partial last row), each a real `Grid` whose result rows are one
  contiguous slice of `results`; the engine runs on each unchanged.

Why the merge is exact
- Every combination's ROI and trade count are the same integers whichever shard computes
  them (integer sums of the same results; the sub-grid only drops other pairs).
- Sub-grid index s = f * P' + q (f the filter cell, q the pair inside the rectangle) maps to
  the global index c = f * P + p(q), and p(q) is increasing in q, so c is increasing in s:
  the shard ranks its combinations in the same (ROI desc, grid index asc) order as the
  whole grid does (ranking.py), min_trades applies per combination, and the indices are
  mapped to global ones before leaving the worker.
- That order is total (indices are unique). If a combination is in the global top-k, fewer
  than k combinations rank above it in the whole grid, so fewer than k in its own shard:
  it is in its shard's top-k. The driver merges the shards' top-k lists with `merge_top`
  (the same order) and keeps k: the single-process result, ties included.

Clusters (`cluster_client`): an existing scheduler (`grid_search.dask.scheduler`), else a
`distributed.LocalCluster` of `workers` processes with one thread each (numba limited to
one thread per worker), or with `gpu: true` a `dask_cuda.LocalCUDACluster` (one worker
per GPU, an RMM pool per worker, `NUMBA_CUDA_MEMORY_MANAGER=rmm.allocators.numba` in the
workers' environment so numba.cuda allocates from it, and CuPy's allocator on RMM).
dask_cuda is optional (GPU machines only): asking for it without it is a `DaskSetupError`
naming the package.

Smart search (`run_smart_search_dask`): several workers add trials to ONE Optuna study in
shared storage (a journal file, e.g. `JournalStorage(JournalFileBackend(path))`, or an RDB
URL); task i runs `study.optimize` with sampler seed `seed + i` and records its worker's
address as a trial user attribute; the driver ranks every complete trial on all trades.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from config.settings import DaskSettings
from kernels.gridsearch.grid import Grid
from kernels.gridsearch.ranking import TopK, merge_top

if TYPE_CHECKING:  # pragma: no cover
    from distributed import Client

    from domain.gridsearch.inputs import TradeArrays
    from domain.gridsearch.search import GridSearchResult

CONNECT_TIMEOUT_S = 10.0
NUMBA_RMM_MANAGER = "rmm.allocators.numba"  # NUMBA_CUDA_MEMORY_MANAGER on GPU workers
SCATTER = ("broadcast", "rows")
# Dask's nannies set MALLOC_TRIM_THRESHOLD_=65536 in the workers. Setting it turns off glibc's
# dynamic mmap threshold, so every NumPy temporary over 128 KiB becomes a fresh mmap that
# page-faults on first touch: the dominance sums ran 1.8x slower in such a worker (0.47 s
# against 0.26 s for half the 10M grid). Our local workers keep glibc's defaults, as the
# single-process run does (at most ~64 MiB of freed heap kept per worker).
GLIBC_MALLOC_DEFAULTS = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
# The inputs are broadcast on purpose (one copy per worker, before the shards are submitted).
# The active memory manager's ReduceReplicas drops every copy but one of a key that no task on
# that worker waits for yet, every 2 s: a cycle between the scatter and the submissions made
# a worker fetch the inputs again (and failed tests/domain/test_grid_dask.py under load).
# Our local cluster runs without it; a cluster at `scheduler` keeps its own configuration.
LOCAL_CLUSTER_CONFIG = {**GLIBC_MALLOC_DEFAULTS, "distributed.scheduler.active-memory-manager.start": False}


def _no_dashboard(host: str) -> dict:
    """No dashboard; the scheduler's HTTP routes (health, metrics) on a free port of `host`
    (`grid_search.dask.host`, default 127.0.0.1), like every other socket of the cluster."""
    return {"host": host, "dashboard_address": None,
            "scheduler_kwargs": {"dashboard": False, "dashboard_address": f"{host}:0"}}


class DaskSetupError(RuntimeError):
    """A Dask cluster that cannot be reached or started, with what to do about it."""


def dask_settings(settings=None) -> DaskSettings:
    """The DaskSettings out of a Settings object (`.grid_search.dask`), a GridSearch
    object (`.dask`), a DaskSettings, a mapping, or None (the defaults)."""
    if settings is None:
        return DaskSettings()
    if isinstance(settings, dict):
        return DaskSettings(**settings)
    if hasattr(settings, "grid_search"):
        settings = settings.grid_search
    if hasattr(settings, "dask"):
        settings = settings.dask
    for name in ("scheduler", "workers", "gpu", "shards"):
        if not hasattr(settings, name):
            raise TypeError("cluster_client: expected Settings, GridSearch or DaskSettings, "
                            f"got {type(settings).__name__}")
    return settings


# ----------------------------------------------------------------------------- clusters


def connect(address: str, timeout: float = CONNECT_TIMEOUT_S) -> Client:
    """A Client of the scheduler at `address`, or a DaskSetupError after `timeout` seconds."""
    from distributed import Client

    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as err:
        raise DaskSetupError(
            f"grid_search.dask.scheduler: cannot reach the Dask scheduler at {address!r} within {timeout:g} s "
            f"({type(err).__name__}: {err}). Start one (`dask scheduler` and `dask worker {address}`), fix the "
            f"address, or set it to null for a local cluster."
        ) from err


def local_cluster(settings=None, *, rmm_pool_size: float | str = 0.8):
    """A LocalCluster of `workers` processes x 1 thread (numba on one thread per worker),
    or with `gpu: true` a dask_cuda.LocalCUDACluster (see the module docstring)."""
    import dask

    ds = dask_settings(settings)
    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        if ds.gpu:
            return _local_cuda_cluster(ds.workers, rmm_pool_size, ds.host)
        from distributed import LocalCluster

        return LocalCluster(n_workers=ds.workers, threads_per_worker=1, processes=True,
                            env={"NUMBA_NUM_THREADS": "1"}, **_no_dashboard(ds.host))


def _local_cuda_cluster(workers: int, rmm_pool_size, host: str = "127.0.0.1"):
    """One worker per GPU (at most `workers`), each with an RMM pool of `rmm_pool_size`
    (bytes, a fraction of the device, or "24GB"). RMM order on CUDA: numba's memory
    manager (set in the worker's environment before numba.cuda starts), the pool
    (dask_cuda's RMMSetup plugin), then CuPy's allocator."""
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError as err:
        raise DaskSetupError(
            "grid_search.dask.gpu: true needs the package dask-cuda (with rmm), which is not installed here "
            f"({err}). Install dask-cuda and rmm on a machine with NVIDIA GPUs (`pip install dask-cuda "
            "rmm-cu12`), or set grid_search.dask.gpu: false."
        ) from err
    import inspect

    import dask

    try:
        from dask_cuda.utils import get_n_gpus

        n_gpus = get_n_gpus()
    except Exception:  # noqa: BLE001 - older/newer dask_cuda: let LocalCUDACluster count
        n_gpus = None
    kwargs = {"n_workers": min(workers, n_gpus) if n_gpus else workers, "threads_per_worker": 1,
              "rmm_pool_size": rmm_pool_size, **_no_dashboard(host)}
    if "rmm_allocator_external_lib_list" in inspect.signature(LocalCUDACluster).parameters:
        kwargs["rmm_allocator_external_lib_list"] = ["cupy"]
    # LocalCUDACluster replaces the Nanny's `env` with CUDA_VISIBLE_DEVICES; the Nanny also
    # applies `distributed.nanny.environ`, in the worker process before any task imports numba.
    environ = {**dask.config.get("distributed.nanny.environ", {}), "NUMBA_CUDA_MEMORY_MANAGER": NUMBA_RMM_MANAGER}
    with dask.config.set({"distributed.nanny.environ": environ}):
        return LocalCUDACluster(**kwargs)


def _cupy_on_rmm():  # pragma: no cover - GPU workers only
    import cupy
    from rmm.allocators.cupy import rmm_cupy_allocator

    cupy.cuda.set_allocator(rmm_cupy_allocator)


@contextlib.contextmanager
def cluster_client(settings=None, *, timeout: float = CONNECT_TIMEOUT_S,
                   rmm_pool_size: float | str = 0.8) -> Iterator[Client]:
    """A Client for `grid_search.dask`: the scheduler at `scheduler` when set, else a local
    cluster (CPU processes, or GPUs with `gpu: true`) started here and closed on exit."""
    ds = dask_settings(settings)
    if ds.scheduler:
        client = connect(ds.scheduler, timeout)
        try:
            yield client
        finally:
            client.close()
        return
    from distributed import Client

    cluster = local_cluster(ds, rmm_pool_size=rmm_pool_size)
    try:
        client = Client(cluster, timeout=timeout)
        try:
            if ds.gpu and "rmm_allocator_external_lib_list" not in _cuda_cluster_params(cluster):
                client.run(_cupy_on_rmm)  # pragma: no cover - older dask_cuda
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def _cuda_cluster_params(cluster) -> set[str]:
    import inspect

    return set(inspect.signature(type(cluster)).parameters)


@contextlib.contextmanager
def _client_for(client, address, timeout) -> Iterator[Client]:
    if client is not None:
        yield client
        return
    if not address:
        raise ValueError("run on Dask: pass client= (a distributed.Client) or address= (a scheduler address)")
    own = connect(address, timeout)
    try:
        yield own
    finally:
        own.close()


def worker_threads(client) -> int:
    return max(1, int(sum(client.nthreads().values())))


# ----------------------------------------------------------------------------- shards


Rect = tuple[int, int, int, int]  # target[t_lo:t_hi] x stop_loss[s_lo:s_hi]


def pair_rectangles(lo: int, hi: int, n_stops: int) -> list[Rect]:
    """The pairs lo..hi-1 (p = target_index * n_stops + stop_index) as at most three
    rectangles: whole target rows, or one target row with a range of stops."""
    rects, p = [], lo
    while p < hi:
        t, s = divmod(p, n_stops)
        if s == 0 and hi - p >= n_stops:
            t_end = t + (hi - p) // n_stops
            rects.append((t, t_end, 0, n_stops))
            p = t_end * n_stops
        else:
            s_end = min(n_stops, s + hi - p)
            rects.append((t, t + 1, s, s_end))
            p = t * n_stops + s_end
    return rects


def shard_bounds(grid: Grid, shards: int) -> list[tuple[int, int]]:
    """`shards` contiguous, near-equal ranges [lo, hi) of the exit pairs (at most one shard
    per pair): also the shards' row ranges of `results`."""
    n = grid.n_pairs
    shards = max(1, min(int(shards), n))
    return list(itertools.pairwise((i * n) // shards for i in range(shards + 1)))


def shard_plan(grid: Grid, shards: int) -> list[list[Rect]]:
    """The shards of `shard_bounds`, each as rectangles of the grid's exits."""
    return [pair_rectangles(a, b, len(grid.stop_loss)) for a, b in shard_bounds(grid, shards)]


def sub_grid(grid: Grid, rect: Rect) -> Grid:
    t_lo, t_hi, s_lo, s_hi = rect
    return replace(grid, target=grid.target[t_lo:t_hi], stop_loss=grid.stop_loss[s_lo:s_hi])


def rect_rows(results: np.ndarray, rect: Rect, n_stops: int, first_row: int = 0) -> np.ndarray:
    """The result rows of a rectangle: one contiguous slice (a view). `results` holds the
    rows from pair `first_row` on (0: all of them)."""
    t_lo, t_hi, s_lo, s_hi = rect
    if t_hi - t_lo > 1 and (s_lo, s_hi) != (0, n_stops):
        raise ValueError(f"rectangle {rect}: several targets need every stop to be contiguous")
    return results[t_lo * n_stops + s_lo - first_row:(t_hi - 1) * n_stops + s_hi - first_row]


def to_global(index: np.ndarray, grid: Grid, rect: Rect) -> np.ndarray:
    """Sub-grid combination indices -> the whole grid's (increasing in the sub index)."""
    t_lo, t_hi, s_lo, s_hi = rect
    sub_pairs = (t_hi - t_lo) * (s_hi - s_lo)
    f, q = np.divmod(np.asarray(index, dtype=np.int64), sub_pairs)
    ti, si = np.divmod(q, s_hi - s_lo)
    return f * grid.n_pairs + (t_lo + ti) * len(grid.stop_loss) + (s_lo + si)


def search_shard(features, results, grid: Grid, rects: list[Rect], engine: str, backend: str, k: int,
                 min_trades: int, first_row: int = 0) -> TopK:
    """A worker's task: the exact top-k (global indices) over the pairs of its rectangles.
    `results`: every result row, or (scatter="rows") the shard's own rows from `first_row`."""
    from domain.gridsearch.search import engine_top

    best = TopK.empty()
    for rect in rects:
        rows = rect_rows(results, rect, len(grid.stop_loss), first_row)
        part = engine_top(features, rows, sub_grid(grid, rect), engine, backend, k, min_trades)
        best = merge_top(best, TopK(to_global(part.index, grid, rect), part.roi_units, part.trades), k)
    return best


def _shard_combinations(grid: Grid, rects: list[Rect]) -> int:
    cells = grid.n_combinations // grid.n_pairs
    return cells * sum((t1 - t0) * (s1 - s0) for t0, t1, s0, s1 in rects)


# ----------------------------------------------------------------------------- grid search


def run_grid_search_dask(prices: np.ndarray, trades: TradeArrays, grid: Grid, *, client: Client | None = None,
                         address: str | None = None, engine: str = "auto", backend: str = "cpu", top: int = 10,
                         min_trades: int = 1, shards: int | None = None, scatter: str = "broadcast", progress=None,
                         timeout: float = CONNECT_TIMEOUT_S) -> tuple[GridSearchResult, np.ndarray]:
    """`run_grid_search` with the combinations sharded over a Dask cluster (pass `client`,
    or `address` of a scheduler to connect to for this call). Same exact top-`top`, same
    (GridSearchResult, results [pairs, trades]) return; `shards` defaults to the cluster's
    worker threads and is capped at the number of exit pairs. `progress(n)` is called with
    each finished shard's combination count.

    scatter: "broadcast" (every worker gets the features and all result rows, once) or
    "rows" (the features broadcast; each shard's own result rows, a contiguous block, sent
    once to one worker and its task run there: results cross the network once in all
    instead of once per worker)."""
    from distributed import as_completed

    from domain.gridsearch.search import ENGINES, GridSearchResult, describe, family_backend
    from kernels.gridsearch import EXITS
    from kernels.gridsearch.exits import resolve_exits

    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    engine = "cube" if engine == "auto" else engine
    if len(trades.start) == 0:
        raise ValueError("no trades left to search: every trade was filtered out or rejected")
    if top < 1 or min_trades < 1:
        raise ValueError(f"top and min_trades must be >= 1, got {top} and {min_trades}")
    if scatter not in SCATTER:
        raise ValueError(f"scatter must be one of {SCATTER}, got {scatter!r}")
    with _client_for(client, address, timeout) as cl:
        t0 = time.perf_counter()
        exit_backend = family_backend(EXITS, backend)
        results, _ = resolve_exits(trades.start, trades.end, trades.entry, prices, trades.pct_change, grid.target,
                                   grid.stop_loss, backend=exit_backend, exit_rows=False)
        t1 = time.perf_counter()
        bounds = shard_bounds(grid, shards or worker_threads(cl))
        plan = [pair_rectangles(a, b, len(grid.stop_loss)) for a, b in bounds]
        features = np.ascontiguousarray(trades.features)
        if scatter == "broadcast":
            inputs = cl.scatter([features, results], broadcast=True, hash=False)
            args = [(inputs[0], inputs[1], 0) for _ in bounds]
        else:
            feats = cl.scatter([features], broadcast=True, hash=False)
            blocks = cl.scatter([results[a:b] for a, b in bounds], hash=False)  # spread over the workers
            inputs = feats + blocks
            args = [(feats[0], block, a) for block, (a, _) in zip(blocks, bounds)]
        t2 = time.perf_counter()
        run = uuid.uuid4().hex[:8]
        tasks = [cl.submit(search_shard, f, r, grid, rects, engine, backend, top, min_trades, first_row, pure=False,
                           key=f"grid-shard-{run}-{i}") for i, ((f, r, first_row), rects) in enumerate(zip(args, plan))]
        size = {f.key: _shard_combinations(grid, rects) for f, rects in zip(tasks, plan)}
        best = TopK.empty()
        try:
            for fut in as_completed(tasks):
                best = merge_top(best, fut.result(), top)
                if progress:
                    progress(size[fut.key])
        finally:
            cl.cancel(tasks + list(inputs))
        t3 = time.perf_counter()
        info = {"scheduler": cl.scheduler.address, "workers": len(cl.nthreads()), "shards": len(plan),
                "scatter": scatter}
    rows = describe(best.index, best.roi_units, grid, trades, results)
    result = GridSearchResult(rows, grid.n_combinations, len(trades.start), engine, backend, t3 - t0,
                              {"exit_resolution_s": round(t1 - t0, 4), "scatter_s": round(t2 - t1, 4),
                               "search_s": round(t3 - t2, 4)}, extra={"dask": info})
    return result, results


# ----------------------------------------------------------------------------- smart search


def optuna_task(features, results, space, storage, study_name: str, sampler: str, seed: int, n_trials: int) -> dict:
    """A worker's share of a shared study: `n_trials` trials of `study.optimize` with its
    own sampler seed; each trial records this worker's address (user attr "worker")."""
    import optuna
    from distributed import get_worker

    from domain.gridsearch.smart import make_sampler, open_storage, quiet_optuna
    from kernels.gridsearch import RESULT_SCALE
    from kernels.gridsearch.evaluate import evaluate

    address = get_worker().address

    def objective(trial) -> float:
        thresholds, pair = space.suggest(trial)
        roi, kept = evaluate(features, results, thresholds[None, :], np.array([pair], dtype=np.int64))
        trial.set_user_attr("worker", address)
        trial.set_user_attr("seed", int(seed))
        trial.set_user_attr("trades", int(kept[0]))
        return float(roi[0]) / RESULT_SCALE

    with quiet_optuna():
        study = optuna.load_study(study_name=study_name, storage=open_storage(storage),
                                  sampler=make_sampler(sampler, seed, 1))
        study.optimize(objective, n_trials=n_trials)
    return {"worker": address, "seed": int(seed), "trials": int(n_trials)}


def run_smart_search_dask(trades: TradeArrays, prices: np.ndarray, *, client: Client, storage: str,
                          trials_per_task: int = 64, tasks: int | None = None, study_name: str | None = None,
                          sampler: str = "tpe", seed: int = 0, min_trades: int = 1, top: int = 10, ranges=None,
                          target_levels=None, stop_levels=None) -> tuple[GridSearchResult, None]:
    """Optuna smart search (domain.gridsearch.smart's space) by `tasks` Dask tasks (default: one
    per worker, task i pinned to worker i mod n) adding `trials_per_task` trials each to
    one study in shared `storage` (a journal file: "journal:PATH" or *.log/*.journal/*.jsonl,
    or an RDB URL). Task i samples with seed `seed + i`. The best `top` complete trials of
    the whole study, scored on all trades, like run_smart_search."""
    import optuna

    from domain.gridsearch.search import GridSearchResult
    from domain.gridsearch.smart import (
        SAMPLERS,
        Space,
        default_levels,
        feature_ranges,
        open_storage,
        quiet_optuna,
        rank_trials,
    )
    from kernels.gridsearch.exits import resolve_exits

    if storage is None or not isinstance(storage, (str, os.PathLike)):
        raise ValueError("run_smart_search_dask: storage must be a journal file path or a database URL that every "
                         "worker can open (in-memory studies cannot be shared)")
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if trials_per_task < 1:
        raise ValueError(f"trials_per_task must be >= 1, got {trials_per_task}")
    if len(trades.start) == 0:
        raise ValueError("no trades left to search: every trade was filtered out or rejected")
    storage = os.fspath(storage)
    t0 = time.perf_counter()
    default_t, default_s = default_levels()
    space = Space({**feature_ranges(trades.features), **(ranges or {})},
                  [float(v) for v in (target_levels if target_levels is not None else default_t)],
                  [float(v) for v in (stop_levels if stop_levels is not None else default_s)])
    results, _ = resolve_exits(trades.start, trades.end, trades.entry, prices, trades.pct_change, space.targets,
                               space.stops, exit_rows=False)
    features = np.ascontiguousarray(trades.features)
    name = study_name or f"smart-dask-{sampler}-seed{seed}"
    with quiet_optuna():
        study = optuna.create_study(storage=open_storage(storage), study_name=name, direction="maximize",
                                    load_if_exists=True)
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise DaskSetupError("the Dask cluster has no workers")
    n_tasks = tasks or len(workers)
    t1 = time.perf_counter()
    inputs = client.scatter([features, results], broadcast=True, hash=False)
    futures = [client.submit(optuna_task, *inputs, space, storage, name, sampler, seed + i, trials_per_task,
                             workers=[workers[i % len(workers)]], allow_other_workers=False, pure=False,
                             key=f"optuna-{name}-{uuid.uuid4().hex[:8]}-{i}") for i in range(n_tasks)]
    try:
        done = client.gather(futures)
    finally:
        client.cancel(futures + list(inputs))
    t2 = time.perf_counter()
    with quiet_optuna():
        rows = rank_trials(study, space, features, results, top=top, min_trades=min_trades)
        trials = study.get_trials(deepcopy=False)
    by_worker: dict[str, int] = {}
    for t in trials:
        w = t.user_attrs.get("worker")
        if w is not None:
            by_worker[w] = by_worker.get(w, 0) + 1
    t3 = time.perf_counter()
    timings = {"exit_resolution_s": round(t1 - t0, 4), "search_s": round(t2 - t1, 4), "ranking_s": round(t3 - t2, 4)}
    extra = {"study_name": name, "study_trials": len(trials), "n_complete": sum(d["trials"] for d in done),
             "sampler": sampler, "storage": storage, "tasks": done, "trials_by_worker": by_worker,
             "levels": {"targets": len(space.targets), "stops": len(space.stops)}}
    result = GridSearchResult(rows, len(trials), len(trades.start), "optuna", "cpu", t3 - t0, timings, extra=extra)
    return result, None
