"""The built-in synthetic market: deterministic daily OHLCV on the XNYS calendar.

Model, per session t (sessions of the XNYS calendar from exchange-calendars, holidays
included) and symbol i:

    regime[t]  Markov chain over {0 sideways, 1 bull, 2 bear}, long spells that switch
    m[t]       = drift[regime] + volmult[regime] * garch_m[t] + jump_m[t]        market factor
    r[i,t]     = beta_i * m[t] + garch_i[t] + jump_i[t]                          log return
    garch      GARCH(1,1) (alpha 0.08, beta 0.90) on Student-t(5) innovations: volatility
               clusters and tails are fat; jumps are rare (Bernoulli) and large (Student-t)
    close      = p0_i * exp(cumsum r)
    open       = previous close * exp(gap), gap ~ 0.25 sigma N(0,1)
    high, low  = max/min(open, close) * exp(+-|N(0,1)| * 0.6 sigma): low <= open, close <= high
    volume     = v0_i * (1 + 6 |r| / sigma) * lognormal noise: rises with |return|

Planted signal (`universe.synthetic.planted`, off by default): a known effect that the
pipeline's own features can recover, so the learning stages can be shown to find a signal
that is there (and, at strength 0, none that is not). With strength s > 0 and horizon h, the
returns above are generated one day at a time and each gets a drift:

    x[i,t]     = (RSI14(close[i, ..t]) - 50) / 50     the `rsi` specialist's score (Wilder RSI
                                                      of the closes so far, as kernels.indicators.cores)
    z[i,t]     = x[i,t] / 0.25                        (0.25 ~ the score's standard deviation)
    g[i,t]     = -z[i,t]                              kind linear: reversal, overbought drifts down
               = z if |z| <= 1.4 else -1.4 sign(z)    kind nonlinear: momentum inside the band,
                                                      reversal outside it; 1.4 makes the
                                                      covariance of z with g ~ 0 for Gaussian z,
                                                      so a linear model sees little of it
                                                      (g = 0 during the RSI's 14-row warm-up)
    r[i,t]    += s * sigma[i,t] * mean(g[i,t-h..t-1]) sigma[i,t] = sqrt((beta_i 0.009)^2 +
                                                      garch variance): the day's volatility

The signal of day t uses closes up to t only and moves the returns of t+1..t+h: causal, and
the label over the next h days depends on it. s is the daily drift per unit of g in daily
volatilities: over h days the planted move is about s h g sigma against noise sigma sqrt(h).
Measured out of sample (h7 labels, logistic meta model): s = 0.1 gives AUC ~0.57, IC ~0.13
(`make demo`); s = 0.3 gives AUC ~0.72, IC ~0.4 (tests/domain/test_planted_signal.py).
The drift feeds back into the RSI it is computed from (as a real effect would); the linear
reversal and the nonlinear band are both self-limiting (the band's momentum does lengthen
trends: at s = 0.5 the symbols' yearly returns spread wider and lean lower). Deterministic: the signal adds no
random draw, and strength 0 skips it, so that market is byte for byte the one without it.

Determinism: the market uses `SeedSequence([seed, 0])`, symbol i `SeedSequence([seed, 1,
crc32(name)])`, so a symbol's series does not depend on which other symbols are generated.
Every random stream is its own child generator drawn in one call, so extending the end date
appends sessions without changing earlier ones.
"""

from __future__ import annotations

import datetime as dt
import functools
import zlib
from dataclasses import dataclass

import numpy as np
import polars as pl

from domain.schema import RAW_BARS
from kernels.simulation import PLANTED_LINEAR, PLANTED_NONLINEAR, garch_paths, markov_chain, planted_returns

REGIME_DRIFT = np.array([0.0001, 0.0007, -0.0009])
REGIME_VOLMULT = np.array([0.9, 0.8, 1.6])
REGIME_TRANSITION = np.array(
    [
        [0.990, 0.006, 0.004],
        [0.003, 0.995, 0.002],
        [0.008, 0.004, 0.988],
    ]
)
GARCH_ALPHA, GARCH_BETA = 0.08, 0.90
MARKET_VOL = 0.009
T_DOF = 5.0
PLANTED_RSI_N = 14
PLANTED_SCALE = 0.25  # ~ std of (RSI14 - 50) / 50 on this market
PLANTED_BAND = 1.4    # nonlinear: E[z g(z)] = 0 for a standard normal z
_STREAMS = ("params", "innovations", "jump_flags", "jump_sizes", "bars", "volume")


@functools.lru_cache(maxsize=16)
def xnys_sessions(start: dt.date, end: dt.date) -> np.ndarray:
    """XNYS trading sessions in [start, end] as datetime64[ns] (holidays excluded)."""
    import exchange_calendars as xcals

    lo = max(start, dt.date(1990, 1, 1))
    cal = xcals.get_calendar("XNYS", start=lo.isoformat(), end=end.isoformat())
    sessions = cal.sessions
    return sessions.tz_localize(None).to_numpy().astype("datetime64[ns]")


def _student_t(rng: np.random.Generator, size: int) -> np.ndarray:
    """Student-t(5) scaled to unit variance."""
    return rng.standard_t(T_DOF, size) * np.sqrt((T_DOF - 2.0) / T_DOF)


def _streams(seed_parts: list[int]) -> dict[str, np.random.Generator]:
    children = np.random.SeedSequence(seed_parts).spawn(len(_STREAMS))
    return {name: np.random.Generator(np.random.PCG64(c)) for name, c in zip(_STREAMS, children)}


def symbol_seed(name: str) -> int:
    return zlib.crc32(name.encode())


@dataclass(frozen=True)
class Planted:
    """The planted signal (see the module docstring); strength 0 plants nothing."""
    strength: float = 0.0
    kind: str = "linear"  # "linear" | "nonlinear"
    horizon: int = 7

    def __post_init__(self):
        if not self.strength >= 0.0:
            raise ValueError(f"planted strength must be >= 0, got {self.strength}")
        if self.kind not in ("linear", "nonlinear"):
            raise ValueError(f"planted kind must be 'linear' or 'nonlinear', got {self.kind!r}")
        if self.horizon < 1:
            raise ValueError(f"planted horizon must be >= 1, got {self.horizon}")

    @property
    def active(self) -> bool:
        return self.strength > 0.0


NO_PLANTED = Planted()


@dataclass(frozen=True)
class SyntheticMarket:
    seed: int
    start: dt.date
    end: dt.date
    planted: Planted = NO_PLANTED

    @functools.cached_property
    def sessions(self) -> np.ndarray:
        return xnys_sessions(self.start, self.end)

    @functools.cached_property
    def market(self) -> tuple[np.ndarray, np.ndarray]:
        """(regime int8[T], market log return float64[T])."""
        n = len(self.sessions)
        rs = _streams([self.seed, 0])
        regime = markov_chain(rs["params"].random(n), REGIME_TRANSITION, 0)
        omega = np.array([MARKET_VOL**2 * (1.0 - GARCH_ALPHA - GARCH_BETA)])
        eps, _ = garch_paths(_student_t(rs["innovations"], n)[None, :], omega, GARCH_ALPHA, GARCH_BETA)
        jumps = (rs["jump_flags"].random(n) < 0.004) * (-0.01 + 0.03 * _student_t(rs["jump_sizes"], n))
        ret = REGIME_DRIFT[regime] + REGIME_VOLMULT[regime] * eps[0] + jumps
        return regime, ret

    def generate(self, symbols: list[str]) -> pl.DataFrame:
        """Every session of every symbol, in RAW_BARS schema, sorted by symbol then date."""
        if not symbols:
            return RAW_BARS.empty()
        dates = self.sessions
        n, k = len(dates), len(symbols)
        _, m = self.market
        z = np.empty((k, n))
        jumps = np.empty((k, n))
        u_bars = np.empty((k, 3, n))
        u_vol = np.empty((k, n))
        beta, idio, p0, v0 = (np.empty(k) for _ in range(4))
        for i, name in enumerate(symbols):
            rs = _streams([self.seed, 1, symbol_seed(name)])
            beta[i], idio[i], lp0, lv0 = rs["params"].uniform([0.5, 0.008, np.log(10), np.log(2e5)], [1.6, 0.025, np.log(400), np.log(5e7)])
            p0[i], v0[i] = np.exp(lp0), np.exp(lv0)
            z[i] = _student_t(rs["innovations"], n)
            jumps[i] = (rs["jump_flags"].random(n) < 0.003) * 0.04 * _student_t(rs["jump_sizes"], n)
            u_bars[i] = rs["bars"].standard_normal((n, 3)).T  # (n, 3): prefix-stable in n
            u_vol[i] = rs["volume"].standard_normal(n)
        omega = idio**2 * (1.0 - GARCH_ALPHA - GARCH_BETA)
        eps, sig = garch_paths(z, omega, GARCH_ALPHA, GARCH_BETA)
        ret = beta[:, None] * m[None, :] + eps + jumps
        total_sig = np.sqrt((beta[:, None] * MARKET_VOL) ** 2 + sig**2)
        if self.planted.active:
            kind = PLANTED_LINEAR if self.planted.kind == "linear" else PLANTED_NONLINEAR
            ret = planted_returns(ret, total_sig, np.log(p0), float(self.planted.strength), kind,
                                  int(self.planted.horizon), PLANTED_RSI_N, PLANTED_SCALE, PLANTED_BAND)

        log_close = np.log(p0)[:, None] + np.cumsum(ret, axis=1)
        close = np.exp(log_close)
        prev = np.concatenate([p0[:, None], close[:, :-1]], axis=1)
        open_ = prev * np.exp(0.25 * total_sig * u_bars[:, 0])
        high = np.maximum(open_, close) * np.exp(np.abs(u_bars[:, 1]) * 0.6 * total_sig)
        low = np.minimum(open_, close) * np.exp(-np.abs(u_bars[:, 2]) * 0.6 * total_sig)
        volume = v0[:, None] * (1.0 + 6.0 * np.abs(ret) / total_sig) * np.exp(0.25 * u_vol)

        return pl.DataFrame(
            {
                "date": np.tile(dates, k),
                "symbol": pl.Series(symbols).to_numpy().repeat(n),
                "open": open_.astype(np.float32).ravel(),
                "high": high.astype(np.float32).ravel(),
                "low": low.astype(np.float32).ravel(),
                "close": close.astype(np.float32).ravel(),
                "volume": volume.astype(np.float32).ravel(),
            },
            schema=RAW_BARS.dtypes,
        )
