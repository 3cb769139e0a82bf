"""CUDA engine: the signal bitmask kernel, parallel over (individual, 32-bar word), then the
walk compiled as a numba.cuda device function, one thread per individual (the rules, the
original engine's with two documented deviations, are `trade_walk`'s).

The indicator bank of `population.build_walk_inputs` (each unique series computed once on
the host with the CPU kernels, see there) goes to the device once per call, time-major
([bar, series], C order) so that threads reading bar t of different series read
neighbouring addresses.

1. `signal_kernel`: thread (i, w) packs individual i's entry signal (`trade_walk.signal_core`,
   the predicate the CPU walk tests) on bars 32 w .. 32 w + 31 into bits[i, w] (uint32,
   [N, ceil(T / 32)]). The thread index runs over individuals fastest: a warp's threads
   read the same bars of the (few) bank columns, neighbouring addresses.
2. `walk_kernel`: thread i walks with `trade_walk.walk_bits_core`: flat stretches are
   skipped a word at a time (mask, count trailing zeros) instead of reading the four
   indicator series and the thresholds bar by bar; in a position it walks the bars as the
   CPU does. It writes its trades into column i of fixed-capacity buffers [n // 2 + 1, N]
   (slot-major: the used slots are a contiguous prefix, the only part copied back); the
   host turns them into ragged arrays.

No warp intrinsics: the kernels run under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)
in CI. Imported only when the cuda engine is asked for.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from kernels.cuda_build import no_fma
from kernels.gpu_phases import phase
from kernels.strategy.results import TRADE_DTYPES, TRADE_FIELDS, PopulationResult
from kernels.strategy.trade_walk import capacity, n_words, signal_word_core, walk_bits_core

no_fma(__name__)  # -fma=0: bit for bit with the CPU (kernels.cuda_build)

THREADS_PER_BLOCK = 32  # small blocks: a population of a few hundred threads spreads over more SMs
# The roofline's operation count for one individual's bar: an estimate (walk_core's compares,
# cost and P&L arithmetic on a bar in a trade), not a count of its instructions.
WALK_OPS_PER_BAR = 16

SIGNAL_THREADS_PER_BLOCK = 128
# signal_word_core's operations per bar: four compares and the bit's or (an estimate)
SIGNAL_OPS_PER_BAR = 5

_walk_dev = cuda.jit(device=True)(walk_bits_core)
_word_dev = cuda.jit(device=True)(signal_word_core)


@cuda.jit
def signal_kernel(ema, vol_z, tr_z, cloc, k_fast, k_slow, k_vz, k_trz, vz_min, trz_min, cloc_min, bits):
    """Thread g = w * N + i: word w of individual i's signal bitmask into bits[i, w]
    (banks time-major: column k is series k)."""
    g = cuda.grid(1)
    n = bits.shape[0]
    if g < n * bits.shape[1]:
        i = g % n
        w = g // n
        bits[i, w] = _word_dev(ema[:, k_fast[i]], ema[:, k_slow[i]], vol_z[:, k_vz[i]], tr_z[:, k_trz[i]], cloc,
                               vz_min[i], trz_min[i], cloc_min[i], w)


@cuda.jit
def walk_kernel(bits, o, h, l, c, stop, target, k_stop, k_tgt, max_hold, cost_bps,
                counts, e_idx, x_idx, reason, e_px, x_px, pnl, r_mult):
    """Thread i: the bitmask walk of individual i (banks time-major: column k is series k;
    trade buffers slot-major: column i holds individual i's trades)."""
    i = cuda.grid(1)
    if i < counts.shape[0]:
        counts[i] = _walk_dev(bits[i], o, h, l, c, stop[:, k_stop[i]], target[:, k_tgt[i]], max_hold[i], cost_bps[i],
                              e_idx[:, i], x_idx[:, i], reason[:, i], e_px[:, i], x_px[:, i], pnl[:, i], r_mult[:, i])


def walk_population(inp) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(counts [N], buffers [N, capacity]) of every individual of `inp` (a population.WalkInputs).

    Each step is a `kernels.gpu_phases.phase` (free unless scripts/gpu_profile.py records)."""
    n = inp.k_fast.shape[0]
    t_len = inp.open.shape[0]
    cap = capacity(t_len)
    with phase("host_prep", "time-major banks"):
        host_banks = [np.ascontiguousarray(b.T) for b in (inp.ema, inp.vol_z, inp.tr_z, inp.stop, inp.target)]
    sig_in = [host_banks[0], host_banks[1], host_banks[2], inp.cloc, inp.k_fast, inp.k_slow, inp.k_vz, inp.k_trz,
              inp.vol_z_min, inp.tr_z_min, inp.cloc_min]
    walk_in = [inp.open, inp.high, inp.low, inp.close, host_banks[3], host_banks[4], inp.k_stop, inp.k_tgt,
               inp.max_hold, inp.cost_bps]
    sig_bytes = sum(a.nbytes for a in sig_in)
    walk_bytes = sum(a.nbytes for a in walk_in)
    with phase("h2d", "inputs", bytes=sig_bytes + walk_bytes):
        dev_sig = [cuda.to_device(a) for a in sig_in]
        dev_walk = [cuda.to_device(a) for a in walk_in]
    n_w = n_words(t_len)
    with phase("alloc", "bitmask and trade buffers"):
        bits = cuda.device_array((n, n_w), dtype=np.uint32)
        counts = cuda.device_array(n, dtype=np.int64)
        buf = [cuda.device_array((cap, n), dtype=TRADE_DTYPES[f]) for f in TRADE_FIELDS]
    sig_blocks = max(1, math.ceil(n * n_w / SIGNAL_THREADS_PER_BLOCK))
    with phase("kernel", "signal_kernel", bytes=sig_bytes + bits.nbytes, ops=n * t_len * SIGNAL_OPS_PER_BAR,
               blocks=sig_blocks, threads=SIGNAL_THREADS_PER_BLOCK):
        signal_kernel[sig_blocks, SIGNAL_THREADS_PER_BLOCK](*dev_sig, bits)
    blocks = max(1, math.ceil(n / THREADS_PER_BLOCK))
    with phase("kernel", "walk_kernel", bytes=bits.nbytes + walk_bytes + counts.nbytes,
               ops=n * t_len * WALK_OPS_PER_BAR, blocks=blocks, threads=THREADS_PER_BLOCK):
        walk_kernel[blocks, THREADS_PER_BLOCK](bits, *dev_walk, counts, *buf)
    with phase("d2h", "counts", bytes=counts.nbytes):
        host_counts = counts.copy_to_host()
    used = int(host_counts.max())
    if used > cap:
        raise RuntimeError(f"trade buffer overflow: {used} trades > capacity {cap}")
    out = {}
    with phase("d2h", "trades", bytes=sum(used * n * np.dtype(TRADE_DTYPES[f]).itemsize for f in TRADE_FIELDS)):
        for f, b in zip(TRADE_FIELDS, buf):
            host = b[:used].copy_to_host() if used else np.empty((0, n), dtype=TRADE_DTYPES[f])
            out[f] = host.T  # [N, used]
    return host_counts, out


def walk_result(inp) -> PopulationResult:
    """The `strategy` family's cuda entry: one GPU thread per individual, as a PopulationResult."""
    counts, buf = walk_population(inp)
    with phase("host_post", "ragged trades"):
        return PopulationResult.from_buffers(counts, buf, backend="cuda", n_series=dict(inp.n_series))
