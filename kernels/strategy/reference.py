"""A plain-Python (no numba) reading of the trade rules, bar by bar with an in-position flag,
as the seed's CPU backtest is written. Slow; the tests compare the compiled walk to it.

The position is freed on its exit bar and that bar's signal is then examined, so a signal on
the exit bar enters at the next open (the original engine's rule). The two deviations from
the original (see `trade_walk`): no entry when the next open is at or below the stop, and a
position open on the last bar is closed at its close with reason `end`.

Signals come from `seller_exhaustion(...)["signal"]`; every price is a Python float and
each operation is rounded on its own (no FMA), as in `trade_walk`.
"""

from __future__ import annotations

import math

import numpy as np

from kernels.seller_exhaustion import seller_exhaustion
from kernels.strategy.params import END, STOP, STOP_GAP, TIME, TP, Individual


def reference_trades(open_, high, low, close, signal, atr, atr_stop_mult, reward_r, max_hold, fee_bps, slippage_bps) -> list[dict]:
    """Trades (dicts: entry_idx, exit_idx, reason, entry_px, exit_px, pnl, r_mult) of the rules
    applied to a boolean signal and its ATR."""
    o, h, lo, c, a = ([float(x) for x in arr] for arr in (open_, high, low, close, atr))
    sig = [bool(x) for x in signal]
    n = len(o)
    trades = []
    in_pos = False
    entry_i = stop = target = entry = risk = 0.0
    for t in range(n):
        if in_pos:
            exit_px = None
            if t > entry_i:  # exits are checked from the bar after the entry bar
                if o[t] <= stop:
                    exit_px, why = o[t], STOP_GAP
                elif lo[t] <= stop:
                    exit_px, why = stop, STOP
                elif h[t] >= target:
                    exit_px, why = target, TP
                elif t - entry_i >= max_hold:
                    exit_px, why = c[t], TIME
            if exit_px is None and t == n - 1:
                exit_px, why = c[t], END
            if exit_px is None:
                continue  # a signal on a bar spent in the position is ignored
            cost = (entry + exit_px) * (fee_bps + slippage_bps) / 1e4
            net = exit_px - entry - cost
            trades.append({"entry_idx": entry_i, "exit_idx": t, "reason": why, "entry_px": entry, "exit_px": exit_px,
                               "pnl": net / entry, "r_mult": net / risk})
            in_pos = False  # flat on the exit bar: its signal is examined below, like any flat bar's
        if sig[t] and t + 1 < n and not math.isnan(a[t]):
            s = lo[t] - atr_stop_mult * a[t]
            e = o[t + 1]
            if e - s > 0:
                in_pos, entry_i, entry, stop, risk = True, t + 1, e, s, e - s
                target = e + reward_r * risk
    return trades


def reference_individual(open_, high, low, close, volume, ind: Individual) -> list[dict]:
    """reference_trades with the individual's seller-exhaustion signal and ATR."""
    f = seller_exhaustion(np.asarray(high, float), np.asarray(low, float), np.asarray(close, float),
                          np.asarray(volume, float), ind.seller)
    b = ind.backtest
    return reference_trades(open_, high, low, close, f["signal"], f["atr"], b.atr_stop_mult, b.reward_r, b.max_hold,
                            b.fee_bps, b.slippage_bps)
