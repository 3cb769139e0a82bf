"""Adaptive Trend Classification (ATC): Moving Averages, after the Pine script by
InvestorUnknown (MPL-2.0), with cpu (numba), cuda (numba.cuda) and torch kernels.

    average_signal(close, *, robustness="Medium", length=28, lam=0.02, decay=0.03,
                   cutout=0, backend="cpu", dtype=np.float32, tail=None)   -> final value per bar
    family_signals(close, ...same...)  -> {"EMA", "HMA", "WMA", "DEMA", "LSMA", "KAMA"}: layer 1
    compute(close, ...same...)         -> (family signals, final), one pass for both
    classify(avg)                      -> int8: 1 long (> 0.1), -1 short (< -0.1), else 0
    moving_averages(close, ...)        -> {(family, length): MA}, the bank layer 1 uses
    ma_cache                           -> the cpu path's MA cache (stats(), clear(), resize())

`close` is 1-D [bars] or 2-D [symbols, bars] (NumPy, float32 or float64; torch tensors
too for backend="torch"); outputs have its shape. `lam` and `decay` are given as typed in
the original's inputs (0.02, 0.03) and scaled inside (lam/1000, decay/100). `length` is one
int for every family or a {family: int} mapping; `weights` (the layer-2 starting equity of
each family, 1.0 in the original) likewise. Reference: `kernels.atc.reference`.

The indicator
-------------
Six MA families, each at nine lengths L, L+a1..L+a4, L-a1..L-a4 (offsets: Narrow 1,2,3,4;
Medium 1,2,4,6; Wide 1,3,5,7), summed in that order: EMA (TA-Lib: SMA seed, k = 2/(n+1),
update prev + k*(x - prev), `kernels.indicators.cores.ema_core`; Pine's k*x + (1-k)*prev differs in
the last bit and is not exact on a constant series), "HMA" which in the original is a plain SMA (kept: the key says
HMA, the numbers are `cores.sma_core`), WMA, DEMA and LSMA (TA-Lib WMA, DEMA, LINEARREG:
`cores.wma_core`, `dema_core`, `lsma_core`), and a Pine-style KAMA (below). Every length
must be >= 3 (so L - a4 >= 3): the 2-bar LSMA is the close itself, a tie on every bar that
only rounding noise would break, differently in every implementation.

Layer 1, per MA: a persistent signal s (crosses, below) and its equity curve e (below,
starting at 1). Family signal = round(sum_i s_i*e_i / sum_i e_i, 2).
Layer 2, per family: an equity curve E driven by the family signal the same way, starting
at the family weight. Final = sum_f Cut(family_f)*E_f / sum_f E_f, Cut(x) = 1 if x > 0.49,
-1 if x < -0.49, else 0. Long/short: final > 0.1 / final < -0.1 (`classify`).

Interpretation decisions (where the Pine text leaves room, the most literal reading)
------------------------------------------------------------------------------------
* Crosses are Pine's ta.crossover/ta.crossunder(close, ma): over at t when
  close[t] > ma[t] and close[t-1] <= ma[t-1]; under when close[t] < ma[t] and
  close[t-1] >= ma[t-1]. The signal is a `var`: +1 from an over, -1 from an under, else
  unchanged, 0 before the first cross.
* NaN warm-up: a comparison with NaN is false, so no cross can happen on a bar where
  ma[t] or ma[t-1] is NaN: the first possible change is one bar after the MA's first valid
  value (bar 1 for the KAMA, which has a value from bar 0, see below). Consequence
  (faithful to Pine): a series that sits above (below) an MA from the
  MA's first valid bar and never comes back never crosses it, and that signal stays 0: an
  accelerating rise from bar 0 stays above its lagging MAs and gives 0, not +1. It takes
  a cross (tests: a fall long enough for every warm-up, then a rise, gives +1).
* No look-ahead: the equity at bar t uses the PREVIOUS bar's signal, s[t-1] (the position
  held through bar t), with R[t] = close[t]/close[t-1] - 1 and r[t] = R[t] *
  exp(lam*(t - cutout)) (t the 0-based bar_index). a[t] = r[t] if s[t-1] > 0, -r[t] if
  s[t-1] < 0, else a keeps its last value (a Pine `var`, 0 at first). The family sum at t
  weights the CURRENT signal s[t] by e[t].
* Equity: e[cutout] = start, then e[t] = (e[t-1]*(1 - decay)) * (1 + a[t]), floored at
  0.25 (`if e < 0.25: e := 0.25`). "Missing before cutout": e is NaN on bars < cutout, so
  the family signals and the final value are NaN there and everything starts at the
  cutout bar. `a` evolves from bar 0 (Pine calls the function on every bar), which cannot
  show: a layer-1 signal never returns to 0 once set, and family signals are NaN (neither
  > 0 nor < 0) before the cutout. Pine's `na(e[1])` restart is kept literally: a NaN equity
  (only from a NaN close) restarts at `start` on the next bar.
* Family signal: sum(e) >= 9 * 0.25 on every bar from the cutout (the floor), so it is
  never 0; before the cutout it is NaN and the family signal is NaN. Rounding is half away
  from zero: sign(q) * floor(|q|*100 + 0.5) / 100 in float64 (0.125 -> 0.13,
  -0.125 -> -0.13; a tie is judged on the float64 value of |q|*100). In layer 2 a NaN
  family signal is neither long nor short and Cut(NaN) = 0. The final value is not rounded.
* KAMA (Pine style), the lines of the script's KAMA that matter (as the Pine v5
  script writes them; math.sum and math.pow as Pine v5 spells the sum and the square):
      noise  = math.sum(math.abs(source - source[1]), length)
      signal = math.abs(source - source[length])
      ratio  = noise != 0 ? signal / noise : 0
      smooth = math.pow(ratio * (fast - slow) + slow, 2)     fast 0.666, slow 0.064
      KAMA  := nz(KAMA[1]) + smooth * (source - nz(KAMA[1]))
  so ER[t] = |close[t] - close[t-L]| / sum_{i=t-L+1..t} |close[i] - close[i-1]|; 0 when
  that sum is 0 (a flat window); at most 1 (the rolled sum can drift an ulp below the
  change on a monotone window); sc = (ER*(0.666 - 0.064) + 0.064)^2 and kama[t] =
  nz(kama[t-1]) + sc*(close[t] - nz(kama[t-1])) (one step: `cores.kama_step`, shared with
  the streaming updater). Warm-up, as Pine v5 runs it: bars 0..L-1: noise is na in Pine
  (the window holds bar 0's move, na since close[-1] is, or reaches before bar 0), the
  ternary yields 0 (a comparison with na is not true, so the else branch; signal is na
  there too but is not read), so KAMA starts at 0 and moves by slow^2 per bar:
  kama[0] = 0.064^2 * close[0] (nz(KAMA[1]) is 0 on bar 0), kama[t] = kama[t-1] +
  0.064^2 * (close[t] - kama[t-1]); from bar L the efficiency ratio applies. The KAMA has
  a value on every bar, so its crosses can change the signal from bar 1 on. Only the KAMA
  is like this: the other MAs (ta.ema, ta.sma, ta.wma, DEMA, ta.linreg) are na during
  their warm-ups in Pine and NaN here.
* Precision: arithmetic is float64 in every backend (float32 inputs are widened element by
  element as in `kernels.indicators.cores`); `dtype=` (float32 default, float64) is the output type.
  Closes must be finite (ValueError otherwise).

Backends
--------
* cpu (`kernels.atc.cpu`): the per-series cores of `kernels.atc.cores` (`returns_core`,
  `layer1_core`, `family_finish_core`, `layer2_core`, `final_core`, the MA dispatch `ma`
  over `kama_pine_core` and the `kernels.indicators.cores` MAs) compiled with numba.njit, driven by
  one parallel (prange over symbols) compiled loop. A family's nine MAs are computed into
  per-symbol scratch (EMA, DEMA and KAMA in one multi-lane pass each) and folded into
  layer 1 at once (`layer1_family_core`; no [symbols, 54, bars] bank); `tail=k`
  keeps only the last k bars of the outputs (a scan of the latest state passes 1), so
  memory is the input plus a few rows per symbol. With cache=True the MAs come from
  `ma_cache` (LRU keyed by (series hash, family, length), 256 MiB by default, hit/miss
  counts in stats()) where present, through a bank in symbol chunks of at most 64 MiB,
  and what was computed is put there.
  The cache is off by default because it does not pay here: the rolled MAs are ~30% of
  the compiled work, and hashing, lookups and copies cost more than recomputing them
  (500 symbols x 2,000 bars on 2 cores: 0.20 s without, 0.7-0.95 s cold, 0.26 s warm).
  It is for callers whose MAs would be dearer than a copy (much longer MAs, other code
  reading `moving_averages(..., cache=True)`).
* cuda (`kernels.atc.cuda`): the same cores compiled as CUDA device functions, time-major
  arrays (transposed on the device), one MA at a time in per-thread scratch: a thread per
  (family, symbol) for layer 1 while the device has room, else one per symbol; the tail is
  applied on the device and only it comes back. NumPy in and out.
  Equal to cpu bit for bit under the CUDA simulator (tested); on hardware the compiler may
  contract multiply-adds into FMAs (last-bit differences, visible only at a tie).
* torch (`kernels.atc.torch`): batched [symbols, bars] tensor ops (ROCm, CUDA or CPU), in
  chunks of symbols: SMA/WMA/LSMA from `kernels.indicators.torch` (conv1d window sums, 1e-13 from the
  cores' rolled ones), EMA/DEMA/KAMA and the equity recursions as loops over bars with one
  vector op per step across all MAs and symbols (replaying the cores' operation order),
  crosses and the persistent signals vectorised (forward fills). It equals cpu to rounding
  unless a close sits within ~1e-13 of a window MA. Slow on a CPU (it is for GPUs).

Package layout
--------------
    params.py     constants, `AtcParams` (validated parameters, growth), `ma_lengths`, input checks
    cores.py      the per-series loops written once (`kama_step`, `kama_pine_core`, `ma`,
                  `returns_core`, `layer1_core`, `family_finish_core`, `layer2_core`, `final_core`;
                  for the cpu: `kama_pine_lanes`, `layer1_family_core`)
    cpu.py        the cores under numba.njit and the parallel batch driver
    cuda.py       the cores as numba.cuda device functions and the kernel
    torch.py      the torch path
    cache.py      `MACache` and the `ma_cache` instance
    api.py        dispatch and the public functions re-exported here
    reference.py  plain NumPy/Python reference, independent of the rest, for tests
Importing `kernels.atc` loads params, cache and api only: no numba, torch or CUDA import;
the backend modules are imported on first use.
"""

from kernels import backends as _backends

for _name in _backends.BACKENDS:  # the `atc` family: each module's `compute` (see `kernels.atc.api`)
    _backends.register("atc", _name, f"kernels.atc.{_name}:compute")

from kernels.atc.api import (  # noqa: E402 - after the registration
           BACKENDS,
           average_signal,
           classify,
           compute,
           family_signals,
           moving_averages,
)
from kernels.atc.cache import MACache, ma_cache
from kernels.atc.params import (
           CUT_LEVEL,
           EQUITY_FLOOR,
           FAMILIES,
           KAMA_FAST,
           KAMA_SLOW,
           LONG_THRESHOLD,
           MIN_LENGTH,
           N_LENGTHS,
           OFFSETS,
           SHORT_THRESHOLD,
           AtcParams,
           ma_lengths,
)

__all__ = ["BACKENDS", "CUT_LEVEL", "EQUITY_FLOOR", "FAMILIES", "KAMA_FAST", "KAMA_SLOW", "LONG_THRESHOLD",
           "MIN_LENGTH", "N_LENGTHS", "OFFSETS", "SHORT_THRESHOLD", "AtcParams", "MACache", "average_signal",
           "classify", "compute", "family_signals", "ma_cache", "ma_lengths", "moving_averages"]
