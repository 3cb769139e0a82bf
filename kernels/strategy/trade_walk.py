"""The per-individual trade walk, written once and compiled twice (numba njit and
numba.cuda device function), plus the host-side per-bar price lines it reads.

Cores (plain Python over scalars and 1-D arrays; the ones other cores call are numba
`register_jitable`, so njit and cuda compile the call in and the simulator runs them as
they are):
  signal_core        the entry signal of one bar: the one place the predicate is written
  position_core      one trade from its signal bar: entry, risk <= 0 skip, exit, the record
  walk_core          the per-bar walk (signal_core on every flat bar): the cpu engines
  signal_word_core   32 bars of signal_core packed into a word (bit b = bar 32 w + b)
  ctz32_core, next_signal_core   the first set bit at or after bar t (mask, count trailing
                     zeros as five halving steps: no intrinsics)
  walk_bits_core     the same walk driven by the bitmask: flat stretches are skipped a word
                     at a time; the cuda engine (`kernels.strategy.cuda`)

Rules (long only, one position at a time; t is a bar index, n the number of bars):

    signal[t]  ema_f[t] < ema_s[t] and vol_z[t] > vol_z_min and tr_z[t] > tr_z_min
               and cloc[t] > cloc_min (NaN compares false: warm-up rows never signal),
               the seller-exhaustion test of `kernels.seller_exhaustion`
    entry      at open[t+1] (e = t+1) when flat and signal[t]; a signal on the last bar
               (no next open) does not trade
    stop       stop[t] = low[t] - atr_stop_mult * atr[t]          (ATR of the signal bar)
    risk       entry - stop; a trade is skipped when risk <= 0 (entry open at or below the
               stop) or NaN (ATR still in warm-up): nothing is entered and the next bar may
               signal again
    target     target[t] = entry + reward_r * risk
    exit       on the first bar j > e, in this priority:
                 open[j] <= stop        exit at open[j]   reason 0 stop_gap
                 low[j] <= stop         exit at stop      reason 1 stop
                 high[j] >= target      exit at target    reason 2 tp
                 j - e >= max_hold      exit at close[j]  reason 3 time
               no exit by the last bar: closed at close[n-1], exit index n-1, reason 4 end
               (an entry on the last bar itself is closed there: exit index == entry index)
    next       the walk resumes AT the exit bar x: the position is freed on x, so a signal on
               x enters at open[x+1] (as the seed's original engine does); signals on the
               entry bar and on the bars in between are ignored (one position at a time)
    costs      cost = (entry + exit) * cost_bps / 1e4 with cost_bps = fee_bps + slippage_bps
    pnl        (exit - entry - cost) / entry        (fraction of the entry price, net)
    r_mult     (exit - entry - cost) / risk         (net result in units of the initial risk)

Deviations from the seed's original engine (`backtest/engine.py` of the seller-exhaustion
project), the only two, both deliberate:
  (a) no entry when the next open is at or below the stop line (risk <= 0): the bar is
      skipped and the next bar may signal again. The original enters such a trade with its
      risk floored at 1e-8 (`max(1e-8, entry - stop)`: an R multiple in the millions, and
      usually a stop-gap exit on the next bar);
  (b) a position still open on the last bar is closed at close[n-1] with reason `end`. The
      original's loop ends with the position open and records no trade for it.
Everything else is the original's walk, trade for trade; the tests compare every engine
with an independent per-bar loop of the original (with (a) and (b)) on S&P 500 and NASDAQ
daily bars.

Float parity. All prices and lines are float64. CUDA contracts a*b + c into one fused
multiply-add (a different rounding) wherever it can, so no product in the walk feeds an
addition: the stop and target lines (the only a*b + c of the rules) are computed on the
host by `stop_line` / `target_line` (NumPy, each operation rounded on its own, as a plain
Python loop would) and passed in per bar; inside the walk the cost is
((entry + exit) * cost_bps) / 1e4, whose product feeds a division. Every comparison and
every recorded number is then the same bits on the CPU and the GPU.

The walk writes trade k into slot k of its output buffers while k < capacity and returns
the number of trades (callers check it against the capacity). A trade signalled on bar t
exits on a bar x >= t + 2 (exits start after the entry bar t + 1; only an `end` trade can
exit on its entry bar, and it is the last) and the next signal is on x or later, so signals
of successive trades are at least two bars apart and n // 2 + 1 slots always suffice
(`capacity(n)`).
"""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

WORD_BITS = 32  # bars per word of a signal bitmask (uint32)


def capacity(n_bars: int) -> int:
    """Trade slots that always suffice for a series of n_bars bars."""
    return n_bars // 2 + 1


def stop_line(low: np.ndarray, atr: np.ndarray, atr_stop_mult: float, out: np.ndarray | None = None) -> np.ndarray:
    """stop[t] = low[t] - atr_stop_mult * atr[t] (float64; NaN where the ATR is in warm-up).
    Two rounded operations, the product first; written into `out` when given."""
    low = np.asarray(low, dtype=np.float64)
    out = np.empty(low.shape[0]) if out is None else out
    np.multiply(np.float64(atr_stop_mult), np.asarray(atr, dtype=np.float64), out=out)
    np.subtract(low, out, out=out)
    return out


def target_line(open_: np.ndarray, stop: np.ndarray, reward_r: float, out: np.ndarray | None = None) -> np.ndarray:
    """target[t] = open[t+1] + reward_r * (open[t+1] - stop[t]): the target of a trade
    signalled on bar t (NaN on the last bar, which cannot signal a trade). Three rounded
    operations in that order; written into `out` when given."""
    open_ = np.asarray(open_, dtype=np.float64)
    t_len = open_.shape[0]
    out = np.empty(t_len) if out is None else out
    entry = open_[1:]
    body = out[:-1]
    np.subtract(entry, stop[:-1], out=body)
    np.multiply(np.float64(reward_r), body, out=body)
    np.add(entry, body, out=body)
    if t_len:
        out[-1] = np.nan
    return out


@register_jitable
def signal_core(ema_f, ema_s, vol_z, tr_z, cloc, vol_z_min, tr_z_min, cloc_min):
    """The entry signal of one bar (scalars): the rules' signal[t], the one definition the
    walks and the bitmask use (NaN compares false)."""
    return ema_f < ema_s and vol_z > vol_z_min and tr_z > tr_z_min and cloc > cloc_min


def n_words(n_bars: int) -> int:
    """uint32 words of a signal bitmask of n_bars bars."""
    return (n_bars + WORD_BITS - 1) // WORD_BITS


@register_jitable
def signal_word_core(ema_f, ema_s, vol_z, tr_z, cloc, vol_z_min, tr_z_min, cloc_min, w):
    """Word w of the signal bitmask: bit b is signal[32 w + b] (bars past the end are 0).
    Returned as an int64 in [0, 2**32) (stored into uint32 by the caller)."""
    n = ema_f.shape[0]
    t0 = w * 32
    t1 = min(t0 + 32, n)
    word = 0
    for t in range(t0, t1):
        if signal_core(ema_f[t], ema_s[t], vol_z[t], tr_z[t], cloc[t], vol_z_min, tr_z_min, cloc_min):
            word |= 1 << (t - t0)
    return word


@register_jitable
def ctz32_core(v):
    """Count of trailing zero bits of a 32-bit word v (an int in [0, 2**32)); 32 for v == 0.
    Five halving steps, no intrinsics (the CUDA simulator has none)."""
    if v == 0:
        return 32
    c = 0
    if (v & 0xFFFF) == 0:
        c += 16
        v >>= 16
    if (v & 0xFF) == 0:
        c += 8
        v >>= 8
    if (v & 0xF) == 0:
        c += 4
        v >>= 4
    if (v & 0x3) == 0:
        c += 2
        v >>= 2
    if (v & 0x1) == 0:
        c += 1
    return c


@register_jitable
def next_signal_core(bits, t):
    """The first bar >= t whose bit is set in `bits` (one individual's uint32 words), or
    32 * len(bits) when there is none."""
    nw = bits.shape[0]
    w = t >> 5
    if w >= nw:
        return nw * 32
    word = np.int64(bits[w]) & ((0xFFFFFFFF << (t & 31)) & 0xFFFFFFFF)
    while word == 0:
        w += 1
        if w >= nw:
            return nw * 32
        word = np.int64(bits[w])
    return w * 32 + ctz32_core(word)


@register_jitable
def position_core(t, open_, high, low, close, stop, target, max_hold, cost_bps, k,
                  entry_idx, exit_idx, reason, entry_px, exit_px, pnl, r_mult):
    """The trade signalled on bar t (t < n - 1): its exit bar, the trade written into slot k
    when k < capacity; -1 when it is skipped (risk <= 0 or NaN: nothing is written)."""
    n = open_.shape[0]
    e = t + 1
    entry = open_[e]
    s = stop[t]
    risk = entry - s
    if not (risk > 0.0):  # ATR in warm-up (NaN) or entry at/below the stop: no trade
        return -1
    tgt = target[t]
    x = n - 1
    code = 4
    px = close[n - 1]
    for j in range(e + 1, n):
        o = open_[j]
        if o <= s:
            x = j
            code = 0
            px = o
            break
        if low[j] <= s:
            x = j
            code = 1
            px = s
            break
        if high[j] >= tgt:
            x = j
            code = 2
            px = tgt
            break
        if j - e >= max_hold:
            x = j
            code = 3
            px = close[j]
            break
    if k < entry_idx.shape[0]:
        cost = (entry + px) * cost_bps / 1e4
        net = px - entry - cost
        entry_idx[k] = e
        exit_idx[k] = x
        reason[k] = code
        entry_px[k] = entry
        exit_px[k] = px
        pnl[k] = net / entry
        r_mult[k] = net / risk
    return x


def walk_core(open_, high, low, close, ema_f, ema_s, vol_z, tr_z, cloc, stop, target,
              vol_z_min, tr_z_min, cloc_min, max_hold, cost_bps,
              entry_idx, exit_idx, reason, entry_px, exit_px, pnl, r_mult):
    """Walk the bars of one individual (rules in the module docstring); returns the trade count.

    Inputs: float64 series of length n (stop/target from `stop_line`/`target_line`), the
    individual's thresholds, max_hold (int) and cost_bps (float). Outputs: buffers of one
    capacity; entry_idx/exit_idx int64, reason int8, entry_px/exit_px/pnl/r_mult float64.
    """
    n = open_.shape[0]
    k = 0
    t = 0
    while t < n - 1:
        if not signal_core(ema_f[t], ema_s[t], vol_z[t], tr_z[t], cloc[t], vol_z_min, tr_z_min, cloc_min):
            t += 1
            continue
        x = position_core(t, open_, high, low, close, stop, target, max_hold, cost_bps, k,
                          entry_idx, exit_idx, reason, entry_px, exit_px, pnl, r_mult)
        if x < 0:  # skipped: the next bar may signal again
            t += 1
            continue
        k += 1
        t = x  # the exit bar is flat again: its own signal may open the next trade (x > t)
    return k


def walk_bits_core(bits, open_, high, low, close, stop, target, max_hold, cost_bps,
                   entry_idx, exit_idx, reason, entry_px, exit_px, pnl, r_mult):
    """`walk_core` driven by the individual's signal bitmask (`signal_word_core` words,
    [n_words(n)] uint32): flat stretches are skipped a word at a time (`next_signal_core`),
    in a position the bars are walked as in `walk_core`. The same trades, bit for bit."""
    n = open_.shape[0]
    k = 0
    t = 0
    while t < n - 1:
        t = next_signal_core(bits, t)
        if t >= n - 1:  # none left, or only on the last bar (no next open)
            break
        x = position_core(t, open_, high, low, close, stop, target, max_hold, cost_bps, k,
                          entry_idx, exit_idx, reason, entry_px, exit_px, pnl, r_mult)
        if x < 0:
            t += 1
            continue
        k += 1
        t = x
    return k
