"""Stage `features` (symbol x year): the feature registry over raw_bars, halo-exact.

Partition SYMBOL|Y reads raw_bars of years Y-k..Y (k = `halo.years`) and writes the rows
of Y only. Recursive indicators (EMA, RSI, ATR, ADX, KAMA) remember all history; the halo
makes a partition equal the whole-history result within float32 tolerance
(tests/assets/test_features_labels.py measures it for every feature). A single-run backfill reads
every year of its rectangle once and computes each symbol's series once.

Columns: those of the selected feature packs (settings `features`, domain.feature_packs),
in pack order; `core` alone (the default) is the 19 registry features. Inputs are the bar
fields the selected entries name; `vwap` is the source's column when the bars have one,
else the typical price (kernels.registry.packs.typical_price, as the live path computes it).

Checks (yielded with the output): dtypes; no NaN after each feature's warm-up; a halo spot
check that computes one boundary from its halo only and from all stored history.
"""

import numpy as np
import polars as pl

from config.partitions import SymbolYear, feature_halo_years, key_text
from domain.feature_packs import entry_failure
from domain.partition_frames import keep_partitions
from domain.schema import features_schema
from domain.symbol_chunks import ChunkStats, map_symbol_chunks
from domain.symbol_runs import is_sorted_by_symbol_date, keeps_every_row, run_starts
from kernels.backends import routing
from kernels.registry.features import EntryError, Feature, compute_features
from kernels.registry.packs import Selection, select, typical_price
from resources.delta_store import DeltaStore

INPUT_COLUMNS = ["high", "low", "close"]
SPOT_RTOL, SPOT_ATOL = 1e-4, 1e-5


def features_by_symbol(arrays: dict[str, np.ndarray], offsets: np.ndarray, *, backend: str, dtype,
                       packs: tuple[tuple[str, ...], tuple[str, ...]] = (("core",), ())) -> dict[str, np.ndarray]:
    """Worker: the selected packs (by name: `(packs, plugins)`, so a process worker selects
    them again) over the symbols of a chunk, stored back to back."""
    return _compute(arrays, offsets, packs, backend=backend, dtype=dtype)


def _compute(arrays: dict[str, np.ndarray], offsets: np.ndarray, packs, **kw) -> dict[str, np.ndarray]:
    """compute_features over the entries of `packs`; an entry that raises or returns other
    than one value per row is a SettingsError of one line naming its module, entry and
    column (domain.feature_packs.entry_failure)."""
    chosen = select(*packs)
    try:
        return compute_features(arrays, offsets, entries=chosen.features, **kw)
    except EntryError as exc:
        raise entry_failure(chosen, exc) from exc


def _one_pass(bars: pl.DataFrame, inputs: list[str], offsets: np.ndarray, workers: int, dtype,
              packs) -> tuple[dict[str, np.ndarray], ChunkStats]:
    """Kernel-call features (kernels.registry.features.Feature) over the whole frame in one
    pass, each kernel call splitting the symbols over `workers` threads: the outputs are
    the kernels' own arrays (no chunk results copied into place) and the per-chunk
    bookkeeping is gone; the values are those of the chunked pool bit for bit (the same
    core call per symbol)."""
    arrays = {c: bars[c].rechunk().to_numpy() for c in inputs}
    stats = ChunkStats(chunks=1, workers=max(1, workers),
                       max_chunk_input_mb=sum(a.nbytes for a in arrays.values()) / 2**20)
    return _compute(arrays, offsets, packs, backend="cpu", dtype=dtype, threads=workers), stats


def with_inputs(bars: pl.DataFrame, inputs: list[str]) -> pl.DataFrame:
    """`bars` with every input column the entries need: `vwap` is the typical price when
    the source has none."""
    if "vwap" in inputs and "vwap" not in bars.columns:
        hlc = [bars[c].to_numpy() for c in ("high", "low", "close")]
        bars = bars.with_columns(pl.Series("vwap", typical_price(*hlc)))
    return bars


def build_features(
    bars: pl.DataFrame,
    keys: list[SymbolYear],
    *,
    backend: str = "cpu",
    precision: str = "float32",
    workers: int = 1,
    chunk_rows: int = 131_072,
    executor: str = "thread",
    selection: Selection | None = None,
) -> tuple[pl.DataFrame, dict[str, int], ChunkStats]:
    """Features of the rows of `keys` from `bars` (which may hold halo years before them),
    the columns of `selection` (default: the `core` pack).

    Returns the frame in the features schema, the count of NaN values after warm-up per
    feature (all zero when healthy), and the chunk statistics.
    """
    selection = select() if selection is None else selection
    names = selection.feature_columns
    dtype = np.float64 if precision == "float64" else np.float32
    inputs = selection.feature_inputs or INPUT_COLUMNS
    offsets = run_starts(bars["symbol"])
    if not is_sorted_by_symbol_date(bars, offsets):  # a source's bars usually come sorted: the sort is the stage's dearest copy
        bars = bars.sort("symbol", "date")
        offsets = run_starts(bars["symbol"])
    bars = with_inputs(bars, inputs)
    packs = selection.names or (("core",), ())
    # a GPU only from its measured break-even, for the work of one call (a chunk of rows)
    backend = routing.route("indicators", min(bars.height, chunk_rows), backend)
    if executor == "thread" and backend == "cpu" and all(type(f) is Feature for f in selection.features):
        feats, stats = _one_pass(bars, inputs, offsets, workers, dtype, packs)
    else:
        feats, stats = map_symbol_chunks(
            features_by_symbol, bars, inputs, workers=workers, chunk_rows=chunk_rows, executor=executor,
            backend=backend, dtype=dtype, packs=packs,
        )
    pos = np.arange(bars.height, dtype=np.int64) - np.repeat(offsets[:-1], np.diff(offsets))  # row within its symbol
    frame = bars.select("date", "symbol").with_columns(
        *[pl.Series(name, feats.get(name, np.empty(0, dtype))) for name in names],
        pl.Series("__pos", pos),
    )
    if not keeps_every_row(frame, offsets, keys):  # halo years to drop
        frame = keep_partitions(frame, keys)
    nan_after_warmup = _nan_after_warmup(frame, selection.warmups())
    out = frame.drop("__pos")
    features_schema(precision, names).check(out)
    return out, nan_after_warmup, stats


def _nan_after_warmup(frame: pl.DataFrame, warmups: dict[str, int]) -> dict[str, int]:
    """Per column, the NaN or null values at or after its warm-up (`__pos` >= warm-up):
    all of them (one select over every column) less those inside the warm-up, counted on
    the few rows whose `__pos` is below the longest warm-up."""
    if not warmups:
        return {}
    def bad(name):
        return pl.col(name).is_nan() | pl.col(name).is_null()

    total = frame.select([bad(n).sum().alias(n) for n in warmups]).row(0, named=True)
    early = (frame.filter(pl.col("__pos") < max(warmups.values()))
             .select([(bad(n) & (pl.col("__pos") < w)).sum().alias(n) for n, w in warmups.items()]).row(0, named=True))
    return {n: int(total[n]) - int(early[n]) for n in warmups}


def __getattr__(name: str):
    """HALO_YEARS: the settings' `halo.years`, read when asked for (no settings at import)."""
    if name == "HALO_YEARS":
        from config.settings import load_settings

        return feature_halo_years(load_settings())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def halo_spot_check(store: DeltaStore, keys: list[SymbolYear], first_year: int, halo_years: int | None = None,
                    **kw) -> dict:
    """The halo assumption, measured on one boundary: the latest key of the run that has
    more history than its halo is computed from its halo only (years Y-k..Y) and from all
    stored years since `first_year`; the rows of Y must agree within float32 tolerance.
    `halo_years`: k (default: the settings' `halo.years`)."""
    HALO_YEARS = halo_years if halo_years is not None else __getattr__("HALO_YEARS")
    for key in sorted(keys, key=lambda k: (-k.year, k.symbol)):
        if key.year - HALO_YEARS <= first_year:
            continue
        try:
            full = store.read("raw_bars", [SymbolYear(key.symbol, y) for y in range(first_year, key.year + 1)])
        except FileNotFoundError:
            continue
        halo_only = full.filter(pl.col("date").dt.year() >= key.year - HALO_YEARS)
        a_df = build_features(halo_only, [key], **kw)[0].drop("date", "symbol")
        names = a_df.columns
        a = a_df.to_numpy().astype(np.float64)
        b = build_features(full, [key], **kw)[0].select(names).to_numpy().astype(np.float64)
        if not a.size:
            continue
        diff = np.nan_to_num(np.abs(a - b), nan=0.0)
        worst = int(np.argmax(diff.max(axis=0)))
        return {
            "passed": bool(np.all(np.isclose(a, b, rtol=SPOT_RTOL, atol=SPOT_ATOL, equal_nan=True))),
            "partition": key_text(key.symbol, key.year),
            "halo_years": HALO_YEARS,
            "history_years": key.year - first_year,
            "max_abs_diff": float(diff.max()),
            "worst_feature": names[worst],
        }
    return {"passed": True, "skipped": "no partition in this run has stored history beyond its halo"}


def dtypes_check(df: pl.DataFrame, precision: str = "float32", selection: Selection | None = None) -> tuple[bool, dict]:
    """The `dtypes` check: `df` against the features schema of `precision` and `selection`
    (columns, order and dtypes). Returns (passed, metadata: the column count, and the
    differences if any)."""
    names = None if selection is None else selection.feature_columns
    diff = features_schema(precision, names).mismatches(df)
    return not diff, {"columns": len(df.columns), **({"mismatches": diff} if diff else {})}


class FeatureChecks:
    """The features checks over a run built chunk by chunk (resources.output_stream): `take`
    each chunk's (frame, NaN counts after warm-up, chunk stats) as it is built; the NaN
    counts add up, the dtypes check holds when it holds for every chunk (the first failing
    chunk's differences are shown), the chunk stats sum (chunks) or keep their maximum."""

    def __init__(self, precision: str = "float32", selection: Selection | None = None):
        self.precision, self.selection = precision, selection
        self.nan_after_warmup: dict[str, int] = {}
        self.chunks, self.workers = 0, 1
        self.max_chunk_input_mb = self.max_worker_rss_growth_mb = 0.0
        self._dtypes: tuple[bool, dict] | None = None

    def take(self, frame: pl.DataFrame, nan_after_warmup: dict[str, int], stats: ChunkStats) -> pl.DataFrame:
        for name, n in nan_after_warmup.items():
            self.nan_after_warmup[name] = self.nan_after_warmup.get(name, 0) + n
        self.chunks += stats.chunks
        self.workers = max(self.workers, stats.workers)
        self.max_chunk_input_mb = max(self.max_chunk_input_mb, stats.max_chunk_input_mb)
        self.max_worker_rss_growth_mb = max(self.max_worker_rss_growth_mb, stats.max_worker_rss_growth_mb)
        if self._dtypes is None or self._dtypes[0]:
            self._dtypes = dtypes_check(frame, self.precision, self.selection)
        return frame

    def dtypes_result(self) -> tuple[bool, dict]:
        """(passed, metadata) of the `dtypes` check; a run without chunks checks an empty frame."""
        if self._dtypes is None:
            names = None if self.selection is None else self.selection.feature_columns
            return dtypes_check(features_schema(self.precision, names).empty(), self.precision,
                                self.selection)
        return self._dtypes
