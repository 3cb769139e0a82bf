"""Summary metrics of each individual's trades (host side, the same code for every engine).

Trades of individual i are rows offsets[i]:offsets[i+1] of the flat trade arrays. With
p_k the net pnl fraction and R_k the net R multiple of trade k (see `trade_walk`), n trades:

    n_trades      n
    total_return  prod(1 + p_k) - 1           (each trade holds the whole equity, compounded)
    win_rate      #(p_k > 0) / n              0 when n == 0
    avg_r         mean(R_k)                   0 when n == 0
    max_drawdown  max_k (1 - E_k / max_{j<=k} E_j),  E_0 = 1, E_k = prod_{j<=k}(1 + p_j):
                  the worst fall of the trade equity from its running peak, a fraction >= 0
    sharpe        mean(p) / std(p, ddof=1)    per trade, not annualised; 0 when n < 2 or the
                  std is 0
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

METRICS = ("n_trades", "total_return", "win_rate", "avg_r", "max_drawdown", "sharpe")


@njit(cache=True, nogil=True)
def _summary(offsets, pnl, r_mult, n_trades, total_return, win_rate, avg_r, max_dd, sharpe):
    for i in range(offsets.shape[0] - 1):
        a = offsets[i]
        b = offsets[i + 1]
        n = b - a
        equity = 1.0
        peak = 1.0
        dd = 0.0
        wins = 0
        s_r = 0.0
        s_p = 0.0
        for k in range(a, b):
            p = pnl[k]
            equity *= 1.0 + p
            peak = max(peak, equity)
            d = 1.0 - equity / peak
            dd = max(dd, d)
            if p > 0.0:
                wins += 1
            s_r += r_mult[k]
            s_p += p
        n_trades[i] = n
        total_return[i] = equity - 1.0
        max_dd[i] = dd
        win_rate[i] = wins / n if n > 0 else 0.0
        avg_r[i] = s_r / n if n > 0 else 0.0
        sr = 0.0
        if n >= 2:
            mean = s_p / n
            ss = 0.0
            for k in range(a, b):
                ss += (pnl[k] - mean) * (pnl[k] - mean)
            std = math.sqrt(ss / (n - 1))
            if std > 0.0:
                sr = mean / std
        sharpe[i] = sr


def summarize(offsets: np.ndarray, pnl: np.ndarray, r_mult: np.ndarray) -> dict[str, np.ndarray]:
    """The METRICS of every individual (int64 n_trades, float64 others), one entry per individual."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    m = offsets.shape[0] - 1
    out = {"n_trades": np.empty(m, dtype=np.int64)}
    for name in METRICS[1:]:
        out[name] = np.empty(m, dtype=np.float64)
    _summary(offsets, np.ascontiguousarray(pnl, dtype=np.float64), np.ascontiguousarray(r_mult, dtype=np.float64),
             *(out[name] for name in METRICS))
    return out
