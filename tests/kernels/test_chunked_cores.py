"""The time-chunked variants (kernels.indicators.chunks) equal their portable cores bit for bit:
series long enough to be chunked and one row short of it, warm-ups that meet the true state
and ones that cannot (a huge value, a NaN or an inf just before a chunk's warm-up, which the
chunk never sees), ties (an EMA kept where its input equals it), float32 and float64 inputs
and outputs, strided inputs, and the public functions that run them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from numba import njit

from kernels.indicators import chunks as chunked_cores, cores
from kernels.indicators.steps import true_range
from kernels import indicators as K
from tests.kernel_data import walk_ohlc


@dataclass(frozen=True)
class Case:
    core: str
    ohlc: bool  # inputs (high, low, close), else (close,)
    first_steady: Callable[[int], int]  # the first row of the steady phase for period n
    warm: Callable[[int], int]
    periods: tuple[int, ...]
    public: Callable
    lanes: int
    level: bool = True  # the output is a price-like level (RSI's is a 0..100 ratio)


CASES = {
    "atr": Case("atr_core", True, lambda n: n + 1, chunked_cores.atr_warm, (1, 2, 14, 30), K.atr,
                chunked_cores.ATR_LANES),
    "ema": Case("ema_core", False, lambda n: n, chunked_cores.ema_warm, (1, 2, 20, 60), K.ema, chunked_cores.LANES),
    "rsi": Case("rsi_core", False, lambda n: n + 1, chunked_cores.rsi_warm, (1, 2, 14, 30), K.rsi, chunked_cores.LANES,
                level=False),
    "tema": Case("tema_core", False, lambda n: 3 * (n - 1) + 1, chunked_cores.tema_warm, (2, 3, 20), K.tema,
                 chunked_cores.LANES),
}


def _compiled(module, name):
    return njit(cache=True, nogil=True)(getattr(module, name))


def _inputs(case: Case, t_len: int, seed: int = 3) -> list[np.ndarray]:
    _, h, l, c = (a.astype(np.float64) for a in walk_ohlc(t_len, seed=seed))
    return [h, l, c] if case.ohlc else [c]


def _chunked_rows(case: Case, n: int) -> int:
    """The shortest series whose steady phase is cut into chunks."""
    return case.first_steady(n) + case.lanes * 4 * case.warm(n)


def _assert_variant_equals_core(case: Case, inputs, n: int, out_dtype=np.float64) -> np.ndarray:
    portable = _compiled(cores, case.core)
    variant = _compiled(chunked_cores, cores.CPU_VARIANTS[case.core])
    t_len = inputs[0].shape[0]
    want = np.full(t_len, -1.0, dtype=out_dtype)
    got = np.full(t_len, -1.0, dtype=out_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        portable(*inputs, n, want)
        variant(*inputs, n, got)
    bits = np.uint64 if out_dtype == np.float64 else np.uint32
    np.testing.assert_array_equal(got.view(bits), want.view(bits))
    return want


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_chunked_variant_is_the_cpu_backends_core(name):
    from kernels.indicators import cpu as cpu_backend

    case = CASES[name]
    assert cpu_backend.compiled(case.core).py_func is getattr(chunked_cores, cores.CPU_VARIANTS[case.core])


@pytest.mark.parametrize("extra", [-1, 0, 5, 7])  # -1: one row short, the serial loop
@pytest.mark.parametrize("name,n", [(name, n) for name, case in sorted(CASES.items()) for n in case.periods])
def test_the_variant_equals_its_core_around_the_chunking_length(name, n, extra):
    case = CASES[name]
    _assert_variant_equals_core(case, _inputs(case, _chunked_rows(case, n) + extra), n)


@pytest.mark.parametrize("in_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_variant_equals_its_core_with_ties_in_both_precisions(name, in_dtype, out_dtype):
    case = CASES[name]
    inputs = [np.round(a, 0).astype(in_dtype) for a in _inputs(case, _chunked_rows(case, 20) + 999)]
    _assert_variant_equals_core(case, inputs, 20, out_dtype)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("n,extra", [(1, 0), (2, 5), (14, 0), (14, 7), (30, 3)])
def test_atr_over_float32_inputs_runs_in_tiles_and_equals_its_core(n, extra, strided):
    """Float32 inputs take `_atr_tiles`: chunks of several tiles and a part tile, both output precisions."""
    case = CASES["atr"]
    t_len = _chunked_rows(case, n) + extra
    step = 2 if strided else 1
    inputs = [a.astype(np.float32)[::step] for a in _inputs(case, step * t_len)]
    for out_dtype in (np.float32, np.float64):
        _assert_variant_equals_core(case, inputs, n, out_dtype)


def test_atr_over_float32_inputs_with_chunks_of_whole_tiles():
    case = CASES["atr"]
    size = 3 * chunked_cores.ATR_TILE  # each lane exactly three tiles
    inputs = [a.astype(np.float32) for a in _inputs(case, case.first_steady(2) + case.lanes * size)]
    assert size >= 4 * case.warm(2)
    _assert_variant_equals_core(case, inputs, 2, np.float32)


@pytest.mark.parametrize("extra", [0, 1, chunked_cores.RSI_TILE - 1])
def test_rsi_with_chunks_of_whole_tiles_and_a_part_tile(extra):
    case = CASES["rsi"]
    size = 3 * chunked_cores.RSI_TILE + extra  # each lane three tiles and `extra` rows
    assert size >= 4 * case.warm(2)
    for dtype in (np.float64, np.float32):
        x = _inputs(case, case.first_steady(2) + case.lanes * size)[0].astype(dtype)
        _assert_variant_equals_core(case, [x], 2, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_rsi_where_both_averages_are_zero_is_zero_in_the_chunked_rows(dtype):
    """A flat stretch from the start: gains and losses exactly 0, the tiles' 0/0 kept as 0."""
    case = CASES["rsi"]
    x = _inputs(case, _chunked_rows(case, 14) + 123)[0]
    x[: len(x) // 2] = 1000.0
    want = _assert_variant_equals_core(case, [x.astype(dtype)], 14, dtype)
    assert (want[15 : len(x) // 2] == 0.0).all()


@pytest.mark.parametrize("poison", [1e200, np.nan, np.inf])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_chunk_whose_warm_up_cannot_meet_the_true_state_is_recomputed(name, poison):
    case = CASES[name]
    n = 14
    t_len = _chunked_rows(case, n) + 300
    inputs = _inputs(case, t_len)
    start, warm = case.first_steady(n), case.warm(n)
    size = (t_len - start) // case.lanes
    # the row just before chunk 3's warm-up: the true state carries it, the warm-up never sees it
    row = start + 3 * size - warm - 1
    inputs[0][row] = poison
    want = _assert_variant_equals_core(case, inputs, n)
    if np.isfinite(poison) and case.level:
        assert np.isfinite(want[-1]) and abs(want[row + warm + 1]) > 1e100  # chunk 3 does start far off


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_variant_reads_strided_inputs(name):
    case = CASES[name]
    inputs = _inputs(case, 2 * (_chunked_rows(case, 14) + 17))
    _assert_variant_equals_core(case, [a[::2] for a in inputs], 14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_public_function_runs_the_variant_and_equals_the_portable_core(name):
    case = CASES[name]
    inputs = _inputs(case, _chunked_rows(case, 14) + 321, seed=9)
    want = _assert_variant_equals_core(case, inputs, 14)
    got = case.public(*inputs, 14, dtype=np.float64)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


SPECIAL = [-np.inf, -2.5, -1.0, -0.0, 0.0, 1e-300, 1.0, 1.0 + 2**-52, 3.0, 1e300, np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_the_ordered_true_range_is_the_cores_on_every_triple_of_special_values_it_accepts(dtype):
    """max(h, c') - min(l, c') is steps.true_range bit for bit wherever h - l >= 0 (signed zeros, infinities,
    a NaN close, ties, values one ulp apart); the triples it refuses go to the core."""
    both = njit(lambda h, l, c: (h - l >= 0.0, true_range(np.float64(h), np.float64(l), np.float64(c)),
                                 chunked_cores._tr_ordered(h, l, c)))
    accepted = 0
    with np.errstate(invalid="ignore", over="ignore"):
        for h in SPECIAL:
            for l in SPECIAL:  # noqa: E741
                for c in SPECIAL:
                    hi, lo, cp = (dtype(v) for v in (h, l, c))  # float32: 1e300 is inf, 1e-300 is 0
                    ok, want, got = both(hi, lo, cp)
                    if ok:
                        accepted += 1
                        assert np.float64(got).tobytes() == np.float64(want).tobytes(), (hi, lo, cp)
                    else:
                        assert np.isnan(hi) or np.isnan(lo) or hi < lo or hi == lo == np.inf or hi == lo == -np.inf
    assert accepted > 600


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("bad", ["low above high", "nan high", "nan low", "inf range", "nan close", "inf close"])
def test_atr_equals_its_core_with_a_bad_row_inside_a_chunk(bad, dtype):
    """The ordered true range refuses the first four (the core then rewrites the series); a NaN
    or infinite close it takes as the core does."""
    case = CASES["atr"]
    h, l, c = _inputs(case, _chunked_rows(case, 14) + 300)
    row = len(h) // 2  # inside a chunk, after every warm-up
    if bad == "low above high":
        h[row], l[row] = l[row], h[row]
    elif bad == "nan high":
        h[row] = np.nan
    elif bad == "nan low":
        l[row] = np.nan
    elif bad == "inf range":
        h[row] = l[row] = np.inf
    elif bad == "nan close":
        c[row] = np.nan
    else:
        c[row] = -np.inf
    _assert_variant_equals_core(case, [a.astype(dtype) for a in (h, l, c)], 14, dtype)


# DMI (+DI, -DI, ADX): tiles of eight lanes, each chunk walked again until it meets its lane.

DMI_ROWS = chunked_cores.LANES * 4 * chunked_cores.DMI_TILE  # steady rows below which the core runs
WHICH = {0: "all three", 1: "+DI", 2: "-DI", 3: "ADX"}


def _assert_dmi_equals_core(h, l, c, n, which, out_dtype=np.float64) -> int:  # noqa: E741
    """dmi_core and dmi_chunked_core on (h, l, c), all three outputs bit for bit (unwritten
    entries included); the rows walked again (-1: the core ran)."""
    portable = _compiled(cores, "dmi_core")
    variant = _compiled(chunked_cores, "dmi_chunked_core")
    want = [np.full(h.shape[0], -1.0, dtype=out_dtype) for _ in range(3)]
    got = [np.full(h.shape[0], -1.0, dtype=out_dtype) for _ in range(3)]
    with np.errstate(invalid="ignore", over="ignore"):
        portable(h, l, c, n, which, *want)
        walked = variant(h, l, c, n, which, *got)
    bits = np.uint64 if out_dtype == np.float64 else np.uint32
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g.view(bits), w.view(bits))
    return walked


@pytest.mark.parametrize("which", sorted(WHICH), ids=list(WHICH.values()))
@pytest.mark.parametrize("extra", [-1, 0, 5, 3 * chunked_cores.DMI_TILE + 7])  # -1: one row short, the core
@pytest.mark.parametrize("n", [2, 14, 30])
def test_dmi_in_chunks_equals_its_core_around_the_chunking_length(n, extra, which):
    h, l, c = _inputs(CASES["atr"], 2 * n + DMI_ROWS + extra)  # noqa: E741
    walked = _assert_dmi_equals_core(h, l, c, n, which)
    if extra < 0:
        assert walked == -1
    else:
        assert 0 < walked < (chunked_cores.LANES - 1) * (DMI_ROWS // chunked_cores.LANES)


@pytest.mark.parametrize("in_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("which", sorted(WHICH), ids=list(WHICH.values()))
def test_dmi_in_chunks_equals_its_core_in_both_precisions(which, in_dtype, out_dtype):
    h, l, c = (a.astype(in_dtype) for a in _inputs(CASES["atr"], 28 + DMI_ROWS + 999))  # noqa: E741
    assert _assert_dmi_equals_core(h, l, c, 14, which, out_dtype) > 0


def test_dmi_chunks_that_never_meet_their_lane_are_walked_to_their_end():
    """n = 200: the smoothings contract by 1 - 1/200 a row, too slowly to meet within a chunk
    of 2,048 rows; each is walked again whole, from the true end of the one before."""
    n = 200
    size = 4 * chunked_cores.DMI_TILE
    h, l, c = _inputs(CASES["atr"], 2 * n + chunked_cores.LANES * size + 3)  # noqa: E741
    assert _assert_dmi_equals_core(h, l, c, n, 0) == (chunked_cores.LANES - 1) * size


@pytest.mark.parametrize("bad", ["nan high", "nan low", "inf close", "flat stretch", "low above high"])
def test_dmi_in_chunks_equals_its_core_with_bad_or_flat_rows_inside_a_chunk(bad):
    """A NaN or an infinity inside a chunk (the core's outputs NaN from there: the states are
    NaN and never meet), a flat first half (the smoothed TR exactly 0: DIs 0, ADX kept), a low
    above its high."""
    h, l, c = _inputs(CASES["atr"], 28 + DMI_ROWS + 999)  # noqa: E741
    row = len(h) // 2
    if bad == "nan high":
        h[row] = np.nan
    elif bad == "nan low":
        l[row] = np.nan
    elif bad == "inf close":
        c[row] = np.inf
    elif bad == "flat stretch":  # from the start: the smoothed TR exactly 0 for half the series
        h[:row] = l[:row] = c[:row] = 1000.0
    else:
        h[row], l[row] = l[row], h[row]
    for which in WHICH:
        _assert_dmi_equals_core(h, l, c, 14, which)


def test_dmi_public_functions_run_the_chunked_core_and_equal_talib():
    import talib

    from kernels.indicators import cpu as cpu_backend

    assert cpu_backend.compiled("dmi_core").py_func is chunked_cores.dmi_chunked_core
    h, l, c = _inputs(CASES["atr"], 28 + DMI_ROWS + 4321, seed=9)  # noqa: E741
    for ours, theirs in ((K.plus_di, talib.PLUS_DI), (K.minus_di, talib.MINUS_DI), (K.adx, talib.ADX)):
        got = ours(h, l, c, 14, dtype=np.float64)
        want = theirs(h, l, c, 14)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    plus, minus, adx = K.dmi(h, l, c, 14, dtype=np.float64)
    np.testing.assert_array_equal(adx.view(np.uint64), K.adx(h, l, c, 14, dtype=np.float64).view(np.uint64))
