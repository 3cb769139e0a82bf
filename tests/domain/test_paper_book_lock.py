"""domain.live.paper_trade with real processes: two runs of one session that both reach the
book at the same moment log each order once (the second is refused), and a run killed while
it holds the book's lock blocks nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl

from config.settings import read_settings
from resources.delta_store import DeltaStore

REPO = Path(__file__).resolve().parents[2]

# A paper run of `day` in its own process. After its inference it says "ready" and waits for
# "go" on stdin: the test releases both runs only when both have their probabilities, so
# both reach the book (read, decide, write) together, the moment the lock exists for.
GATED_RUN = """
import json, sys
import domain.live.paper_trade as pt
from config.settings import read_settings
from tests.conftest import LEARNED_SYMBOLS

cfg, day, run_id = sys.argv[1:4]
real = pt.infer_batch
def gated(*args, **kwargs):
    out = real(*args, **kwargs)
    print("ready", flush=True)
    sys.stdin.readline()
    return out
pt.infer_batch = gated
import datetime as dt
result = pt.trade_day(read_settings(cfg), LEARNED_SYMBOLS, dt.datetime.fromisoformat(day), run_id)
print(json.dumps({"orders": result[0].height, "refused": getattr(result, "refused", None)}), flush=True)
"""

HOLD_LOCK = """
import sys
from domain.live.paper_trade import book_lock
with book_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def _a_day_with_a_signal(cfg) -> str:
    s = read_settings(cfg)
    pred = DeltaStore(s.experiment_data_dir).read("predictions", [2003])
    return f"{pred.filter(pl.col('p_h7') > s.backtest.threshold + 0.01)['date'].max():%Y-%m-%d}"


def _python(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, env=os.environ.copy(), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_two_processes_at_the_book_together_log_each_order_once_and_the_second_is_refused(learned_copy):
    day, s = _a_day_with_a_signal(learned_copy), read_settings(learned_copy)
    procs = [_python(GATED_RUN, str(learned_copy), day, f"run{i}") for i in range(2)]
    for p in procs:
        assert p.stdout.readline() == "ready\n", p.stderr.read()[-2000:]
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]
    results = sorted((json.loads(o.splitlines()[-1]) for o, _ in outs), key=lambda r: r["refused"] is not None)

    log_path = s.stage_reports_dir("paper_trades") / "orders.jsonl"
    log = [json.loads(x) for x in log_path.read_text().splitlines()]
    runs, orders = [r for r in log if "orders" in r], [r for r in log if "side" in r]
    assert len(orders) == len({(o["symbol"], o["date"]) for o in orders}) >= 1, orders  # each order once
    assert [(r.get("session"), r["orders"]) for r in runs] == [(day, len(orders))]
    assert results == [{"orders": len(orders), "refused": None}, {"orders": 0, "refused": (
        f"paper_trades: the session of {day} is already traded (run {runs[0]['run']}, {log_path}); "
        "nothing ordered, the paper book is unchanged")}]
    book = DeltaStore(s.data_dir).read("paper_positions")
    assert dict(zip(book["symbol"], book["weight"])) == {o["symbol"]: o["target_weight"] for o in orders}


def test_a_run_killed_while_it_holds_the_book_lock_blocks_nothing(learned_copy):
    day, s = _a_day_with_a_signal(learned_copy), read_settings(learned_copy)
    holder = _python(HOLD_LOCK, str(s.data_dir))
    assert holder.stdout.readline() == "held\n", holder.stderr.read()[-2000:]
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=60)
    assert holder.returncode == -signal.SIGKILL
    run = _python(GATED_RUN, str(learned_copy), day, "after-kill")
    out, err = run.communicate("go\n", timeout=300)
    assert run.returncode == 0, err[-2000:]
    assert json.loads(out.splitlines()[-1])["refused"] is None and json.loads(out.splitlines()[-1])["orders"] >= 1


def test_the_last_run_record_is_found_past_its_orders_and_a_line_cut_by_a_kill(tmp_path):
    from domain.live.paper_trade import last_run_record

    log = tmp_path / "orders.jsonl"
    assert last_run_record(log) is None
    lines = [{"run": "a", "session": "2003-12-11", "orders": 0},
             {"run": "b", "session": "2003-12-12", "orders": 3},
             *({"run": "b", "symbol": s, "side": "buy", "delta": 0.1} for s in ("AAA", "BBB", "CCC"))]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"run": "c", "session": "2003-12-15", "ord')
    assert last_run_record(log, block=40) == lines[1]  # blocks smaller than a line: lines joined across them
