"""Incremental (streaming) indicators for the live path: one bar in, one value out.

Contract, the same for every updater:

    u = SMAUpdater(14)           # period(s) as in `kernels.indicators`
    v = u.update(x)              # OHLC indicators: u.update(high, low, close)
    u.value                      # the last value returned (NaN before the first update)
    u.ready                      # True from the bar at index `u.lookback` on

`update` returns a Python float (DMIUpdater: a tuple (plus_di, minus_di, adx)), `math.nan`
during warm-up. Each update does O(1) work whatever the history length; the state is a few
float accumulators plus ring buffers (`collections.deque(maxlen=...)`) of at most n + 1
values. `replay(u, *series)` feeds whole arrays through an updater (to warm it up from
history, or to compare it with the batch API) and returns float64 arrays.
`UPDATERS` names them in the one streaming vocabulary, the cores of
`kernels.indicators.SPECS` (sma ... dmi, moments, rocp: `UPDATERS[name](float32, **params)`);
the ATC and seller-exhaustion updaters live with their families (kernels.atc.stream,
kernels.seller_exhaustion).

Exactness: fed float64 values, the updaters equal `kernels.indicators` called with
`dtype=np.float64` bar for bar, bit for bit, NaN positions included. Each one performs the
floating-point operations of its core in `kernels.indicators.cores` in the same order (the same
seeds, running sums updated add-emit-subtract, TA-Lib's O(1) WMA and LINEARREG updates,
Wilder's `a = a*(1-1/n) + v/n`, the same zero tests: `|v| < 1e-14` for KAMA and the
variance, exact zero for RSI and DMI, and the moments' anchored sums). Where a core skips
an addition in a branch (RSI's gain/loss, DMI's +DM/-DM) the updater adds 0.0 instead,
which leaves those non-negative accumulators unchanged bit for bit. Where a core recomputes
a window (the moments' re-anchoring every n bars) the updater accumulates the same sums as
the bars arrive, so no bar costs more than O(1). Inputs are converted with `float()`
first: float32 inputs are widened to float64 before any arithmetic, whereas the batch
kernels do a few differences and products in float32 for float32 arrays (e.g. the
moments' `x - anchor`), so only float64 inputs are guaranteed bit-identical.
tests/kernels/test_updaters.py checks all of this against the batch kernels as they stand.
The per-bar arithmetic is the cores' own: the steps of `kernels.indicators.steps` (SMA's and
WMA's rows, LINEARREG's sums and line, KAMA's ratio and fma step, EMA and the DEMA/TEMA outputs,
Wilder's smoothing, RSI, the true range, the DMI terms, the moments' sums and outputs), called
here in plain Python. What stays the updaters' own is the bookkeeping of one bar at a time: the
ring buffers, the warm-up counts, and the seeds the cores form over a window at once (EMA's mean,
KAMA's ratio sum, the moments' re-anchored sums) accumulated bar by bar in the same order.

Shared building blocks: EMAUpdater (SMA-seeded EMA; DEMA and TEMA chain them), WMAUpdater
(TA-Lib's rolling WMA; HMA chains three), `_Wilder` (mean-seeded Wilder average: RSI, ATR,
ADX), `_WilderSum` (DMI's sum-seeded `s - s/n + v`), `_RollingMoments`
(anchored sums for STDDEV and the z-score), and ATRUpdater for the two volatility ones.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Callable

import numpy as np

from kernels.indicators.steps import (dema_value, directional_moves, dmi_terms, ema_step_tied, kama_constant, kama_roll,
                                      kama_step, lsma_constants, lsma_roll, lsma_seed_step, lsma_value, moments_add, moments_drop,
                                      moments_out, moments_var, rsi_value, sma_step, tema_value, true_range, wilder_mean,
                                      wilder_sum, wma_seed_step, wma_step)

__all__ = [
    "ATRUpdater",
    "DEMAUpdater",
    "DMIUpdater",
    "EMAUpdater",
    "HMAUpdater",
    "KAMAUpdater",
    "LSMAUpdater",
    "RSIUpdater",
    "ReturnsUpdater",
    "SMAUpdater",
    "StdDevUpdater",
    "TEMAUpdater",
    "UPDATERS",
    "Updater",
    "VolatilityPercentUpdater",
    "VolatilityRatioUpdater",
    "WMAUpdater",
    "ZScoreUpdater",
    "replay",
]

NAN = math.nan


def _period(n, minimum: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < minimum:
        raise ValueError(f"period must be an integer >= {minimum}, got {n!r}")
    return int(n)


def _divide(a: float, b: float) -> float:
    """a / b with IEEE semantics (as NumPy divides arrays): +-inf or NaN instead of raising."""
    if b != 0.0:
        return a / b
    if a != a or a == 0.0:
        return NAN
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


class Updater:
    """Base class: bar counting, `value`, `ready` (bars seen > lookback)."""

    n_inputs = 1
    n_outputs = 1
    lookback = 0

    def __init__(self) -> None:
        self._count = 0
        self.value = NAN

    @property
    def ready(self) -> bool:
        """True once the last update produced a valid (non warm-up) value."""
        return self._count > self.lookback

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lookback={self.lookback}, bars={self._count}, value={self.value!r})"


class SMAUpdater(Updater):
    """mean(x[t-n+1..t]); running sum in TA-Lib's order: total += x; out = total/n; total -= oldest."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = _period(n)
        self.lookback = self.n - 1
        self._window: deque[float] = deque(maxlen=self.n)
        self._total = 0.0

    def update(self, x) -> float:
        x = float(x)
        self._window.append(x)
        self._count += 1
        if self._count < self.n:
            self._total += x
            return NAN
        out, self._total = sma_step(self._total, x, self._window[0], self.n)
        self.value = out
        return out


class EMAUpdater(Updater):
    """EMA with k = 2/(n+1): seeded by the mean of the first n values, then x*k + e*(1-k) (e kept where x == e), as ema_core."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = _period(n)
        self.lookback = self.n - 1
        self._k = 2.0 / (self.n + 1)
        self._omk = 1.0 - self._k
        self._acc = 0.0

    def update(self, x) -> float:
        x = float(x)
        self._count += 1
        if self._count < self.n:
            self._acc += x
            return NAN
        if self._count == self.n:
            self._acc += x
            out = self._acc / self.n
        else:
            out = ema_step_tied(x, self.value, self._k, self._omk)
        self.value = out
        return out


class DEMAUpdater(Updater):
    """2*EMA(x) - EMA(EMA(x)); the inner EMA is seeded by the mean of the first n EMA values."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = _period(n)
        self.lookback = 2 * (self.n - 1)
        self._e1 = EMAUpdater(self.n)
        self._e2 = EMAUpdater(self.n)

    def update(self, x) -> float:
        self._count += 1
        e1 = self._e1.update(x)
        if not self._e1.ready:
            return NAN
        e2 = self._e2.update(e1)
        if not self._e2.ready:
            return NAN
        out = dema_value(e1, e2)
        self.value = out
        return out


class TEMAUpdater(Updater):
    """3*EMA1 - 3*EMA2 + EMA3 with EMA2 = EMA(EMA1), EMA3 = EMA(EMA2), each SMA-seeded."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = _period(n)
        self.lookback = 3 * (self.n - 1)
        self._emas = (EMAUpdater(self.n), EMAUpdater(self.n), EMAUpdater(self.n))

    def update(self, x) -> float:
        self._count += 1
        values = []
        v = x
        for ema in self._emas:
            v = ema.update(v)
            if not ema.ready:
                return NAN
            values.append(v)
        e1, e2, e3 = values
        out = tema_value(e1, e2, e3)
        self.value = out
        return out


class WMAUpdater(Updater):
    """Weights 1..n (newest n), divisor n(n+1)/2, TA-Lib's O(1) update:
    sub += x; sub -= x[t-n]; sum += n*x; out = sum/divisor; sum -= sub."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = _period(n)
        self.lookback = self.n - 1
        self._divider = (self.n * (self.n + 1)) // 2
        self._window: deque[float] = deque(maxlen=self.n)  # x[t-n..t-1] before the append
        self._sum = 0.0
        self._sub = 0.0

    def update(self, x) -> float:
        x = float(x)
        self._count += 1
        if self._count < self.n:
            self._sum, self._sub = wma_seed_step(self._sum, self._sub, x, self._count)
            self._window.append(x)
            return NAN
        trailing = self._window[0] if len(self._window) == self.n else 0.0  # x - 0.0 is x: the core's first row
        self._window.append(x)
        out, self._sum, self._sub = wma_step(self._sum, self._sub, x, trailing, self.n, self._divider)
        self.value = out
        return out


class HMAUpdater(Updater):
    """Hull MA: WMA(2*WMA(x, n//2) - WMA(x, n), int(sqrt(n))), three rolling WMAs.

    round_diff=True rounds the intermediate series to float32 before the final WMA reads it,
    as `kernels.indicators.cores.hma_core` does for float32 outputs (its scratch array is float32);
    False (default) matches the float64 batch kernel."""

    def __init__(self, n: int, round_diff: bool = False) -> None:
        super().__init__()
        self.n = _period(n, 2)
        m = int(math.sqrt(self.n))
        self.lookback = self.n - 1 + m - 1
        self._half = WMAUpdater(self.n // 2)
        self._full = WMAUpdater(self.n)
        self._diff = WMAUpdater(m)
        self._round = bool(round_diff)

    def update(self, x) -> float:
        x = float(x)
        self._count += 1
        w_h = self._half.update(x)
        w_f = self._full.update(x)
        if not self._full.ready:
            return NAN
        d = 2.0 * w_h - w_f
        if self._round:
            d = float(np.float32(d))
        out = self._diff.update(d)
        if self._diff.ready:
            self.value = out
        return out


class LSMAUpdater(Updater):
    """TA-Lib LINEARREG: least-squares line over the last n values (t = 0..n-1), at t = n-1.
    slope = (n*Sty - St*Sy)/(n*Stt - St^2); out = (Sy - slope*St)/n + slope*(n-1);
    Sty' = Sty - (Sy - x_oldest) + (n-1)*x_new, Sy' = Sy - x_oldest + x_new."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n = _period(n, 2)  # n = 1 has a zero divisor (TA-Lib needs n >= 2 too)
        self.lookback = n - 1
        self._st, self._divisor = lsma_constants(n)
        self._window: deque[float] = deque(maxlen=n)  # x[t-n..t-1] before the append
        self._sy = 0.0
        self._sty = 0.0

    def update(self, x) -> float:
        x = float(x)
        n = self.n
        i = self._count
        self._count += 1
        if i < n:
            self._sy, self._sty = lsma_seed_step(self._sy, self._sty, x, i)
        else:
            self._sy, self._sty = lsma_roll(self._sy, self._sty, self._window[0], x, n)
        self._window.append(x)
        if i < n - 1:
            return NAN
        out = lsma_value(self._sy, self._sty, n, self._st, self._divisor)
        self.value = out
        return out


class KAMAUpdater(Updater):
    """Kaufman AMA (TA-Lib): ER = |x - x[t-n]| / sum|x[i] - x[i-1]| over n bars (1 when the sum
    is 0 or <= the change), sc = (ER*(2/3 - 2/31) + 2/31)^2, kama += (x - kama)*sc, seeded
    with x[n-1]; first value at bar n. Both multiply-adds fused, as kama_core fuses them."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = _period(n, 2)
        self.lookback = self.n
        self._window: deque[float] = deque(maxlen=self.n)  # x[t-n..t-1] before the append
        self._sum_roc = 0.0
        self._trailing = 0.0  # x[t-n-1]

    def update(self, x) -> float:
        x = float(x)
        i = self._count
        self._count += 1
        window = self._window
        if i < self.n:  # warm-up: sum |x[i-1] - x[i]| over bars 1..n-1 (steps.kama_change_sum, a bar at a time)
            if i > 0:
                self._sum_roc += math.fabs(window[-1] - x)
            window.append(x)
            return NAN
        if i == self.n:
            self._sum_roc += math.fabs(window[-1] - x)
            self.value = window[-1]
            self._trailing = window[0]
            roc = x - self._trailing
        else:
            tr = window[0]
            roc = x - tr
            self._sum_roc = kama_roll(self._sum_roc, self._trailing, tr, x, window[-1])
            self._trailing = tr
        window.append(x)
        out = kama_step(x, self.value, kama_constant(self._sum_roc, roc))
        self.value = out
        return out


class _Wilder:
    """Wilder's average: the mean of the first n values, then a = a*(1 - 1/n) + v*(1/n), as
    in the cores. `update` returns NaN until seeded."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.inv_n = 1.0 / n
        self.omn = 1.0 - self.inv_n
        self.count = 0
        self.value = 0.0

    def update(self, v: float) -> float:
        n = self.n
        self.count += 1
        if self.count < n:
            self.value += v
            return NAN
        if self.count == n:
            self.value += v
            self.value /= n
        else:
            self.value = wilder_mean(self.value, v, self.inv_n, self.omn)
        return self.value


class _WilderSum:
    """DMI's smoothed sum: the sum of the first n-1 values, then s = s*(1 - 1/n) + v."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.omn = 1.0 - 1.0 / n
        self.count = 0
        self.value = 0.0

    def update(self, v: float) -> None:
        self.count += 1
        if self.count < self.n:
            self.value += v
        else:
            self.value = wilder_sum(self.value, v, self.omn)


class RSIUpdater(Updater):
    """Wilder RSI: Wilder averages of gains and losses (seeded by the means of the first n
    changes); RSI = 100*gain/(gain + loss), 0 when gain + loss is exactly 0."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = _period(n, 2)
        self.lookback = self.n
        self._gain = _Wilder(self.n)
        self._loss = _Wilder(self.n)
        self._prev = NAN

    def update(self, x) -> float:
        x = float(x)
        self._count += 1
        d = x - self._prev
        self._prev = x
        if self._count == 1:
            return NAN
        if d < 0:
            gain = self._gain.update(0.0)
            loss = self._loss.update(-d)
        else:
            gain = self._gain.update(d)
            loss = self._loss.update(0.0)
        if self._count <= self.n:
            return NAN
        out = rsi_value(gain, loss)
        self.value = out
        return out


class ATRUpdater(Updater):
    """Wilder ATR: true range from bar 1, mean of TR[1..n] at bar n, then ATR = ATR*(1-1/n) + TR/n."""

    n_inputs = 3

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = _period(n)
        self.lookback = self.n
        self._avg = _Wilder(self.n)
        self._prev_close = NAN

    def update(self, high, low, close) -> float:
        high, low, close = float(high), float(low), float(close)
        self._count += 1
        prev_close, self._prev_close = self._prev_close, close
        if self._count == 1:
            return NAN
        out = self._avg.update(true_range(high, low, prev_close))
        if self._count <= self.n:
            return NAN
        self.value = out
        return out


class DMIUpdater(Updater):
    """Wilder's directional movement (TA-Lib PLUS_DI, MINUS_DI, ADX): update returns
    (+DI, -DI, ADX). +DM/-DM/TR are summed over bars 1..n-1, then s = s*(1 - 1/n) + v;
    DI = 100*DM/TR from bar n (0 when TR is exactly 0); DX = 100*|+DI - -DI|/(+DI + -DI);
    ADX = mean of DX over bars n..2n-1, then ADX = ADX*(1-1/n) + DX/n, held where DX is undefined.
    `ready` (and `lookback`, 2n-1) refer to ADX; `di_ready` to the DIs (from bar n)."""

    n_inputs = 3
    n_outputs = 3

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = _period(n, 2)
        self.lookback = 2 * self.n - 1
        self.value = (NAN, NAN, NAN)
        self._pdm = _WilderSum(self.n)
        self._mdm = _WilderSum(self.n)
        self._tr = _WilderSum(self.n)
        self._adx = _Wilder(self.n)
        self._prev = (NAN, NAN, NAN)

    @property
    def di_ready(self) -> bool:
        return self._count > self.n

    def update(self, high, low, close) -> tuple[float, float, float]:
        high, low, close = float(high), float(low), float(close)
        n = self.n
        i = self._count
        self._count += 1
        prev_high, prev_low, prev_close = self._prev
        self._prev = (high, low, close)
        if i == 0:
            return (NAN, NAN, NAN)
        pdm, mdm = directional_moves(high, prev_high, low, prev_low)
        self._pdm.update(pdm)
        self._mdm.update(mdm)
        self._tr.update(true_range(high, low, prev_close))
        if i < n:
            return (NAN, NAN, NAN)
        p, m, have_dx, dx = dmi_terms(self._pdm.value, self._mdm.value, self._tr.value)
        if i <= 2 * n - 1:  # ADX seed: the mean of DX over bars n..2n-1, zeros included
            adx = self._adx.update(dx)
        else:
            adx = self._adx.update(dx) if have_dx else self._adx.value
        out = (p, m, adx)
        self.value = out
        return out


class _RollingMoments(Updater):
    """Rolling population moments over n: var = E[d^2] - E[d]^2 with d = x - anchor (the
    means as sums times 1/n, as the core computes them).

    As in moments_core, the anchor is x[0], then x[k*n] from bar k*n + n - 1 on (k >= 1),
    where the sums restart as the sums of d over x[k*n .. k*n + n-2]. The core recomputes
    those sums on that bar; here a shadow pair accumulates them, in the same order, as
    those bars arrive, so every bar costs O(1) and the values are the same.
    """

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = _period(n)
        self._inv_n = 1.0 / self.n
        self.lookback = self.n - 1
        self._window: deque[float] = deque(maxlen=self.n)  # x[t-n+1..t] after the append
        self._anchor = 0.0
        self._s1 = 0.0
        self._s2 = 0.0
        self._next_anchor = 0.0  # the shadow sums, relative to the next anchor
        self._next_s1 = 0.0
        self._next_s2 = 0.0

    def update(self, x) -> float:
        x = float(x)
        n = self.n
        i = self._count
        self._count += 1
        self._window.append(x)
        if i == 0:
            self._anchor = x
        elif i >= n:
            phase = i % n
            if phase == 0:  # x[k*n]: the next anchor
                self._next_anchor = x
                self._next_s1 = 0.0
                self._next_s2 = 0.0
            if phase == n - 1:  # bar k*n + n-1: switch to the next anchor's sums
                self._anchor, self._s1, self._s2 = self._next_anchor, self._next_s1, self._next_s2
            else:  # bars k*n .. k*n + n-2 enter the next anchor's sums
                self._next_s1, self._next_s2 = moments_add(self._next_s1, self._next_s2, x - self._next_anchor)
        d = x - self._anchor
        self._s1, self._s2 = moments_add(self._s1, self._s2, d)
        if i < n - 1:
            return NAN
        mean1, var = moments_var(self._s1, self._s2, self._inv_n)
        self._s1, self._s2 = moments_drop(self._s1, self._s2, self._window[0] - self._anchor)
        out = moments_out(d - mean1, var, self._zscore)
        self.value = out
        return out


class StdDevUpdater(_RollingMoments):
    """Population standard deviation over n (TA-Lib STDDEV, nbdev 1): sqrt(var), 0 where var < 1e-14."""

    _zscore = 0


class ZScoreUpdater(_RollingMoments):
    """(x - mean)/sqrt(var) over the last n values, 0 where var < 1e-14 (computed as
    (d - E[d])/sqrt(var) with d = x - anchor, as the core does)."""

    _zscore = 1


class ReturnsUpdater(Updater):
    """Simple return over n bars (TA-Lib ROCP): (x - x[t-n]) / x[t-n], 0 when x[t-n] is 0."""

    def __init__(self, n: int = 1) -> None:
        super().__init__()
        self.n = _period(n)
        self.lookback = self.n
        self._window: deque[float] = deque(maxlen=self.n)  # x[t-n..t-1] before the append

    def update(self, x) -> float:
        x = float(x)
        self._count += 1
        if self._count <= self.n:
            self._window.append(x)
            return NAN
        prev = self._window[0]
        self._window.append(x)
        out = (x - prev) / prev if prev != 0.0 else 0.0
        self.value = out
        return out


class VolatilityPercentUpdater(Updater):
    """ATR(n) / close * 100 (n = 14 in the batch API's volatility_percent)."""

    n_inputs = 3

    def __init__(self, n: int = 14) -> None:
        super().__init__()
        self._atr = ATRUpdater(n)
        self.lookback = self._atr.lookback

    def update(self, high, low, close) -> float:
        close = float(close)
        self._count += 1
        a = self._atr.update(high, low, close)
        if not self._atr.ready:
            return NAN
        out = _divide(a, close) * 100.0
        self.value = out
        return out


class VolatilityRatioUpdater(Updater):
    """ATR(fast) / ATR(slow) (14 and 28 in the batch API's volatility_ratio)."""

    n_inputs = 3

    def __init__(self, fast: int = 14, slow: int = 28) -> None:
        super().__init__()
        self._fast = ATRUpdater(fast)
        self._slow = ATRUpdater(slow)
        self.lookback = max(self._fast.lookback, self._slow.lookback)

    def update(self, high, low, close) -> float:
        high, low, close = float(high), float(low), float(close)
        self._count += 1
        a = self._fast.update(high, low, close)
        b = self._slow.update(high, low, close)
        if not self.ready:
            return NAN
        out = _divide(a, b)
        self.value = out
        return out


# The streaming vocabulary, the only one: the updater of each core of
# kernels.indicators.SPECS, by the Spec's name and with its parameters by name (n; mode for
# moments: 0 std, 1 z-score; which for dmi). UPDATERS[name](float32, **params) -> Updater;
# `float32`: the batch call being repeated stores float32 outputs (only the Hull MA depends
# on it, see HMAUpdater). The public names that share a core (rolling_std and zscore:
# moments; plus_di, minus_di, adx: dmi; returns: rocp) stream through it. A core without an
# entry streams through kernels.indicators.streaming.SpecWindowUpdater; a family's own updaters live
# in the family (kernels.atc.stream, kernels.seller_exhaustion).
def _moments(f32: bool, n: int, mode: int) -> Updater:
    if mode not in (0, 1):
        raise ValueError(f"moments: mode must be 0 (std) or 1 (zscore), got {mode!r}")
    return ZScoreUpdater(n) if mode else StdDevUpdater(n)


def _dmi(f32: bool, n: int, which: int = 0) -> Updater:
    if which != 0:
        raise ValueError(f"dmi: the streaming updater computes all three outputs (which=0), got which={which!r}")
    return DMIUpdater(n)


UPDATERS: dict[str, Callable[..., Updater]] = {
    "sma": lambda f32, n: SMAUpdater(n),
    "ema": lambda f32, n: EMAUpdater(n),
    "wma": lambda f32, n: WMAUpdater(n),
    "dema": lambda f32, n: DEMAUpdater(n),
    "tema": lambda f32, n: TEMAUpdater(n),
    "hma": lambda f32, n: HMAUpdater(n, round_diff=f32),
    "lsma": lambda f32, n: LSMAUpdater(n),
    "kama": lambda f32, n: KAMAUpdater(n),
    "rsi": lambda f32, n: RSIUpdater(n),
    "atr": lambda f32, n: ATRUpdater(n),
    "dmi": _dmi,
    "moments": _moments,
    "rocp": lambda f32, n: ReturnsUpdater(n),
}


def replay(updater: Updater, *series):
    """Feed 1-D series bar by bar through `updater` (continuing from its current state) and
    return its outputs as a float64 array, or a tuple of arrays for multi-output updaters."""
    if len(series) != updater.n_inputs:
        raise ValueError(f"{type(updater).__name__} takes {updater.n_inputs} input series, got {len(series)}")
    columns = [np.asarray(s, dtype=np.float64) for s in series]
    if any(c.ndim != 1 for c in columns) or len({c.shape[0] for c in columns}) != 1:
        raise ValueError(f"expected 1-D series of one length, got shapes {[c.shape for c in columns]}")
    t_len = columns[0].shape[0]
    out = np.empty((updater.n_outputs, t_len), dtype=np.float64)
    update = updater.update
    if updater.n_outputs == 1:
        row = out[0]
        for t, bar in enumerate(zip(*(c.tolist() for c in columns))):
            row[t] = update(*bar)
        return row
    for t, bar in enumerate(zip(*(c.tolist() for c in columns))):
        out[:, t] = update(*bar)
    return tuple(out)
