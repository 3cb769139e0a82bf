"""domain.symbol_chunks.map_symbol_chunks: the results of every symbol chunk, in frame order,
held once. The features stage of a single-run backfill maps 177 float32 columns over 3.3M
rows (2.3 GB); keeping every chunk's result and then concatenating them held that twice."""

import tracemalloc

import numpy as np
import polars as pl
import pytest

from domain.symbol_chunks import map_symbol_chunks

SYMBOLS, ROWS = 40, 5_000  # 200,000 rows; chunks of 10,000 rows: 20 chunks
COLUMNS = 4


def _frame() -> pl.DataFrame:
    return pl.DataFrame({
        "symbol": np.repeat([f"S{i:02d}" for i in range(SYMBOLS)], ROWS),
        "close": np.arange(SYMBOLS * ROWS, dtype=np.float32),
    })


def _four_columns(arrays, offsets):
    """Four float32 columns per chunk: the close, and the close times 2, 3, 4 (fresh arrays)."""
    close = arrays["close"]
    return {f"c{k}": close * np.float32(k + 1) for k in range(COLUMNS)}


@pytest.mark.parametrize("workers", [1, 2])
def test_chunk_results_are_the_whole_frames_result_in_frame_order(workers):
    frame = _frame()
    out, stats = map_symbol_chunks(_four_columns, frame, ["close"], workers=workers, chunk_rows=10_000)
    assert stats.chunks == 20
    close = frame["close"].to_numpy()
    assert list(out) == ["c0", "c1", "c2", "c3"]
    for k in range(COLUMNS):
        assert out[f"c{k}"].dtype == np.float32
        np.testing.assert_array_equal(out[f"c{k}"], close * np.float32(k + 1))


def test_the_outputs_are_held_once_not_as_chunk_results_plus_their_concatenation():
    """Peak NumPy allocation (tracemalloc) of mapping 20 chunks: the 3.2 MB of outputs plus
    about one chunk's result, under 1.25x the outputs (keeping every chunk's result and then
    concatenating them peaked at 2x)."""
    frame = _frame()
    map_symbol_chunks(_four_columns, frame, ["close"], workers=1, chunk_rows=10_000)  # warm-up outside the trace
    output_bytes = SYMBOLS * ROWS * COLUMNS * 4
    tracemalloc.start()
    try:
        out, _ = map_symbol_chunks(_four_columns, frame, ["close"], workers=1, chunk_rows=10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(v.nbytes for v in out.values()) == output_bytes
    assert peak < 1.25 * output_bytes, f"peak {peak / 2**20:.2f} MB for {output_bytes / 2**20:.2f} MB of outputs"


def test_a_chunk_result_of_another_length_than_its_chunk_is_refused():
    frame = _frame()
    with pytest.raises(ValueError):
        map_symbol_chunks(lambda arrays, offsets: {"x": arrays["close"][:-1]}, frame, ["close"], chunk_rows=10_000)


def test_an_empty_frame_maps_to_no_columns():
    empty = _frame().head(0)
    assert map_symbol_chunks(_four_columns, empty, ["close"], workers=2)[0] == {}
