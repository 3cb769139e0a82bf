"""Benchmark: the fast inference path (domain.live.inference) against the batch path.

Builds its own store first, through Dagster in a temp dir (a fresh DAGSTER_HOME): a
synthetic universe of `--symbols` symbols x years `--years` (raw_bars, features,
specialists, labels, regime), then the meta models and predictions of the last year, as
`historical_build_and_train` would. Then, on the days of the last year:

  infer_one cold            a fresh InferenceSession: read the symbol's bars, load the models,
                            replay the whole history through the streaming state, score
  infer_one cold, pickled   a fresh session that loads the state saved by save_states()
  infer_one warm            one new bar fed to a warm state + the meta models (models cached)
  infer_batch cold / warm   the same for every symbol at once (one score_rows call)
  batch path, one symbol    what inference costs without streaming state: the specialists
                            recomputed over the symbol's whole history (run_specialists,
                            numba) + the same score_rows; bars and models already in memory
  batch path, all symbols   likewise for the whole universe

Components (medians): the streaming state update alone (one bar) against run_specialists
alone, and score_rows alone (the meta models, common to both paths). Every run checks that
both paths give the same probabilities. Latencies: median and p99 over the repeats.

Usage: python benchmarks/bench_infer.py [--symbols 8] [--years 2000-2005] [--warm 120]
       [--cold 8] [--record] [--json PATH]
`--record` appends the entry to benchmarks/LOG.md and prints the rows for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.common import Report, parser, peak_rss_mb, symbol_names, synthetic_instance  # noqa: E402


COLD_ONE = "infer_one cold, models already loaded"
WARM_ONE = "infer_one warm (one new bar + meta)"
BATCH_ONE = "batch path, one symbol (run_specialists over the history + score_rows)"
WARM_BATCH = "infer_batch warm (one new bar per symbol + meta)"
BATCH_ALL = "batch path, all symbols"


def build_store(tmp: Path, n_symbols: int, y0: int, y1: int) -> tuple[Path, list[str], float]:
    """The store through Dagster (as tests/conftest.py's learned_store): returns the settings
    path, the symbols and the build seconds."""
    from dagster import materialize
    from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

    from assets.features import features
    from assets.labels import labels
    from assets.lstm_model import lstm_model
    from assets.meta_model import meta_model
    from assets.predictions import predictions
    from assets.raw_bars import raw_bars
    from assets.regime import regime
    from assets.specialists import specialists
    from pipeline.definitions import build_resources

    t0 = time.perf_counter()
    symbols = symbol_names(n_symbols)
    instance = synthetic_instance(tmp, n_symbols, y0, y1)
    cfg = tmp / "settings.yaml"
    resources = build_resources(str(cfg))
    every = [raw_bars, features, specialists, labels, regime, lstm_model, meta_model, predictions]
    rect = {ASSET_PARTITION_RANGE_START_TAG: f"{symbols[0]}|{y0}", ASSET_PARTITION_RANGE_END_TAG: f"{symbols[-1]}|{y1}"}
    steps = [
        ([raw_bars, features, specialists, labels], {"tags": rect}),
        ([regime], {"tags": {ASSET_PARTITION_RANGE_START_TAG: str(y0), ASSET_PARTITION_RANGE_END_TAG: str(y1)}}),
        ([meta_model, predictions], {"partition_key": str(y1)}),
    ]
    for selection, kw in steps:
        ok = materialize(every, selection=selection, instance=instance, resources=resources, raise_on_error=True, **kw)
        if not ok.success:
            raise RuntimeError(f"building the store failed at {[a.key.to_user_string() for a in selection]}")
    return cfg, symbols, time.perf_counter() - t0


def summary(seconds: list[float]) -> tuple[float, float]:
    """(median, p99) in milliseconds."""
    ms = np.asarray(seconds) * 1e3
    return float(np.median(ms)), float(np.percentile(ms, 99))


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


class BatchPath:
    """Inference without streaming state: the specialists over the symbol's whole history
    up to the day (the `specialists` asset's computation) + the regime + score_rows."""

    def __init__(self, settings, symbols: list[str], year: int):
        import polars as pl

        from domain.learning.predictions import load_year_models
        from resources.delta_store import DeltaStore

        store = DeltaStore(settings.data_dir)
        self.horizons = list(settings.labels.horizons)
        self.models = load_year_models(settings.models_dir, year, self.horizons)
        reg = store.read("regime", [year])
        self.regime = dict(zip(reg["date"].cast(pl.Int64).to_list(), reg["regime"].to_list()))
        self.bars = {}
        for s in symbols:
            df = store.scan("raw_bars").filter(pl.col("symbol") == s).sort("date").collect()
            self.bars[s] = (df["date"].cast(pl.Int64).to_numpy(),
                            {c: df[c].to_numpy() for c in ("open", "high", "low", "close", "volume")})

    def specialists(self, symbol: str, day_ns: int) -> tuple[np.ndarray, int]:
        """float32 scores of the last bar at or before day_ns, and its date (ns)."""
        from kernels.panel import Panel
        from kernels.registry.specialists import PANEL_COLUMNS, run_specialists

        dates, cols = self.bars[symbol]
        n = int(np.searchsorted(dates, day_ns, side="right"))
        scores = run_specialists(Panel.from_columns({c: cols[c][:n] for c in PANEL_COLUMNS}))
        return np.array([v[-1] for v in scores.values()], dtype=np.float32), int(dates[n - 1])

    def frame(self, rows):
        import polars as pl

        from kernels.registry.specialists import SPECIALIST_COLUMNS

        scores = np.stack([r[1] for r in rows])
        return pl.DataFrame([pl.Series("symbol", [r[0] for r in rows]),
                             *[pl.Series(c, scores[:, j], dtype=pl.Float32) for j, c in enumerate(SPECIALIST_COLUMNS)],
                             pl.Series("regime", [self.regime.get(r[2]) for r in rows], dtype=pl.Int8)])

    def infer(self, symbols: list[str], day_ns: int) -> dict[str, np.ndarray]:
        from domain.learning.predictions import score_rows

        rows = [(s, *self.specialists(s, day_ns)) for s in symbols]
        return score_rows(self.frame(rows), self.models, self.horizons)


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--symbols", type=int, default=8)
    ap.add_argument("--years", default="2000-2005")
    ap.add_argument("--warm", type=int, default=120, help="warm calls (one new bar each), <= the days of the last year")
    ap.add_argument("--cold", type=int, default=8, help="cold repeats")
    args = ap.parse_args()
    report = Report("Inference path: infer_one / infer_batch (domain/live/inference.py)", args)
    y0, y1 = (int(v) for v in args.years.split("-"))

    with tempfile.TemporaryDirectory(prefix="bench_infer_") as tmp_name:
        tmp = Path(tmp_name)
        cfg, symbols, build_s = build_store(tmp, args.symbols, y0, y1)


        from domain.live.inference import InferenceSession, to_datetime64
        from domain.learning.predictions import score_rows
        from config.partitions import SymbolYear
        from config.settings import read_settings

        settings = read_settings(cfg)
        from resources.delta_store import DeltaStore

        days = DeltaStore(settings.data_dir).read("raw_bars", [SymbolYear(symbols[0], y1)])["date"].to_list()
        n_warm = min(args.warm, len(days) - 2)
        warm_days = days[len(days) - n_warm:]
        start_day = days[len(days) - n_warm - 1]
        last_day = days[-1]
        sym = symbols[0]
        batch = BatchPath(settings, symbols, y1)
        history_bars = int(np.searchsorted(batch.bars[sym][0], int(to_datetime64(last_day).astype(np.int64)), side="right"))
        batch.infer([sym], int(to_datetime64(start_day).astype(np.int64)))  # numba compiled / cached, models loaded

        rows = []

        # infer_one, cold: a fresh session each time
        cold = [timed(InferenceSession(cfg).infer_one, sym, last_day)[0] for _ in range(args.cold)]
        rows.append(("infer_one cold (fresh session: bars, models, whole-history replay)", 1, cold))
        pre = []
        for _ in range(args.cold):
            s = InferenceSession(cfg)
            s.models(y1)
            pre.append(timed(s.infer_one, sym, last_day)[0])
        rows.append((COLD_ONE, 1, pre))
        state_dir = tmp / "live_state"
        saver = InferenceSession(cfg, state_dir=state_dir)
        saver.infer_one(sym, last_day)
        saver.save_states()
        pickled = []
        for _ in range(args.cold):
            s = InferenceSession(cfg, state_dir=state_dir)
            s.models(y1)
            pickled.append(timed(s.infer_one, sym, last_day)[0])
            assert s.counters["persisted_loads"] == 1 and s.counters["bars_fed"] == 0
        rows.append(("infer_one cold from the pickled state (models loaded)", 1, pickled))

        # infer_one, warm: one new bar per call
        session = InferenceSession(cfg)
        session.infer_one(sym, start_day)
        warm, update_only, scoring, same = [], [], [], True
        for d in warm_days:
            t, out = timed(session.infer_one, sym, d)
            warm.append(t)
            day_ns = int(to_datetime64(d).astype(np.int64))
            probs = batch.infer([sym], day_ns)
            same &= all(np.float32(out[f"h{h}"]) == probs[f"p_h{h}"][0] or (np.isnan(out[f"h{h}"]) and np.isnan(probs[f"p_h{h}"][0]))
                        for h in batch.horizons)
        rows.append((WARM_ONE, 1, warm))

        # components: one bar into the streaming state; run_specialists over the history; score_rows
        comp = InferenceSession(cfg)
        comp.state(sym, start_day)
        for d in warm_days:
            update_only.append(timed(comp.state, sym, d)[0])
        spec_only = [timed(batch.specialists, sym, int(to_datetime64(d).astype(np.int64)))[0] for d in warm_days]
        frame = batch.frame([(sym, *batch.specialists(sym, int(to_datetime64(last_day).astype(np.int64))))])
        scoring = [timed(score_rows, frame, batch.models, batch.horizons)[0] for _ in warm_days]

        # the batch path, one symbol
        batch_one = [timed(batch.infer, [sym], int(to_datetime64(d).astype(np.int64)))[0] for d in warm_days]
        rows.append((BATCH_ONE, 1, batch_one))

        # infer_batch, cold and warm; the batch path for all symbols
        cold_b = [timed(InferenceSession(cfg).infer_batch, symbols, last_day)[0] for _ in range(max(2, args.cold // 2))]
        rows.append(("infer_batch cold (fresh session)", len(symbols), cold_b))
        sb = InferenceSession(cfg)
        sb.infer_batch(symbols, start_day)
        warm_b = []
        for d in warm_days:
            t, out = timed(sb.infer_batch, symbols, d)
            warm_b.append(t)
        same &= bool((out["p_h7"].to_numpy() == batch.infer(symbols, int(to_datetime64(last_day).astype(np.int64)))["p_h7"])
                     .all())
        rows.append((WARM_BATCH, len(symbols), warm_b))
        batch_all = [timed(batch.infer, symbols, int(to_datetime64(d).astype(np.int64)))[0] for d in warm_days[-20:]]
        rows.append((BATCH_ALL, len(symbols), batch_all))

    med = {name: summary(ts)[0] for name, _, ts in rows}
    upd, spec, score = summary(update_only), summary(spec_only), summary(scoring)
    report.note(f"Store: {args.symbols} synthetic symbols x {y0}-{y1} built through Dagster in {build_s:.1f} s; "
                f"{history_bars} bars of history per symbol at the last day; meta models of {y1}. "
                f"Warm: the last {n_warm} days of {y1}, one new bar per call.")
    report.table(["run", "symbols", "repeats", "median ms", "p99 ms"], [
        *[[name, n, len(ts), f"{summary(ts)[0]:.2f}", f"{summary(ts)[1]:.2f}"] for name, n, ts in rows],
        ["component: session.state, one new bar (store freshness check + 19 features + 4 specialists)", 1, len(update_only),
         f"{upd[0]:.3f}", f"{upd[1]:.3f}"],
        ["component: run_specialists over the whole history (numba)", 1, len(spec_only), f"{spec[0]:.3f}", f"{spec[1]:.3f}"],
        [f"component: score_rows, one row, {len(batch.horizons)} horizons (both paths)", 1, len(scoring), f"{score[0]:.3f}",
         f"{score[1]:.3f}"],
    ])
    report.note(f"Ratios (medians): batch path / infer_one warm = {med[BATCH_ONE] / med[WARM_ONE]:.2f}x; "
                f"batch path all symbols / infer_batch warm = {med[BATCH_ALL] / med[WARM_BATCH]:.2f}x; "
                f"run_specialists / streaming update = {spec[0] / upd[0]:.1f}x; "
                f"infer_one cold (models loaded) / batch path = {med[COLD_ONE] / med[BATCH_ONE]:.1f}x. "
                f"Same probabilities on both paths: {same}. Peak RSS {peak_rss_mb():.0f} MB.")
    for name, _, ts in rows:
        report.figure(name, {"median_ms": summary(ts)[0], "p99_ms": summary(ts)[1]})
    warm = [ts for name, _, ts in rows if name == WARM_ONE][0]
    report.result("inference latency, `infer_one`", "(measured)",
                  f"warm (one new bar + meta) {summary(warm)[0]:.2f} ms median, p99 {summary(warm)[1]:.2f} ms", "measured")
    report.finish()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
