"""Daily portfolio backtest: scores -> target weights -> costs -> PnL (arrays in, arrays out).

Inputs
    prices  [T, N] float32 (or float64) closes; NaN (or <= 0) where the symbol has no bar that day.
    probs   [T, N] meta probabilities p in [0, 1] (the scores); NaN = no prediction for that symbol and day.

Timing (no look-ahead)
    The signal of day t sets the weights w_t traded at the close of t and held until the close of
    t+1: w_t earns day t+1's return r_{t+1,i} = close_{t+1,i} / close_{t,i} - 1. The order of day
    t reads the rows 0..t only (scores, closes, the book carried from t-1).

Sessions: a symbol with a bar on day t is "tradable"; a day on which no symbol has a bar is not
a session (a row of the panel with predictions only): nothing trades on it, and it does not count
as a day held. A symbol WITHOUT a bar on day t cannot be traded: its weight is kept at its drifted
value ("frozen"), it earns 0 while it has no bar, and when its bar comes back it earns the move
since its last close (the move over the gap is not lost). A symbol never gets a weight on a day
it has no price. Every strategy's book is sized to budget = max(max_gross - sum of |frozen
weights|, 0).

Strategies (`PortfolioConfig.strategy`), for the tradable symbols of day t
    threshold (default; the rule of before: the same weights, returns within ~1e-17 of the loop before the
        sweep's single driver, whose sums LLVM vectorised in another order)
        long-only            s_i = max(p_i - threshold, 0)          (threshold default 0.5)
        long_short=True      s_i = 2 * (p_i - 0.5)  in [-1, 1]      (the seed's map; threshold unused)
        NaN p -> s_i = 0 (the symbol is sold / not bought).
        target_i = clip(s_i * budget / sum_j |s_j|, -max_weight, +max_weight), 0 when sum_j |s_j| = 0.
        Weights are proportional to conviction, the book is sized to `budget` before the per-name
        cap, and the capped excess stays in cash (no redistribution); re-targeted every close.
    topk_dropout (Qlib's TopkDropoutStrategy, its documented Topk-Drop rule with its defaults
        method_sell="bottom", method_buy="top"; hold_thresh as Qlib's)
        Rank: every symbol by today's p, best first; equal p by column order (the lower column
        ranks better); a held symbol without a p today ranks below every scored one.
        Held: the symbols with a weight after the move (frozen ones included; they count
        towards topk but cannot be sold). Sellable: held, tradable, held for >= hold_thresh
        sessions (bought at the close of t0: 1 session held on the next session day).
        Candidates: not held, tradable, with a p.
        1. fill: while fewer than topk are held, buy the best candidate;
        2. drop: up to n_drop times, the worst-ranked sellable held symbol is sold and the best
           remaining candidate bought, if the candidate ranks better; else stop. (= Qlib's
           documented rule: d = the held symbols ranked below topk, at most n_drop, are sold and
           as many of the best unheld bought, so the book holds topk.)
        Sizing as Qlib's (held names are not rebalanced): a kept symbol keeps its drifted
        weight, a sold one goes to 0, each bought one gets min(cash / n_bought, max_weight) with
        cash = max(max_gross - sum |kept weights|, 0) (Qlib's risk_degree of the cash is
        max_gross here: the book is filled up to max_gross). Two documented deviations from
        Qlib's code: a held symbol is sold only when a better-ranked candidate replaces it (Qlib's
        code also sells the worst held ones without replacement when fewer than n_drop unheld
        symbols have a score: a universe not larger than topk), and a symbol without a bar is
        never picked to buy (as Qlib's only_tradable=True; the default leaves that slot in cash).
    long_short (top and bottom quantiles, dollar-neutral)
        n = tradable symbols with a p; k = floor(quantile * n) (+1e-9 against rounding);
        the k best-ranked get +min(budget / (2k), max_weight), the k worst-ranked
        -min(budget / (2k), max_weight), every other tradable symbol 0; re-targeted every close.
        Neutral among the traded symbols (a frozen position stays as it was). k = 0: flat.

Drift, turnover limit, turnover, costs (exact daily accounting)
    gross_t    = sum_i w_{t-1,i} * r_{t,i}                          (0 on day 0: nothing held)
    drifted    = w_{t-1,i} * (1 + r_{t,i}) / (1 + gross_t)           (the book after the move)
    limit      when max_turnover is set and sum_i |target_i - drifted_i| > max_turnover, every
               trade is scaled by max_turnover / that sum: w_t = drifted + (target - drifted) * f
    turnover_t = sum_i |w_t,i - drifted_i|                          (day 0: sum_i |w_0,i|)
    cost_t     = turnover_t * (fee_bps + slippage_bps) / 1e4        (fraction of the NAV traded on)
                 + sum over trades d_i = w_t,i - drifted_i != 0 of
                   max(open_cost * d_i, m) for a buy (d_i > 0), max(close_cost * |d_i|, m) for a
                   sell (d_i < 0), m = min_cost / (account * equity_{t-1} * (1 + gross_t)),
                   the minimum cost per trade (currency) as a fraction of the NAV (Qlib's exchange)
    net_t      = (1 + gross_t) * (1 - cost_t) - 1
    equity_t   = prod_{s <= t} (1 + net_s)                          (capital 1.0 before day 0)
    Turnover is measured on the post-move NAV and the cost is charged on it; the cost's own
    second-order effect on the traded amounts is ignored. A day with 1 + gross_t <= 0 wipes the
    book out: net_t = -1, the equity stays 0 and the drifted weights are 0.

Outputs (`PortfolioResult`): net, gross, turnover, cost, equity float64 [T]; weights float32 [T, N]
(w_t, the weights held from the close of t). Accumulators and the carried state are float64.
The loop is compiled with fastmath reassoc/nsz/arcp/contract but NOT nnan/ninf (NaN tests stay
exact): per-day sums are vectorised, so results match the NumPy reference to ~1e-15 (not bit
for bit) and are reproducible on one machine.

Chunks: `run_portfolio` runs the numba loop over days [a, b) with the carried state (held weights,
last valid close, sessions held, equity) and calls `on_chunk(a, b, arrays)` between chunks: the
caller can log without a DataFrame in the loop. The state never leaves float64, so results do
not depend on `chunk_days`.

`stats(daily_returns, turnover)` (re-exported from kernels.backtest.stats, where every figure's
formula is stated): CAGR, annualised Sharpe, Sortino, Calmar, max drawdown, turnover, win rate.
The plain NumPy reference of the loop is `kernels.backtest.reference.run_portfolio_reference`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

from kernels.backtest.stats import PERIODS_PER_YEAR, stats  # noqa: F401 (re-exported: the figures live there)

STRATEGIES = ("threshold", "topk_dropout", "long_short")  # the kernel's codes are the positions
THRESHOLD, TOPK_DROPOUT, LONG_SHORT = 0, 1, 2
QUANTILE_EPS = 1e-9  # k = floor(quantile * n + QUANTILE_EPS): 0.3 * 10 is 3, not 2


@dataclass(frozen=True)
class PortfolioConfig:
    """The strategy, its parameters and the cost model (see the module docstring)."""

    threshold: float = 0.5  # threshold, long-only: only p > threshold gets a weight
    max_gross: float = 1.0  # sum |w_i| <= max_gross (1.0: no leverage)
    max_weight: float = 0.10  # |w_i| <= max_weight per symbol (topk_dropout: when bought)
    long_short: bool = False  # threshold: True = s = 2 * (p - 0.5) (the seed's map)
    fee_bps: float = 1.0  # per unit of turnover, in basis points
    slippage_bps: float = 1.0
    strategy: str = "threshold"  # one of STRATEGIES
    topk: int = 50  # topk_dropout: symbols held
    n_drop: int = 5  # topk_dropout: at most this many replaced a day
    hold_thresh: int = 1  # topk_dropout: sessions held before a symbol may be sold
    quantile: float = 0.2  # long_short: the top and bottom quantile of the ranked symbols
    open_cost: float = 0.0  # fraction of each buy's value
    close_cost: float = 0.0  # fraction of each sell's value
    min_cost: float = 0.0  # minimum cost of a trade, in the currency of `account`
    account: float = 1e6  # starting capital (currency): turns min_cost into a fraction of the NAV
    max_turnover: float | None = None  # daily turnover limit (sum |trades| / NAV); None = no limit

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}")
        if not 0.0 <= self.threshold < 1.0:
            raise ValueError(f"threshold must lie in [0, 1), got {self.threshold}")
        if not self.max_gross > 0.0 or not math.isfinite(self.max_gross):
            raise ValueError(f"max_gross must be a positive number, got {self.max_gross}")
        if not self.max_weight > 0.0 or not math.isfinite(self.max_weight):
            raise ValueError(f"max_weight must be a positive number, got {self.max_weight}")
        if not (self.fee_bps >= 0.0 and self.slippage_bps >= 0.0):
            raise ValueError(f"fee_bps and slippage_bps must be >= 0, got {self.fee_bps}, {self.slippage_bps}")
        if self.long_short and self.strategy != "threshold":
            raise ValueError(f"long_short=True is the threshold strategy's map; strategy is {self.strategy!r}")
        if not (self.topk >= 1 and 0 <= self.n_drop <= self.topk and self.hold_thresh >= 0):
            raise ValueError(f"topk >= 1, 0 <= n_drop <= topk and hold_thresh >= 0 expected, got topk={self.topk}, "
                             f"n_drop={self.n_drop}, hold_thresh={self.hold_thresh}")
        if not 0.0 < self.quantile <= 0.5:
            raise ValueError(f"quantile must lie in (0, 0.5], got {self.quantile}")
        costs = (self.open_cost, self.close_cost, self.min_cost)
        if not all(c >= 0.0 and math.isfinite(c) for c in costs):
            raise ValueError(f"open_cost, close_cost and min_cost must be finite and >= 0, got {costs}")
        if not (self.account > 0.0 and math.isfinite(self.account)):
            raise ValueError(f"account must be a positive number, got {self.account}")
        if self.max_turnover is not None and not self.max_turnover > 0.0:
            raise ValueError(f"max_turnover must be > 0 (or None for no limit), got {self.max_turnover}")

    @property
    def cost_rate(self) -> float:
        """Cost per unit of turnover: (fee_bps + slippage_bps) / 1e4."""
        return (self.fee_bps + self.slippage_bps) / 1e4

    @property
    def threshold_only(self) -> bool:
        """The threshold rule without trade costs or a turnover limit: the loop of before
        (threshold_book_step), the rule of before."""
        return (self.strategy == "threshold" and self.open_cost == 0.0 and self.close_cost == 0.0
                and self.min_cost == 0.0 and self.max_turnover is None)

    @property
    def strategy_code(self) -> int:
        return STRATEGIES.index(self.strategy)


@dataclass
class PortfolioResult:
    net: np.ndarray  # float64 [T]
    gross: np.ndarray  # float64 [T]
    turnover: np.ndarray  # float64 [T]
    cost: np.ndarray  # float64 [T]
    equity: np.ndarray  # float64 [T]
    weights: np.ndarray  # float32 [T, N], held from the close of t to the close of t+1

    def stats(self, periods_per_year: int = PERIODS_PER_YEAR) -> dict:
        return stats(self.net, self.turnover, periods_per_year)


# ---------------------------------------------------------------- numba core


# fastmath without nnan/ninf: the NaN and inf tests below stay exact; sums may be reassociated
# (vectorised), so the kernel matches the NumPy reference to ~1e-15, not bit for bit. Each day
# runs the same code whatever the chunk, so results never depend on chunk_days.
FASTMATH = {"reassoc", "nsz", "arcp", "contract"}


@njit(cache=True, nogil=True, inline="always")
def rank_order(probs_t, tradable):
    """Columns best first: by p (higher first), equal p by column (lower first); symbols
    without a bar or a p after every scored tradable one (their order among them unused)."""
    n = probs_t.shape[0]
    key = np.empty(n, dtype=np.float64)
    for i in range(n):
        p = np.float64(probs_t[i])
        key[i] = -p if tradable[i] and not math.isnan(p) else np.inf
    return np.argsort(key, kind="mergesort")


@njit(cache=True, nogil=True, inline="always")
def topk_dropout_targets(probs_t, tradable, drifted, held_days, topk, n_drop, hold_thresh, max_gross, max_weight,
                         target, order):
    """topk_dropout's weights of the day (module docstring) into `target` (every column);
    `order`: rank_order(probs_t, tradable) of the day."""
    n = probs_t.shape[0]
    pos = np.empty(n, dtype=np.int64)  # rank of a tradable scored symbol; held ones without a p: below all
    scored = 0
    for j in range(n):
        i = order[j]
        p = np.float64(probs_t[i])
        if tradable[i] and not math.isnan(p):
            pos[i] = j
            scored += 1
        else:
            pos[i] = n + j
    held = 0
    for i in range(n):
        target[i] = drifted[i]
        held += 1 if drifted[i] != 0.0 else 0
    buys = np.empty(n, dtype=np.int64)
    n_buy = 0
    cand = 0  # next candidate's place in `order`
    # 1) fill up to topk with the best candidates
    while held + n_buy < topk:
        while cand < scored and drifted[order[cand]] != 0.0:
            cand += 1
        if cand >= scored:
            break
        buys[n_buy] = order[cand]
        n_buy += 1
        cand += 1
    # 2) drop: the worst sellable held symbol against the best remaining candidate
    worst = n - 1  # walks `order` from the worst end
    sold = 0
    while sold < n_drop:
        while cand < scored and drifted[order[cand]] != 0.0:
            cand += 1
        if cand >= scored:
            break
        while worst >= 0:
            i = order[worst]
            if drifted[i] != 0.0 and tradable[i] and held_days[i] >= hold_thresh:
                break
            worst -= 1
        if worst < 0:
            break
        s = order[worst]
        c = order[cand]
        if pos[c] >= pos[s]:  # the candidate does not rank better: keep the book
            break
        target[s] = 0.0
        buys[n_buy] = c
        n_buy += 1
        sold += 1
        cand += 1
        worst -= 1
    kept = 0.0
    for i in range(n):
        kept += abs(target[i])
    if n_buy > 0:
        cash = max_gross - kept
        each = cash / n_buy if cash > 0.0 else 0.0
        each = each if each < max_weight else max_weight
        for j in range(n_buy):
            target[buys[j]] = each


@njit(cache=True, nogil=True, inline="always")
def long_short_targets(probs_t, tradable, drifted, quantile, budget, max_weight, target, order):
    """long_short's weights of the day (module docstring) into `target` (every column);
    `order`: rank_order(probs_t, tradable) of the day."""
    n = probs_t.shape[0]
    scored = 0
    for i in range(n):
        target[i] = 0.0 if tradable[i] else drifted[i]
        scored += 1 if tradable[i] and not math.isnan(np.float64(probs_t[i])) else 0
    k = int(math.floor(quantile * scored + QUANTILE_EPS))
    if k < 1:
        return
    each = budget / (2.0 * k)
    each = each if each < max_weight else max_weight
    for j in range(k):
        target[order[j]] = each
        target[order[scored - 1 - j]] = -each


# The steps of one day, inlined into the one driver (book_days) that runs one backtest or many
# lanes: a day's arithmetic is written once, here.


@njit(cache=True, nogil=True, inline="always")
def move_step(prices_t, w, last, drifted, tradable):
    """Step 1: the move from the previous close, which held weights earn (no bar today or
    none before: 0); `tradable`, `last` and the drifted weights updated. Returns (g, growth,
    wiped, inv): the day's return, 1 + g, whether the book is wiped out, 1 / growth (0 when
    wiped)."""
    n = prices_t.shape[0]
    g = 0.0
    for i in range(n):
        px = np.float64(prices_t[i])
        ok = px > 0.0 and px < np.inf  # False for NaN
        li = last[i]
        r = px / li - 1.0
        r = r if ok and li < np.inf else 0.0  # no bar today or none before: earns 0
        tradable[i] = ok
        last[i] = px if ok else li
        drifted[i] = w[i] * (1.0 + r)
        g += w[i] * r
    growth = 1.0 + g
    wiped = growth <= 0.0
    inv = 0.0 if wiped else 1.0 / growth
    return g, growth, wiped, inv


@njit(cache=True, nogil=True, inline="always")
def drift_signal_step(probs_t, threshold, long_short, max_gross, inv, drifted, target, tradable):
    """Step 2: the drift to weights of the post-move NAV; day t's threshold signals for the
    symbols with a bar today into `target` (NaN p: no position); the weights of symbols
    without a bar are frozen. Returns (budget, s_sum): the gross left to the tradable ones and
    the signals' absolute sum."""
    frozen = 0.0
    s_sum = 0.0
    for i in range(probs_t.shape[0]):
        d = drifted[i] * inv
        drifted[i] = d
        ok = tradable[i]
        p = np.float64(probs_t[i])
        if long_short:
            s = 2.0 * (p - 0.5)
        else:
            s = p - threshold
            s = s if s > 0.0 else 0.0
        s = s if ok and not math.isnan(p) else 0.0  # NaN p: no position
        target[i] = s
        s_sum += abs(s)
        frozen += 0.0 if ok else abs(d)
    budget = max_gross - frozen
    budget = budget if budget > 0.0 else 0.0
    return budget, s_sum


@njit(cache=True, nogil=True, inline="always")
def threshold_targets_step(budget, s_sum, max_weight, drifted, target, tradable, w, weights_row):
    """Step 3 of the threshold rule: the signals scaled to the budget, capped at +-max_weight
    (frozen symbols keep their drifted weight) into `w` and `weights_row`. Returns the turnover
    against the drifted book."""
    scale = budget / s_sum if s_sum > 0.0 else 0.0
    tv = 0.0
    for i in range(target.shape[0]):
        x = target[i] * scale
        x = x if x < max_weight else max_weight
        x = x if x > -max_weight else -max_weight
        d = drifted[i]
        x = x if tradable[i] else d
        tv += abs(x - d)
        w[i] = x
        weights_row[i] = x
    return tv


@njit(cache=True, nogil=True, inline="always")
def threshold_book_step(prices_t, probs_t, threshold, max_gross, max_weight, long_short, w, last, drifted, target,
                        tradable, weights_row):
    """Steps 1-3 of the threshold rule without trade costs or a turnover limit: the move, the
    drift, the new weights into `w` and `weights_row`. Returns (g, growth, wiped, turnover).
    Branch-free inner loops (selects), so LLVM vectorises."""
    g, growth, wiped, inv = move_step(prices_t, w, last, drifted, tradable)
    budget, s_sum = drift_signal_step(probs_t, threshold, long_short, max_gross, inv, drifted, target, tradable)
    tv = threshold_targets_step(budget, s_sum, max_weight, drifted, target, tradable, w, weights_row)
    return g, growth, wiped, tv


@njit(cache=True, nogil=True, inline="always")
def general_book_step(prices_t, probs_t, strategy, threshold, max_gross, max_weight, long_short, topk, n_drop,
                      hold_thresh, quantile, max_turnover, w, last, held_days, drifted, target, tradable, weights_row,
                      order, have_order):
    """Steps 1-4 of book_days's day (every strategy, the turnover limit): the new weights into
    `w` and `weights_row`, held_days updated. `order`: the day's rank_order when `have_order`
    (the lanes driver ranks once a day for every book), else ranked here. Returns (g, growth,
    wiped, turnover)."""
    n = prices_t.shape[0]
    g, growth, wiped, inv = move_step(prices_t, w, last, drifted, tradable)
    budget, s_sum = drift_signal_step(probs_t, threshold, long_short, max_gross, inv, drifted, target, tradable)
    # 3) targets, turnover against the drifted book
    tv = 0.0
    if strategy == THRESHOLD:
        tv = threshold_targets_step(budget, s_sum, max_weight, drifted, target, tradable, w, weights_row)
    else:
        ranked = order if have_order else rank_order(probs_t, tradable)
        if strategy == TOPK_DROPOUT:
            session = False
            for i in range(n):
                session = session or tradable[i]
            for i in range(n):
                held_days[i] = held_days[i] + 1 if session and drifted[i] != 0.0 else held_days[i]
            topk_dropout_targets(probs_t, tradable, drifted, held_days, topk, n_drop, hold_thresh, max_gross,
                                 max_weight, target, ranked)
            for i in range(n):  # a symbol bought today has been held 0 sessions
                held_days[i] = 0 if target[i] != 0.0 and drifted[i] == 0.0 else held_days[i]
        else:
            long_short_targets(probs_t, tradable, drifted, quantile, budget, max_weight, target, ranked)
        for i in range(n):
            x = target[i]
            tv += abs(x - drifted[i])
            w[i] = x
            weights_row[i] = x
    # 4) the daily turnover limit: every trade scaled alike
    if max_turnover > 0.0 and tv > max_turnover:
        f = max_turnover / tv
        tv = 0.0
        for i in range(n):
            d = drifted[i]
            x = d + (w[i] - d) * f
            tv += abs(x - d)
            w[i] = x
            weights_row[i] = x
    if strategy == TOPK_DROPOUT:
        for i in range(n):  # a symbol sold today has been held 0 sessions
            held_days[i] = held_days[i] if w[i] != 0.0 else 0
    return g, growth, wiped, tv


@njit(cache=True, nogil=True, inline="always")
def day_cost(w, drifted, growth, wiped, tv, cost_rate, trade_costs, open_cost, close_cost, min_cost_cash, equity0):
    """Step 5's cost of the day as a fraction of the post-move NAV: the bps on the turnover,
    plus (trade_costs) each trade's max(open_cost * d, m) / max(close_cost * |d|, m), m the
    minimum cost as a fraction of the NAV (equity0: the equity before the day)."""
    c = tv * cost_rate
    if trade_costs and not wiped:
        m = min_cost_cash / (equity0 * growth)
        extra = 0.0
        for i in range(w.shape[0]):
            dx = w[i] - drifted[i]
            if dx > 0.0:
                extra += max(open_cost * dx, m)
            elif dx < 0.0:
                extra += max(close_cost * -dx, m)
        c += extra
    return c


@njit(cache=True, nogil=True, error_model="numpy", fastmath=FASTMATH)
def book_days(prices, probs, a, b, bk_general, bk_strategy, bk_threshold, bk_max_gross, bk_max_weight,
              bk_long_short, bk_topk, bk_n_drop, bk_hold_thresh, bk_quantile, bk_max_turnover, bk_lanes,
              ln_cost_rate, ln_open_cost, ln_close_cost, ln_min_cost_cash,
              W, LAST, HELD, ROWS, SIGN, EQ, net, gross, turnover, cost, equity_out, exposure, trades, book_figures):
    """Days [a, b) of one backtest or many in one pass over the days: the one driver of the
    steps above (run_portfolio is its one-lane call, run_sweep its many-lane one).

    A book (B of them, arrays bk_*) is one set of weight-changing parameters; its lanes
    bk_lanes[k]..bk_lanes[k+1]-1 (ln_*, grouped by book) differ only in their costs, which never
    move a weight. Each day: the rank order once for every ranked book; each book's step
    (general_book_step: every strategy, the turnover limit; threshold_book_step when not
    bk_general: the threshold rule without trade costs or a turnover limit), then (book_figures)
    its exposure (sum |w| of the float32 weights) and positions opened, then each of its lanes'
    day_cost and result. Lanes never read each other, and one compiled function runs every call,
    so a lane's series are the same bits whatever else runs beside it (LLVM vectorises a loop's
    sums per function: the same step inlined into two drivers may round differently).
    State per book W, LAST float64 [B, N] (weights held, last valid close, NaN before the
    first), HELD int64 [B, N] (sessions held), SIGN int8 [B, N] (signs of the previous day's
    float32 weights); per lane EQ float64 [L]. Outputs rows [L, T] (net, gross, turnover, cost,
    equity_out), [B, T] (exposure, trades), and the weights ROWS float32: [B, T, N] (every day:
    the one backtest's weights) or [B, 1, N] (the day's only). `min_cost_cash` = min_cost /
    account; max_turnover <= 0: no limit."""
    n = prices.shape[1]
    n_books = bk_general.shape[0]
    drifted = np.empty(n, dtype=np.float64)
    target = np.empty(n, dtype=np.float64)
    tradable = np.empty(n, dtype=np.bool_)
    ranked = False
    for k in range(n_books):
        ranked = ranked or (bk_general[k] and bk_strategy[k] != THRESHOLD)
    order = np.zeros(n, dtype=np.int64)
    every_day = ROWS.shape[1] > 1
    for t in range(a, b):
        if ranked:  # the day's rank order, once for every ranked book
            for i in range(n):
                px = np.float64(prices[t, i])
                tradable[i] = px > 0.0 and px < np.inf
            order = rank_order(probs[t], tradable)
        r = t if every_day else 0
        for k in range(n_books):
            w = W[k]
            if bk_general[k]:
                g, growth, wiped, tv = general_book_step(prices[t], probs[t], bk_strategy[k], bk_threshold[k],
                                                         bk_max_gross[k], bk_max_weight[k], bk_long_short[k],
                                                         bk_topk[k], bk_n_drop[k], bk_hold_thresh[k], bk_quantile[k],
                                                         bk_max_turnover[k], w, LAST[k], HELD[k], drifted, target,
                                                         tradable, ROWS[k, r], order, ranked)
            else:
                g, growth, wiped, tv = threshold_book_step(prices[t], probs[t], bk_threshold[k], bk_max_gross[k],
                                                           bk_max_weight[k], bk_long_short[k], w, LAST[k], drifted,
                                                           target, tradable, ROWS[k, r])
            if book_figures:
                ex = 0.0
                opened = 0
                for i in range(n):
                    x = ROWS[k, r, i]
                    ex += abs(np.float64(x))
                    sg = np.int8(1) if x > 0 else (np.int8(-1) if x < 0 else np.int8(0))
                    opened += 1 if sg != 0 and sg != SIGN[k, i] else 0
                    SIGN[k, i] = sg
                exposure[k, t] = ex
                trades[k, t] = opened
            # 5) each lane's costs and the day's result
            for j in range(bk_lanes[k], bk_lanes[k + 1]):
                mc = ln_min_cost_cash[j]
                trade_costs = ln_open_cost[j] > 0.0 or ln_close_cost[j] > 0.0 or mc > 0.0
                c = day_cost(w, drifted, growth, wiped, tv, ln_cost_rate[j], trade_costs, ln_open_cost[j],
                             ln_close_cost[j], mc, EQ[j])
                nt = -1.0 if wiped else g - c * growth  # == (1 + g) * (1 - c) - 1, exact when c == 0
                EQ[j] = EQ[j] * (1.0 + nt)
                net[j, t] = nt
                gross[j, t] = g
                turnover[j, t] = tv
                cost[j, t] = c
                equity_out[j, t] = EQ[j]


# ---------------------------------------------------------------- Python API


def _panel(x, name: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{name} must be [T, N], got shape {x.shape}")
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    return np.ascontiguousarray(x)


def validate_inputs(prices, probs) -> tuple[np.ndarray, np.ndarray]:
    """C-contiguous float32/float64 [T, N] panels of equal shape; p within [0, 1] or NaN."""
    prices = _panel(prices, "prices")
    probs = _panel(probs, "probs")
    if prices.shape != probs.shape:
        raise ValueError(f"prices {prices.shape} and probs {probs.shape} must have the same shape")
    if np.isinf(probs).any():
        raise ValueError("probs has infinite values (NaN means no prediction)")
    if probs.size and not np.isnan(probs).all():
        lo, hi = float(np.nanmin(probs)), float(np.nanmax(probs))
        if lo < 0.0 or hi > 1.0:
            raise ValueError(f"probs must lie in [0, 1] (or be NaN), got [{lo}, {hi}]")
    return prices, probs


def run_portfolio(prices, probs, config: PortfolioConfig | None = None, *, chunk_days: int = 256,
                  on_chunk: Callable[[int, int, dict], None] | None = None,
                  initial_weights=None) -> PortfolioResult:
    """Backtest the daily book (module docstring). `on_chunk(a, b, arrays)` is called after each
    chunk of days [a, b); `arrays` holds views net, gross, turnover, cost, equity [b - a] and
    weights [b - a, N] of the rows just computed (copy them to keep them past the call).
    `initial_weights` [N]: the book held before day 0 (default: none; the live path's drifted
    paper book), each held `hold_thresh` sessions already."""
    cfg = PortfolioConfig() if config is None else config
    if chunk_days < 1:
        raise ValueError(f"chunk_days must be >= 1, got {chunk_days}")
    prices, probs = validate_inputs(prices, probs)
    T, N = prices.shape
    run = _Lanes([cfg], [[0]], T, N, rows_every_day=True)
    if initial_weights is not None:
        run.W[0] = np.asarray(initial_weights, dtype=np.float64)
        run.HELD[0][run.W[0] != 0.0] = cfg.hold_thresh
    for a in range(0, T, chunk_days):
        b = min(a + chunk_days, T)
        run.days(prices, probs, a, b, book_figures=False)
        if on_chunk is not None:
            on_chunk(a, b, {"net": run.net[0, a:b], "gross": run.gross[0, a:b], "turnover": run.turnover[0, a:b],
                            "cost": run.cost[0, a:b], "equity": run.equity_out[0, a:b], "weights": run.ROWS[0, a:b]})
    return PortfolioResult(run.net[0], run.gross[0], run.turnover[0], run.cost[0], run.equity_out[0], run.ROWS[0])


class _Lanes:
    """book_days's arguments for lanes `configs` grouped into `books` (lists of lane indices,
    each list's configs with one book_key): the books' and lanes' parameter arrays, the state
    and the outputs (lanes in the kernel's order: grouped by book)."""

    def __init__(self, configs: list[PortfolioConfig], books: list[list[int]], T: int, N: int,
                 rows_every_day: bool):
        rep = [configs[m[0]] for m in books]
        ordered = [configs[j] for m in books for j in m]
        B, L = len(books), len(ordered)
        f64 = lambda xs: np.array(xs, dtype=np.float64)  # noqa: E731
        self.params = dict(
            bk_general=np.array([not c.threshold_only for c in rep], dtype=np.bool_),
            bk_strategy=np.array([c.strategy_code for c in rep], dtype=np.int64),
            bk_threshold=f64([c.threshold for c in rep]), bk_max_gross=f64([c.max_gross for c in rep]),
            bk_max_weight=f64([c.max_weight for c in rep]),
            bk_long_short=np.array([c.long_short for c in rep], dtype=np.bool_),
            bk_topk=np.array([c.topk for c in rep], dtype=np.int64),
            bk_n_drop=np.array([c.n_drop for c in rep], dtype=np.int64),
            bk_hold_thresh=np.array([c.hold_thresh for c in rep], dtype=np.int64),
            bk_quantile=f64([c.quantile for c in rep]),
            bk_max_turnover=f64([0.0 if c.max_turnover is None else c.max_turnover for c in rep]),
            bk_lanes=np.cumsum([0] + [len(m) for m in books]).astype(np.int64),
            ln_cost_rate=f64([c.cost_rate for c in ordered]), ln_open_cost=f64([c.open_cost for c in ordered]),
            ln_close_cost=f64([c.close_cost for c in ordered]),
            ln_min_cost_cash=f64([float(c.min_cost) / float(c.account) for c in ordered]))
        self.W = np.zeros((B, N), np.float64)
        self.LAST = np.full((B, N), np.nan, np.float64)
        self.HELD = np.zeros((B, N), np.int64)
        self.ROWS = np.zeros((B, T if rows_every_day else 1, N), np.float32)
        self.SIGN = np.zeros((B, N), np.int8)
        self.EQ = np.ones(L, np.float64)
        self.net, self.gross, self.turnover, self.cost, self.equity_out = (np.zeros((L, T), np.float64)
                                                                           for _ in range(5))
        self.exposure = np.zeros((B, T), np.float64)
        self.trades = np.zeros((B, T), np.int64)

    def days(self, prices, probs, a: int, b: int, book_figures: bool) -> None:
        book_days(prices, probs, a, b, **self.params, W=self.W, LAST=self.LAST, HELD=self.HELD, ROWS=self.ROWS,
                  SIGN=self.SIGN, EQ=self.EQ, net=self.net, gross=self.gross, turnover=self.turnover, cost=self.cost,
                  equity_out=self.equity_out, exposure=self.exposure, trades=self.trades, book_figures=book_figures)


# ---------------------------------------------------------------- sweeps: many backtests in one pass


def book_key(cfg: PortfolioConfig) -> tuple:
    """The parameters that move cfg's weights (its strategy's, the caps, the turnover limit) and
    its step (threshold_only: threshold_book_step): configs with one key hold the same weights
    every day and differ only in their costs, so a sweep runs their book once."""
    key = (not cfg.threshold_only, cfg.strategy, float(cfg.max_gross), float(cfg.max_weight),
           None if cfg.max_turnover is None else float(cfg.max_turnover))
    if cfg.strategy == "threshold":
        return key + (bool(cfg.long_short), None if cfg.long_short else float(cfg.threshold))
    if cfg.strategy == "topk_dropout":
        return key + (int(cfg.topk), int(cfg.n_drop), int(cfg.hold_thresh))
    return key + (float(cfg.quantile),)


@dataclass
class SweepResult:
    """The daily series of L backtests (lane j: configs[j]), each row equal bit for bit to
    run_portfolio(prices, probs, configs[j])'s; `exposure` (sum |w| of the float32 weights held)
    and `trades` (positions opened, as kernels.backtest.stats.trades_opened counts them) per
    lane and day; `books`: how many distinct weight paths were run (lanes sharing one differ
    only in their costs)."""

    configs: list[PortfolioConfig]
    net: np.ndarray  # float64 [L, T]
    gross: np.ndarray
    turnover: np.ndarray
    cost: np.ndarray
    equity: np.ndarray
    exposure: np.ndarray  # float64 [L, T]
    trades: np.ndarray  # int64 [L, T]
    books: int

    def stats(self, j: int, periods_per_year: int = PERIODS_PER_YEAR) -> dict:
        """Lane j's stats table (kernels.backtest.stats.backtest_stats)."""
        from kernels.backtest.stats import backtest_stats

        return backtest_stats(self.net[j], self.gross[j], self.cost[j], self.turnover[j], self.exposure[j],
                              self.trades[j], periods_per_year)


def run_sweep(prices, probs, configs: list[PortfolioConfig], *, chunk_days: int = 256,
              threads: int | None = None) -> SweepResult:
    """Backtest every config of `configs` over the same panel in one pass over the days
    (book_days, in chunks of `chunk_days`; configs that differ only in their costs share one
    book): lane j's net, gross, turnover, cost and equity are run_portfolio(prices, probs,
    configs[j])'s bit for bit (no initial book). `threads` (default: the CPUs, at most 8): the
    books are dealt round-robin to that many book_days calls run side by side (nogil); lanes
    never read each other, so the results do not depend on it."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    configs = list(configs)
    if not configs:
        raise ValueError("a sweep needs at least one config")
    if chunk_days < 1:
        raise ValueError(f"chunk_days must be >= 1, got {chunk_days}")
    prices, probs = validate_inputs(prices, probs)
    T, N = prices.shape
    keys: dict[tuple, list[int]] = {}
    for j, cfg in enumerate(configs):
        keys.setdefault(book_key(cfg), []).append(j)
    books = list(keys.values())
    n_threads = max(1, min(int(threads or min(os.cpu_count() or 1, 8)), len(books)))
    parts = [books[p::n_threads] for p in range(n_threads)]
    runs = [_Lanes(configs, part, T, N, rows_every_day=False) for part in parts]

    def walk(run: _Lanes) -> None:
        for a in range(0, T, chunk_days):
            run.days(prices, probs, a, min(a + chunk_days, T), book_figures=True)

    if n_threads == 1:
        walk(runs[0])
    else:
        with ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(walk, runs))
    L = len(configs)
    out = {k: np.empty((L, T), np.float64) for k in ("net", "gross", "turnover", "cost", "equity_out", "exposure")}
    out["trades"] = np.empty((L, T), np.int64)
    for run, part in zip(runs, parts):
        lanes = np.array([j for m in part for j in m])
        for k in ("net", "gross", "turnover", "cost", "equity_out"):
            out[k][lanes] = getattr(run, k)
        book_of = np.concatenate([np.full(len(m), b) for b, m in enumerate(part)])
        out["exposure"][lanes] = run.exposure[book_of]
        out["trades"][lanes] = run.trades[book_of]
    return SweepResult(configs, out["net"], out["gross"], out["turnover"], out["cost"], out["equity_out"],
                       out["exposure"], out["trades"], len(books))
