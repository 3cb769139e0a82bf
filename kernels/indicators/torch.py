"""torch backend: every core of `kernels.indicators.cores` as batched torch ops (ROCm, CUDA or CPU).

Contract (the interface of `kernels.backends`):

    run(spec, inputs, params, dtype) -> list of outputs

* `inputs` are 2-D [series, time] NumPy arrays (float32/float64) or torch tensors; `params`
  the core's integer parameters (the period n; for moments also the mode, 0 stddev, 1 zscore).
* Tensors are computed on their own device; NumPy arrays on `cuda` when
  `torch.cuda.is_available()` (HIP on ROCm), else on the cpu.
* Outputs have the inputs' kind: NumPy arrays of `dtype` for NumPy inputs, tensors of the
  matching torch dtype on the input device for tensor inputs. One output per core output,
  scratch outputs included (hma's `diff`, NaN before index n-1).
* Arithmetic is float64 throughout (inputs are converted, outputs cast once at the end).
  Warm-up positions are NaN with the cores' lookbacks, and the cores' special cases hold:
  KAMA's ER is 1 when the path length is <= the change or |path| < EPS; RSI is 0 when gain
  and loss are exactly 0; DI is 0 when the smoothed true range is exactly 0 and ADX is held
  where it or +DI + -DI is; stddev and zscore are 0 where var < EPS; the return is 0 from a
  zero price; ATR with n == 1 is the true range.

How the cores map to torch:

* Window sums that the cores roll over the whole series (sma, wma, lsma, the three WMAs of
  hma) are one float64 `conv1d` over time (`_rolling_dot`): exact window sums. They differ
  from the cores' rolled ones by the rolling's rounding drift, which grows with the length
  (WMA of prices near 200: ~1e-13 relative over 2,000 bars, 2e-8 absolute over 100,000,
  where the conv1d stays within 1e-13 of the exact value).
* moments re-anchors its sums every n windows, so its blocks of n windows are independent:
  they run side by side, with a loop over the 2n-1 steps inside a block (see `moments`).
* Recursions (ema, dema, tema, kama, rsi, atr, dmi) loop over time in Python, one small
  vector op per step across the batch; what does not depend on the state (changes, true
  ranges, directional moves, ER) is computed for all bars at once outside the loop.
* rocp is elementwise.

moments and the recursions replay the cores' operations in the cores' order, so the values
that decide branches (`< EPS`, `== 0`, `<=`) are the cores' own and the outputs equal the
cpu backend's: on the cpu bit for bit, except where torch's float64 `sqrt` is 1 ulp off the
correctly rounded one (stddev, zscore); on GPUs torch may also divide by a constant through
its reciprocal (1 ulp).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from kernels.indicators.cores import EPS

F64 = torch.float64
NAN = float("nan")


# ---------------------------------------------------------------------------------------
# Helpers (all tensors are float64 [series, time] unless said otherwise)
# ---------------------------------------------------------------------------------------


def _nans(x: torch.Tensor) -> torch.Tensor:
    return torch.full_like(x, NAN)


def _columns(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The time steps of `x` as contiguous [series] vectors, for loops over time."""
    return x.T.contiguous().unbind(0)


def _seq_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum over the last axis, added left to right from 0.0 as the cores do."""
    total = x.new_zeros(x.shape[:-1])
    for col in x.unbind(-1):
        total = total + col
    return total


def _rolling_dot(x: torch.Tensor, weights, start: int = 0) -> torch.Tensor:
    """r[:, t] = sum_k weights[k] * x[:, t-n+1+k] over windows inside x[:, start:]
    (weights oldest to newest); NaN for t < start + n - 1. One float64 conv1d."""
    w = torch.as_tensor(weights, dtype=F64, device=x.device)
    n = w.numel()
    out = _nans(x)
    if x.shape[1] - start >= n:
        out[:, start + n - 1 :] = F.conv1d(x[:, start:].unsqueeze(1), w.view(1, 1, n)).squeeze(1)
    return out


def _wma(x: torch.Tensor, n: int, start: int = 0) -> torch.Tensor:
    """Weights 1..n (newest heaviest), divisor n(n+1)/2."""
    return _rolling_dot(x, torch.arange(1, n + 1), start) / ((n * (n + 1)) // 2)


def _ema_recursion(seed: torch.Tensor, cols, k) -> torch.Tensor:
    """prev = (x - prev) * k + prev over `cols` (k a scalar or one value per step);
    returns [series, 1 + len(cols)], the seed first."""
    prev, rows = seed, [seed]
    for i, col in enumerate(cols):
        prev = (col - prev) * (k if isinstance(k, float) else k[i]) + prev
        rows.append(prev)
    return torch.stack(rows, 1)


def _ema(x: torch.Tensor, n: int, start: int = 0) -> torch.Tensor:
    """EMA (k = 2/(n+1)) of x[:, start:], seeded by the mean of its first n values at
    start + n - 1; NaN before."""
    out = _nans(x)
    if x.shape[1] - start < n:
        return out
    seed = _seq_sum(x[:, start : start + n]) / n
    out[:, start + n - 1 :] = _ema_recursion(seed, _columns(x[:, start + n :]), 2.0 / (n + 1))
    return out


def _wilder(seed: torch.Tensor, values: torch.Tensor, n: int, update=None) -> torch.Tensor:
    """Wilder smoothing s += (v - s) * (1/n) over the columns of `values`, starting from
    `seed`; where `update` [series, time] is False the state is held. [series, 1 + time]."""
    inv_n = 1.0 / n
    s, rows = seed, [seed]
    masks = _columns(update) if update is not None else None
    for i, v in enumerate(_columns(values)):
        new = s + (v - s) * inv_n
        s = new if masks is None else torch.where(masks[i], new, s)
        rows.append(s)
    return torch.stack(rows, 1)


def _true_range(h, l, c) -> torch.Tensor:
    """TR[t] = max(h-l, |h-c[t-1]|, |l-c[t-1]|) for t >= 1; NaN at t = 0."""
    tr = _nans(h)
    pc = c[:, :-1]
    h1, l1 = h[:, 1:], l[:, 1:]
    tr[:, 1:] = torch.maximum(torch.maximum(h1 - l1, (h1 - pc).abs()), (l1 - pc).abs())
    return tr


# ---------------------------------------------------------------------------------------
# Cores: same names, parameters and outputs as kernels.indicators.cores (inputs first, then params)
# ---------------------------------------------------------------------------------------


def sma(x, n):
    """out[t] = mean(x[t-n+1..t])."""
    return [_rolling_dot(x, torch.ones(n)) / n]


def ema(x, n):
    """EMA with k = 2/(n+1), seeded by the SMA of the first n values."""
    return [_ema(x, n)]


def wma(x, n):
    """Linearly weighted mean, weights 1..n (newest n), divisor n(n+1)/2."""
    return [_wma(x, n)]


def dema(x, n):
    """2*EMA(x) - EMA(EMA(x)); the second EMA seeded by the SMA of the first n EMA values."""
    e1 = _ema(x, n)
    e2 = _ema(e1, n, start=n - 1)
    return [2.0 * e1 - e2]


def tema(x, n):
    """3*EMA1 - 3*EMA2 + EMA3, each EMA seeded by the SMA of the first n values of its input."""
    e1 = _ema(x, n)
    e2 = _ema(e1, n, start=n - 1)
    e3 = _ema(e2, n, start=2 * (n - 1))
    return [3.0 * e1 - 3.0 * e2 + e3]


def hma(x, n):
    """Hull MA: WMA(2*WMA(x, n//2) - WMA(x, n), int(sqrt(n))); second output: that difference."""
    diff = 2.0 * _wma(x, n // 2) - _wma(x, n)  # NaN before n-1
    return [_wma(diff, int(math.sqrt(n)), start=n - 1), diff]


def lsma(x, n):
    """TA-Lib LINEARREG: with t = 0..n-1 oldest to newest, slope = (n*Sty - St*Sy) /
    (n*Stt - St^2), out = (Sy - slope*St)/n + slope*(n-1)."""
    st = n * (n - 1) * 0.5
    stt = n * (n - 1) * (2.0 * n - 1) / 6.0
    sy = _rolling_dot(x, torch.ones(n))
    sty = _rolling_dot(x, torch.arange(n))
    slope = (n * sty - st * sy) / (n * stt - st * st)
    return [(sy - slope * st) / n + slope * (n - 1)]


def kama(x, n):
    """Kaufman adaptive MA: ER = |x[t] - x[t-n]| / sum of |changes| over those n bars (1.0
    when that sum is <= the change or |sum| < EPS), sc = (ER*(2/3 - 2/31) + 2/31)^2,
    kama = (x - kama)*sc + kama seeded with x[n-1]; first output at n. Unfused here (the cores
    fuse both multiply-adds, as TA-Lib does): equal to them to float64 rounding."""
    out = _nans(x)
    t_len = x.shape[1]
    if t_len <= n:
        return [out]
    const_max = 2.0 / (30.0 + 1.0)
    const_diff = 2.0 / (2.0 + 1.0) - const_max
    moves = (x[:, 1:] - x[:, :-1]).abs()  # moves[:, j] = |x[j+1] - x[j]|
    # sum_roc over bars n..T-1: running sum in the cores' order, (sum - leaving) + entering.
    sum_roc = [_seq_sum(moves[:, :n])]
    for leaving, entering in zip(_columns(moves[:, : t_len - 1 - n]), _columns(moves[:, n:])):
        sum_roc.append(sum_roc[-1] - leaving + entering)
    sum_roc = torch.stack(sum_roc, 1)
    roc = x[:, n:] - x[:, :-n]
    no_path = (sum_roc <= roc) | ((sum_roc > -EPS) & (sum_roc < EPS))
    er = torch.where(no_path, 1.0, (roc / sum_roc).abs())
    sc = er * const_diff + const_max
    sc = sc * sc
    out[:, n:] = _ema_recursion(x[:, n - 1], _columns(x[:, n:]), _columns(sc))[:, 1:]
    return [out]


def rsi(x, n):
    """Wilder RSI: average gain and loss seeded by the means of the first n changes, then
    avg += (change - avg) / n; RSI = 100*gain/(gain+loss), 0 when both are exactly 0."""
    out = _nans(x)
    if x.shape[1] <= n:
        return [out]
    d = x[:, 1:] - x[:, :-1]
    # [gain; loss] stacked on the batch axis: one smoothing loop for both. (The cores' seed
    # counts a NaN change as a gain, their smoothing as neither; kept as they are.)
    seed = torch.cat([torch.where(d < 0, 0.0, d), torch.where(d < 0, -d, 0.0)])[:, :n]
    moves = torch.cat([torch.where(d > 0, d, 0.0), torch.where(d < 0, -d, 0.0)])
    avg = _wilder(_seq_sum(seed) / n, moves[:, n:], n)
    gain, loss = avg.chunk(2)
    s = gain + loss
    out[:, n:] = torch.where(s != 0.0, 100.0 * (gain / s), 0.0)
    return [out]


def atr(h, l, c, n):
    """Wilder ATR: ATR[n] = mean(TR[1..n]), then ATR += (TR - ATR) / n; with n == 1 the
    true range itself."""
    out = _nans(h)
    if h.shape[1] <= n:
        return [out]
    tr = _true_range(h, l, c)
    if n == 1:
        out[:, 1:] = tr[:, 1:]
    else:
        out[:, n:] = _wilder(_seq_sum(tr[:, 1 : n + 1]) / n, tr[:, n + 1 :], n)
    return [out]


def dmi(h, l, c, n, which=0):
    """Wilder's +DI, -DI and ADX (TA-Lib PLUS_DI, MINUS_DI, ADX). All three are computed
    whatever `which` asks for (the vectorised DX costs little here).

    +DM = up move if up > down and up > 0, -DM = down move if down > up and down > 0;
    +DM, -DM and TR are summed over bars 1..n-1, then smoothed s = s - s*(1/n) + v.
    DI = 100*DM/TR from bar n (0 when TR is exactly 0). DX = 100*|+DI - -DI|/(+DI + -DI);
    ADX[2n-1] = mean of DX over bars n..2n-1, then ADX += (DX - ADX)/n, held on bars
    where TR or +DI + -DI is exactly 0.
    """
    plus_di, minus_di, adx = _nans(h), _nans(h), _nans(h)
    t_len = h.shape[1]
    if t_len <= n:
        return [plus_di, minus_di, adx]
    up = h[:, 1:] - h[:, :-1]
    dn = l[:, :-1] - l[:, 1:]
    is_minus = (dn > 0) & (up < dn)
    is_plus = ~is_minus & (up > 0) & (up > dn)
    # [+DM; -DM; TR] for bars 1..T-1, stacked on the batch axis: one smoothing loop.
    v = torch.cat([torch.where(is_plus, up, 0.0), torch.where(is_minus, dn, 0.0), _true_range(h, l, c)[:, 1:]])
    s = _seq_sum(v[:, : n - 1])
    inv_n = 1.0 / n
    rows = []
    for col in _columns(v[:, n - 1 :]):
        s = s - s * inv_n + col
        rows.append(s)
    pdm, mdm, tr_s = torch.stack(rows, 1).chunk(3)  # bars n..T-1
    no_tr = tr_s == 0.0
    p = torch.where(no_tr, 0.0, 100.0 * (pdm / tr_s))
    m = torch.where(no_tr, 0.0, 100.0 * (mdm / tr_s))
    plus_di[:, n:], minus_di[:, n:] = p, m
    have_dx = ~no_tr & (p + m != 0.0)
    dx = torch.where(have_dx, 100.0 * ((m - p).abs() / (p + m)), 0.0)
    if t_len >= 2 * n:
        seed = _seq_sum(dx[:, :n]) / n
        adx[:, 2 * n - 1 :] = _wilder(seed, dx[:, n:], n, update=have_dx[:, n:])
    return [plus_di, minus_di, adx]


def moments(x, n, mode):
    """Rolling population moments over n with var = E[d^2] - E[d]^2, d = x - anchor, the
    anchor being the first value of every n-th window (window starts 0, n, 2n, ...): mode 0
    the standard deviation sqrt(var), mode 1 the z-score (d - E[d]) / sqrt(var); both 0
    where var < EPS.

    The cores recompute the sums at each anchor and roll them for the next n - 1 windows.
    Those blocks of n windows are independent, so this replays the cores' arithmetic with
    the blocks side by side and a loop over the 2n - 1 steps within a block (not over time).
    Window sums of the raw prices (a conv1d) would not do: E[x^2] - E[x]^2 cancels (2e-5
    relative error at n = 2 on a random walk near 200) and misjudges which windows are flat.
    """
    out = _nans(x)
    t_len = x.shape[1]
    n_windows = t_len - n + 1
    if n_windows <= 0:
        return [out]
    n_blocks = -(-n_windows // n)
    padded = F.pad(x, (0, n_blocks * n + n - 1 - t_len), value=NAN)
    block = padded.unfold(1, 2 * n - 1, n)  # [series, block, 2n-1]: x[b*n .. b*n + 2n-2]
    d = block - block[:, :, :1]
    d = torch.stack([d, d * d])  # [d; d^2] share one loop
    s = _seq_sum(d[..., : n - 1])
    mean1, var, dev = [], [], []
    for k in range(n):  # window b*n + k: add its newest, emit, drop its oldest
        new = d[..., n - 1 + k]
        s = s + new
        m1, m2 = s / n
        mean1.append(m1)
        var.append(m2 - m1 * m1)
        dev.append(new[0])
        s = s - d[..., k]
    # [series, block, k] -> [series, window]
    mean1, var, dev = (torch.stack(v, -1).flatten(1)[:, :n_windows] for v in (mean1, var, dev))
    sd = var.sqrt()
    val = sd if mode == 0 else (dev - mean1) / sd
    out[:, n - 1 :] = torch.where(var < EPS, 0.0, val)
    return [out]


def rocp(x, n):
    """Simple return over n rows: (x[t] - x[t-n]) / x[t-n], 0 when x[t-n] is 0."""
    out = _nans(x)
    prev = x[:, :-n]
    out[:, n:] = torch.where(prev != 0.0, (x[:, n:] - prev) / prev, 0.0)
    return [out]


CORES = {
    "sma_core": sma,
    "ema_core": ema,
    "wma_core": wma,
    "dema_core": dema,
    "tema_core": tema,
    "hma_core": hma,
    "lsma_core": lsma,
    "kama_core": kama,
    "rsi_core": rsi,
    "atr_core": atr,
    "dmi_core": dmi,
    "moments_core": moments,
    "rocp_core": rocp,
}


# ---------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------


def default_device() -> torch.device:
    """Where NumPy inputs are computed: the GPU when torch sees one (CUDA or ROCm), else cpu."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _run_on_cpu_core(spec, inputs, params: tuple[int, ...], dtype) -> list:
    """The generic path of a core without a torch port (a new kernel is its core and its
    spec only): the compiled CPU core on host copies, the outputs back in the inputs' kind
    and device."""
    from kernels.indicators import cpu as cpu_backend

    is_tensor = isinstance(inputs[0], torch.Tensor)
    host = [np.ascontiguousarray(a.detach().cpu().numpy() if is_tensor else a, dtype=np.float64) for a in inputs]
    outs = cpu_backend.run(spec, host, params, dtype)
    if is_tensor:
        out_dtype = torch.float32 if np.dtype(dtype) == np.float32 else F64
        return [torch.as_tensor(o, device=inputs[0].device).to(out_dtype) for o in outs]
    return outs


def run(spec, inputs, params: tuple[int, ...], dtype) -> list:
    """Run core `spec.core` on 2-D [series, time] inputs; one output per core output. A core
    without a port in CORES runs as its CPU core (`_run_on_cpu_core`)."""
    if spec.core not in CORES:
        return _run_on_cpu_core(spec, inputs, params, dtype)
    is_tensor = isinstance(inputs[0], torch.Tensor)
    device = inputs[0].device if is_tensor else default_device()
    if is_tensor:
        xs = [a.to(dtype=F64) for a in inputs]
    else:  # one copy, straight to the device in float64 (also: never aliases the caller's array)
        xs = [torch.tensor(a, dtype=F64, device=device) for a in inputs]
    outs = CORES[spec.core](*xs, *params)
    if is_tensor:
        out_dtype = torch.float32 if np.dtype(dtype) == np.float32 else F64
        return [o.to(out_dtype) for o in outs]
    return [o.cpu().numpy().astype(dtype, copy=False) for o in outs]
