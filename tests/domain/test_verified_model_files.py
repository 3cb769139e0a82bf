"""Every unpickling loader goes through resources.verified_files: the LSTM weights
(domain.learning.lstm.load_lstm) and the live state cache (domain.live.inference) refuse a
file planted in place of theirs before anything in it runs. (Meta models: the rows of
tests/adversarial/test_persistence.py, through `pipeline.cli infer`.)"""

from __future__ import annotations

import datetime as dt
import json
import pickle
from pathlib import Path

import pytest

from resources.verified_files import UnverifiedFileError

HORIZON, YEAR = 7, 2003


class Planted:
    """Unpickling this creates `marker` (a stand-in for os.system)."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _save_tiny_lstm(models_dir: Path) -> Path:
    """An LSTM saved as train_years saves one: weights + JSON sidecar with their sha256."""
    from domain.learning.lstm import lstm_path, save_weights
    from domain.learning.lstm_training import LSTMSpec
    from kernels.registry.features import FEATURE_NAMES

    spec = {"in_dim": len(FEATURE_NAMES), "hidden": 4, "layers": 1}
    path = lstm_path(models_dir, HORIZON, YEAR)
    sha256 = save_weights(LSTMSpec(**spec).state_dict(), path)
    path.with_suffix(".json").write_text(json.dumps({
        "sha256": sha256, "features": list(FEATURE_NAMES), "spec": spec, "seq_len": 8,
        "standardizer": {"mean": [0.0] * len(FEATURE_NAMES), "std": [1.0] * len(FEATURE_NAMES)}}))
    return path


def test_saved_lstm_weights_load_when_their_sha256_matches(tmp_path):
    from domain.learning.lstm import load_lstm

    _save_tiny_lstm(tmp_path)
    assert load_lstm(tmp_path, HORIZON, YEAR).model.head[1].out_features == 1


def test_a_pickle_planted_as_lstm_weights_is_refused_and_never_run(tmp_path):
    from domain.learning.lstm import load_lstm

    path, marker = _save_tiny_lstm(tmp_path), tmp_path / "executed"
    path.write_bytes(pickle.dumps(Planted(marker)))
    with pytest.raises(UnverifiedFileError) as err:
        load_lstm(tmp_path, HORIZON, YEAR)
    assert str(err.value) == (f"{path}: sha256 does not match the one recorded when it was written "
                              f"({path.with_suffix('.json')}); not loaded: rebuild it (materialize lstm_model for {YEAR})")
    assert not marker.exists()


def test_lstm_weights_whose_sidecar_records_no_sha256_are_refused(tmp_path):
    from domain.learning.lstm import load_lstm

    path = _save_tiny_lstm(tmp_path)
    side = path.with_suffix(".json")
    side.write_text(json.dumps({k: v for k, v in json.loads(side.read_text()).items() if k != "sha256"}))
    with pytest.raises(UnverifiedFileError, match="records no sha256; not loaded: rebuild it"):
        load_lstm(tmp_path, HORIZON, YEAR)


def test_a_pickle_planted_in_the_live_state_cache_is_never_run_and_the_state_is_rebuilt(learned_copy, tmp_path):
    from domain.live.inference import InferenceSession

    state_dir, day, marker = tmp_path / "live_state", dt.date(2003, 8, 1), tmp_path / "executed"
    writer = InferenceSession(learned_copy, state_dir=state_dir)
    want = writer.infer_one("CCC", day)
    (path,) = writer.save_states()
    assert json.loads(path.with_name("state.json").read_text())["sha256"]
    path.write_bytes(pickle.dumps(Planted(marker)))
    reader = InferenceSession(learned_copy, state_dir=state_dir)
    with pytest.warns(UserWarning) as warned:
        assert reader.infer_one("CCC", day) == want
    assert [str(w.message) for w in warned] == [
        f"{path}: sha256 does not match the one recorded when it was written ({path.with_name('state.json')}); "
        "not loaded: it is rebuilt from history and overwritten at the next save"]
    assert not marker.exists()
    assert reader.counters["rejected_states"] == 1 and reader.counters["persisted_loads"] == 0
    reader.save_states()  # the rebuilt state replaces the planted file and is trusted again
    again = InferenceSession(learned_copy, state_dir=state_dir)
    assert again.infer_one("CCC", day) == want and again.counters["persisted_loads"] == 1


def test_a_pickle_in_the_live_state_cache_with_its_sha_rewritten_is_never_run(learned_copy, tmp_path):
    """A state folder copied in from a colleague, the hashes rewritten: every ownership and hash
    check passes, and the file is still only parsed as JSON (plain data): nothing runs, the
    state is rebuilt from history."""
    import hashlib

    from domain.live.inference import InferenceSession

    state_dir, day, marker = tmp_path / "live_state", dt.date(2003, 8, 1), tmp_path / "executed"
    writer = InferenceSession(learned_copy, state_dir=state_dir)
    want = writer.infer_one("CCC", day)
    (path,) = writer.save_states()
    data = pickle.dumps(Planted(marker))
    path.write_bytes(data)
    path.with_name("state.json").write_text(json.dumps({"sha256": hashlib.sha256(data).hexdigest()}))
    reader = InferenceSession(learned_copy, state_dir=state_dir)
    assert reader.infer_one("CCC", day) == want
    assert not marker.exists() and reader.counters["persisted_loads"] == 0
