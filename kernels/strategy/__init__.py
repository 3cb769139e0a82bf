"""Seller-exhaustion strategy backtest over a population of parameter sets (entry after a
seller-exhaustion signal bar; stop, target and time exits).

- `params`: Individual = SellerParams + BacktestParams (frozen dataclasses), exit REASONS.
- `trade_walk`: the rules and the per-individual walk, one Python function compiled with
  numba.njit (cpu) and numba.cuda.jit(device=True) (cuda); host-side stop/target lines.
- `cpu`: `backtest_one` (the reference, one individual) and the batched CPU engine.
- `cuda`: the batched CUDA engine: the signal bitmask (a thread per individual x 32-bar
  word), then the walk over it, one thread per individual (imported on demand).
- `population`: unique indicator series shared across individuals, `backtest_population`
  (backend dispatch and CPU fallback), `backtest_signals` (rules on an external signal).
- Backends: the `strategy` family of `kernels.backends`, registered below: each module's
  `walk_result(WalkInputs) -> PopulationResult` (a new backend: one module, one line here).
- `results`: ragged results (offsets + flat trade arrays) and `metrics`: summary metrics.
- `reference`: the rules in plain Python, for tests.

Same trades, bit for bit, from `backtest_one`, the cpu engine and the cuda engine, and the
same trades as the seed's original engine but for two documented deviations (`trade_walk`).
"""

from kernels import backends as _backends

_backends.register("strategy", "cpu", "kernels.strategy.cpu:walk_result")
_backends.register("strategy", "cuda", "kernels.strategy.cuda:walk_result")

from kernels.strategy.cpu import backtest_one  # noqa: E402 - after the registration
from kernels.strategy.metrics import METRICS
from kernels.strategy.params import REASONS, BacktestParams, Individual
from kernels.strategy.population import (
           backtest_population,
           backtest_signals,
           build_walk_inputs,
)
from kernels.strategy.results import PopulationResult

__all__ = ["METRICS", "REASONS", "BacktestParams", "Individual", "PopulationResult", "backtest_one",
           "backtest_population", "backtest_signals", "build_walk_inputs"]
