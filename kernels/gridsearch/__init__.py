"""Trade-log grid search engines (entry filters x exits over a trade log): arrays in, arrays out.

- `grid`: the parameter grid, its order and index arithmetic.
- `cores`: the per-element loops, written once: the keep predicate (`passes`), the kept
  sums, one combination (`combo_core`), one trade's exit crossings (`crossings_core`);
  compiled by the engines (numba njit) and by `cuda` (device functions).
- `exits`: exit resolution, once per trade and (target, stop_loss) pair.
- `brute`: one thread per combination over all trades (cpu numba; cuda via `cuda`).
- `evaluate`: scores of arbitrary threshold vectors (the smart search's kernel).
- `cube`: dominance sums: a 5-D histogram per pair and suffix sums, every pair in one pass
  (NumPy + numba, CuPy + the CUDA histogram kernel, torch); `grid_top` chains exits and
  sums on one backend with the results left on the device.
- `cuda`: the CUDA kernels and launches (exit crossings, pair resolution, the pairs'
  histograms, brute force), loaded on demand.
- Backends: the families `gridsearch.exits`, `gridsearch.brute` and `gridsearch.cube` of `kernels.backends`,
  registered below (one line per backend; a new backend registers its entry here).
- `ranking`: the exact top-k (ties to the earlier combination in grid order).
- `reference`: a plain-Python reference that walks every path for every combination.

Imports go one way: `grid`, `ranking` and `cores` import no engine; the engines (`brute`,
`exits`, `evaluate`, `cube`) import them, and load `cuda` only inside their cuda dispatch
(`cube.grid_top` loads `exits` inside the call);
`cuda` imports `cores` and `ranking`, never an engine.

Trade results are integers in units of 1e-6 percent (RESULT_SCALE): every engine sums
integers, so ROIs are exact and equal across engines and summation orders.
"""

RESULT_SCALE = 1_000_000  # results are stored as round(percent * RESULT_SCALE)
NO_CROSS = 2**62  # "this level is never reached on the path"
# The largest |result| a trade may have: per-trade results are int32 units (exact sums in
# int64), so a percent beyond this would wrap. Ingress refuses such rows (domain.gridsearch.inputs).
MAX_TRADE_PERCENT = (2**31 - 1) // RESULT_SCALE  # 2147 %

from kernels import backends as _backends  # noqa: E402 - the constants above first

# entry(start, end, entry, prices, t_sorted, s_sorted, order_t, order_s, targets, stops, pct_units, *, rows=True,
# on_device=False) -> (results, exit_rows or None); the keywords are passed only when not their defaults
EXITS = "gridsearch.exits"
BRUTE = "gridsearch.brute"  # entry(features, results, sizes, table, total, k, min_trades, launch, progress) -> TopK
CUBE = "gridsearch.cube"  # entry(features, results, grid, k, min_trades) -> TopK (`cube.cube_top`)
for _name in _backends.BACKENDS:
    _backends.register(EXITS, _name, f"kernels.gridsearch.exits:exits_{_name}")
    _backends.register(CUBE, _name, f"kernels.gridsearch.cube:cube_top_{_name}")
_backends.register(BRUTE, "cpu", "kernels.gridsearch.brute:brute_cpu")
_backends.register(BRUTE, "cuda", "kernels.gridsearch.cuda:brute_force_cuda")
