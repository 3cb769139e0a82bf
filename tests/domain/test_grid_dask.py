"""The grid search on a Dask cluster (domain.gridsearch.dask_grid): a 2-worker LocalCluster (processes,
one thread each) started once for the module. The sharded search must equal the
single-process `run_grid_search` exactly (rows, order, ROI, trade counts), for both exact
engines and any shard count; the inputs travel once; a journal-file Optuna study gets
trials from both workers; cluster set-up failures are clear errors."""

from __future__ import annotations

import os
import socket
import sys
import time

import numpy as np
import pytest

from domain.gridsearch.dask_grid import (
    DaskSettings,
    DaskSetupError,
    cluster_client,
    dask_settings,
    rect_rows,
    run_grid_search_dask,
    run_smart_search_dask,
    shard_plan,
    sub_grid,
    to_global,
)
from domain.gridsearch.inputs import TradeArrays, read_market_data, read_trade_log
from domain.gridsearch.search import run_grid_search
from domain.gridsearch.synthetic import generate_grid_data
from kernels.gridsearch.grid import Grid

TICKERS = ["SOXL", "IONQ", "MARA"]
# 3 x 2 x 2 x 2 x 2 filter cells x (2 targets x 3 stops) = 288 combinations, 6 exit pairs:
# shards of a pair range cross target rows (partial rectangles).
GRID = Grid(volatility=(0.0, 0.1, 0.05), ratio=(0.0, 0.9), adx28=(0, 20), adx14=(25, 0), adx7=(0, 30),
            target=(0.2, 0.4), stop_loss=(-0.4, -0.3, -0.2))


@pytest.fixture(scope="module")
def client():
    with cluster_client(DaskSettings(workers=2)) as c:
        yield c
    assert c.status == "closed"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A few hundred realistic trades (domain.gridsearch.synthetic) and their market prices."""
    paths = generate_grid_data(tmp_path_factory.mktemp("grid_dask"), days=2, trades_per_day=300)
    market = read_market_data(paths.market_data, TICKERS)
    frame, _ = read_trade_log(paths.trade_log, TICKERS, market)
    trades = TradeArrays.from_frame(frame)
    assert 150 <= len(trades.start) <= 1000
    return market["price"].to_numpy(), trades


def same(dask_run, single_run):
    (got, got_results), (ref, ref_results) = dask_run, single_run
    assert got.top == ref.top  # rank, parameters, roi, trades, win rate, compounded return, combination
    assert [r["combination"] for r in got.top] == [r["combination"] for r in ref.top]
    assert (got.combinations, got.trades, got.engine, got.backend) == \
        (ref.combinations, ref.trades, ref.engine, ref.backend)
    np.testing.assert_array_equal(got_results, ref_results)


def test_the_local_cluster_is_two_single_threaded_worker_processes(client):
    assert list(client.nthreads().values()) == [1, 1]
    pids = client.run(os.getpid)
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
    assert set(client.run(lambda: os.environ.get("NUMBA_NUM_THREADS")).values()) == {"1"}


def test_the_local_cluster_keeps_every_broadcast_copy_no_active_memory_manager(client):
    # ReduceReplicas would drop a broadcast input's second copy before the shards are submitted
    assert client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.extensions["amm"].running) is False
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:  # not inherited from an earlier cluster in this process
        assert set(client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_")).values()) == {None}


@pytest.mark.parametrize("engine", ["brute", "cube"])
@pytest.mark.parametrize(("shards", "scatter"), [(None, "broadcast"), (1, "broadcast"), (4, "broadcast"),
                                                 (100, "broadcast"), (4, "rows"), (100, "rows")],
                         ids=["default", "one", "uneven", "more_than_pairs", "uneven-rows", "more_than_pairs-rows"])
def test_the_sharded_search_equals_the_single_process_one(client, inputs, engine, shards, scatter):
    prices, trades = inputs
    seen = []
    got = run_grid_search_dask(prices, trades, GRID, client=client, engine=engine, top=10, shards=shards,
                               scatter=scatter, progress=seen.append)
    same(got, run_grid_search(prices, trades, GRID, engine=engine, top=10))
    expected_shards = {None: 2, 1: 1, 4: 4, 100: GRID.n_pairs}[shards]
    assert got[0].extra["dask"]["shards"] == expected_shards and got[0].extra["dask"]["workers"] == 2
    assert got[0].extra["dask"]["scatter"] == scatter
    assert len(seen) == expected_shards and sum(seen) == GRID.n_combinations


@pytest.mark.parametrize("engine", ["brute", "cube"])
def test_ties_across_shards_go_to_the_earlier_combination(client, inputs, engine):
    """Exits never reached: every pair gives each trade its own result, so the pairs of one
    filter cell tie, and the tied combinations lie in different shards."""
    prices, trades = inputs
    far = Grid(volatility=GRID.volatility, ratio=GRID.ratio, adx28=GRID.adx28, adx14=GRID.adx14, adx7=GRID.adx7,
               target=(50.0, 60.0), stop_loss=(-50.0, -60.0, -70.0))
    got = run_grid_search_dask(prices, trades, far, client=client, engine=engine, top=10, shards=4)
    same(got, run_grid_search(prices, trades, far, engine=engine, top=10))
    top = got[0].top
    assert len({r["roi"] for r in top[:6]}) == 1
    first = top[0]["combination"]
    assert [r["combination"] for r in top[:6]] == list(range(first, first + 6))  # one cell, pairs 0..5, 4 shards


def test_min_trades_and_a_longer_top(client, inputs):
    prices, trades = inputs
    min_trades = len(trades.start) // 3
    for engine in ("brute", "cube"):
        got = run_grid_search_dask(prices, trades, GRID, client=client, engine=engine, top=40, min_trades=min_trades,
                                   shards=5)
        same(got, run_grid_search(prices, trades, GRID, engine=engine, top=40, min_trades=min_trades))
        assert len(got[0].top) == 40 and all(r["trades"] >= min_trades for r in got[0].top)


def test_inputs_are_scattered_once_to_every_worker_and_released(client, inputs, monkeypatch):
    prices, trades = inputs
    workers = set(client.scheduler_info()["workers"])
    scatters, submitted, holders = [], [], []
    real_scatter, real_submit = client.scatter, client.submit

    def scatter(data, **kw):
        futures = real_scatter(data, **kw)
        scatters.append((data, kw, futures))
        holders.append(client.who_has(futures))
        return futures

    def submit(fn, *args, **kw):
        submitted.append(args)
        return real_submit(fn, *args, **kw)

    monkeypatch.setattr(client, "scatter", scatter)
    monkeypatch.setattr(client, "submit", submit)
    run_grid_search_dask(prices, trades, GRID, client=client, engine="cube", shards=6)

    assert len(scatters) == 1
    data, kw, futures = scatters[0]
    assert kw.get("broadcast") is True and len(data) == len(futures) == 2  # features, results
    assert all(set(where) == workers for where in holders[0].values())  # each input on both workers
    keys = {f.key for f in futures}
    assert len(submitted) == 6
    for args in submitted:  # the arrays travel as the scattered futures, never inline
        assert not any(isinstance(a, np.ndarray) for a in args)
        assert {a.key for a in args if hasattr(a, "key")} == keys
    deadline = time.time() + 10
    while sum(client.run(lambda dask_worker: len(dask_worker.data)).values()) and time.time() < deadline:
        time.sleep(0.1)
    assert sum(client.run(lambda dask_worker: len(dask_worker.data)).values()) == 0


def test_with_scatter_rows_each_shard_block_travels_once_to_one_worker(client, inputs, monkeypatch):
    prices, trades = inputs
    workers = set(client.scheduler_info()["workers"])
    calls, submitted = [], []
    real_scatter, real_submit = client.scatter, client.submit

    def scatter(data, **kw):
        futures = real_scatter(data, **kw)
        calls.append(([np.shape(d) for d in data], kw.get("broadcast", False), client.who_has(futures),
                      [f.key for f in futures]))
        return futures

    def submit(fn, *args, **kw):
        submitted.append(args)
        return real_submit(fn, *args, **kw)

    monkeypatch.setattr(client, "scatter", scatter)
    monkeypatch.setattr(client, "submit", submit)
    run_grid_search_dask(prices, trades, GRID, client=client, engine="cube", shards=4, scatter="rows")
    (feat_shapes, feat_bcast, feat_where, _), (row_shapes, row_bcast, row_where, row_keys) = calls
    assert feat_bcast and feat_shapes == [(5, len(trades.start))]
    assert all(set(w) == workers for w in feat_where.values())
    assert not row_bcast and [s[0] for s in row_shapes] == [1, 2, 1, 2]  # 6 pairs in 4 contiguous blocks
    assert all(len(w) == 1 for w in row_where.values())  # each block on one worker
    assert len({w[0] for w in row_where.values()}) == 2  # spread over both
    assert [args[1].key for args in submitted] == row_keys  # shard i gets block i
    assert all(not any(isinstance(a, np.ndarray) for a in args) for args in submitted)


def test_shards_cover_every_pair_once_as_contiguous_rectangles():
    results = np.arange(7 * 5 * 3).reshape(35, 3)
    for n_t, n_s in ((1, 1), (2, 3), (7, 5), (4, 1), (1, 6)):
        grid = Grid(volatility=(0, 1), ratio=(0,), adx28=(0, 5, 9), adx14=(0,), adx7=(0,),
                    target=tuple(range(1, n_t + 1)), stop_loss=tuple(-s for s in range(1, n_s + 1)))
        for shards in range(1, n_t * n_s + 3):
            plan = shard_plan(grid, shards)
            assert len(plan) == min(shards, grid.n_pairs)
            pairs, combos = [], []
            for rects in plan:
                assert len(rects) <= 3
                for rect in rects:
                    t0, t1, s0, s1 = rect
                    pairs += [t * n_s + s for t in range(t0, t1) for s in range(s0, s1)]
                    rows = rect_rows(results[: grid.n_pairs], rect, n_s)
                    assert rows.shape[0] == (t1 - t0) * (s1 - s0) and rows.base is not None  # a view
                    sub = sub_grid(grid, rect)
                    glob = to_global(np.arange(sub.n_combinations), grid, rect)
                    assert np.all(np.diff(glob) > 0)  # sub-grid order is grid order
                    combos += glob.tolist()
                    decoded = grid.decode(glob)
                    local = sub.decode(np.arange(sub.n_combinations))
                    assert all(np.array_equal(decoded[k], local[k]) for k in local)
            assert pairs == list(range(grid.n_pairs))
            assert sorted(combos) == list(range(grid.n_combinations))


def test_an_optuna_journal_study_gets_trials_from_both_workers(client, inputs, tmp_path):
    import optuna

    from domain.gridsearch.smart import open_storage

    prices, trades = inputs
    journal = tmp_path / "study.log"
    kw = {"client": client, "storage": str(journal), "trials_per_task": 6, "study_name": "dask-shared", "seed": 3,
              "target_levels": [0.2, 0.4, 0.8], "stop_levels": [-0.8, -0.4, -0.2], "top": 5}
    result, _ = run_smart_search_dask(trades, prices, **kw)
    workers = set(client.scheduler_info()["workers"])
    study = optuna.load_study(study_name="dask-shared", storage=open_storage(str(journal)))
    trials = study.get_trials()
    assert len(trials) == 12 == result.extra["study_trials"]
    assert {t.user_attrs["worker"] for t in trials} == workers
    assert result.extra["trials_by_worker"] == {w: 6 for w in workers}
    assert {t.user_attrs["seed"] for t in trials} == {3, 4}  # a fixed seed per task
    assert 1 <= len(result.top) <= 5 and result.top[0]["roi"] >= result.top[-1]["roi"]
    again, _ = run_smart_search_dask(trades, prices, **{**kw, "trials_per_task": 2})  # the same study grows
    assert again.extra["study_trials"] == 12 + 4 == len(study.get_trials())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_a_clear_error(inputs):
    prices, trades = inputs
    address = f"tcp://127.0.0.1:{_free_port()}"
    t0 = time.perf_counter()
    expected = f"cannot reach the Dask scheduler at '{address}' within 1 s"
    with pytest.raises(DaskSetupError, match=expected), cluster_client(DaskSettings(scheduler=address), timeout=1):
        pass
    with pytest.raises(DaskSetupError, match="cannot reach the Dask scheduler"):
        run_grid_search_dask(prices, trades, GRID, address=address, timeout=1)
    assert time.perf_counter() - t0 < 30
    with pytest.raises(ValueError, match="pass client= .* or address="):
        run_grid_search_dask(prices, trades, GRID)


def test_gpu_without_dask_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_cuda", None)  # as on a machine without it
    needs = "gpu: true needs the package dask-cuda"
    with pytest.raises(DaskSetupError, match=needs), cluster_client(DaskSettings(gpu=True, workers=1)):
        pass


def test_settings_model():
    ds = DaskSettings()
    assert (ds.enabled, ds.scheduler, ds.workers, ds.gpu, ds.shards) == (False, None, 2, False, None)
    with pytest.raises(ValueError):
        DaskSettings(worker=3)  # unknown key
    with pytest.raises(ValueError):
        DaskSettings(workers=0)

    class GS:
        dask = DaskSettings(workers=3)

    class S:
        grid_search = GS()

    assert dask_settings(S()).workers == 3 and dask_settings(GS()).workers == 3
    assert dask_settings({"shards": 4}).shards == 4 and dask_settings(None) == DaskSettings()


def test_the_local_cluster_listens_on_127_0_0_1_only_and_serves_no_dashboard(client):
    """The sockets this process and its worker processes listen on: scheduler, nannies,
    workers and the scheduler's HTTP routes, all on the loopback; nothing on 8787."""
    import psutil

    me = psutil.Process()
    listening = {(c.laddr.ip, c.laddr.port) for p in [me, *me.children(recursive=True)]
                 for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    assert len(listening) >= 5  # scheduler + its HTTP routes + 2 x (nanny, worker)
    assert {ip for ip, _ in listening} == {"127.0.0.1"}
    assert 8787 not in {port for _, port in listening}
