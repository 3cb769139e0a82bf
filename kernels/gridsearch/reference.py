"""Plain-Python reference: for every combination, for every trade, filter and walk the path.

Slow and obvious on purpose; the engines are tested against it on small data. It is an
independent oracle: it shares no code with the engines (not `cores.passes`, the keep
predicate, nor `cores.crossings_core`, the exit walk) and restates both here, so a mistake
in the shared cores cannot pass unseen.
"""

from __future__ import annotations

import itertools

import numpy as np

from kernels.gridsearch import RESULT_SCALE
from kernels.gridsearch.grid import PARAMS, Grid


def trade_result(prices, start, end, entry, pct_change, target, stop_loss) -> float:
    for i in range(start, end + 1):
        r = (float(prices[i]) / entry - 1.0) * 100.0
        if r <= stop_loss:
            return stop_loss
        if r >= target:
            return target
    return pct_change


def reference_grid(prices, start, end, entry, pct_change, features, grid: Grid, min_trades: int = 1) -> list[dict]:
    """Every combination, ranked: ROI desc (9 decimals), ties to the earlier combination."""
    rows = []
    features = np.asarray(features)
    for index, values in enumerate(itertools.product(*(getattr(grid, p) for p in PARAMS))):
        v, r, a28, a14, a7, target, stop = values
        thresholds = (v, r, a28, a14, a7)
        roi_units, kept = 0, 0
        for j in range(len(start)):
            if all(features[d, j] >= np.float32(thresholds[d]) for d in range(5)):
                res = trade_result(prices, start[j], end[j], entry[j], pct_change[j], target, stop)
                roi_units += int(round(res * RESULT_SCALE))
                kept += 1
        if kept >= min_trades:
            rows.append({"index": index, **dict(zip(PARAMS, values)), "roi": round(roi_units / RESULT_SCALE, 9), "trades": kept})
    rows.sort(key=lambda row: (-row["roi"], row["index"]))
    return rows
