#!/usr/bin/env bash
# Smoke: the seed's acceptance script adapted to tradelab's commands. Every step materializes
# the matching assets through Dagster (DAGSTER_HOME) with the settings in force (PIPELINE_CONFIG).
# On a machine without a GPU the train-lstm --device cuda step trains on the CPU with a warning (`|| true` keeps going),
# as in the seed. Toy sizes by default; override with SMOKE_YEARS / SMOKE_TEST_YEAR.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
YEARS=${SMOKE_YEARS:-2000-2003}
TEST_YEAR=${SMOKE_TEST_YEAR:-2003}
REPORTS=$($PY -c "from config.settings import load_settings; print(load_settings().reports_dir)")
# the seed's env/openblas_threads.sh: one BLAS thread per process
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}

$PY -m pipeline.cli build-features --years "$YEARS"
# its own experiment: LSTM settings of a toy size (the default experiment keeps the configured ones)
$PY -m pipeline.cli train-lstm --experiment smoke-lstm --seq-len 64 --epochs 1 --max-steps 5 --device cuda --years "$TEST_YEAR" || true
$PY -m pipeline.cli train-meta --horizon 7 --years "$TEST_YEAR"
$PY -m pipeline.cli backtest --log "$REPORTS/backtest.jsonl" --years "$TEST_YEAR"
$PY -m pipeline.cli evaluate --years "$TEST_YEAR"
$PY -m pipeline.cli live-paper-trade
$PY -m pipeline.cli strategy-search --symbol "$($PY -m pipeline.cli symbols list | head -1)" --population 8 --generations 2 --min-trades 1

for f in "$REPORTS/backtest.jsonl" "$REPORTS/backtest/overall.json" "$REPORTS/evaluation/overall.json" "$REPORTS/paper_trades/orders.jsonl" "$REPORTS/strategy_search"/front_*.json; do
  test -s "$f" || { echo "smoke: missing artifact $f" >&2; exit 1; }
done
echo "smoke: ok ($REPORTS)"
