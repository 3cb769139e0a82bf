"""Recursions of the synthetic market generator (numba, cpu).

Vectorised NumPy cannot express these recursions; each is one pass over time.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def markov_chain(u: np.ndarray, transition: np.ndarray, start: int) -> np.ndarray:
    """States of a Markov chain driven by uniforms `u` (length T).

    state[0] = start; state[t] = the first j with u[t] < cumsum(transition[state[t-1]])[j].
    """
    n = u.shape[0]
    k = transition.shape[0]
    out = np.empty(n, dtype=np.int8)
    s = start
    for t in range(n):
        if t > 0:
            acc = 0.0
            nxt = k - 1
            for j in range(k):
                acc += transition[s, j]
                if u[t] < acc:
                    nxt = j
                    break
            s = nxt
        out[t] = s
    return out


@njit(cache=True)
def garch_paths(z: np.ndarray, omega: np.ndarray, alpha: float, beta: float) -> tuple:
    """GARCH(1,1) shocks for N series at once.

    z: [N, T] unit-variance innovations; omega: [N]. For each series i:
        var[0] = omega / (1 - alpha - beta)   (the long-run variance)
        eps[t] = sqrt(var[t]) * z[t]
        var[t+1] = omega + alpha * eps[t]**2 + beta * var[t]
    Returns (eps, sigma), both [N, T] float64.
    """
    n, t_len = z.shape
    eps = np.empty((n, t_len))
    sig = np.empty((n, t_len))
    for i in range(n):
        var = omega[i] / (1.0 - alpha - beta)
        for t in range(t_len):
            s = np.sqrt(var)
            e = s * z[i, t]
            eps[i, t] = e
            sig[i, t] = s
            var = omega[i] + alpha * e * e + beta * var
    return eps, sig


PLANTED_LINEAR, PLANTED_NONLINEAR = 0, 1


@njit(cache=True)
def planted_returns(base: np.ndarray, vol: np.ndarray, log_p0: np.ndarray, strength: float, kind: int,
                    horizon: int, rsi_n: int, scale: float, band: float) -> np.ndarray:
    """Log returns [N, T] of N symbols with a planted, causal drift (one pass over time).

    base: [N, T] the returns without the signal; vol: [N, T] each day's daily volatility
    (known the day before); log_p0: [N] the log price before the first session. Per symbol:

        close[t]  = exp(log_p0 + sum(ret[0..t]))
        x[t]      = (RSI_rsi_n(close[0..t]) - 50) / 50    Wilder RSI as kernels.indicators.cores.rsi_core
                                                          (0 during its warm-up, t < rsi_n)
        z[t]      = x[t] / scale
        g[t]      = -z[t]                                kind 0 (linear: reversal)
                  = z[t] if |z[t]| <= band else -sign(z[t]) * band
                                                          kind 1 (nonlinear: momentum inside
                                                          the band, reversal outside it)
        ret[t]    = base[t] + strength * vol[t] * (g[t-1] + ... + g[t-horizon]) / horizon

    so the signal of day t (from closes up to t) moves the returns of t+1..t+horizon only.
    """
    n_sym, t_len = base.shape
    ret = np.empty((n_sym, t_len))
    ring = np.zeros(horizon)
    inv_n = 1.0 / rsi_n
    for i in range(n_sym):
        ring[:] = 0.0
        acc = 0.0
        lc = log_p0[i]
        prev_c = 0.0
        gain = 0.0
        loss = 0.0
        for t in range(t_len):
            r = base[i, t] + strength * vol[i, t] * acc / horizon
            ret[i, t] = r
            lc += r
            c = np.exp(lc)
            g = 0.0
            if t >= 1:
                d = c - prev_c
                up = d if d > 0.0 else 0.0
                down = -d if d < 0.0 else 0.0
                if t <= rsi_n:  # the seed: simple means of the first rsi_n changes
                    gain += up
                    loss += down
                    if t == rsi_n:
                        gain *= inv_n
                        loss *= inv_n
                else:
                    gain += (up - gain) * inv_n
                    loss += (down - loss) * inv_n
                if t >= rsi_n:
                    s = gain + loss
                    rsi = 100.0 * gain / s if s != 0.0 else 0.0
                    z = (rsi - 50.0) / 50.0 / scale
                    if kind == 0:
                        g = -z
                    elif abs(z) <= band:
                        g = z
                    else:
                        g = -band if z > 0.0 else band
            prev_c = c
            slot = t % horizon
            acc += g - ring[slot]
            ring[slot] = g
    return ret
