"""CUDA engine: the same walk compiled as a numba.cuda device function, one thread per
individual (the rules, the original engine's with two documented deviations, are
`trade_walk`'s).

The indicator bank of `population.build_walk_inputs` (each unique series computed once on
the host with the CPU kernels, see there) goes to the device once per call, time-major
([bar, series], C order) so that threads reading bar t of different series read
neighbouring addresses. Thread i walks the bars with column views of its own series
(ema[:, k_fast[i]], ...) and writes its trades into column i of fixed-capacity buffers
[n // 2 + 1, N] (slot-major: the used slots are a contiguous prefix, the only part copied
back); the host turns them into ragged arrays. No warp intrinsics: the kernel
runs under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1) in CI. Imported only when the
cuda engine is asked for.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from kernels.cuda_build import no_fma
from kernels.gpu_phases import phase
from kernels.strategy.results import TRADE_DTYPES, TRADE_FIELDS, PopulationResult
from kernels.strategy.trade_walk import capacity, walk_core

no_fma(__name__)  # -fma=0: bit for bit with the CPU (kernels.cuda_build)

THREADS_PER_BLOCK = 32  # small blocks: a population of a few hundred threads spreads over more SMs
# The roofline's operation count for one individual's bar: an estimate (walk_core's compares,
# cost and P&L arithmetic on a bar in a trade), not a count of its instructions.
WALK_OPS_PER_BAR = 16

_walk_dev = cuda.jit(device=True)(walk_core)


@cuda.jit
def walk_kernel(o, h, l, c, ema, vol_z, tr_z, cloc, stop, target, k_fast, k_slow, k_vz, k_trz, k_stop, k_tgt,
                vz_min, trz_min, cloc_min, max_hold, cost_bps, counts, e_idx, x_idx, reason, e_px, x_px, pnl, r_mult):
    """Thread i: the walk of individual i (banks are time-major: column k is series k; trade
    buffers are slot-major: column i holds individual i's trades)."""
    i = cuda.grid(1)
    if i < counts.shape[0]:
        counts[i] = _walk_dev(o, h, l, c, ema[:, k_fast[i]], ema[:, k_slow[i]], vol_z[:, k_vz[i]], tr_z[:, k_trz[i]],
                              cloc, stop[:, k_stop[i]], target[:, k_tgt[i]], vz_min[i], trz_min[i], cloc_min[i],
                              max_hold[i], cost_bps[i], e_idx[:, i], x_idx[:, i], reason[:, i], e_px[:, i], x_px[:, i],
                              pnl[:, i], r_mult[:, i])


def walk_population(inp) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(counts [N], buffers [N, capacity]) of every individual of `inp` (a population.WalkInputs).

    Each step is a `kernels.gpu_phases.phase` (free unless scripts/gpu_profile.py records)."""
    n = inp.k_fast.shape[0]
    t_len = inp.open.shape[0]
    cap = capacity(t_len)
    with phase("host_prep", "time-major banks"):
        host_banks = [np.ascontiguousarray(b.T) for b in (inp.ema, inp.vol_z, inp.tr_z, inp.stop, inp.target)]
    host_in = [inp.open, inp.high, inp.low, inp.close, *host_banks[:3], inp.cloc, *host_banks[3:],
               inp.k_fast, inp.k_slow, inp.k_vz, inp.k_trz, inp.k_stop, inp.k_tgt,
               inp.vol_z_min, inp.tr_z_min, inp.cloc_min, inp.max_hold, inp.cost_bps]
    in_bytes = sum(a.nbytes for a in host_in)
    with phase("h2d", "inputs", bytes=in_bytes):
        dev_in = [cuda.to_device(a) for a in host_in]
    with phase("alloc", "trade buffers"):
        counts = cuda.device_array(n, dtype=np.int64)
        buf = [cuda.device_array((cap, n), dtype=TRADE_DTYPES[f]) for f in TRADE_FIELDS]
    blocks = max(1, math.ceil(n / THREADS_PER_BLOCK))
    with phase("kernel", "walk_kernel", bytes=in_bytes + counts.nbytes, ops=n * t_len * WALK_OPS_PER_BAR,
               blocks=blocks, threads=THREADS_PER_BLOCK):
        walk_kernel[blocks, THREADS_PER_BLOCK](*dev_in, counts, *buf)
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
