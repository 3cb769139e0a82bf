#!/usr/bin/env bash
# The GPU proof in one call (`make gpu-check`, docs/gpu.md "GPU proof").
#
# Real (on the lent GPU machine: Python 3.12 with torch, CuPy, numba, numba-cuda; no network):
#   1. install the carried wheels (.whl/, made by `make gpu-wheels`) into a folder on PYTHONPATH
#   1b. scripts/gpu_preflight.py (seconds): numba.cuda, a tiny kernel, CuPy, torch.cuda, the kernels'
#      CUDA modules; its first failure aborts the whole check at once (exit 3)
#   2. print the device as nvidia-smi, torch, CuPy and numba.cuda see it
#   2b. scripts/gpu_profile.py: each GPU path timed by phase, a roofline line per kernel
#   3. run every test marked `gpu` with the CUDA simulator OFF (TRADELAB_GPU=1, tests/gpu.py)
#   4. run benchmarks/bench_gpu.py: each GPU engine against its CPU engine, full sizes
#   Results go to $OUT (the device machine's return folder), else benchmarks/out:
#   gpu_check.json (tests + benchmarks, one object), gpu_check.txt (the table), two logs,
#   gpu_profile.json / .txt (+ gpu_profile_trace.txt where torch sees CUDA), gpu_profile.log.
# Dry (GPU_CHECK_DRY=1, any machine): the same steps with numba's CUDA simulator, torch on
#   the CPU and tiny sizes (--quick); no install. tests/pipeline/test_gpu_check.py runs it in CI.
# In both, Dagster, polars, pyarrow and cuDF are made unimportable (TRADELAB_FORBID_IMPORTS):
# the GPU machine has none of them and the kernels need none.
# GPU_CHECK_PART=profile runs only the preflight and the profile (GPU_CHECK_PROFILE_TIMEOUT, 240 s;
# GPU_CHECK_PROFILE_PATHS picks gpu_profile.py --paths); =tests and =bench skip the profile.
# GPU_CHECK_PART=tests or =bench runs one half (two device calls when one does not fit 10 min);
# GPU_CHECK_TEST_TIMEOUT / GPU_CHECK_BENCH_TIMEOUT (300 / 360 s) bound the halves (H100, 2026-11-27:
# the tests took 52 s with -n 12, the benchmark sections 255 s, 137 s of it the torch ATC's three
# timed calls of 45.7 s or more; it is now timed once).
# GPU_CHECK_SECTIONS picks benchmark sections (bench_gpu.py --sections; default all);
# GPU_CHECK_BENCH_ARGS adds bench_gpu.py arguments (--skip-torch: no torch engine timed).
# GPU_CHECK_BREAK_EVEN=atc,indicators,strategy adds step 5 (with PART=all): the break-even sweep
# of those routed families (benchmarks/gpu_break_even.py), which kernels/backends/routing.py is set from.
# GPU_CHECK_PYTEST_ARGS adds pytest arguments (the device call uses "-n 12": pytest-xdist is on
# the GPU machine, and each worker's CUDA compiles then run side by side).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
DRY=${GPU_CHECK_DRY:-0}
PART=${GPU_CHECK_PART:-all}
OUT_DIR=${OUT:-benchmarks/out}
SITE=${GPU_CHECK_SITE:-/tmp/tradelab-site}
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/tradelab-numba}
export TRADELAB_FORBID_IMPORTS=dagster,polars,pyarrow,cudf
if [ "$DRY" = 1 ]; then
    export TRADELAB_GPU=0; QUICK=--quick
else
    export TRADELAB_GPU=1; QUICK=
fi
echo "== gpu-check: $([ "$DRY" = 1 ] && echo 'DRY (CUDA simulator, torch on cpu, tiny sizes)' || echo 'REAL GPU'); out: $OUT_DIR"

echo "== 1. carried wheels"
if [ "$DRY" = 1 ]; then
    echo "dry: not installed (they are built for the GPU machine's Python 3.12)"
elif ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
        || { echo "gpu-check: installing .whl/*.whl failed"; exit 2; }
    export PYTHONPATH="$PYTHONPATH:$SITE"  # ahead of the machine's packages: carry only what it lacks
    ls .whl
else
    echo "no .whl/ folder: run 'make gpu-wheels' here and name .whl in the device call's carry"
fi

echo "== 1b. preflight"
$PY scripts/gpu_preflight.py || { echo "gpu-check: preflight failed: aborted (exit 3)"; exit 3; }

echo "== 2. device"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
$PY - <<'EOF'
from tests.gpu import choose_simulator, real_cuda, simulated
choose_simulator()
import numba, numpy, torch
print(f"python numpy {numpy.__version__}, numba {numba.__version__}, torch {torch.__version__}")
print(f"torch.cuda: {torch.cuda.is_available()}" + (f", {torch.cuda.get_device_name(0)}, bf16 "
      f"{torch.cuda.is_bf16_supported()}" if torch.cuda.is_available() else ""))
try:
    import cupy
    print(f"cupy {cupy.__version__}: {cupy.cuda.runtime.getDeviceCount()} device(s)")
except Exception as err:  # noqa: BLE001
    print(f"cupy: unavailable ({type(err).__name__}: {err})"[:200])
print(f"numba.cuda: simulator {simulated()}, real device {real_cuda()}")
if real_cuda():
    from numba import cuda
    cuda.detect()
EOF

tests_rc=0 bench_rc=0 profile_rc=0 junit=()
if [ "$PART" = all ] || [ "$PART" = profile ]; then
    echo "== 2b. profile (phases per GPU path)"
    # shellcheck disable=SC2086 - QUICK is one word or none
    timeout "${GPU_CHECK_PROFILE_TIMEOUT:-240}" $PY scripts/gpu_profile.py $QUICK --out "$OUT_DIR" \
        ${GPU_CHECK_PROFILE_PATHS:+--paths "$GPU_CHECK_PROFILE_PATHS"} 2>&1 | tee "$OUT_DIR/gpu_profile.log" | tail -20
    profile_rc=${PIPESTATUS[0]}
fi
if [ "$PART" = profile ]; then
    echo "== gpu-check: profile rc $profile_rc"
    exit "$profile_rc"
fi
if [ "$PART" != bench ]; then
    echo "== 3. tests marked gpu"
    # shellcheck disable=SC2086 - the extra arguments are words
    timeout "${GPU_CHECK_TEST_TIMEOUT:-300}" $PY -m pytest -m gpu -p no:cacheprovider ${GPU_CHECK_PYTEST_ARGS:-} \
        -o "filterwarnings=ignore::DeprecationWarning" --junitxml="$OUT_DIR/gpu_tests.xml" 2>&1 \
        | tee "$OUT_DIR/gpu_tests.log" | tail -40
    tests_rc=${PIPESTATUS[0]}
    junit=(--tests-junit "$OUT_DIR/gpu_tests.xml" --tests-rc "$tests_rc")
fi
if [ "$PART" != tests ]; then
    echo "== 4. benchmarks (GPU engine vs CPU engine)"
    # shellcheck disable=SC2086 - GPU_CHECK_BENCH_ARGS are words (e.g. --skip-torch)
    timeout "${GPU_CHECK_BENCH_TIMEOUT:-360}" $PY benchmarks/bench_gpu.py $QUICK ${GPU_CHECK_SECTIONS:+--sections "$GPU_CHECK_SECTIONS"} \
        ${GPU_CHECK_BENCH_ARGS:-} --out "$OUT_DIR" "${junit[@]}" 2>&1 \
        | tee "$OUT_DIR/gpu_bench.log" | tail -60
    bench_rc=${PIPESTATUS[0]}
fi

even_rc=0
if [ -n "${GPU_CHECK_BREAK_EVEN:-}" ] && [ "$PART" = all ]; then
    echo "== 5. break-evens of the routed families (benchmarks/gpu_break_even.py)"
    # shellcheck disable=SC2086 - QUICK is one word or none
    timeout "${GPU_CHECK_BREAK_EVEN_TIMEOUT:-180}" $PY benchmarks/gpu_break_even.py $QUICK --families "$GPU_CHECK_BREAK_EVEN" \
        --repeat 2 --out "$OUT_DIR" 2>&1 | tee "$OUT_DIR/gpu_break_even.log" | tail -25
    even_rc=${PIPESTATUS[0]}
fi

echo "== gpu-check: profile rc $profile_rc, tests rc $tests_rc, benchmarks rc $bench_rc, break-evens rc $even_rc"
[ "$profile_rc" = 0 ] && [ "$tests_rc" = 0 ] && [ "$bench_rc" = 0 ] && [ "$even_rc" = 0 ]
