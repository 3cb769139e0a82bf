"""Bad input to compute_alpha158 (kernels.alpha158): each row is one input and the exact
line the ValueError must carry, naming the array or offset and what was expected. The
kernels layer raises ValueError; the stage that calls it reports the line as bad input."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.alpha158 import compute_alpha158

FIELDS = ("open", "high", "low", "close", "volume", "vwap")


def _arrays(n=8):
    base = np.linspace(10, 11, n, dtype=np.float32)
    return {f: base.copy() for f in FIELDS}


def _drop(field):
    return lambda a, o: ({k: v for k, v in a.items() if k != field}, o)


def _set(field, value):
    return lambda a, o: ({**a, field: value}, o)


def _offsets(value):
    return lambda a, o: (a, value)


REFUSED = [
    ("missing_vwap", _drop("vwap"),
     "compute_alpha158: missing input arrays ['vwap']; expected ['open', 'high', 'low', 'close', 'volume', 'vwap']"),
    ("volume_one_row_short", _set("volume", np.ones(7, dtype=np.float32)),
     "compute_alpha158: 'volume' has shape (7,); expected (8,) like 'close'"),
    ("open_two_dimensional", _set("open", np.ones((8, 1), dtype=np.float32)),
     "compute_alpha158: 'open' has shape (8, 1); expected (8,) like 'close'"),
    ("high_as_text", _set("high", np.array(["1.5"] * 8)),
     "compute_alpha158: 'high' has dtype <U3; expected numbers (float32 or float64)"),
    ("offsets_end_before_the_last_row", _offsets(np.array([0, 5, 7])),
     "compute_alpha158: offsets[2] = 7; offsets must rise from 0 to 8 (the arrays' length)"),
    ("offsets_not_starting_at_zero", _offsets(np.array([1, 8])),
     "compute_alpha158: offsets[0] = 1; offsets must rise from 0 to 8 (the arrays' length)"),
    ("offsets_going_back", _offsets(np.array([0, 6, 4, 8])),
     "compute_alpha158: offsets[2] = 4; offsets must rise from 0 to 8 (the arrays' length)"),
    ("offsets_as_floats", _offsets(np.array([0.0, 8.0])),
     "compute_alpha158: offsets must be a 1-D integer array from 0 to 8; got shape (2,), dtype float64"),
]


@pytest.mark.parametrize("mutate, line", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_bad_alpha158_input_is_refused_with_one_line(mutate, line):
    arrays, offsets = mutate(_arrays(), np.array([0, 8]))
    with pytest.raises(ValueError) as err:
        compute_alpha158(arrays, offsets)
    assert str(err.value) == line


def test_inputs_are_not_modified():
    arrays = _arrays()
    before = {k: v.copy() for k, v in arrays.items()}
    compute_alpha158(arrays, np.array([0, 3, 8]))
    for k in FIELDS:
        np.testing.assert_array_equal(arrays[k], before[k])
