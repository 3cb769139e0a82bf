"""Synthetic data in the two file formats of the trade-log grid search
(`Raw_Market_data_MM-DD-YYYY.csv`, `all_trade_logs.csv`).

Deterministic: the same arguments give the same bytes. Used by the demo, the tests and
the benchmarks.

Format 1, market data: a folder with one CSV per trading day (weekdays from `start`, no
holiday calendar) named `Raw_Market_data_MM-DD-YYYY.csv`, header

    Ticker,Price,Val,Avg,Atr14,Atr28,Rsi,Volume,Adx28,Adx14,Adx7,Volatility Percent,Volatility Ratio,Time

and one row per second from 09:30:00 to 16:00:00 inclusive (23,401 seconds) for each
ticker, interleaved: for each second, every ticker's row in a fixed order; Time `HH:MM:SS`.

Format 2, `all_trade_logs.csv`: header

    Date,Trade Id,Ticker,Entry Price,Exit Price,Entry Time,Exit Time,Worst Exit Percent,
    Entry Volatility Percent,Entry Volatility Ratio,Entry Adx28,Entry Adx14,Entry Adx7,
    Trade Best Exit Percent,Trade Percent Change,Strategy,Notes

(one line in the file); the last two columns are noise the consumer must ignore. Date is
`YYYY-MM-DD` unless `date_format` says otherwise; Entry/Exit Time `HH:MM:SS`; Trade Id
`T000001`, ... in (date, entry time, ticker) order.

Price model, per ticker i (its own random streams, so a ticker does not depend on which
others are generated) and per second s of day d:

    log p[s] = log p[s-1] + sigma_i * u(s) * exp(h[m] - 0.4**2) * z[s]     (m: the minute of s)
        sigma_i  per-second volatility: daily volatility / sqrt(23,400) (profile per ticker)
        u(s)     intraday U shape (busier at the open and the close), mean square 1
        h[m]     stochastic log-volatility, an AR(1) per minute (phi 0.97, sd 0.4) that runs
                 on across days: volatility clusters for tens of minutes
        z        Student-t(4) scaled to unit variance: fat tails
    open of day d = last price of day d-1 * exp(overnight gap), gap ~ 0.3 * daily vol * t(4)
    Price    = the walk rounded to cents (at least 0.01)
    Volume   = v0_i * u(s) * (0.3 + |r| / instantaneous sigma) * lognormal(0, 0.5) (mean 1),
               a positive integer: rises with |return|
    Val      = round(Price * Volume, 2)
    Avg      = trailing 60-second mean of Price (across days; shorter at the very start), 4 dp

Indicators: 1-minute bars (minute m of a day covers seconds [60m, 60m+60); the 16:00:00
closing second belongs to no bar) feed `kernels.indicators` (TA-Lib semantics) over the
whole run of days per ticker: Atr14, Atr28 (4 dp), Rsi(14), Adx28, Adx14, Adx7 (2 dp).
Second s carries the values of the last completed minute (at 09:30:00..09:30:59, the
previous day's last minute); during the warm-up at the very beginning the cells are
empty. Then exactly as the trade log's columns are defined, with Python's `round`:

    Volatility Percent = round(Atr14 / Price * 100, 2)
    Volatility Ratio   = round(Atr14 / Atr28, 2)

from the written (rounded) Atr14, Atr28 and Price.

Trades: exactly `trades_per_day` per day, split evenly over the tickers (the remainder to
random ones). Per ticker and day the trades are laid out without overlap inside the part
of the session where every entry metric is defined: holding times are log-uniform on
[30 s, 45 min] (shrunk when the rate asks for more time than the session has), idle gaps
uniform spacings; the next entry is strictly after the previous exit; exits at 16:00:00 at
the latest. A ticker-day holds at most (its usable seconds) / 31 trades (about 750, so
about 5,000 a day over 7 tickers); more raises ValueError. At 2,000 a day over 7 tickers
the holds shrink to roughly 30 s .. 3.5 min. Half the trades (Strategy `rsi_dip`) then
move their entry back, by up to 15 minutes but not before the previous exit, to the first
second with the lowest minute RSI (keeping their holding time); the rest are
`random_entry`. Entry/Exit Price are the market prices at those seconds; Entry Volatility
Percent/Ratio and Entry Adx28/14/7 the market row's values at entry; over the path from
entry to exit inclusive, Trade Best Exit Percent = max (price/entry - 1) * 100, Worst Exit
Percent = the min, Trade Percent Change = (exit/entry - 1) * 100, rounded to 4 dp.

`generate_arrays` builds both tables in memory (polars, no CSV; the market frame has an
extra `Date` column and Time as pl.Time, the trade frame Date as pl.Date and the times as
pl.Time) for large benchmarks; `generate_grid_data` writes them as the files above.
"""

from __future__ import annotations

import datetime as dt
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from numba import njit

from kernels import indicators as ki

DEFAULT_TICKERS: tuple[str, ...] = ("SOXL", "IONQ", "MARA", "TSLA", "NVDA", "AMD", "PLTR")

MARKET_COLUMNS: tuple[str, ...] = (
    "Ticker", "Price", "Val", "Avg", "Atr14", "Atr28", "Rsi", "Volume", "Adx28", "Adx14", "Adx7",
    "Volatility Percent", "Volatility Ratio", "Time",
)
TRADE_COLUMNS: tuple[str, ...] = (
    "Date", "Trade Id", "Ticker", "Entry Price", "Exit Price", "Entry Time", "Exit Time",
    "Worst Exit Percent", "Entry Volatility Percent", "Entry Volatility Ratio", "Entry Adx28",
    "Entry Adx14", "Entry Adx7", "Trade Best Exit Percent", "Trade Percent Change",
)
EXTRA_TRADE_COLUMNS: tuple[str, ...] = ("Strategy", "Notes")
ENTRY_METRICS: dict[str, str] = {
    "Entry Volatility Percent": "Volatility Percent",
    "Entry Volatility Ratio": "Volatility Ratio",
    "Entry Adx28": "Adx28",
    "Entry Adx14": "Adx14",
    "Entry Adx7": "Adx7",
}

OPEN_SECOND = 9 * 3600 + 30 * 60
SECONDS = 6 * 3600 + 30 * 60 + 1  # 09:30:00 .. 16:00:00 inclusive: 23,401
MINUTES = 390
MIN_HOLD, MAX_HOLD = 30, 45 * 60
DIP_LOOKBACK = 15 * 60

# ticker -> (price at the start, daily volatility, mean shares per second)
PROFILES: dict[str, tuple[float, float, float]] = {
    "SOXL": (45.0, 0.055, 2500.0),
    "IONQ": (11.0, 0.060, 450.0),
    "MARA": (22.0, 0.070, 2000.0),
    "TSLA": (185.0, 0.035, 4000.0),
    "NVDA": (850.0, 0.030, 2000.0),
    "AMD": (205.0, 0.035, 2500.0),
    "PLTR": (24.0, 0.045, 2000.0),
}
T_DOF = 4.0
VOL_PHI, VOL_SD = 0.97, 0.4
NOTES = ("", "auto", "reviewed", "scaled in")


@dataclass(frozen=True)
class GridDataPaths:
    market_data: Path  # the folder of Raw_Market_data_MM-DD-YYYY.csv files
    trade_log: Path  # all_trade_logs.csv
    days: int
    rows: int  # market-data rows over all files
    trades: int


@dataclass(frozen=True)
class GridArrays:
    market: pl.DataFrame  # MARKET_COLUMNS + Date, rows (date, time, ticker order)
    trades: pl.DataFrame  # TRADE_COLUMNS + EXTRA_TRADE_COLUMNS
    dates: tuple[dt.date, ...]
    tickers: tuple[str, ...]


def trading_days(start: dt.date, days: int) -> tuple[dt.date, ...]:
    """The first `days` weekdays on or after `start`."""
    out, d = [], start
    while len(out) < days:
        if d.weekday() < 5:
            out.append(d)
        d += dt.timedelta(days=1)
    return tuple(out)


def market_file_name(day: dt.date) -> str:
    return f"Raw_Market_data_{day:%m-%d-%Y}.csv"


def pyround(x: np.ndarray, ndigits: int) -> np.ndarray:
    """Python's round(x, ndigits) elementwise (correctly rounded, half to even), NaN kept.

    rint(x * 10**nd) / 10**nd (np.round's method) is exact except next to a half, where the
    scaling's own rounding can tip it; the few values that close to a half are redone with
    round() itself.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    near = _round_scan(x.reshape(-1), 10.0**ndigits, out.reshape(-1))
    for i in near:
        out.flat[i] = round(float(x.flat[i]), ndigits)
    return out


@njit(cache=True)
def _round_scan(x, scale, out):
    near = []
    for i in range(x.shape[0]):
        y = x[i] * scale
        out[i] = np.rint(y) / scale
        if abs(y - np.floor(y) - 0.5) < 1e-6:
            near.append(i)
    return np.array(near, dtype=np.int64)


def _rng(*parts: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(parts))))


def _ticker_key(name: str) -> int:
    return zlib.crc32(name.encode())


def _profile(name: str, seed: int) -> tuple[float, float, float]:
    if name in PROFILES:
        return PROFILES[name]
    r = _rng(seed, 0, _ticker_key(name))
    return float(np.exp(r.uniform(np.log(5.0), np.log(500.0)))), float(r.uniform(0.025, 0.07)), float(r.uniform(300, 4000))


def _student_t(rng: np.random.Generator, size) -> np.ndarray:
    return rng.standard_t(T_DOF, size) * np.sqrt((T_DOF - 2.0) / T_DOF)


_S = np.arange(SECONDS, dtype=np.float64)
_U = 0.75 + 1.0 * ((_S / (SECONDS - 1) - 0.5) * 2.0) ** 2
_U /= np.sqrt(np.mean(_U**2))


def _ar1(eps: np.ndarray, phi: float, h0: float) -> np.ndarray:
    from scipy.signal import lfilter

    out, _ = lfilter([1.0], [1.0, -phi], eps, zi=np.array([phi * h0]))
    return out


def _ticker_walk(name: str, seed: int, n_days: int) -> tuple[np.ndarray, np.ndarray]:
    """(price [days, seconds] in cents-rounded dollars, volume [days, seconds] int64)."""
    p0, daily_vol, v0 = _profile(name, seed)
    key = _ticker_key(name)
    start = _rng(seed, 1, key)
    p0 = p0 * float(np.exp(start.normal(0.0, 0.05)))
    h0 = float(start.normal(0.0, VOL_SD))
    sigma = daily_vol / np.sqrt(SECONDS - 1)
    z = np.empty((n_days, SECONDS))
    eps = np.empty((n_days, MINUTES))
    noise = np.empty((n_days, SECONDS))
    gaps = np.empty(n_days)
    for d in range(n_days):
        r = _rng(seed, 2, key, d)
        gaps[d] = 0.3 * daily_vol * _student_t(r, 1)[0]
        z[d] = _student_t(r, SECONDS)
        eps[d] = r.normal(0.0, VOL_SD * np.sqrt(1.0 - VOL_PHI**2), MINUTES)
        noise[d] = r.normal(0.0, 0.5, SECONDS)
    h = _ar1(eps.ravel(), VOL_PHI, h0).reshape(n_days, MINUTES)
    minute = np.minimum(np.arange(SECONDS) // 60, MINUTES - 1)
    inst = sigma * _U[None, :] * np.exp(h[:, minute] - VOL_SD**2)  # instantaneous sigma
    ret = inst * z
    ret[:, 0] = gaps
    ret[0, 0] = 0.0
    logp = np.log(p0) + np.cumsum(ret.ravel()).reshape(n_days, SECONDS)
    price = np.maximum(np.round(np.exp(logp), 2), 0.01)
    rel = np.abs(ret) / inst
    rel[:, 0] = 1.0
    volume = v0 * _U[None, :] * (0.3 + rel) * np.exp(noise - 0.125)
    volume = np.maximum(np.rint(volume), 1.0).astype(np.int64)
    return price, volume


def _minute_bars(price: np.ndarray):
    """price [T, D, S] -> high, low, close [T, D*390]."""
    t, d, _ = price.shape
    bars = price[:, :, : MINUTES * 60].reshape(t, d, MINUTES, 60)
    return (
        bars.max(axis=3).reshape(t, d * MINUTES),
        bars.min(axis=3).reshape(t, d * MINUTES),
        np.ascontiguousarray(bars[:, :, :, 59]).reshape(t, d * MINUTES),
    )


def _per_second(ind: np.ndarray, n_days: int) -> np.ndarray:
    """minute values [T, D*390] -> [T, D, S]: each second the last completed minute's value."""
    t = ind.shape[0]
    ext = np.concatenate([np.full((t, 1), np.nan), ind], axis=1)
    g = (np.arange(n_days)[:, None] * MINUTES + np.arange(SECONDS)[None, :] // 60)  # index into ext
    return ext[:, g]


def _rolling_mean_60(price: np.ndarray) -> np.ndarray:
    t, d, s = price.shape
    ext = np.zeros((t, d, 59 + s))
    ext[:, :, 59:] = price
    ext[:, 1:, :59] = price[:, :-1, -59:]
    c = np.zeros((t, d, 60 + s))
    np.cumsum(ext, axis=2, out=c[:, :, 1:])
    sums = c[:, :, 60:] - c[:, :, :-60]
    counts = np.full((d, s), 60.0)
    counts[0] = np.minimum(np.arange(s) + 1, 60)  # day 0 starts with zeros in ext
    return sums / counts[None]


@njit(cache=True)
def _dip_entries(rsi: np.ndarray, entry: np.ndarray, exit_: np.ndarray, lo_bound: np.ndarray,
                 dip: np.ndarray, lookback: int):
    """Move each `dip` trade's entry back to the first lowest-RSI second of its window.

    Trades are in time order within each (ticker, day) group; lo_bound[k] is the earliest
    allowed entry (the group's start, or -1 when trade k follows another of its group, in
    which case the previous, possibly moved, exit + 1 bounds it). Holding times are kept.
    """
    n = entry.shape[0]
    new_entry = entry.copy()
    new_exit = exit_.copy()
    for k in range(n):
        if lo_bound[k] >= 0:
            lo = lo_bound[k]
        else:
            lo = new_exit[k - 1] + 1
        if dip[k]:
            lo = max(lo, entry[k] - lookback)
            best = entry[k]
            best_v = rsi[best]
            for i in range(lo, entry[k] + 1):
                if rsi[i] < best_v:
                    best_v = rsi[i]
                    best = i
            hold = exit_[k] - entry[k]
            new_entry[k] = best
            new_exit[k] = best + hold
    return new_entry, new_exit


def _layout(rng: np.random.Generator, n: int, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """n non-overlapping [entry, exit] second pairs inside [a, b], exit - entry >= 30."""
    length = b - a + 1
    if n * (MIN_HOLD + 1) > length:
        raise ValueError(f"{n} trades of >= {MIN_HOLD} s do not fit in {length} s of session; lower trades_per_day")
    hold = np.floor(np.exp(rng.uniform(np.log(MIN_HOLD), np.log(MAX_HOLD + 1), n))).astype(np.int64)
    hold = np.clip(hold, MIN_HOLD, MAX_HOLD)
    extra = hold - MIN_HOLD
    room = 0.75 * (length - n * (MIN_HOLD + 1))
    if extra.sum() > room:
        extra = np.floor(extra * (room / extra.sum())).astype(np.int64)
        hold = MIN_HOLD + extra
    idle = length - int((hold + 1).sum())
    cuts = np.sort(rng.integers(0, idle + 1, n))
    entry = a + cuts + np.concatenate([[0], np.cumsum(hold + 1)[:-1]])
    return entry, entry + hold


def _time_series(name: str, seconds: np.ndarray) -> pl.Series:
    return pl.Series(name, (seconds.astype(np.int64) + OPEN_SECOND) * 1_000_000_000).cast(pl.Time)


def generate_arrays(
    *,
    days: int = 3,
    start: dt.date = dt.date(2024, 3, 4),
    tickers=DEFAULT_TICKERS,
    seed: int = 11,
    trades_per_day: int = 200,
) -> GridArrays:
    """Both tables in memory (see the module docstring); generate_grid_data writes them."""
    tickers = tuple(tickers)
    if days < 1 or not tickers:
        raise ValueError("need at least one day and one ticker")
    if trades_per_day < 0:
        raise ValueError("trades_per_day must be >= 0")
    dates = trading_days(start, days)
    n_t, n_d = len(tickers), days

    walks = [_ticker_walk(name, seed, n_d) for name in tickers]
    price = np.stack([w[0] for w in walks])  # [T, D, S]
    volume = np.stack([w[1] for w in walks])
    del walks

    high, low, close = _minute_bars(price)
    ind = {
        "Atr14": pyround(ki.atr(high, low, close, 14, dtype=np.float64), 4),
        "Atr28": pyround(ki.atr(high, low, close, 28, dtype=np.float64), 4),
        "Rsi": pyround(ki.rsi(close, 14, dtype=np.float64), 2),
        "Adx28": pyround(ki.adx(high, low, close, 28, dtype=np.float64), 2),
        "Adx14": pyround(ki.adx(high, low, close, 14, dtype=np.float64), 2),
        "Adx7": pyround(ki.adx(high, low, close, 7, dtype=np.float64), 2),
    }
    sec = {k: _per_second(v, n_d) for k, v in ind.items()}
    with np.errstate(invalid="ignore", divide="ignore"):
        sec["Volatility Percent"] = pyround(sec["Atr14"] / price * 100, 2)
        a28 = np.where(sec["Atr28"] > 0, sec["Atr28"], np.nan)
        sec["Volatility Ratio"] = pyround(sec["Atr14"] / a28, 2)
    sec["Price"] = price
    sec["Volume"] = volume
    sec["Val"] = pyround(price * volume, 2)
    sec["Avg"] = pyround(_rolling_mean_60(price), 4)

    trades = _make_trades(sec, tickers, dates, seed, trades_per_day)

    # market frame, rows (day, second, ticker): [T, D, S] -> [D, S, T]
    def flat(a):
        return np.ascontiguousarray(np.moveaxis(a, 0, 2)).ravel()

    n_rows = n_d * SECONDS * n_t
    codes = np.tile(np.arange(n_t, dtype=np.uint32), n_d * SECONDS)
    day_num = np.array([(d - dt.date(1970, 1, 1)).days for d in dates], dtype=np.int32)
    cols = {}
    for name in MARKET_COLUMNS:
        if name == "Ticker":
            cols[name] = pl.Series(name, tickers, dtype=pl.Enum(list(tickers))).gather(codes)
        elif name == "Time":
            cols[name] = _time_series(name, np.tile(np.repeat(np.arange(SECONDS), n_t), n_d))
        elif name == "Volume":
            cols[name] = pl.Series(name, flat(sec[name]))
        else:
            cols[name] = pl.Series(name, flat(sec[name]), nan_to_null=True)
    cols["Date"] = pl.Series("Date", np.repeat(day_num, SECONDS * n_t)).cast(pl.Date)
    market = pl.DataFrame(list(cols.values()))
    assert market.height == n_rows
    return GridArrays(market=market, trades=trades, dates=dates, tickers=tickers)


def _make_trades(sec: dict, tickers, dates, seed: int, trades_per_day: int) -> pl.DataFrame:
    n_t, n_d = len(tickers), len(dates)
    price = sec["Price"]
    metric_names = ["Volatility Percent", "Volatility Ratio", "Adx28", "Adx14", "Adx7", "Rsi"]
    valid = np.ones(price.shape, dtype=bool)
    for m in metric_names:
        valid &= ~np.isnan(sec[m])

    counts = np.empty((n_t, n_d), dtype=np.int64)
    for d in range(n_d):
        r = _rng(seed, 3, d)
        counts[:, d] = trades_per_day // n_t
        counts[r.permutation(n_t)[: trades_per_day % n_t], d] += 1
    # built in (ticker, day) order: the flat [T, D, S] indices of the trades then increase
    parts = {k: [] for k in ("t", "d", "entry", "exit", "lo", "dip", "note")}
    for t, name in enumerate(tickers):
        for d in range(n_d):
            n = int(counts[t, d])
            if n == 0:
                continue
            bad = np.flatnonzero(~valid[t, d])
            a = int(bad[-1]) + 1 if bad.size else 0
            rt = _rng(seed, 4, _ticker_key(name), d)
            entry, exit_ = _layout(rt, n, a, SECONDS - 1)
            lo = np.full(n, -1, dtype=np.int64)
            lo[0] = a
            base = (t * n_d + d) * SECONDS  # into the [T, D, S] array raveled
            parts["t"].append(np.full(n, t))
            parts["d"].append(np.full(n, d))
            parts["entry"].append(entry + base)
            parts["exit"].append(exit_ + base)
            parts["lo"].append(np.where(lo >= 0, lo + base, -1))
            parts["dip"].append(rt.random(n) < 0.5)
            parts["note"].append(rt.integers(0, len(NOTES), n))

    if not parts["t"]:
        return _empty_trades()
    cat = {k: np.concatenate(v) for k, v in parts.items()}
    rsi_flat = np.ascontiguousarray(sec["Rsi"]).ravel()
    entry, exit_ = _dip_entries(rsi_flat, cat["entry"], cat["exit"], cat["lo"], cat["dip"], DIP_LOOKBACK)
    p_flat = np.ascontiguousarray(price).ravel()
    # max/min over [entry, exit] inclusive; the flat indices increase, so reduceat's odd
    # segments (the idle gaps between trades) add up to at most the array once
    bounds = np.empty(2 * entry.size, dtype=np.int64)
    bounds[0::2], bounds[1::2] = entry, exit_ + 1
    padded = np.append(p_flat, np.nan)
    best = np.maximum.reduceat(padded, bounds)[0::2]
    worst = np.minimum.reduceat(padded, bounds)[0::2]
    e_price, x_price = p_flat[entry], p_flat[exit_]

    t, d = cat["t"], cat["d"]
    e_sec = entry % SECONDS
    order = np.lexsort((t, e_sec, d))
    day_num = np.array([(x - dt.date(1970, 1, 1)).days for x in dates], dtype=np.int32)
    n = entry.size

    def pick(a):
        return a[order]

    cols = [
        pl.Series("Date", day_num[pick(d)]).cast(pl.Date),
        pl.Series("Trade Id", [f"T{i:06d}" for i in range(1, n + 1)]),
        pl.Series("Ticker", tickers, dtype=pl.Enum(list(tickers))).gather(pick(t).astype(np.uint32)),
        pl.Series("Entry Price", pick(e_price)),
        pl.Series("Exit Price", pick(x_price)),
        _time_series("Entry Time", pick(e_sec)),
        _time_series("Exit Time", pick(exit_ % SECONDS)),
        pl.Series("Worst Exit Percent", pick(pyround((worst / e_price - 1) * 100, 4))),
    ]
    for out_name, src in ENTRY_METRICS.items():
        cols.append(pl.Series(out_name, pick(np.ascontiguousarray(sec[src]).ravel()[entry])))
    cols += [
        pl.Series("Trade Best Exit Percent", pick(pyround((best / e_price - 1) * 100, 4))),
        pl.Series("Trade Percent Change", pick(pyround((x_price / e_price - 1) * 100, 4))),
        pl.Series("Strategy", np.where(pick(cat["dip"]), "rsi_dip", "random_entry")),
        pl.Series("Notes", np.asarray(NOTES)[pick(cat["note"])]),
    ]
    return pl.DataFrame(cols)


def _empty_trades() -> pl.DataFrame:
    schema = {c: pl.Float64 for c in TRADE_COLUMNS + EXTRA_TRADE_COLUMNS}
    schema.update({"Date": pl.Date, "Trade Id": pl.String, "Ticker": pl.String, "Entry Time": pl.Time,
                   "Exit Time": pl.Time, "Strategy": pl.String, "Notes": pl.String})
    return pl.DataFrame(schema=schema)


def generate_grid_data(
    out_dir: Path,
    *,
    days: int = 3,
    start: dt.date = dt.date(2024, 3, 4),
    tickers=DEFAULT_TICKERS,
    seed: int = 11,
    trades_per_day: int = 200,
    date_format: str = "%Y-%m-%d",
) -> GridDataPaths:
    """Write out_dir/market_data/Raw_Market_data_MM-DD-YYYY.csv (one per day) and
    out_dir/all_trade_logs.csv; `date_format` is the trade log's Date format (the consumer
    reads %Y-%m-%d, %m/%d/%Y and %m-%d-%Y)."""
    out_dir = Path(out_dir)
    arrays = generate_arrays(days=days, start=start, tickers=tickers, seed=seed, trades_per_day=trades_per_day)
    folder = out_dir / "market_data"
    folder.mkdir(parents=True, exist_ok=True)
    per_day = SECONDS * len(arrays.tickers)
    market = arrays.market.select(MARKET_COLUMNS)
    for i, day in enumerate(arrays.dates):
        market.slice(i * per_day, per_day).write_csv(folder / market_file_name(day), time_format="%H:%M:%S")
    log = out_dir / "all_trade_logs.csv"
    arrays.trades.with_columns(pl.col("Date").dt.strftime(date_format)).write_csv(log, time_format="%H:%M:%S")
    return GridDataPaths(market_data=folder, trade_log=log, days=len(arrays.dates), rows=market.height,
                         trades=arrays.trades.height)
