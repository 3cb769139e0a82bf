"""ATC with torch: batched [symbols, bars] tensor ops (ROCm, CUDA or CPU), in chunks of
symbols. Imported only when backend="torch" is asked for; torch is imported inside the
functions.

Contract: `dispatch(close, p, dtype)`: close a NumPy array (run on
`kernels.indicators.torch.default_device()`, NumPy out) or a torch tensor (run on its
device, tensors out), 1-D or 2-D; p an `AtcParams` -> (families [S, 6, T], final [S, T],
was_1d). `run(x, p)`: float64 tensor [S, T] -> float64 tensors.

SMA/WMA/LSMA come from `kernels.indicators.torch` (conv1d window sums, 1e-13 from the
cores' rolled ones); EMA/DEMA/KAMA and the equity recursions are loops over bars with one
vector op per step across all MAs and symbols (replaying the cores' operation order: the
KAMA's smoothing constant is `kernels.atc.cores.kama_step`'s formula, vectorised over the
window), crosses and the persistent signals vectorised (forward fills). It equals cpu to
rounding unless a close sits within ~1e-13 of a window MA. Slow on a CPU (it is for GPUs).
"""

from __future__ import annotations

import numpy as np

from kernels.atc.params import (
    CUT_LEVEL,
    EQUITY_FLOOR,
    FAMILIES,
    KAMA_FAST,
    KAMA_SLOW,
    AtcParams,
    is_torch,
    prepare_numpy,
)

NAN = float("nan")

TORCH_CHUNK_ELEMENTS = 2**24  # torch: symbols per chunk so that a [54, symbols, bars] array stays ~128 MiB


def ffill(values, update):
    """values where update, else the last updated value along the last axis (0 before)."""
    import torch

    t_len = values.shape[-1]
    idx = torch.arange(t_len, device=values.device).expand_as(values)
    idx = torch.where(update, idx, torch.full_like(idx, -1))
    idx = torch.cummax(idx, dim=-1).values
    picked = values.gather(-1, idx.clamp(min=0))
    return torch.where(idx >= 0, picked, torch.zeros_like(values))


def ema_rows(src, lens, first):
    """EMAs with k = 2/(n+1) for several lengths at once, replaying `cores.ema_core`'s
    operations: src [S, T] (or [L, S, T]); lens, first: one int per length (first: the
    source's first valid bar). Seed at first + n - 1: the sum of src[first .. first+n-1]
    added left to right from 0.0, divided by n; then (x - prev)*k + prev. [L, S, T]."""
    import torch

    n_len = len(lens)
    t_len = src.shape[-1]
    dev, dt = src.device, src.dtype
    n = torch.tensor([float(v) for v in lens], dtype=dt, device=dev).view(-1, 1)
    k = torch.tensor([2.0 / (v + 1) for v in lens], dtype=dt, device=dev).view(-1, 1)
    lo = torch.tensor(list(first), device=dev).view(-1, 1)
    seed_t = lo + torch.tensor(list(lens), device=dev).view(-1, 1) - 1
    src_tm = src.movedim(-1, 0).contiguous()  # [T, S] or [T, L, S]
    shape = (n_len, src.shape[-2])
    acc = torch.zeros(shape, dtype=dt, device=dev)
    prev = torch.full(shape, NAN, dtype=dt, device=dev)
    rows = []
    for t in range(t_len):
        col = src_tm[t]
        acc = torch.where((lo <= t) & (t <= seed_t), acc + col, acc)
        prev = torch.where(seed_t == t, acc / n, torch.where(seed_t < t, (col - prev) * k + prev, prev))
        rows.append(torch.where(seed_t <= t, prev, NAN))
    return torch.stack(rows, -1) if rows else torch.full((*shape, 0), NAN, dtype=dt, device=dev)


def kama(x, lens):
    """Pine-style KAMA of x [S, T] for each n in lens: [len(lens), S, T], a value on every
    bar (`kernels.atc.cores.kama_pine_core`): on bars 0..n-1 Pine's noise is na, the ratio
    0 and sc = slow^2 (from 0: kama[0] = slow^2 * x[0]); from bar n the efficiency ratio."""
    import torch
    import torch.nn.functional as F

    n_series, t_len = x.shape
    moves = torch.zeros_like(x)
    moves[:, 1:] = (x[:, 1:] - x[:, :-1]).abs()
    s0 = 0.0 * (KAMA_FAST - KAMA_SLOW) + KAMA_SLOW  # kama_step's sc at ER = 0, in float64
    sc = torch.full((len(lens), n_series, t_len), s0 * s0, dtype=x.dtype, device=x.device)
    for k, n in enumerate(lens):
        if t_len <= n:
            continue
        # noise[t] = sum(moves[t-n+1..t]) for t >= n: a window sum (conv1d) over moves[1:]
        noise = F.conv1d(moves[:, 1:].unsqueeze(1), torch.ones(1, 1, n, dtype=x.dtype, device=x.device)).squeeze(1)
        change = (x[:, n:] - x[:, :-n]).abs()
        er = torch.where(noise > 0.0, torch.clamp(change / torch.where(noise > 0.0, noise, 1.0), max=1.0), 0.0)
        s = er * (KAMA_FAST - KAMA_SLOW) + KAMA_SLOW
        sc[k, :, n:] = s * s
    prev = torch.zeros((len(lens), n_series), dtype=x.dtype, device=x.device)  # nz(KAMA[1]) on bar 0
    sc_tm = sc.permute(2, 0, 1).contiguous()
    x_tm = x.T.contiguous()
    rows = []
    for t in range(t_len):
        prev = prev + sc_tm[t] * (x_tm[t] - prev)
        rows.append(prev)
    return torch.stack(rows, -1) if rows else torch.zeros((len(lens), n_series, 0), dtype=x.dtype, device=x.device)


def equity(sig, r, d, cutout, start):
    """Equity curves [..., T] driven by signals sig [..., T] (previous bar's sign) and
    returns r [S, T] (broadcast over leading axes); start broadcastable to sig[..., 0]."""
    import torch

    t_len = sig.shape[-1]
    prev = torch.full_like(sig, NAN)
    prev[..., 1:] = sig[..., :-1]
    rr = r.expand_as(sig)
    upd = (prev > 0.0) | (prev < 0.0)
    a = ffill(torch.where(prev > 0.0, rr, -rr), upd)
    a_tm = a.movedim(-1, 0).contiguous()
    e = torch.full(sig.shape[:-1], NAN, dtype=sig.dtype, device=sig.device)
    start = torch.as_tensor(start, dtype=sig.dtype, device=sig.device).expand_as(e)
    rows = [torch.full_like(e, NAN)] * min(cutout, t_len)
    for t in range(cutout, t_len):
        new = (e * d) * (1.0 + a_tm[t])
        new = torch.where(torch.isnan(e), start, new)
        e = torch.where(new < EQUITY_FLOOR, EQUITY_FLOOR, new)
        rows.append(e)
    return torch.stack(rows, -1)


def moving_averages(x, lens_table):
    """The 54 MAs of x [S, T] in the cpu bank's order: [6*9, S, T]."""
    import torch

    from kernels.indicators import torch as tb

    lens = [[int(n) for n in row] for row in lens_table]
    ema_dema = ema_rows(x, lens[0] + lens[3], [0] * 18)  # EMA rows, then DEMA's inner EMAs
    e1 = ema_dema[9:]
    e2 = ema_rows(e1, lens[3], [n - 1 for n in lens[3]])
    dema = 2.0 * e1 - e2  # NaN until 2(n-1): e2 is NaN there
    sma = torch.stack([tb.sma(x, n)[0] for n in lens[1]])
    wma = torch.stack([tb.wma(x, n)[0] for n in lens[2]])
    lsma = torch.stack([tb.lsma(x, n)[0] for n in lens[4]])
    return torch.cat([ema_dema[:9], sma, wma, dema, lsma, kama(x, lens[5])])


def run_chunk(x, p: AtcParams):
    """x: float64 tensor [S, T] -> (families [S, 6, T], final [S, T]) float64 tensors."""
    import torch

    t_len = x.shape[1]
    n_fam, n_len = p.lens.shape
    growth = torch.as_tensor(p.growth(t_len), dtype=x.dtype, device=x.device)
    r = torch.full_like(x, NAN)
    r[:, 1:] = (x[:, 1:] / x[:, :-1] - 1.0) * growth[1:]
    mas = moving_averages(x, p.lens)  # [54, S, T]
    # crosses: over at t when x[t] > m[t] and x[t-1] <= m[t-1]; under mirrored
    xm, xp = x[:, 1:], x[:, :-1]
    m, mp = mas[..., 1:], mas[..., :-1]
    ev = torch.zeros_like(mas)
    ev[..., 1:] = ((xm > m) & (xp <= mp)).to(x.dtype) - ((xm < m) & (xp >= mp)).to(x.dtype)
    del m, mp
    sig = ffill(ev, ev != 0.0)
    del ev
    eq = equity(sig, r, p.d, p.cutout, 1.0)
    fams = []
    for f in range(n_fam):
        nom = torch.zeros_like(x)
        den = torch.zeros_like(x)
        for i in range(n_len):  # the cores' order: one addend at a time
            j = f * n_len + i
            nom = nom + sig[j] * eq[j]
            den = den + eq[j]
        q = nom / den
        y = torch.floor(q.abs() * 100.0 + 0.5) / 100.0
        fams.append(torch.where(q >= 0.0, y, -y))  # NaN q: NaN
    del sig, eq, mas
    fam = torch.stack(fams)  # [6, S, T]
    w = torch.as_tensor(p.weights, dtype=x.dtype, device=x.device).view(-1, 1)
    eq2 = equity(fam, r, p.d, p.cutout, w)
    c = torch.where(fam > CUT_LEVEL, 1.0, torch.where(fam < -CUT_LEVEL, -1.0, 0.0)).to(x.dtype)
    fnom = torch.zeros_like(x)
    fden = torch.zeros_like(x)
    for f in range(n_fam):
        fnom = fnom + c[f] * eq2[f]
        fden = fden + eq2[f]
    return fam.permute(1, 0, 2), fnom / fden


def run(x, p: AtcParams):
    """x: float64 tensor [S, T] -> (families [S, 6, T], final [S, T]), in chunks of symbols."""
    import torch

    n_series, t_len = x.shape
    if t_len == 0 or n_series == 0:
        return x.new_empty((n_series, len(FAMILIES), t_len)), x.new_empty((n_series, t_len))
    chunk = max(1, TORCH_CHUNK_ELEMENTS // max(1, p.lens.size * t_len))
    if n_series <= chunk:
        return run_chunk(x, p)
    parts = [run_chunk(x[c0 : c0 + chunk], p) for c0 in range(0, n_series, chunk)]
    return torch.cat([a for a, _ in parts]), torch.cat([b for _, b in parts])


def dispatch(close, p: AtcParams, dtype):
    import torch

    from kernels.indicators import torch as tb

    if is_torch(close):
        if close.ndim not in (1, 2):
            raise ValueError(f"expected 1-D [bars] or 2-D [symbols, bars], got shape {tuple(close.shape)}")
        was_1d = close.ndim == 1
        x = close.reshape(1, -1) if was_1d else close
        x = x.to(torch.float64)
        if not bool(torch.isfinite(x).all()):
            raise ValueError("close must be finite (no NaN or inf)")
        fam, final = run(x, p)
        out_dtype = torch.float32 if dtype == np.float32 else torch.float64
        return fam.to(out_dtype), final.to(out_dtype), was_1d
    x, was_1d = prepare_numpy(close)
    fam, final = run(torch.tensor(x, dtype=torch.float64, device=tb.default_device()), p)
    return fam.cpu().numpy().astype(dtype, copy=False), final.cpu().numpy().astype(dtype, copy=False), was_1d


def compute(close, p: AtcParams, dtype, cache: bool, tail: int | None):
    """The `atc` family's torch entry: every bar, then the last `tail` (`cache` is cpu only)."""
    from kernels.atc.params import keep_tail

    fam, final, was_1d = dispatch(close, p, dtype)
    return keep_tail(fam, tail), keep_tail(final, tail), was_1d
