"""Files in models/ that must never run: each row plants or changes a model file (or its
sidecar) the way a hostile user with write access to the folder would, then runs
`pipeline.cli infer`. The command must exit 2 with the exact line, before anything is
unpickled: the planted pickle would create a marker file, which must not exist."""

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


def _sidecar_without_sha(model, side, marker):
    _plant(model, marker)
    side.write_text(json.dumps({k: v for k, v in json.loads(side.read_text()).items() if k != "sha256"}))


def _sidecar_world_writable(model, side, marker):
    side.chmod(0o666)


MODELS_REFUSED = [
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
    model, side = models / "meta_h7_2003.joblib", models / "meta_h7_2003.json"
    marker = tmp_path / "executed"
    change(model, side, marker)
    monkeypatch.setenv("PIPELINE_CONFIG", str(learned_copy))
    assert main(["infer", SYMBOL, "--now", NOW]) == 2
    err = [x for x in capsys.readouterr().err.strip().splitlines() if not x.startswith("tradelab: device ")]
    assert err == ["error: " + line.format(model=model, side=side, uid=os.geteuid())]
    assert not marker.exists()


def test_the_verified_models_infer_as_before(learned_copy, monkeypatch, capsys):
    """The control row: the files meta_model wrote pass the checks and infer answers."""
    from pipeline.cli import main

    monkeypatch.setenv("PIPELINE_CONFIG", str(learned_copy))
    assert main(["infer", SYMBOL, "--now", NOW]) == 0
    assert json.loads(capsys.readouterr().out)["symbol"] == SYMBOL
