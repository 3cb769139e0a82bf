"""Recursions of the synthetic market generator (numba, cpu).

Vectorised NumPy cannot express these two recursions; each is one pass over time.
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
