"""Stored state that must not be trusted or doubled.

MODELS_REFUSED: files in models/ that must never run. Each row plants or changes a model file
(or its sidecar) the way a hostile user with write access to the folder would, then runs
`pipeline.cli infer`. The command must exit 2 with the exact line, before anything is
unpickled: the planted pickle would create a marker file, which must not exist.

SESSIONS_REFUSED: a paper-trading run for a session already traded is refused with one line,
and the order log and the paper book stay byte for byte as they were."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

from config.settings import read_settings

SYMBOL, NOW = "AAA", "2003-06-30"
REBUILD = "rebuild it (materialize meta_model for that year)"
OTHER_UID = 4242


class Planted:
    """Unpickling this creates `marker` (a stand-in for os.system)."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _plant(model: Path, marker: Path) -> bytes:
    data = pickle.dumps(Planted(marker))
    model.write_bytes(data)
    return data


def _planted_in_place(model, side, marker):
    _plant(model, marker)


def _planted_without_sidecar(model, side, marker):
    _plant(model, marker)
    side.unlink()


def _planted_world_writable_with_its_own_sha(model, side, marker):
    import hashlib

    data = _plant(model, marker)
    side.write_text(json.dumps({**json.loads(side.read_text()), "sha256": hashlib.sha256(data).hexdigest()}))
    model.chmod(0o666)


def _planted_by_another_user_with_its_own_sha(model, side, marker):
    import hashlib

    data = _plant(model, marker)
    side.write_text(json.dumps({**json.loads(side.read_text()), "sha256": hashlib.sha256(data).hexdigest()}))
    os.chown(model, OTHER_UID, -1)


def _shared_by_a_colleague_with_its_sha_rewritten(model, side, marker):
    """A models folder copied in from a colleague: the files now the user's own, mode 0644,
    the sidecar's sha256 that of the (pickled) file. Every ownership and hash check passes:
    only the format refuses it (arrays read with allow_pickle=False)."""
    import hashlib

    data = _plant(model, marker)
    side.write_text(json.dumps({**json.loads(side.read_text()), "sha256": hashlib.sha256(data).hexdigest()}))


def _a_pickle_of_before_beside_no_array_file(model, side, marker):
    """The pickled model of before (meta_h7_2003.joblib) where the arrays are missing: never
    loaded implicitly, the line names the command that converts it after verifying it."""
    import hashlib

    data = _plant(model.with_suffix(".joblib"), marker)
    model.unlink()
    side.write_text(json.dumps({**json.loads(side.read_text()), "sha256": hashlib.sha256(data).hexdigest()}))


def _sidecar_without_sha(model, side, marker):
    _plant(model, marker)
    side.write_text(json.dumps({k: v for k, v in json.loads(side.read_text()).items() if k != "sha256"}))


def _sidecar_world_writable(model, side, marker):
    side.chmod(0o666)


MODELS_REFUSED = [
    ("pickle_shared_by_a_colleague_owned_by_the_user_with_its_sha", _shared_by_a_colleague_with_its_sha_rewritten,
     "{model}: not an .npz of plain arrays (a pickle, an object array or a damaged file); not loaded, nothing in it "
     "ran; expected a model written by meta_model: rebuild it"),
    ("pickled_model_of_before_without_arrays", _a_pickle_of_before_beside_no_array_file,
     "{joblib}: a pickled meta model of before (tradelab.meta/1), which is never loaded: it could run code; expected "
     "`python -m pipeline.cli migrate-models` (it verifies each pickle's recorded sha256, converts it to arrays and "
     "moves it aside), or materialize meta_model again"),
    ("planted_pickle_in_place_of_the_model", _planted_in_place,
     "{model}: sha256 does not match the one recorded when it was written ({side}); not loaded: " + REBUILD),
    ("planted_pickle_without_a_sidecar", _planted_without_sidecar,
     "{model}: no sidecar {side} records its sha256; not loaded: " + REBUILD),
    ("planted_pickle_mode_0666_with_a_matching_sha", _planted_world_writable_with_its_own_sha,
     "{model}: mode 0666 is writable by others; not loaded: delete it and " + REBUILD),
    ("planted_pickle_of_another_user_with_a_matching_sha", _planted_by_another_user_with_its_own_sha,
     f"{{model}}: owned by uid {OTHER_UID}, not by this user (uid {{uid}}); not loaded: delete it and " + REBUILD),
    ("sidecar_without_a_sha256", _sidecar_without_sha,
     "{model}: the sidecar {side} records no sha256; not loaded: " + REBUILD),
    ("sidecar_world_writable", _sidecar_world_writable,
     "{side}: mode 0666 is writable by others; not loaded: delete it and " + REBUILD),
]


@pytest.mark.parametrize("change, line", [r[1:] for r in MODELS_REFUSED], ids=[r[0] for r in MODELS_REFUSED])
def test_a_model_file_that_is_not_verified_is_never_unpickled(change, line, learned_copy, monkeypatch, capsys, tmp_path):
    from pipeline.cli import main

    if change is _planted_by_another_user_with_its_own_sha and os.geteuid() != 0:
        pytest.skip("chown to another uid needs root")
    models = read_settings(learned_copy).models_dir
    model, side = models / "meta_h7_2003.npz", models / "meta_h7_2003.json"
    marker = tmp_path / "executed"
    change(model, side, marker)
    monkeypatch.setenv("PIPELINE_CONFIG", str(learned_copy))
    assert main(["infer", SYMBOL, "--now", NOW]) == 2
    err = [x for x in capsys.readouterr().err.strip().splitlines() if not x.startswith("tradelab: device ")]
    assert err == ["error: " + line.format(model=model, side=side, uid=os.geteuid(), joblib=model.with_suffix(".joblib"))]
    assert not marker.exists()


def test_the_verified_models_infer_as_before(learned_copy, monkeypatch, capsys):
    """The control row: the files meta_model wrote pass the checks and infer answers."""
    from pipeline.cli import main

    monkeypatch.setenv("PIPELINE_CONFIG", str(learned_copy))
    assert main(["infer", SYMBOL, "--now", NOW]) == 0
    assert json.loads(capsys.readouterr().out)["symbol"] == SYMBOL


# A paper run for a session already traded: (id, the day traded first, the `now` of the second
# run, the one line the second run answers with). Sessions are XNYS sessions: a Saturday or a
# holiday `now` trades the session before it. Nothing is ordered, logged or written.
SESSIONS_REFUSED = [
    ("the_same_day_again", "2003-12-12", "2003-12-12",
     "the session of 2003-12-12 is already traded"),
    ("the_saturday_after_a_traded_friday", "2003-12-12", "2003-12-13T10:00",
     "the session of 2003-12-12 is already traded"),
    ("christmas_day_after_a_traded_christmas_eve", "2003-12-24", "2003-12-25",
     "the session of 2003-12-24 is already traded"),
    ("a_session_older_than_the_last_traded_one", "2003-12-12", "2003-12-11",
     "the session of 2003-12-11 is before the last traded one (2003-12-12)"),
]


@pytest.mark.parametrize("first, second, line", [r[1:] for r in SESSIONS_REFUSED], ids=[r[0] for r in SESSIONS_REFUSED])
def test_a_paper_run_for_a_session_already_traded_is_refused_and_writes_nothing(first, second, line, learned_copy):
    import datetime as dt

    from domain.live.paper_trade import trade_day
    from resources.delta_store import DeltaStore
    from tests.conftest import LEARNED_SYMBOLS

    s = read_settings(learned_copy)
    assert trade_day(s, LEARNED_SYMBOLS, dt.datetime.fromisoformat(first), "first").refused is None
    log_path = s.stage_reports_dir("paper_trades") / "orders.jsonl"
    log, book = log_path.read_bytes(), DeltaStore(s.data_dir).read("paper_positions")
    again = trade_day(s, LEARNED_SYMBOLS, dt.datetime.fromisoformat(second), "second")
    assert again.refused == (f"paper_trades: {line} (run first, {log_path}); nothing ordered, "
                             "the paper book is unchanged")
    assert again.orders.height == 0 and again.book.equals(book)
    assert log_path.read_bytes() == log and DeltaStore(s.data_dir).read("paper_positions").equals(book)
