"""A streaming state as plain data (kernels.indicators.plain_state, SymbolStream.to_plain/from_plain):
JSON that round-trips the updaters bit for bit, and cannot make anything run."""

import json
from collections import deque

import numpy as np
import pytest

from kernels.indicators.plain_state import restore, to_plain
from kernels.indicators.streaming import SymbolStream


def _bars(n=600, seed=0):
    rng = np.random.default_rng(seed)
    c = 50 * np.exp(np.cumsum(rng.normal(0, 0.02, n)))
    o = c * (1 + rng.normal(0, 0.005, n))
    return o, np.maximum(o, c) * 1.01, np.minimum(o, c) * 0.99, c, rng.uniform(1e5, 1e6, n)


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_a_stream_saved_as_json_mid_series_goes_on_as_one_that_never_stopped(precision):
    bars = _bars()
    first, whole = SymbolStream(precision), SymbolStream(precision)
    first.replay(*(a[:400] for a in bars))
    want_f, want_s = whole.replay(*bars)
    resumed = SymbolStream.from_plain(json.loads(json.dumps(first.to_plain())))  # through text, NaN included
    assert resumed.bars == 400
    np.testing.assert_array_equal(resumed.features, first.features)
    f, s = resumed.replay(*(a[400:] for a in bars))
    np.testing.assert_array_equal(f, want_f[400:])  # bit for bit, NaN in the same places
    np.testing.assert_array_equal(s, want_s[400:])


def test_a_state_of_other_registries_or_another_format_is_refused_to_be_rebuilt_from_history():
    state = SymbolStream("float32").to_plain()
    with pytest.raises(ValueError, match="not a plain SymbolStream state"):
        SymbolStream.from_plain({**state, "format": "kernels.indicators.streaming.SymbolStream/2"})
    other = {**state, "nodes": [{**state["nodes"][0], "class": "SomethingElse"}, *state["nodes"][1:]]}
    with pytest.raises(ValueError, match="built for other registries"):
        SymbolStream.from_plain(other)


class _Toy:
    def __init__(self, n):
        self.n, self.window, self.total, self.last = n, deque(maxlen=n), 0.0, np.float32(np.nan)
        self.fn = len  # configuration: left out


def test_plain_values_restore_into_a_fresh_object_and_a_class_name_cannot_be_swapped():
    toy = _Toy(3)
    toy.window.extend([1.5, 2.5, 3.5])
    toy.total, toy.last = 7.5, np.float32(0.1)
    plain = json.loads(json.dumps(to_plain(toy)))
    assert "fn" not in plain["attrs"]
    fresh = _Toy(3)
    restore(fresh, plain)
    assert list(fresh.window) == [1.5, 2.5, 3.5] and fresh.window.maxlen == 3 and fresh.total == 7.5
    assert type(fresh.last) is np.float32 and fresh.last == np.float32(0.1) and fresh.fn is len
    with pytest.raises(ValueError, match="a saved _Toy where the code now builds dict"):
        restore({}, plain)
    with pytest.raises(TypeError, match="no updater state"):
        to_plain(np.array(["a"], dtype=object))


def test_a_state_whose_updaters_had_other_parameters_is_refused_not_restored_into_new_ones():
    """An EMA(10)'s state must not turn a fresh EMA(20) into an EMA(10): the node keys (core,
    inputs, parameters) are compared before anything is set."""
    state = SymbolStream("float32").to_plain()
    node = state["nodes"][0]
    changed = {**state, "nodes": [{**node, "key": node["key"].replace("('n', 1)", "('n', 2)")}, *state["nodes"][1:]]}
    assert changed["nodes"][0]["key"] != node["key"]
    with pytest.raises(ValueError, match="other updaters or parameters"):
        SymbolStream.from_plain(changed)


def test_restore_sets_only_the_attributes_the_fresh_object_has_and_only_numeric_arrays():
    plain = to_plain(_Toy(3))
    with pytest.raises(ValueError, match="an attribute '__dict__' the code does not build"):
        restore(_Toy(3), {**plain, "attrs": {**plain["attrs"], "__dict__": {"dict": {}}}})
    with pytest.raises(ValueError, match="an array of dtype object is no updater state"):
        restore(_Toy(3), {**plain, "attrs": {**plain["attrs"], "total": {"nd": "|O", "shape": [1], "v": [1]}}})
