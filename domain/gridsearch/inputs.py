"""The grid search's inputs (market-data CSV folder, trade-log CSV), parsed and indexed.

Market data: a folder of `Raw_Market_data_MM-DD-YYYY.csv` with header
`Ticker,Price,Val,Avg,Atr14,Atr28,Rsi,Volume,Adx28,Adx14,Adx7,Volatility Percent,
Volatility Ratio,Time` (Time HH:MM:SS, the tickers interleaved in ascending time). The date
comes from the file name; only the configured tickers are kept; Val, Avg, Atr14, Atr28,
Rsi and Volume are dropped; rows are sorted by ticker (in the configured order) then
datetime, so prices form one contiguous float32 array with per-ticker offsets. A file that is
not UTF-8 CSV, or a Price that is not a finite number > 0 fitting float32, is refused with
one line naming the file, row and column (the daily bars' rules).

Trade log: `all_trade_logs.csv` with at least the columns the search reads (others ignored).
Date as YYYY-MM-DD, MM/DD/YYYY or MM-DD-YYYY. Trades of the configured tickers get int8
codes, full datetimes, and MarketDataStartIndex (first market row of the ticker with time >=
entry) and MarketDataEndIndex (last row with time <= exit) by searchsorted. A trade whose
values are malformed, whose exit precedes its entry, or whose entry or exit has no market
data that day is left out and reported (count, reasons, first ids): never silently dropped.
A Trade Id on two lines is refused (one line naming both rows): it would count twice.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from config.errors import InputDataError
from kernels.gridsearch import MAX_TRADE_PERCENT

MARKET_FILE = re.compile(r"^Raw_Market_data_(\d{2})-(\d{2})-(\d{4})\.csv$")
MARKET_COLUMNS = {  # file column -> stored column (the rest are dropped)
    "Ticker": "ticker",
    "Price": "price",
    "Adx28": "adx28",
    "Adx14": "adx14",
    "Adx7": "adx7",
    "Volatility Percent": "volatility_percent",
    "Volatility Ratio": "volatility_ratio",
    "Time": "time",
}
TRADE_COLUMNS = {
    "Date": "date",
    "Trade Id": "trade_id",
    "Ticker": "ticker",
    "Entry Price": "entry_price",
    "Exit Price": "exit_price",
    "Entry Time": "entry_time",
    "Exit Time": "exit_time",
    "Worst Exit Percent": "worst_exit_percent",
    "Entry Volatility Percent": "entry_volatility_percent",
    "Entry Volatility Ratio": "entry_volatility_ratio",
    "Entry Adx28": "entry_adx28",
    "Entry Adx14": "entry_adx14",
    "Entry Adx7": "entry_adx7",
    "Trade Best Exit Percent": "best_exit_percent",
    "Trade Percent Change": "pct_change",
}
FEATURE_COLUMNS = ["entry_volatility_percent", "entry_volatility_ratio", "entry_adx28", "entry_adx14", "entry_adx7"]
NUMERIC_TRADE_COLUMNS = ["entry_price", "exit_price", "worst_exit_percent", *FEATURE_COLUMNS, "best_exit_percent", "pct_change"]
DATE_FORMATS = ("%Y-%m-%d", "%m/%d/%Y", "%m-%d-%Y")
FLOAT32_MAX = float(np.finfo(np.float32).max)
FLOAT32_TINY = float(np.finfo(np.float32).tiny)


def _require(columns: list[str], needed, origin: str, expected: str) -> None:
    missing = [c for c in needed if c not in columns]
    if missing:
        raise InputDataError(origin, f"missing column(s) {missing}", column=missing[0], expected=expected)


def market_files(folder: Path) -> tuple[list[tuple[Path, str]], list[Path]]:
    """(files with their ISO dates, sorted by date; other files in the folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputDataError(str(folder), "folder not found", expected="a folder of Raw_Market_data_MM-DD-YYYY.csv files")
    found, other = [], []
    for path in sorted(folder.iterdir()):
        m = MARKET_FILE.fullmatch(path.name)
        if m:
            iso = f"{m.group(3)}-{m.group(1)}-{m.group(2)}"
            try:
                dt.date.fromisoformat(iso)
            except ValueError:
                raise InputDataError(str(path), f"the name's date {m.group(1)}-{m.group(2)}-{m.group(3)} is not a date",
                                     expected="Raw_Market_data_MM-DD-YYYY.csv with a real month and day") from None
            found.append((path, iso))
        elif path.is_file():
            other.append(path)
    if not found:
        raise InputDataError(str(folder), "no market-data files", expected="files named Raw_Market_data_MM-DD-YYYY.csv")
    return sorted(found, key=lambda f: f[1]), other


def read_market_file(path: Path, iso_date: str, tickers: list[str]) -> pl.DataFrame:
    """One day's rows of the configured tickers. Refused with one line naming the file, row
    and column: a file that is not UTF-8 CSV, a Time that is not HH:MM:SS, a Price that is
    not a number, not finite or not > 0, or that does not fit the stored float32 (as the
    daily bars)."""
    origin = str(path)
    try:
        header = pl.read_csv(path, n_rows=0).columns
        _require(header, MARKET_COLUMNS, origin, "the market-data header (docs/strategies.md 'Trade-log grid search')")
        df = pl.read_csv(path, columns=list(MARKET_COLUMNS), infer_schema=False).rename(MARKET_COLUMNS)
    except (pl.exceptions.PolarsError, OSError) as err:
        raise InputDataError(origin, f"cannot be read: {str(err).splitlines()[0]}",
                             expected="a UTF-8 CSV market-data file") from None
    df = df.with_row_index("__row", offset=1).filter(pl.col("ticker").is_in(tickers))
    time = pl.col("time").str.strip_chars().str.to_time("%H:%M:%S", strict=False)
    price = pl.col("price").str.strip_chars().cast(pl.Float64, strict=False)
    df = df.with_columns(time.alias("__t"), price.alias("__price64"))
    for col, parsed in (("time", "__t"), ("price", "__price64")):
        bad = df.filter(pl.col(parsed).is_null())
        if bad.height:
            row = bad.row(0, named=True)
            raise InputDataError(origin, f"cannot parse {row[col]!r}", column=col.capitalize(), row=row["__row"],
                                 expected="HH:MM:SS" if col == "time" else "a number")
    # NaN compares greater than every number in polars, so `> 0` alone lets it through
    bad = df.filter(~(pl.col("__price64").is_finite() & (pl.col("__price64") > 0)))
    if bad.height:
        row = bad.row(0, named=True)
        raise InputDataError(origin, f"price {row['price']!r}", column="Price", row=row["__row"],
                             expected="a finite price > 0")
    df = df.with_columns(pl.col("__price64").cast(pl.Float32).alias("__price"))
    bad = df.filter(pl.col("__price").is_infinite() | (pl.col("__price") < FLOAT32_TINY))
    if bad.height:
        row = bad.row(0, named=True)
        raise InputDataError(origin, f"{row['price']!r} does not fit the stored float32", column="Price", row=row["__row"],
                             expected=f"a number between {FLOAT32_TINY:.2e} and {FLOAT32_MAX:.2e}")
    day = pl.lit(iso_date).str.to_date()
    return df.select(
        pl.col("ticker"),
        day.dt.combine(pl.col("__t")).cast(pl.Datetime("ns")).alias("datetime"),
        pl.col("__price").alias("price"),
        *[pl.col(c).cast(pl.Float32, strict=False) for c in ("adx28", "adx14", "adx7", "volatility_percent", "volatility_ratio")],
    )


def read_market_data(folder: Path, tickers: list[str]) -> pl.DataFrame:
    """All days of the configured tickers, sorted by ticker (configured order) then time."""
    files, _ = market_files(folder)
    frames = [read_market_file(path, day, tickers) for path, day in files]
    codes = pl.DataFrame({"ticker": tickers, "ticker_code": list(range(len(tickers)))},
                         schema={"ticker": pl.String, "ticker_code": pl.Int8})
    df = pl.concat(frames).join(codes, on="ticker").sort("ticker_code", "datetime")
    dup = df.select("ticker", "datetime").is_duplicated()
    if dup.any():
        row = df.filter(dup).row(0, named=True)
        raise InputDataError(str(folder), f"{row['ticker']} has two rows at {row['datetime']}", expected="one row per ticker and second")
    return df.select("ticker", "ticker_code", "datetime", "price", "adx28", "adx14", "adx7", "volatility_percent", "volatility_ratio")


def ticker_offsets(market: pl.DataFrame, n_tickers: int) -> np.ndarray:
    """Row offsets of each ticker code's segment (market sorted by code): [n_tickers + 1]."""
    counts = np.bincount(market["ticker_code"].to_numpy(), minlength=n_tickers)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


@dataclass
class Rejections:
    total: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    first_ids: list[str] = field(default_factory=list)
    other_tickers: int = 0

    def add(self, reason: str, ids: list[str]) -> None:
        if not ids:
            return
        self.total += len(ids)
        self.by_reason[reason] = self.by_reason.get(reason, 0) + len(ids)
        self.first_ids.extend(ids[: max(0, 10 - len(self.first_ids))])

    def summary(self) -> dict:
        return {"rejected": self.total, "reasons": self.by_reason, "first_ids": self.first_ids,
                "other_tickers_ignored": self.other_tickers}


def _parse_date(col: str) -> pl.Expr:
    s = pl.col(col).str.strip_chars()
    return pl.coalesce([s.str.to_date(fmt, strict=False) for fmt in DATE_FORMATS])


def _refuse_duplicate_ids(df: pl.DataFrame, origin: str) -> None:
    """A Trade Id on two lines would count the trade twice: refused, naming both rows."""
    ids = df.with_row_index("__row", offset=1).filter(pl.col("trade_id").is_not_null())
    dup = ids.filter(pl.col("trade_id").is_duplicated())
    if dup.height:
        first = dup.row(0, named=True)
        again = dup.filter(pl.col("trade_id") == first["trade_id"]).row(1, named=True)
        raise InputDataError(origin, f"Trade Id {first['trade_id']!r} again (first at row {first['__row']})",
                             column="Trade Id", row=again["__row"], expected="one line per trade")


def read_trade_log(path: Path, tickers: list[str], market: pl.DataFrame) -> tuple[pl.DataFrame, Rejections]:
    """The trades of the configured tickers with market-data indices, and what was left out."""
    origin = str(path)
    if not Path(path).is_file():
        raise InputDataError(origin, "file not found", expected="the trade log (all_trade_logs.csv)")
    if Path(path).stat().st_size == 0:
        raise InputDataError(origin, "the file is empty", expected="a header with the trade-log columns and rows")
    try:
        header = pl.read_csv(path, n_rows=0).columns
        _require(header, TRADE_COLUMNS, origin, "the trade-log columns (docs/strategies.md 'Trade-log grid search')")
        df = pl.read_csv(path, columns=list(TRADE_COLUMNS), infer_schema=False).rename(TRADE_COLUMNS)
    except (pl.exceptions.PolarsError, OSError) as err:
        raise InputDataError(origin, f"cannot be read: {str(err).splitlines()[0]}",
                             expected="a UTF-8 CSV file with the trade-log columns") from None
    _refuse_duplicate_ids(df, origin)
    rej = Rejections()
    rej.other_tickers = df.filter(~pl.col("ticker").is_in(tickers)).height
    df = df.filter(pl.col("ticker").is_in(tickers))
    parsed = df.with_columns(
        _parse_date("date").alias("date"),
        pl.col("entry_time").str.strip_chars().str.to_time("%H:%M:%S", strict=False),
        pl.col("exit_time").str.strip_chars().str.to_time("%H:%M:%S", strict=False),
        *[pl.col(c).str.strip_chars().cast(pl.Float64, strict=False) for c in NUMERIC_TRADE_COLUMNS],
    )
    for col in ["trade_id", "date", "entry_time", "exit_time", *NUMERIC_TRADE_COLUMNS]:
        is_bad = pl.col(col).is_null()
        if col in NUMERIC_TRADE_COLUMNS:
            is_bad = is_bad | pl.col(col).is_nan() | pl.col(col).is_infinite()
        rej.add(f"malformed {col}", parsed.filter(is_bad)["trade_id"].fill_null("(no id)").to_list())
        parsed = parsed.filter(~is_bad)
    too_big = pl.col("pct_change").abs() > MAX_TRADE_PERCENT
    rej.add(f"Trade Percent Change beyond +-{MAX_TRADE_PERCENT} %", parsed.filter(too_big)["trade_id"].to_list())
    parsed = parsed.filter(~too_big)
    bad = parsed.filter(pl.col("entry_price") <= 0)
    rej.add("entry price <= 0", bad["trade_id"].to_list())
    parsed = parsed.filter(pl.col("entry_price") > 0)
    parsed = parsed.with_columns(
        pl.col("date").dt.combine(pl.col("entry_time")).cast(pl.Datetime("ns")).alias("entry_datetime"),
        pl.col("date").dt.combine(pl.col("exit_time")).cast(pl.Datetime("ns")).alias("exit_datetime"),
    )
    bad = parsed.filter(pl.col("exit_datetime") < pl.col("entry_datetime"))
    rej.add("exit before entry", bad["trade_id"].to_list())
    parsed = parsed.filter(pl.col("exit_datetime") >= pl.col("entry_datetime"))

    codes = {t: i for i, t in enumerate(tickers)}
    parsed = parsed.with_columns(pl.col("ticker").replace_strict(codes, return_dtype=pl.Int8).alias("ticker_code"))
    offsets = ticker_offsets(market, len(tickers))
    times = market["datetime"].cast(pl.Int64).to_numpy()
    days = market["datetime"].dt.date().cast(pl.Int32).to_numpy()
    code = parsed["ticker_code"].to_numpy().astype(np.int64)
    entry_ns = parsed["entry_datetime"].cast(pl.Int64).to_numpy()
    exit_ns = parsed["exit_datetime"].cast(pl.Int64).to_numpy()
    trade_day = parsed["date"].cast(pl.Int32).to_numpy()
    start = np.empty(len(code), dtype=np.int64)
    end = np.empty(len(code), dtype=np.int64)
    for k in range(len(tickers)):
        sel = code == k
        lo, hi = offsets[k], offsets[k + 1]
        start[sel] = lo + np.searchsorted(times[lo:hi], entry_ns[sel], side="left")
        end[sel] = lo + np.searchsorted(times[lo:hi], exit_ns[sel], side="right") - 1
        seg_end = hi
        start[sel] = np.where(start[sel] >= seg_end, -1, start[sel])
        end[sel] = np.where(end[sel] < lo, -1, end[sel])
    ok_start = (start >= 0) & (days[np.clip(start, 0, None)] == trade_day) if len(times) else np.zeros(len(code), bool)
    ok_end = (end >= 0) & (days[np.clip(end, 0, None)] == trade_day) & (end >= start) if len(times) else np.zeros(len(code), bool)
    ids = parsed["trade_id"]
    rej.add("no market data at entry", ids.filter(pl.Series(~ok_start)).to_list())
    rej.add("no market data at exit", ids.filter(pl.Series(ok_start & ~ok_end)).to_list())
    keep = pl.Series(ok_start & ok_end)
    trades = parsed.with_columns(
        pl.Series("MarketDataStartIndex", start), pl.Series("MarketDataEndIndex", end),
    ).filter(keep)
    day_index = trades["date"].rank("dense").cast(pl.Int32) - 1
    trades = trades.with_columns(day_index.alias("day"), *[pl.col(c).cast(pl.Float32) for c in FEATURE_COLUMNS])
    return trades.select(
        "trade_id", "ticker", "ticker_code", "date", "day", "entry_datetime", "exit_datetime", "entry_price", "exit_price",
        "worst_exit_percent", "best_exit_percent", "pct_change", *FEATURE_COLUMNS, "MarketDataStartIndex", "MarketDataEndIndex",
    ), rej


@dataclass
class TradeArrays:
    """The engines' view of the trades: contiguous NumPy arrays."""

    start: np.ndarray
    end: np.ndarray
    entry: np.ndarray
    pct_change: np.ndarray
    features: np.ndarray  # [5, trades] float32: vol pct, vol ratio, adx28, adx14, adx7
    day: np.ndarray

    @classmethod
    def from_frame(cls, trades: pl.DataFrame) -> "TradeArrays":
        return cls(
            start=trades["MarketDataStartIndex"].to_numpy().astype(np.int64),
            end=trades["MarketDataEndIndex"].to_numpy().astype(np.int64),
            entry=trades["entry_price"].to_numpy().astype(np.float64),
            pct_change=trades["pct_change"].to_numpy().astype(np.float64),
            features=np.ascontiguousarray(np.stack([trades[c].to_numpy() for c in FEATURE_COLUMNS]).astype(np.float32)),
            day=trades["day"].to_numpy().astype(np.int32),
        )
