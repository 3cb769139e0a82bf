"""ATC on the CPU: the cores of `kernels.atc.cores` compiled with numba.njit (cached on
disk), driven by one parallel compiled loop (prange over symbols).

- `run(x, p, dtype, cache, tail=None)`: x [S, T] float32/float64 (C order), p an
  `AtcParams` -> (families [S, 6, K], final [S, K]) of `dtype`, K = T, or the last `tail`
  bars. Without the cache no MA bank exists: each family's nine MAs of a symbol are
  computed into scratch (one multi-lane pass for EMA, DEMA and KAMA) and folded into
  layer 1 at once (`layer1_family_core`: nine equity recursions per pass over the bars),
  so the memory is the outputs plus a few rows per symbol, and one parallel call takes
  every symbol. With cache=True the MAs go through a bank ([chunk, 54, T] float64, chunks
  bounded by BANK_CHUNK_BYTES), taken from `kernels.atc.cache.ma_cache` where present,
  and what was computed is put there. Same arithmetic either way (tested bit for bit).
- `moving_average_bank(x, lens, cache)`: [S, 54, T] float64, MA f at lens[f, i] of x[s] in
  bank[s, f*9 + i] (the bank layer 1 reads), through the same cache.
- The compiled cores (`ma_cpu`, `kama_pine_cpu`, `returns_cpu`, `layer1_cpu`, `layer1_family_cpu`,
  `family_finish_cpu`, `layer2_cpu`, `final_cpu`) for tests and callers of single cores.

Imported on demand by the dispatch (`kernels.atc.api`); imports the cores, never the cuda
module.

Cache note: numba keys the on-disk cache of `_cpu_batch` and `_cpu_bank` on this file alone,
yet they hold compiled copies of `kernels.atc.cores`, `kernels.indicators.cores` and
`kernels.indicators.multilane` code; a change there is paired with a change to this file (or a cleared
cache), or a stale scan runs.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from kernels.atc import cores
from kernels.atc.cache import ma_cache
from kernels.atc.params import FAMILIES, prepare_numpy
from kernels.indicators.cpu import compiled, compiled_lanes

BANK_CHUNK_BYTES = 64 * 2**20  # MA bank memory per chunk of symbols

_jit = njit(cache=True, nogil=True)
ma_cpu = _jit(cores.ma)
kama_pine_cpu = _jit(cores.kama_pine_core)
returns_cpu = _jit(cores.returns_core)
layer1_cpu = _jit(cores.layer1_core)
layer1_family_cpu = _jit(cores.layer1_family_core)
family_finish_cpu = _jit(cores.family_finish_core)
layer2_cpu = _jit(cores.layer2_core)
final_cpu = _jit(cores.final_core)
kama_pine_lanes_cpu = _jit(cores.kama_pine_lanes)
# kernels.indicators.cores' LSMA as the cpu backend runs it (its blocked variant) and two lane cores
# of kernels.indicators.multilane, the same compiled dispatchers as `kernels.indicators` uses.
lsma_blocked_cpu = compiled("lsma_core")
ema_lanes_cpu = compiled_lanes("ema_lanes")
dema_lanes_cpu = compiled_lanes("dema_lanes")


@njit(cache=True, nogil=True)
def ma_variant_cpu(kind, x, n, out):
    """`cores.ma` with the cpu variants of kernels.indicators.cores (CPU_VARIANTS: LSMA's blocked
    divisions): the same values bit for bit."""
    if kind == 4:
        lsma_blocked_cpu(x, n, out)
    else:
        ma_cpu(kind, x, n, out)


@njit(cache=True, nogil=True)
def family_layer1_cpu(kind, x, ns, r, d, cutout, nom, den, rows, block, state):
    """Layer 1 of family `kind`: its MAs at the lengths ns over x [T] (each bit for bit
    `cores.ma`), folded into nom/den in length order by `layer1_family_core`. The families
    with a multi-lane core (EMA, DEMA; Pine's KAMA, with `state` [2, len(ns)] as its
    scratch) take one pass over the bars for all lengths, into `block` [T, len(ns)]; the
    others (SMA, WMA, LSMA: no faster in lanes at these lengths) one call per length, into
    `rows` [len(ns), T]. 500 x 2,000 x 9 lengths on one thread, single -> lanes: EMA 12.6
    -> 4.9 ms, DEMA 14.8 -> 8.6 ms, KAMA 18.0 -> 14.7 ms. Each layout gets its own call
    (a shared variable of both would compile the layer for any strides: slower)."""
    if kind == 0 or kind == 3 or kind == 5:
        if kind == 0:
            ema_lanes_cpu(x.reshape((x.shape[0], 1)), ns, block)
        elif kind == 3:
            dema_lanes_cpu(x.reshape((x.shape[0], 1)), ns, block)
        else:
            kama_pine_lanes_cpu(x, ns, block, state[0], state[1])
        layer1_rows_cpu(x, block.T, r, d, cutout, nom, den)
    else:
        for i in range(ns.shape[0]):
            ma_variant_cpu(kind, x, ns[i], rows[i])
        layer1_rows_cpu(x, rows, r, d, cutout, nom, den)


@njit(cache=True, nogil=True)
def layer1_rows_cpu(x, mas, r, d, cutout, nom, den):
    """Layer 1 over a family's MAs (rows of mas), in MA order: nine in one pass
    (`layer1_family_core`), any other count one at a time (the same sums)."""
    if mas.shape[0] == 9:
        layer1_family_cpu(x, mas, r, d, cutout, nom, den)
    else:
        for i in range(mas.shape[0]):
            layer1_cpu(x, mas[i], r, d, cutout, nom, den)


@njit(cache=True, nogil=True, parallel=True)
def _cpu_bank(x, lens, need, bank):
    """Fill bank[s, f*9 + i] with MA f at lens[f, i] of x[s] where need[s, f*9 + i]."""
    n_series = x.shape[0]
    n_fam, n_len = lens.shape
    for s in prange(n_series):
        for f in range(n_fam):
            for i in range(n_len):
                j = f * n_len + i
                if need[s, j]:
                    ma_variant_cpu(f, x[s], lens[f, i], bank[s, j])


@njit(cache=True, nogil=True, parallel=True)
def _cpu_batch(x, lens, weights, need, bank, growth, d, cutout, t0, fam_out, final_out):
    """Both layers for every row of x [S, T]; bars t0..T-1 of the results go to fam_out
    [S, 6, T - t0] and final_out [S, T - t0] (output dtype).

    Without a bank (bank.shape[0] == 0) each family's MAs are computed into per-symbol
    scratch and folded into layer 1 at once (`family_layer1_cpu`;
    nothing [S, 54, T] exists); with a bank [S, 54, T] the MAs come from it, computed into
    it where need[s, j]. The arithmetic and the order of the sums are the same either way."""
    n_series, t_len = x.shape
    n_fam, n_len = lens.shape
    use_bank = bank.shape[0] > 0
    for s in prange(n_series):
        xs = x[s]
        r = np.empty(t_len)
        nom = np.empty(t_len)
        den = np.empty(t_len)
        rows = np.empty((n_len, t_len))
        block = np.empty((t_len, n_len))
        state = np.empty((2, n_len))
        fnom = np.zeros(t_len)
        fden = np.zeros(t_len)
        returns_cpu(xs, growth, r)
        for f in range(n_fam):
            nom[:] = 0.0
            den[:] = 0.0
            if use_bank:
                for i in range(n_len):
                    j = f * n_len + i
                    if need[s, j]:
                        ma_variant_cpu(f, xs, lens[f, i], bank[s, j])
                mas = bank[s, f * n_len : (f + 1) * n_len]
                layer1_rows_cpu(xs, mas, r, d, cutout, nom, den)
            else:
                family_layer1_cpu(f, xs, lens[f], r, d, cutout, nom, den, rows, block, state)
            family_finish_cpu(nom, den, nom)
            for t in range(t0, t_len):
                fam_out[s, f, t - t0] = nom[t]
            layer2_cpu(nom, r, d, cutout, weights[f], fnom, fden)
        final_cpu(fnom, fden, fnom)
        for t in range(t0, t_len):
            final_out[s, t - t0] = fnom[t]


def _names(lens) -> list[tuple[str, int]]:
    return [(FAMILIES[f], int(n)) for f in range(len(FAMILIES)) for n in lens[f]]


def _from_cache(xs, names, bank, need):
    """Fill bank/need from `ma_cache`; returns the series keys."""
    t_len = xs.shape[1]
    keys = [ma_cache.series_key(row) for row in xs]
    for s, h in enumerate(keys):
        for j, name in enumerate(names):
            hit = ma_cache.get((h, *name))
            if hit is not None and hit.shape[0] == t_len:
                bank[s, j] = hit
                need[s, j] = False
    return keys


def _to_cache(keys, names, bank, need):
    for s, j in zip(*np.nonzero(need)):
        ma_cache.put((keys[s], *names[j]), bank[s, j])


def run(x, p, dtype, cache: bool, tail: int | None = None):
    """x [S, T] -> (families [S, 6, K], final [S, K]) of dtype, K = T or the last `tail`
    bars; see the module docstring."""
    n_series, t_len = x.shape
    n_ma = p.lens.size
    t0 = 0 if tail is None else max(0, t_len - int(tail))
    # The outputs are float64 whatever `dtype`, narrowed on return: `_cpu_batch` computes in
    # float64 and only rounds at the store, so float64 then astype(float32) is the same
    # value bit for bit, and the demo compiles one `_cpu_batch` (its slowest kernel to
    # compile), not one per output dtype (the specialists' float32, the scan's float64).
    fam_out = np.empty((n_series, len(FAMILIES), t_len - t0), dtype=np.float64)
    final_out = np.empty((n_series, t_len - t0), dtype=np.float64)
    growth = p.growth(t_len)
    if not cache:  # no bank: one parallel call, memory [S, 6, K] out plus scratch per symbol
        no_bank = np.empty((0, n_ma, t_len), dtype=np.float64)
        no_need = np.empty((0, n_ma), dtype=np.bool_)
        _cpu_batch(x, p.lens, p.weights, no_need, no_bank, growth, p.d, p.cutout, t0, fam_out, final_out)
        return _narrow(fam_out, dtype), _narrow(final_out, dtype)
    chunk = max(1, min(n_series, BANK_CHUNK_BYTES // max(1, n_ma * t_len * 8)))
    names = _names(p.lens)
    for c0 in range(0, n_series, chunk):
        xs = x[c0 : c0 + chunk]
        bank = np.empty((xs.shape[0], n_ma, t_len), dtype=np.float64)
        need = np.ones((xs.shape[0], n_ma), dtype=np.bool_)
        keys = _from_cache(xs, names, bank, need)
        _cpu_batch(xs, p.lens, p.weights, need, bank, growth, p.d, p.cutout, t0, fam_out[c0 : c0 + chunk],
                   final_out[c0 : c0 + chunk])
        _to_cache(keys, names, bank, need)
    return _narrow(fam_out, dtype), _narrow(final_out, dtype)


def _narrow(a: np.ndarray, dtype) -> np.ndarray:
    """`a` (float64) in `dtype`: itself for float64, else a rounded copy (C order, as the kernel's own output was)."""
    return a if np.dtype(dtype) == a.dtype else a.astype(dtype)


def moving_average_bank(x, lens, cache: bool) -> tuple[np.ndarray, list[tuple[str, int]]]:
    """(bank [S, 54, T] float64, its (family, length) names); see the module docstring."""
    n_series, t_len = x.shape
    names = _names(lens)
    bank = np.empty((n_series, len(names), t_len), dtype=np.float64)
    need = np.ones((n_series, len(names)), dtype=np.bool_)
    keys = _from_cache(x, names, bank, need) if cache else None
    _cpu_bank(x, lens, need, bank)
    if cache:
        _to_cache(keys, names, bank, need)
    return bank, names


def compute(close, p, dtype, cache: bool, tail: int | None):
    """The `atc` family's cpu entry: close (1-D or 2-D) -> (families [S, 6, K], final [S, K], was_1d)."""
    x, was_1d = prepare_numpy(close)
    fam, final = run(x, p, dtype, cache, tail)
    return fam, final, was_1d
