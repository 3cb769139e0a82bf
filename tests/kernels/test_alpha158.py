"""Alpha158 (kernels.alpha158) equals Qlib's expression engine, column by column.

The fixture tests/kernels/data/alpha158_reference.npz was written by
scripts/alpha158_fixture.py from pyqlib 0.9.7 (pandas 2.2.3) fed Qlib's bin layout of the
same float32 inputs: GOOG daily (500 sessions, real data) and a synthetic symbol starting 50
sessions later with a flat stretch (open = high = low = close, constant volume: zero std,
repeated closes), repeated closes under moving highs and lows, a 3-session gap (NaN rows),
two sessions whose volume alone is missing (Corr's pairwise masks) and a zero-volume session
(v / Ref(v, 1) = inf the next session, which pandas' rolling operators skip).

Tolerance, by column kind:
- every column except CORR*/CORD*: exact (bit-equal float32, identical NaN positions). The
  element-wise steps are the same NumPy float32 operations Qlib runs, and the rolling cores
  replay pandas' / Qlib's float64 arithmetic in the same order, so nothing is left to round
  differently.
- CORR*, CORD*: rtol 1e-5 with identical NaN positions. They correlate against NumPy's float32
  `log`, which NumPy dispatches to SIMD code chosen per CPU: on another machine it may
  differ by one float32 ulp from the log the fixture was built with (here they are equal).

The cores are also checked against plain pandas / NumPy references (kernels.alpha158.reference)
on edge cases: NaN runs, constant runs, symbols shorter than the window, an empty symbol.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernels.alpha158 import ALPHA158_NAMES, ALPHA158_WARMUP, compute_alpha158, cpu, reference
from kernels.alpha158.features import FIELDS

FIXTURE = Path(__file__).parent / "data" / "alpha158_reference.npz"
LOG_COLUMNS = {f"{g}{d}" for g in ("CORR", "CORD") for d in (5, 10, 20, 30, 60)}


@pytest.fixture(scope="module")
def fixture():
    with np.load(FIXTURE) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def ours(fixture):
    return compute_alpha158({f: fixture[f] for f in FIELDS}, fixture["offsets"])


def test_names_are_qlibs_158_in_qlibs_order(fixture):
    assert len(ALPHA158_NAMES) == 158 == len(set(ALPHA158_NAMES))
    assert ALPHA158_NAMES == tuple(fixture["names"])
    assert ALPHA158_NAMES[:13] == ("KMID", "KLEN", "KMID2", "KUP", "KUP2", "KLOW", "KLOW2", "KSFT", "KSFT2",
                                   "OPEN0", "HIGH0", "LOW0", "VWAP0")
    assert ALPHA158_NAMES[-1] == "VSUMD60"


@pytest.mark.parametrize("name", ALPHA158_NAMES)
def test_column_equals_qlib_fixture(name, fixture, ours):
    expected = fixture["reference"][ALPHA158_NAMES.index(name)]
    got = ours[name]
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=f"{name}: NaN positions")
    if name in LOG_COLUMNS:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=0, err_msg=name)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_fixture_covers_the_edge_cases(fixture):
    """The synthetic symbol really holds what the parity claims to cover."""
    a, b = fixture["offsets"][1:3]
    close = fixture["close"][a:b]
    ref = dict(zip(ALPHA158_NAMES, fixture["reference"][:, a:b]))
    assert np.isnan(close).sum() == 3  # the gap
    assert (ref["STD5"][85:150] == 0).all()  # zero std on the flat stretch
    assert np.isnan(ref["RSQR5"][85:150]).all() and np.isnan(ref["CORR5"][85:150]).all()  # Qlib's std mask
    assert np.isinf(ref["KMID2"]).sum() == 0 and (ref["KMID2"][80:150] == 0).all()  # (c-o)/(0+1e-12)
    volume = fixture["volume"][a:b]
    assert np.isnan(volume[260:262]).all() and not np.isnan(close[260:262]).any()  # pairwise masks
    assert volume[275] == 0 and np.isfinite(ref["CORD5"][276:290]).all()  # v/Ref(v,1) = inf: pandas skips it


def test_warmup_is_the_first_non_nan_row_of_qlib(fixture):
    goog = fixture["reference"][:, : fixture["offsets"][1]]  # GOOG: no NaN inputs
    for name, col in zip(ALPHA158_NAMES, goog):
        first = int(np.flatnonzero(~np.isnan(col))[0])
        assert first == ALPHA158_WARMUP[name], name


def test_windows_never_cross_symbols(fixture, ours):
    """Two symbols back to back equal each symbol computed alone (the second starts at row 0)."""
    off = fixture["offsets"]
    for a, b in zip(off[:-1], off[1:]):
        alone = compute_alpha158({f: fixture[f][a:b] for f in FIELDS}, np.array([0, b - a]))
        for name in ALPHA158_NAMES:
            np.testing.assert_array_equal(ours[name][a:b], alone[name], err_msg=name)


def test_chunks_of_whole_symbols_change_nothing(fixture, ours, monkeypatch):
    """compute_alpha158 works through ~CHUNK_ROWS rows of whole symbols at a time; a chunk
    size smaller than any symbol (one symbol per chunk) gives the same columns."""
    from kernels.alpha158 import features

    monkeypatch.setattr(features, "CHUNK_ROWS", 7)
    got = compute_alpha158({f: fixture[f] for f in FIELDS}, fixture["offsets"])
    for name in ALPHA158_NAMES:
        np.testing.assert_array_equal(got[name], ours[name], err_msg=name)


def test_out_buffers_receive_the_columns(fixture, ours):
    """out= writes into a caller's buffers (here views of one 2-D block), in chunks of symbols."""
    off = fixture["offsets"]
    block = np.full((158, off[-1]), -1.0, dtype=np.float32)
    cols = dict(zip(ALPHA158_NAMES, block))
    for a, b in zip(off[:-1], off[1:]):
        compute_alpha158({f: fixture[f][a:b] for f in FIELDS}, np.array([0, b - a]),
                         out={name: col[a:b] for name, col in cols.items()})
    for name in ALPHA158_NAMES:
        np.testing.assert_array_equal(cols[name], ours[name], err_msg=name)
    with pytest.raises(ValueError, match=r"out\['KMID'\] is missing or not of shape \(800,\)"):
        compute_alpha158({f: fixture[f] for f in FIELDS}, off, out={})


def test_empty_and_one_row_symbols(fixture):
    """An empty symbol contributes no row; a one-row symbol gets its row's values (NaN where a
    feature needs two rows), whatever sits next to it."""
    one = {f: fixture[f][:1] for f in FIELDS}
    alone = compute_alpha158(one, np.array([0, 1]))
    got = compute_alpha158({f: np.concatenate([fixture[f][:1], fixture[f][:1]]) for f in FIELDS},
                           np.array([0, 0, 1, 1, 2, 2]))
    for name in ALPHA158_NAMES:
        np.testing.assert_array_equal(got[name], np.repeat(alone[name], 2), err_msg=name)
        assert np.isnan(alone[name][0]) == (ALPHA158_WARMUP[name] > 0), name
    empty = compute_alpha158({f: fixture[f][:0] for f in FIELDS}, np.array([0]))
    assert all(v.shape == (0,) for v in empty.values())


def test_float64_inputs_holding_float32_values_give_the_float32_result(fixture, ours):
    wide = {f: fixture[f].astype(np.float64) for f in FIELDS}
    got = compute_alpha158(wide, fixture["offsets"])
    for name in ALPHA158_NAMES:
        np.testing.assert_array_equal(got[name], ours[name], err_msg=name)


def test_float64_output_rounds_to_the_float32_output(fixture, ours):
    got = compute_alpha158({f: fixture[f] for f in FIELDS}, fixture["offsets"], dtype=np.float64)
    for name in ALPHA158_NAMES:
        assert got[name].dtype == np.float64
        np.testing.assert_array_equal(got[name].astype(np.float32), ours[name], err_msg=name)
    assert (got["MA5"] != got["MA5"].astype(np.float32)).any()  # the digits Qlib's final cast drops


# --- each core against its plain reference ----------------------------------------------

def _edge_series():
    """Three symbols: 40 rows with a NaN run, a constant run and a leading NaN; 3 rows
    (shorter than every window); 0 rows; then 30 rows of a cent-rounded walk with ties."""
    rng = np.random.default_rng(24)
    s1 = np.round(100 + np.cumsum(rng.normal(0, 1, 40)), 2)
    s1[0] = np.nan
    s1[10:14] = np.nan
    s1[20:28] = s1[19]
    s2 = np.array([5.0, 5.0, 4.0])
    s4 = np.round(10 + np.cumsum(rng.choice([-0.01, 0.0, 0.01], 30)), 2)
    x = np.concatenate([s1, s2, s4]).astype(np.float32).astype(np.float64)
    return x, np.array([0, 40, 43, 43, 73])


def _run(core, x, offsets, n, k=1):
    outs = [np.full(len(x), -7.0) for _ in range(k)]
    core(x, offsets, n, *outs)
    return outs[0] if k == 1 else outs


@pytest.mark.parametrize("n", [1, 2, 5, 60])
@pytest.mark.parametrize("core", ["roll_sum", "roll_mean", "roll_var", "roll_max", "roll_min", "roll_idxmax",
                                  "roll_idxmin"])
def test_core_equals_pandas_reference_on_nan_runs_constant_runs_short_and_empty_symbols(core, n):
    x, offsets = _edge_series()
    got = _run(getattr(cpu, core), x, offsets, n)
    want = getattr(reference, core)(x, offsets, n)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 5, 60])
def test_quantile_and_rank_core_equals_pandas_reference_with_ties_and_nan(n):
    x, offsets = _edge_series()
    lo, hi, rank = (np.full(len(x), -7.0) for _ in range(3))
    cpu.roll_qrank(x, offsets, n, 0.2, 0.8, np.empty(max(n, 1)), lo, hi, rank)
    for got, want in ((lo, reference.roll_quantile(x, offsets, n, 0.2)),
                      (hi, reference.roll_quantile(x, offsets, n, 0.8)),
                      (rank, reference.roll_rank(x, offsets, n))):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("core", ["roll_sum", "roll_mean", "roll_var", "roll_max", "roll_min", "roll_idxmax",
                                  "roll_idxmin"])
def test_core_treats_inf_as_pandas_does(core):
    """pandas' aggregations skip +-inf like NaN; rolling.apply (IdxMax/IdxMin) sees it."""
    x = np.array([1.0, np.inf, 3.0, -np.inf, 2.0, 2.5, 4.0, np.inf, np.inf, 1.0, 0.5, 2.0])
    offsets = np.array([0, 12])
    got = _run(getattr(cpu, core), x, offsets, 3)
    want = getattr(reference, core)(x, offsets, 3)
    np.testing.assert_array_equal(got, want)


def test_quantile_and_rank_core_treat_inf_as_pandas_does():
    x = np.array([1.0, np.inf, 3.0, -np.inf, 2.0, 2.5, 4.0, np.inf, np.inf, 1.0, 0.5, 2.0])
    offsets = np.array([0, 12])
    lo, hi, rank = (np.full(12, -7.0) for _ in range(3))
    cpu.roll_qrank(x, offsets, 3, 0.2, 0.8, np.empty(3), lo, hi, rank)
    np.testing.assert_array_equal(lo, reference.roll_quantile(x, offsets, 3, 0.2))
    np.testing.assert_array_equal(hi, reference.roll_quantile(x, offsets, 3, 0.8))
    np.testing.assert_array_equal(rank, reference.roll_rank(x, offsets, 3))


@pytest.mark.parametrize("n", [2, 5, 60])
def test_linreg_core_equals_least_squares_reference(n):
    x, offsets = _edge_series()
    slope, rsq, resi = _run(cpu.roll_linreg, x, offsets, n, k=3)
    r_slope, r_rsq, r_resi = reference.roll_linreg(x, offsets, n)
    np.testing.assert_allclose(slope, r_slope, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(resi, r_resi, rtol=1e-7, atol=1e-7)
    fit = ~np.isnan(r_rsq)  # the reference leaves R^2 undefined on a constant window
    np.testing.assert_allclose(rsq[fit], r_rsq[fit], rtol=1e-7, atol=1e-9)


def test_linreg_of_a_single_value_is_nan_and_of_a_line_is_exact():
    x = np.array([7.0, 9.0, 11.0, 13.0, np.nan, 17.0])
    slope, rsq, resi = _run(cpu.roll_linreg, x, np.array([0, 6]), 5, k=3)
    assert np.isnan(slope[0]) and np.isnan(rsq[0]) and np.isnan(resi[0])  # 0/0 as in Qlib's C
    np.testing.assert_allclose(slope[1:], [2, 2, 2, 2, 2])
    np.testing.assert_allclose(rsq[[1, 2, 3, 5]], 1.0)
    np.testing.assert_allclose(resi[[1, 2, 3, 5]], 0.0, atol=1e-12)
    assert np.isnan(resi[4])  # the newest value is missing
