"""The grid search as a user runs it: Dagster assets, the CLI, and bad inputs reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from dagster import materialize

from config.errors import InputDataError
from domain.gridsearch.inputs import read_market_data, read_trade_log
from assets.grid_search import grid_search, market_data, trade_log
from domain.gridsearch.synthetic import generate_grid_data
from pipeline.definitions import build_resources
from config.settings import read_settings
from resources.delta_store import DeltaStore

REPO = Path(__file__).resolve().parents[2]
TICKERS = ["SOXL", "IONQ", "MARA"]
SMALL_PARAMS = {"volatility": [0.0, 0.05], "ratio": [0.0, 0.9], "adx28": [0, 20], "adx14": [0, 25], "adx7": [0, 30],
                "target": [0.2, 0.4], "stop_loss": [-0.4, -0.2]}


@pytest.fixture(scope="module")
def grid_data(tmp_path_factory):
    return generate_grid_data(tmp_path_factory.mktemp("grid"), days=2, trades_per_day=120)


def test_assets_write_top10_json_markdown_and_heatmap(grid_data, make_settings, instance):
    cfg = make_settings(grid_search={"market_data": str(grid_data.market_data), "trade_log": str(grid_data.trade_log),
                                     "params": SMALL_PARAMS})
    res = materialize([market_data, trade_log, grid_search], instance=instance, resources=build_resources(str(cfg)))
    assert res.success
    assert {e.check_name: e.passed for e in res.get_asset_check_evaluations()} == {
        "sorted_by_ticker_time": True, "indices_inside_market_data": True, "top_sorted_unique": True}
    reports = read_settings(cfg).stage_reports_dir("grid_search")
    report = json.loads((reports / "top10.json").read_text())
    assert set(report) >= {"top", "combinations", "trades", "engine", "backend", "seconds"}
    assert report["combinations"] == 2**7 and len(report["top"]) == 10
    assert set(report["top"][0]) >= {"rank", "volatility", "ratio", "adx28", "adx14", "adx7", "target", "stop_loss", "roi", "trades"}
    assert (reports / "top10.md").read_text().startswith("| rank |")
    assert (reports / "heatmap.png").read_bytes()[:4] == b"\x89PNG"
    meta = res.asset_materializations_for_node("grid_search")[0].metadata
    assert "heatmap" in meta and "top" in meta
    guard = report["overfitting"]
    assert 0.0 <= guard["pbo"]["pbo"] <= 1.0 and 0.0 <= guard["deflated_sharpe"]["dsr"] <= 1.0
    rows = guard["in_out_of_sample"]
    assert {"roi_in", "roi_out", "trades_in", "trades_out"} <= set(rows[0])
    full = [r for r in rows if r["source"] == "full_sample_top"]
    assert len(full) == 10 and all(abs(r["roi_in"] + r["roi_out"] - r["roi_full"]) < 1e-6 for r in full)


def test_the_asset_on_a_dask_cluster_stores_the_same_top10(grid_data, make_settings, instance, tmp_path):
    pytest.importorskip("distributed", reason="the cluster extra: pip install -e '.[cluster]'")
    common = {"market_data": str(grid_data.market_data), "trade_log": str(grid_data.trade_log), "params": SMALL_PARAMS,
              "overfitting": False}
    tops = []
    for dask in ({"enabled": False}, {"enabled": True, "workers": 2, "shards": 3}):
        cfg = make_settings(paths={"reports": str(tmp_path / f"reports_{dask['enabled']}")},
                            grid_search={**common, "dask": dask})
        cfg = cfg.rename(cfg.with_name(f"settings_dask_{dask['enabled']}.yaml"))  # settings are cached per file
        assert materialize([market_data, trade_log, grid_search], instance=instance,
                           resources=build_resources(str(cfg))).success
        tops.append(json.loads((read_settings(cfg).stage_reports_dir("grid_search") / "top10.json").read_text()))
    assert tops[1]["top"] == tops[0]["top"] and tops[1]["dask"]["shards"] == 3


def test_cli_writes_the_same_json(grid_data, tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(json.dumps(SMALL_PARAMS))
    def cli(engine: str, out: Path):
        cmd = [sys.executable, "-m", "pipeline.cli", "grid-search", "--market-data", str(grid_data.market_data),
               "--trade-log", str(grid_data.trade_log), "--engine", engine, "--device", "cpu", "--params", str(params),
               "--top", "5", "--out", str(out), "--quiet"]
        run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        return json.loads(out.read_text())

    brute = cli("brute", tmp_path / "out" / "brute.json")
    assert brute["engine"] == "brute" and len(brute["top"]) == 5 and brute["combinations"] == 128
    assert cli("cube", tmp_path / "cube.json")["top"] == brute["top"]


def test_cli_optuna_engine_writes_its_best_trials(grid_data, tmp_path):
    out = tmp_path / "smart.json"
    run = subprocess.run([sys.executable, "-m", "pipeline.cli", "grid-search", "--market-data", str(grid_data.market_data),
                          "--trade-log", str(grid_data.trade_log), "--engine", "optuna", "--sampler", "tpe", "--trials", "48",
                          "--top", "3", "--out", str(out), "--quiet"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["engine"] == "optuna" and len(report["top"]) == 3
    assert report["top"][0]["roi"] >= report["top"][-1]["roi"]


def test_cli_rejects_an_invalid_params_file_clearly(grid_data, tmp_path):
    params = tmp_path / "bad.yaml"
    params.write_text(json.dumps({**SMALL_PARAMS, "target": [0.0, 0.4]}))
    run = subprocess.run([sys.executable, "-m", "pipeline.cli", "grid-search", "--market-data", str(grid_data.market_data),
                          "--trade-log", str(grid_data.trade_log), "--params", str(params), "--out", str(tmp_path / "x.json")],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "target values are percents > 0" in run.stderr


def test_malformed_trades_and_trades_without_market_data_are_reported_not_dropped(grid_data, tmp_path):
    log = pl.read_csv(grid_data.trade_log, infer_schema=False)
    mine = log.filter(pl.col("Ticker") == "SOXL").head(4)
    bad = pl.concat([
        mine[0].with_columns(pl.lit("X1").alias("Trade Id"), pl.lit("abc").alias("Entry Price")),
        mine[1].with_columns(pl.lit("X2").alias("Trade Id"), pl.lit("2031-01-02").alias("Date")),
        mine[2].with_columns(pl.lit("X3").alias("Trade Id"), pl.lit("09:00:00").alias("Exit Time")),
        mine[3].with_columns(pl.lit("X4").alias("Trade Id"), pl.lit("13/45/2024").alias("Date")),
    ])
    path = tmp_path / "log.csv"
    pl.concat([log, bad]).write_csv(path)
    market = read_market_data(grid_data.market_data, TICKERS)
    trades, rejected = read_trade_log(path, TICKERS, market)
    summary = rejected.summary()
    assert summary["rejected"] == 4 and set(summary["first_ids"]) == {"X1", "X2", "X3", "X4"}
    assert summary["reasons"] == {"malformed entry_price": 1, "no market data at entry": 1, "exit before entry": 1,
                                  "malformed date": 1}
    assert summary["other_tickers_ignored"] > 0
    assert trades.height == log.filter(pl.col("Ticker").is_in(TICKERS)).height


def test_dates_in_every_accepted_format_parse_the_same(grid_data, tmp_path):
    log = pl.read_csv(grid_data.trade_log, infer_schema=False)
    market = read_market_data(grid_data.market_data, TICKERS)
    base, _ = read_trade_log(grid_data.trade_log, TICKERS, market)
    for fmt in ("%m/%d/%Y", "%m-%d-%Y"):
        other = log.with_columns(pl.col("Date").str.to_date("%Y-%m-%d").dt.strftime(fmt))
        path = tmp_path / f"log_{fmt.replace('/', '_')}.csv"
        other.write_csv(path)
        again, rej = read_trade_log(path, TICKERS, market)
        assert rej.total == 0 and again.equals(base)


def test_start_and_end_indices_point_at_the_entry_and_exit_seconds(grid_data):
    market = read_market_data(grid_data.market_data, TICKERS)
    trades, _ = read_trade_log(grid_data.trade_log, TICKERS, market)
    times = market["datetime"]
    tickers = market["ticker"]
    for row in trades.head(25).iter_rows(named=True):
        s, e = row["MarketDataStartIndex"], row["MarketDataEndIndex"]
        assert tickers[s] == row["ticker"] == tickers[e]
        assert times[s] >= row["entry_datetime"] and (s == 0 or tickers[s - 1] != row["ticker"] or times[s - 1] < row["entry_datetime"])
        assert times[e] <= row["exit_datetime"]


def test_market_file_missing_a_column_is_a_clear_error(tmp_path):
    folder = tmp_path / "md"
    folder.mkdir()
    (folder / "Raw_Market_data_03-04-2024.csv").write_text("Ticker,Price,Time\nSOXL,10,09:30:00\n")
    with pytest.raises(InputDataError, match=r"Raw_Market_data_03-04-2024.csv: column 'Adx28': missing column"):
        read_market_data(folder, TICKERS)


def test_market_price_that_is_not_a_number_names_file_row_and_column(grid_data, tmp_path):
    src = sorted(grid_data.market_data.iterdir())[0]
    folder = tmp_path / "md"
    folder.mkdir()
    lines = src.read_text().splitlines()
    lines[3] = lines[3].replace(lines[3].split(",")[1], "n/a", 1)
    (folder / src.name).write_text("\n".join(lines) + "\n")
    ticker = lines[3].split(",")[0]
    with pytest.raises(InputDataError, match=r"column 'Price', row 3: cannot parse 'n/a'; expected a number"):
        read_market_data(folder, [ticker])


def test_cli_without_input_files_materializes_the_grid_search_assets_from_the_settings(grid_data, make_settings, tmp_path):
    cfg = make_settings(grid_search={"market_data": str(grid_data.market_data), "trade_log": str(grid_data.trade_log),
                                     "params": SMALL_PARAMS})
    env = {**__import__("os").environ, "PIPELINE_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "home")}
    out = tmp_path / "copy.json"
    run = subprocess.run([sys.executable, "-m", "pipeline.cli", "grid-search", "--engine", "brute", "--top", "4",
                          "--out", str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["engine"] == "brute" and len(report["top"]) == 4 and report["combinations"] == 128
    assert DeltaStore(read_settings(cfg).data_dir).exists("grid_search")  # stored by the asset
    assert json.loads(run.stdout)["winner"] == report["top"][0]


def test_a_trade_percent_beyond_the_engines_int32_range_is_refused_not_wrapped(grid_data, tmp_path):
    log = pl.read_csv(grid_data.trade_log, infer_schema=False)
    mine = log.filter(pl.col("Ticker") == "SOXL").head(2)
    huge = pl.concat([mine[0].with_columns(pl.lit("BIG").alias("Trade Id"), pl.lit("3000").alias("Trade Percent Change")),
                      mine[1].with_columns(pl.lit("NEG").alias("Trade Id"), pl.lit("-2500").alias("Trade Percent Change"))])
    path = tmp_path / "log.csv"
    pl.concat([log, huge]).write_csv(path)
    trades, rejected = read_trade_log(path, TICKERS, read_market_data(grid_data.market_data, TICKERS))
    assert rejected.summary()["reasons"] == {"Trade Percent Change beyond +-2147 %": 2}
    assert not {"BIG", "NEG"} & set(trades["trade_id"].to_list())
